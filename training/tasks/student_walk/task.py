"""The ``student_walk`` task: DAgger from the walking policy into the recurrent depth student (stage 1).

Config: ``training/tasks/student_walk/presets/student_walk.yaml`` (``student_walk_tiny.yaml`` for tests). Environment:
:class:`~training.tasks.student_walk.env.WalkEnv` (flat ground and gentle platforms, sampled velocity
commands, the walking policy's PD and gait clock). The teacher (``WalkTeacher``: the installed
walking policy) labels every observation (group ``teacher_actions``); rsl_rl's distillation, as
:class:`~training.rl.algorithms.BlendedDistillation`, acts with ``a = beta t + (1 - beta) s``,
beta falling 1 -> 0 over the first half of the run, and a fixed eighth of the environments always
running the teacher as the speed reference. The student is
:class:`~training.rl.models.DepthRecurrentModel`, exported as a bundle at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from training.configs.schema import TrainConfig
from training.envs.physics import Physics, warp_device
from training.envs.student import CameraConfig
from training.rl.algorithms import BlendedDistillation, teacher_env_count
from training.rl.models import DEPTH_GROUP, TEACHER_GROUP, DepthRecurrentModel
from training.rl.runner import Runner
from training.rl.task_cfg import distillation_cfg
from training.tasks.student_walk.bundle import (
    export_walking_student,
    keep_calibration_frame,
    run_provenance,
)
from training.tasks.student_walk.env import WalkConfig, WalkEnv, walk_student_manifest
from training.tasks.student_walk.teacher import TEACHER_PROVENANCE, WalkTeacher

F = NDArray[np.float64]


def walk_config(cfg: TrainConfig, num_envs: int, privileged: bool = True) -> WalkConfig:
    return WalkConfig(
        num_envs=num_envs, episode_s=cfg.env.episode_length_s, physics_dt_s=cfg.env.physics_dt_s,
        decimation=cfg.env.decimation, seed=cfg.run.seed,
        camera=CameraConfig(width=cfg.env.camera_width, height=cfg.env.camera_height), privileged=privileged,
        backend=cfg.env.backend, device=warp_device(cfg.run.device),
    )  # fmt: skip


class WalkTask:
    """A :class:`~training.rl.env.TaskEnv` over WalkEnv + WalkTeacher, and the runner's hooks."""

    name = "student_walk"
    figures = ("behavior", "student_speed", "teacher_speed", "beta")

    def __init__(self, cfg: TrainConfig, num_envs: int | None = None) -> None:
        self.cfg = cfg
        n = self.num_envs = num_envs or cfg.env.num_envs
        self.teacher = WalkTeacher(n)
        self.manifest = walk_student_manifest(
            "student_walk", cfg.policy.rnn_hidden, cfg.policy.depth_latent, self.teacher.manifest, cfg.env.control_hz
        )
        self.env = WalkEnv(walk_config(cfg, n, privileged=False), self.manifest)  # DAgger has no critic
        self.num_actions = self.env.num_actions
        self.dt_s = self.env.tracking.dt_s
        self.max_episode_length = round(cfg.env.episode_length_s / self.dt_s)
        self.teacher_envs = teacher_env_count(n, cfg.distill.teacher_env_fraction)
        self.teacher.reset()
        self._groups = self._observation(self.env.reset())
        self.episode_steps = np.zeros(n)
        self.frames: list[NDArray[np.float32]] = []
        self._steps = 0
        self._clear_figures()

    @property
    def physics(self) -> Physics:
        return self.env.tracking.sim

    # -- TaskEnv -----------------------------------------------------------------------------

    def _label(self) -> F:
        sim = self.env.tracking.sim
        return self.teacher.act(
            sim.q, sim.dq, sim.root_quat, sim.gyro, self.env.walk_command, self.env.tracking.last_action,
            self.env.gait_phase,
        )  # fmt: skip

    def _observation(self, obs: dict[str, NDArray[np.float32]]) -> dict[str, NDArray[np.floating]]:
        return {"policy": obs["policy"], DEPTH_GROUP: obs["depth"], TEACHER_GROUP: self._label()}

    def observe(self) -> dict[str, NDArray[np.floating]]:
        return self._groups

    def step(self, actions: F) -> tuple[dict[str, NDArray[np.floating]], F, NDArray[np.bool_], dict[str, Any]]:
        obs, done, info = self.env.step_walk(actions)
        self.episode_steps += 1
        speed = self.env.forward_speed()
        t, n = self.teacher_envs, self.num_envs
        self._speed_teacher.append(float(speed[:t].mean()) if t else np.nan)
        self._speed_student.append(float(speed[t:].mean()) if n > t else np.nan)
        self._command_vx.append(float(self.env.walk_command[:, 0].mean()))
        ids = np.flatnonzero(done)
        self._finished += list(self.episode_steps[ids[ids >= t]] * self.dt_s)
        self.episode_steps[ids] = 0
        self.teacher.reset(ids)
        keep_calibration_frame(self.frames, obs["depth"], self._steps)
        self._steps += 1
        self._groups = self._observation(obs)  # labelled after the teachers of finished episodes reset
        return self._groups, np.zeros(n), done, {"time_outs": done & ~info["fell"], "log": {}}

    def close(self) -> None:
        self.env.close()

    # -- hooks -------------------------------------------------------------------------------

    def _clear_figures(self) -> None:
        self._speed_teacher: list[float] = []
        self._speed_student: list[float] = []
        self._command_vx: list[float] = []
        self._finished: list[float] = []

    def before_iteration(self, runner: Runner, k: int, total: int | None, fraction: float) -> None:
        assert isinstance(runner.alg, BlendedDistillation)
        runner.alg.set_progress(fraction)

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        t, n = self.teacher_envs, self.num_envs
        assert isinstance(runner.alg, BlendedDistillation)
        row |= {
            "beta": runner.alg.beta,
            "episode_length_s": float(np.mean(self._finished)) if self._finished else float("nan"),
            "running_length_s": float(self.episode_steps[t:].mean() * self.dt_s) if n > t else 0.0,
            "teacher_speed": float(np.nanmean(self._speed_teacher)),
            "student_speed": float(np.nanmean(self._speed_student)) if n > t else float("nan"),
            "command_vx": float(np.mean(self._command_vx)),
        }
        self._clear_figures()
        return row

    # -- the run -----------------------------------------------------------------------------

    def train_cfg(self) -> dict[str, Any]:
        return distillation_cfg(self.cfg, ["policy", DEPTH_GROUP], [TEACHER_GROUP])

    def initialize(self, runner: Runner) -> None:
        torch.manual_seed(self.cfg.run.seed)

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        model = runner.alg.get_policy()
        assert isinstance(model, DepthRecurrentModel)
        model = model.cpu().eval()
        bundle_dir = out / "bundle"
        rows = runner.rows
        provenance = {
            "teacher": TEACHER_PROVENANCE,
            "training": f"training.tasks.student_walk task (rsl_rl distillation), config {size}, "
            f"seed {self.cfg.run.seed}, "
            f"{len(rows)} iterations, {self.num_envs} envs, flat ground and gentle terrain (2-5 cm platforms in "
            "half the episodes)",
            "size": size,
            "data": "none recorded: DAgger labels from the walking policy in training.tasks.student_walk.env (MuJoCo)",
            **run_provenance(self.cfg.run.seed, sum(r["wall_s"] for r in rows), runner.run_totals()),
        }
        export_walking_student(model, bundle_dir, "student_walk", provenance, self.frames, self.manifest)
        return {"teacher_envs": self.teacher_envs, "bundle": str(bundle_dir)}
