"""The ``student_step`` task: PHP's hybrid DAgger + PPO on a course of low platforms (stage 2).

Config: ``training/tasks/student_step/presets/student_step.yaml`` (``student_step_tiny.yaml`` for tests). The student
starts from stage 1's weights (``run.init``: a student-walk bundle) and acts on its own, drawing from
its Gaussian. :class:`~training.rl.algorithms.HybridPPO` minimises ``lambda_PPO L_PPO + lambda_D L_D``
(both terms: :class:`StepTask`).

The schedule is gated on success (``distill.gate_rate``): it advances one iteration only while the
trailing step-up rate (platforms of 7.5 cm and more, over ``SCORE_WINDOW`` iterations) has reached
the gate, so lambda_D stays high until the student steps up. The curriculum raises the platforms'
upper height linearly from ``course.start_cap_m`` to ``course.max_height_m`` over the first
``course.curriculum_fraction`` of the run. The exported weights are those with the best trailing
step-up rate once the curriculum is at full height, else the final ones; the final ones are kept
beside (``final_checkpoint.pt``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from parkour_core.bundle import load_bundle
from parkour_core.hashing import sha256_file
from parkour_core.paths import shown_path
from training.configs.schema import TrainConfig
from training.envs.physics import Physics
from training.rl.algorithms import HybridPPO
from training.rl.models import DEPTH_GROUP, TEACHER_GROUP, DepthRecurrentModel
from training.rl.runner import Runner
from training.rl.task_cfg import hybrid_student_cfg
from training.tasks.climb_teacher.policy import ClimbTeacherLabels
from training.tasks.student_step.env import StepEnv
from training.tasks.student_step.teacher import StepTeacher
from training.tasks.student_walk.bundle import (
    export_walking_student,
    keep_calibration_frame,
    load_checkpoint,
    run_provenance,
    student_dims,
)
from training.tasks.student_walk.env import walk_student_manifest
from training.tasks.student_walk.task import walk_config
from training.tasks.student_walk.teacher import REPO, TEACHER_PROVENANCE, WALK_BUNDLE

F = NDArray[np.float64]
DEFAULT_INIT = REPO / "models" / "student_walk"
HEIGHT_BINS_M = (0.04, 0.075, 0.125, 0.175, 0.23, 0.275, 0.325, 0.38, 0.42)  # around 5, 10, ... 40 cm
HEIGHT_BIN_NAMES_CM = (5, 10, 15, 20, 25, 30, 35, 40)  # a run logged before 25-40 cm were binned has the first four
SCORE_WINDOW = 20


def by_height(heights_m: list[float]) -> list[int]:
    """Platform counts in ``HEIGHT_BINS_M``: the training figures' ``cleared_by_height`` and ``fell_by_height``."""
    return np.histogram(heights_m, HEIGHT_BINS_M)[0].tolist()


def step_up_rate(rows: list[dict[str, Any]]) -> float:
    """Platforms of 7.5 cm and more cleared / (cleared + falls on them) over ``rows``."""
    cleared = sum(sum(r["cleared_by_height"][1:]) for r in rows)
    fell = sum(sum(r["fell_by_height"][1:]) for r in rows)
    return cleared / (cleared + fell) if cleared + fell else 0.0


