"""The ``php_student`` task: PHP's hybrid DAgger + PPO from a tracking teacher into the depth student.

Config: ``training/tasks/php_student/presets/php_student.yaml`` (``php_student_tiny.yaml`` for tests). The teacher is a
``php_teacher`` run's ``teacher.pt`` (``distill.teacher_checkpoints[0]``, or handed in by a pipeline);
the references are the teacher's (``env.motions`` cut to ``env.reference_s``, or handed in). What
every iteration does: :class:`StudentTask`. ``finish`` exports the student as a bundle (``OUT/bundle``:
int8 where it passes the parity check).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from training.algorithms.sampling import AdaptiveStartSampler
from training.algorithms.schedules import termination_threshold
from training.configs.schema import TrainConfig
from training.envs.physics import Physics
from training.envs.student import CameraConfig, StudentConfig, StudentEnv
from training.export.student import student_manifest
from training.rl.algorithms import HybridPPO
from training.rl.models import DEPTH_GROUP, TEACHER_GROUP, DepthRecurrentModel
from training.rl.runner import Runner
from training.rl.task_cfg import hybrid_student_cfg
from training.tasks.php_teacher.task import TrackingTeacher, load_teacher, references_for
from training.tasks.php_teacher.tracking import SkillReference, phase_start_sampler, skill_ref_sampler, tracking_config
from training.tasks.student_walk.bundle import export_depth_student, keep_calibration_frame, run_provenance

MASK_GROUP = "dagger_mask"
UNKNOWN_TOTAL = 1_000_000  # K until a time box knows its pace: the schedules stay at their start


def set_schedule_point(runner: Runner, k: int, total: int) -> None:
    """Where HybridPPO's lambda_D / lambda_PPO schedule stands: iteration ``k`` of ``total``."""
    alg = runner.alg
    assert isinstance(alg, HybridPPO)
    alg.total_iterations, alg.schedule_iteration = total, k


def figures_row(shares: list[dict[str, list[float]]], termination_m: float) -> dict[str, Any]:
    """An iteration's figures from the ``take_figures`` of one or more equal shares of the environments."""
    joined = {key: [v for share in shares for v in share[key]] for key in shares[0]}
    ended = len(joined["finished_returns"])
    return {
        "termination_m": termination_m,
        "imitated_fraction": float(np.mean(joined["imitated"])),
        "tracking_error_m": float(np.mean(joined["errors"])),
        "reward_per_step": float(np.mean(joined["rewards"])),
        "episode_return": float(np.mean(joined["finished_returns"] if ended else joined["running_returns"])),
        "episodes": ended,
    }