class StepTask:
    """A :class:`~training.rl.env.TaskEnv` over StepEnv + StepTeacher, and the runner's hooks.

    - L_D: the MSE of the policy's mean to the terrain-aware teacher's labels at every step the student
      visited. The teacher is the trained climbing teacher when ``distill.teacher_checkpoints`` names its
      ``teacher.pt`` (``ClimbTeacherLabels``: the walking policy plus the residual PPO learned,
      privileged), else ``StepTeacher`` (the walking policy, commanded ``course.teacher_command_gain``
      times the student's forward speed, plus a hand-written step-up reflex); with
      ``course.supervisor_limits`` the labels' targets are clamped as the motors get them, and targets the
      supervisor would refuse end the episode as a fall (``StepEnv``);
    - L_PPO: rsl_rl's clipped surrogate on ``StepEnv``'s reward (velocity tracked along the course, a
      platform bonus, a heavy fall cost), advantages by GAE from an asymmetric critic that reads the
      student's observation and the privileged one (height scan included).
    """

    name = "student_step"
    figures = ("dagger", "dagger_weight", "step_up_rate_window", "height_cap_m")

    def __init__(self, cfg: TrainConfig, num_envs: int | None = None) -> None:
        self.cfg = cfg
        n = self.num_envs = num_envs or cfg.env.num_envs
        walker = load_bundle(WALK_BUNDLE).manifest  # the student runs under the walking policy's PD, as in stage 1
        self.manifest = walk_student_manifest(
            "student_step", cfg.policy.rnn_hidden, cfg.policy.depth_latent, walker, cfg.env.control_hz
        )
        self.course = cfg.course
        self.env = StepEnv(walk_config(cfg, n), self.manifest, self.course)
        self.teacher: StepTeacher | ClimbTeacherLabels
        if cfg.distill.teacher_checkpoints:
            path = Path(cfg.distill.teacher_checkpoints[0])
            self.teacher = ClimbTeacherLabels(n, self.env.tracking.sim, path if path.is_absolute() else REPO / path)
        else:
            self.teacher = StepTeacher(n, self.env.tracking.sim, command_gain=cfg.course.teacher_command_gain)
        self.num_actions = self.env.num_actions
        self.dt_s = self.env.tracking.dt_s
        self.max_episode_length = round(cfg.env.episode_length_s / self.dt_s)
        self.teacher.reset()
        self._groups = self._observation(self.env.reset())
        self.frames: list[NDArray[np.float32]] = []
        self.schedule_k = 0  # the hybrid schedule's iteration: advances only on success (distill.gate_rate)
        self.best: tuple[float, int, dict[str, torch.Tensor] | None] = (-1.0, -1, None)
        self._steps = 0
        self._clear_figures()

    @property
    def physics(self) -> Physics:
        return self.env.tracking.sim

    # -- TaskEnv -----------------------------------------------------------------------------

    def _observation(self, obs: dict[str, NDArray[np.float32]]) -> dict[str, NDArray[np.floating]]:
        label = self.teacher.act(self.env.walk_command, self.env.tracking.last_action, self.env.gait_phase)
        label = self.env.supervised_actions(label)
        return {"policy": obs["policy"], DEPTH_GROUP: obs["depth"], "privileged": obs["privileged"],
                TEACHER_GROUP: label}  # fmt: skip

    def observe(self) -> dict[str, NDArray[np.floating]]:
        return self._groups

    def step(self, actions: F) -> tuple[dict[str, NDArray[np.floating]], F, NDArray[np.bool_], dict[str, Any]]:
        env = self.env
        obs, reward, done, info = env.step_course(actions)
        self._falls += int(info["fell"].sum())
        self._left_lane += int(info["left_lane"].sum())
        self._refused += int(info["refused"].sum())
        self._cleared += list(info["cleared_heights"])
        self._fell += list(info["fell_heights"])
        course = env.on_course
        self._speeds.append(env.forward_speed()[course].mean() if course.any() else np.nan)
        self._commands.append(env.walk_command[course, 0].mean() if course.any() else np.nan)
        self._tracks.append(float(info["track"].mean()))
        self._rewards.append(float(np.mean(reward)))
        self.teacher.reset(np.flatnonzero(done))
        keep_calibration_frame(self.frames, obs["depth"], self._steps)
        self._steps += 1
        self._groups = self._observation(obs)
        time_outs = done & ~info["fell"]
        return self._groups, reward, done, {"time_outs": time_outs, "log": {}}

    def close(self) -> None:
        self.env.close()

    # -- hooks -------------------------------------------------------------------------------

    def _clear_figures(self) -> None:
        self._falls = self._left_lane = self._refused = 0
        self._cleared: list[float] = []
        self._fell: list[float] = []
        self._speeds: list[float] = []
        self._commands: list[float] = []
        self._tracks: list[float] = []
        self._rewards: list[float] = []

    def before_iteration(self, runner: Runner, k: int, total: int | None, fraction: float) -> None:
        c = self.course
        progress = k / total if total else 0.0  # a time box's K is known after its pace iterations
        self.env.height_cap_m = self.cfg.course.start_cap_m + (c.max_height_m - self.cfg.course.start_cap_m) * min(
            1.0, progress / self.cfg.course.curriculum_fraction
        )
        alg = runner.alg
        assert isinstance(alg, HybridPPO)
        alg.total_iterations = total or 1_000_000  # until a time box's K is known: the schedules' start
        alg.schedule_iteration = self.schedule_k

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        samples = runner.cfg["num_steps_per_env"] * self.num_envs
        row |= {
            "height_cap_m": self.env.height_cap_m,
            "reward_per_s": float(np.mean(self._rewards) / self.dt_s),
            "track": float(np.mean(self._tracks)),
            "course_speed": float(np.nanmean(self._speeds)) if not np.all(np.isnan(self._speeds)) else float("nan"),
            "course_command_vx": float(np.nanmean(self._commands)) if not np.all(np.isnan(self._commands)) else 0.0,
            "cleared_by_height": by_height(self._cleared),
            "fell_by_height": by_height(self._fell),
            "falls_per_1000_steps": 1000.0 * self._falls / samples,
            "left_lane_per_1000_steps": 1000.0 * self._left_lane / samples,
            "refused_per_1000_steps": 1000.0 * self._refused / samples,
        }
        self._clear_figures()
        score = step_up_rate([*runner.rows[-(SCORE_WINDOW - 1) :], row])
        row["step_up_rate_window"] = score
        row["schedule_iteration"] = self.schedule_k
        if score >= self.cfg.distill.gate_rate:
            self.schedule_k += 1
        total = runner.total_iterations
        if total and k >= self.cfg.course.curriculum_fraction * total + SCORE_WINDOW and score > self.best[0]:
            self.best = (score, k, copy.deepcopy(runner.alg.get_policy().state_dict()))
        return row

    # -- the run -----------------------------------------------------------------------------

    def train_cfg(self) -> dict[str, Any]:
        return hybrid_student_cfg(self.cfg, ["policy", "privileged"])

    def initialize(self, runner: Runner) -> None:
        model = runner.alg.get_policy()
        assert isinstance(model, DepthRecurrentModel)
        self.init = Path(self.cfg.run.init) if self.cfg.run.init else None
        if self.init is not None:
            load_checkpoint(model, self.init if self.init.is_absolute() else REPO / self.init)

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        model = runner.alg.get_policy()
        assert isinstance(model, DepthRecurrentModel)
        chosen = self.keep_final_load_best(model, out)
        model = model.cpu().eval()
        rows = runner.rows
        provenance = {
            "teacher": self.teacher_provenance(),
            "training": f"training.tasks.student_step task (rsl_rl PPO + PHP's hybrid loss), config {size}, seed "
            f"{self.cfg.run.seed}, {len(rows)} iterations, {self.num_envs} envs, platforms "
            f"{100 * self.course.min_height_m:.0f}-{100 * self.course.max_height_m:.0f} cm, gate "
            f"{self.cfg.distill.gate_rate}, progress reward {self.course.progress_reward}, teacher command gain "
            f"{self.cfg.course.teacher_command_gain}, supervisor limits {self.course.supervisor_limits}, from "
            f"{self.init if self.init is not None else 'random weights'}; {chosen}",
            "size": size,
            "data": "none recorded: DAgger labels and rewards from training.tasks.student_step.env (MuJoCo)",
            **run_provenance(self.cfg.run.seed, sum(r["wall_s"] for r in rows), runner.run_totals()),
        }
        bundle_dir = out / "bundle"
        export_walking_student(model, bundle_dir, "student_step", provenance, self.frames, self.manifest)
        return self.report(rows, bundle_dir)

    def teacher_provenance(self) -> dict[str, Any]:
        if isinstance(self.teacher, ClimbTeacherLabels):
            t = self.teacher.teacher
            return {
                **TEACHER_PROVENANCE,
                "trained_teacher": shown_path(t.path),
                "trained_teacher_sha256": sha256_file(t.path),
                "trained_teacher_provenance": t.provenance,
            }
        reflex = "training.tasks.student_step.teacher: a privileged step-up reflex added to the walking policy"
        return {**TEACHER_PROVENANCE, "reflex": reflex}

    def keep_final_load_best(self, model: DepthRecurrentModel, out: Path) -> str:
        """Save the final weights beside (``final_checkpoint.pt``), load the best ones; says which these are."""
        final = {k: v.detach().clone().cpu() for k, v in model.pair_state_dict().items()}
        torch.save({"student": student_dims(model), "state_dict": final}, out / "final_checkpoint.pt")
        if self.best[2] is None:
            return "final weights"
        model.load_state_dict(self.best[2])
        return f"weights of iteration {self.best[1]} (best trailing step-up rate {self.best[0]:.2f})"

    def report(self, rows: list[dict[str, Any]], bundle_dir: Path) -> dict[str, Any]:
        """The run's figures for ``student_step.json``: the start, the gate, the platforms by height, the export."""
        return {
            "init": str(self.init) if self.init is not None else None,
            "gate_rate": self.cfg.distill.gate_rate,
            "teacher_command_gain": self.cfg.course.teacher_command_gain,
            "supervisor_limits": self.course.supervisor_limits,
            "cleared_by_height": np.sum([r["cleared_by_height"] for r in rows], axis=0).tolist(),
            "fell_by_height": np.sum([r["fell_by_height"] for r in rows], axis=0).tolist(),
            "bundle": str(bundle_dir),
            "exported_iteration": self.best[1] if self.best[2] is not None else len(rows) - 1,
            "exported_step_up_rate_window": self.best[0] if self.best[2] is not None else None,
        }