class StudentTask:
    """A :class:`~training.rl.env.TaskEnv` over StudentEnv with the teacher's labels, and the runner's hooks.

    Every iteration ``k`` of ``K``:

    - the student env's termination is relaxed on PHP's schedule (``schedules.termination_threshold``,
      0.5 m -> 1.0 m by K/2), and :class:`~training.rl.algorithms.HybridPPO` weighs
      ``lambda_PPO L_PPO + lambda_D L_D`` at ``k`` (lambda_D ramped down, floored at 0.1);
    - skills are drawn with equal probability, then one of the skill's references; start phases are
      uniform (adaptive sampling is the teacher's, not the student's);
    - the student acts on its own observation (the bundle's proprioceptive terms, the simulated depth
      image, the command); the teacher labels every step from its privileged observation of the same
      state (observation group ``teacher_actions``), and the critic reads that privileged observation;
    - L_D counts only the steps whose state is within the teachers' original 0.5 m of the reference
      (group ``dagger_mask``), latched off until the episode ends once broken (``distill.latch_mask``).
    """

    name = "php_student"
    figures = ("tracking_error_m", "imitated_fraction", "termination_m", "reward_per_step")

    def __init__(
        self,
        cfg: TrainConfig,
        num_envs: int | None = None,
        references: list[SkillReference] | None = None,
        teacher: TrackingTeacher | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        """``references``, ``teacher``: a pipeline's own, instead of the config's (any teacher with
        ``act_inference(privileged) -> actions``); ``provenance``: what the pipeline adds to the bundle's."""
        if cfg.kind != "student":
            raise ValueError(f"php_student distils a teacher: kind must be 'student', got {cfg.kind!r}")
        if num_envs is not None:
            cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, num_envs=num_envs))
        self.cfg = cfg
        if teacher is None:
            if not cfg.distill.teacher_checkpoints:
                raise ValueError("php_student: set distill.teacher_checkpoints to a php_teacher run's teacher.pt")
            teacher = load_teacher(Path(cfg.distill.teacher_checkpoints[0]))
        self.teacher = teacher.eval()
        self.extra_provenance = provenance or {}
        self.references = references if references is not None else references_for(cfg)
        refs = [r.reference for r in self.references]
        track = tracking_config(cfg, cfg.run.seed + 1)
        s = cfg.sampling
        uniform = AdaptiveStartSampler(s.bins, floor=s.uniform_fraction, decay=s.decay, enabled=s.adaptive)
        p = cfg.policy
        self.manifest = student_manifest(self.name, p.rnn_hidden, {}, {}, latent_dim=p.depth_latent)
        camera = CameraConfig(width=cfg.env.camera_width, height=cfg.env.camera_height)
        self.env = self.make_env(refs, StudentConfig(tracking=track, camera=camera))
        self.env.tracking.start_sampler = phase_start_sampler(uniform, refs, track.min_episode_frames)
        self.env.tracking.ref_sampler = skill_ref_sampler(self.references)
        self.num_envs, self.num_actions = self.env.num_envs, self.env.num_actions
        self.dt_s = self.env.tracking.dt_s
        self.max_episode_length = max(round(r.num_frames / r.fps / self.dt_s) for r in refs)
        self.original_m = cfg.termination.tracking_error_m
        self.imitating = np.ones(self.num_envs, dtype=bool)
        self.frames: list[NDArray[np.float32]] = []
        self._steps = 0
        self._returns = np.zeros(self.num_envs)
        self._groups = self._observation(self.env.reset())
        self._clear_figures()

    @property
    def physics(self) -> Physics:
        return self.env.tracking.sim

    def make_env(self, references: list[Any], config: StudentConfig) -> StudentEnv:
        """The student env (a method with other camera timing makes its own)."""
        return StudentEnv(references, config, self.manifest)

    # -- TaskEnv -----------------------------------------------------------------------------

    def shaped_reward(
        self, before: dict[str, NDArray[np.floating]], after: dict[str, NDArray[np.float32]], reward: Any, done: Any
    ) -> Any:
        """The env's reward, or a method's on top of it (``before``: the groups the action was chosen on,
        ``after``: the env's observation after the step, a new episode's where ``done``)."""
        return reward

    def _observation(self, obs: dict[str, NDArray[np.float32]]) -> dict[str, NDArray[np.floating]]:
        """The groups, with the mask of the state these observations show (its error is 0 after a reset)."""
        within = self.env.tracking.current_tracking_error() <= self.original_m
        self.imitating = (self.imitating & within) if self.cfg.distill.latch_mask else within
        labels = self.teacher.act_inference(torch.from_numpy(obs["privileged"])).numpy()
        return {
            "policy": obs["policy"], DEPTH_GROUP: obs["depth"], "privileged": obs["privileged"],
            TEACHER_GROUP: labels, MASK_GROUP: self.imitating[:, None].astype(np.float32),
        }  # fmt: skip

    def observe(self) -> dict[str, NDArray[np.floating]]:
        return self._groups

    def step(self, actions: NDArray[np.float64]) -> tuple[dict[str, NDArray[np.floating]], Any, Any, dict[str, Any]]:
        self._imitated.append(float(self.imitating.mean()))
        before = self._groups
        obs, reward, done, info = self.env.step(actions)
        reward = self.shaped_reward(before, obs, reward, done)
        ids = np.flatnonzero(done)
        self._returns += reward
        self._finished_returns += self._returns[ids].tolist()
        self._returns[ids] = 0.0
        self.imitating[ids] = True  # a new episode starts imitating
        self._errors.append(float(np.mean(info["tracking_error"])))
        self._rewards.append(float(np.mean(reward)))
        keep_calibration_frame(self.frames, obs["depth"], self._steps)
        self._steps += 1
        self._groups = self._observation(obs)
        return self._groups, reward, done, {"time_outs": info["truncated"], "log": {}}

    def close(self) -> None:
        self.env.close()

    # -- hooks -------------------------------------------------------------------------------

    def _clear_figures(self) -> None:
        self._errors: list[float] = []
        self._rewards: list[float] = []
        self._imitated: list[float] = []
        self._finished_returns: list[float] = []

    def relax_termination(self, k: int, total: int) -> float:
        """PHP's termination at iteration ``k`` of ``total`` (0.5 m -> 1.0 m by K/2), set on the env."""
        t = self.cfg.termination
        self.env.termination_m = termination_threshold(k, total, t.tracking_error_m, t.relaxed_tracking_error_m)
        return self.env.termination_m

    def take_figures(self) -> dict[str, list[float]]:
        """This iteration's per-step means and finished episodes' returns (cleared), and the running returns."""
        figures = {
            "imitated": self._imitated, "errors": self._errors, "rewards": self._rewards,
            "finished_returns": self._finished_returns, "running_returns": self._returns.tolist(),
        }  # fmt: skip
        self._clear_figures()
        return figures

    def before_iteration(self, runner: Runner, k: int, total: int | None, fraction: float) -> None:
        total = total or UNKNOWN_TOTAL
        self.relax_termination(k, total)
        set_schedule_point(runner, k, total)

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        return row | figures_row([self.take_figures()], self.env.termination_m)

    # -- the run -----------------------------------------------------------------------------

    def train_cfg(self) -> dict[str, Any]:
        return hybrid_student_cfg(self.cfg, ["privileged"], mask_group=MASK_GROUP)

    def initialize(self, runner: Runner) -> None:
        torch.manual_seed(self.cfg.run.seed)

    def bundle_provenance(self, runner: Runner, size: str, method: str) -> dict[str, Any]:
        """What the exported bundle says about its training (``method``: the losses, in words)."""
        rows = runner.rows
        return {
            "teacher": "a php_teacher run (training.tasks.php_teacher.task) on the references below",
            "training": f"{type(self).__module__} ({method}), config {size}, seed {self.cfg.run.seed}, "
            f"{len(rows)} iterations, {self.num_envs} envs",
            "references": [r.reference.name for r in self.references],
            "data": "none recorded: DAgger labels and rewards from training.envs.student (MuJoCo)",
            **run_provenance(self.cfg.run.seed, sum(r["wall_s"] for r in rows), runner.run_totals()),
            **self.extra_provenance,
        }

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        model = runner.alg.get_policy()
        assert isinstance(model, DepthRecurrentModel)
        provenance = self.bundle_provenance(runner, size, "rsl_rl PPO + PHP's hybrid loss")
        bundle = out / "bundle"
        export_depth_student(model.cpu().eval(), bundle, f"php_student_{size}", provenance, self.frames, self.manifest)
        return {"bundle": str(bundle), "teacher_envs": 0}
