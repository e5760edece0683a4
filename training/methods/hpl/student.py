"""The ``hpl_student`` task: HPL's DAgger from the scandot oracle into the depth student, through the one runner.

Config: ``training/configs/hpl_student.yaml`` (``hpl_student_tiny.yaml`` for tests), section ``hpl``.
The runner, rsl_rl's storage and :class:`~training.rl.algorithms.HybridPPO` (with the DAgger term
and its mask) are PHP's student's; what HPL changes (the labels, the processes, the loss) is on
:class:`HPLStudentTask`.

What rsl_rl cannot express: HPL's layout of one trainer and N **asynchronous** collectors, each
rolling out with whatever student weights it last received (one or more updates old) while the
trainer updates. rsl_rl's runner acts in the trainer process, synchronously: every action comes
from the current policy, every step waits for all environments, and the update waits for the
rollout. So the workers here step in lock-step with the runner and there is no weight lag; what
the processes buy is the environments and the oracle's labels stepping in parallel.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from training.configs.schema import TrainConfig
from training.envs.student import StudentConfig, StudentEnv
from training.export.student import student_manifest
from training.php_student.task import (
    MASK_GROUP,
    UNKNOWN_TOTAL,
    StudentTask,
    figures_row,
    set_schedule_point,
)
from training.php_teacher.task import TrackingTeacher, load_teacher
from training.pipeline.teacher import SkillReference
from training.rl.models import DepthRecurrentModel
from training.rl.runner import Runner
from training.rl.task_cfg import hybrid_student_cfg
from training.rl.workers import Workers
from training.student_walk.bundle import CALIBRATION_FRAMES, export_depth_student, run_provenance


class HPLShare(StudentTask):
    """PHP's student task over one share of the environments, on the curriculum references (their hurdles
    need more box slots than the default)."""

    name = "hpl_student"

    def make_env(self, references: list[Any], config: StudentConfig) -> StudentEnv:
        boxes = max(len(r.terrain) for r in references)
        tracking = dataclasses.replace(config.tracking, max_boxes=max(boxes, config.tracking.max_boxes))
        return super().make_env(references, dataclasses.replace(config, tracking=tracking))


def share_config(cfg: TrainConfig, num_envs: int, rank: int) -> TrainConfig:
    """Share ``rank``'s config: its environments and its seed (``run.seed + rank``, as rsl_rl seeds its ranks)."""
    return dataclasses.replace(
        cfg,
        env=dataclasses.replace(cfg.env, num_envs=num_envs),
        run=dataclasses.replace(cfg.run, seed=cfg.run.seed + rank),
    )


class HPLStudentTask:
    """A :class:`~training.rl.env.TaskEnv` over the workers, and the runner's hooks.

    - the labels: the oracle (an ``hpl_oracle`` run's ``teacher.pt``, ``distill.teacher_checkpoints[0]``,
      or handed in by the smoke chain) labels every step from its privileged observation, where the
      environments are: each of the ``hpl.workers`` shares of the environments is PHP's student task
      (:class:`HPLShare`) with its own copy of the oracle, and the labels reach the algorithm as the
      ``teacher_actions`` observation group, as a PHP teacher's do;
    - the processes: with ``hpl.processes`` every share runs in its own worker process
      (:class:`~training.rl.workers.Workers`: each step fans the actions out and gathers the
      observations, labels and rewards back); without, the same shares step in turn in this process;
    - the loss: HPL distils by DAgger alone. ``hpl.pure_dagger`` holds PHP's schedule at its start
      (lambda_D = 1, lambda_PPO = 0, the 0.5 m termination); the critic still fits the returns, unused.
      ``pure_dagger: false`` runs PHP's hybrid schedule instead.

    The references are the oracle's curriculum references
    (``training.methods.hpl.smoke.curriculum_references``, handed in), all levels sampled uniformly (the
    oracle's curriculum is not carried over). ``finish`` exports the student as a bundle (``OUT/bundle``).
    """

    name = "hpl_student"
    figures = StudentTask.figures

    def __init__(
        self,
        cfg: TrainConfig,
        num_envs: int | None = None,
        references: list[SkillReference] | None = None,
        teacher: TrackingTeacher | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        if cfg.kind != "student":
            raise ValueError(f"hpl_student distils the oracle: kind must be 'student', got {cfg.kind!r}")
        if references is None:
            raise ValueError("hpl_student trains on the oracle's curriculum references "
                             "(training.methods.hpl.smoke.curriculum_references), handed in")  # fmt: skip
        if num_envs is not None:
            cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, num_envs=num_envs))
        workers = cfg.hpl.workers
        if cfg.env.num_envs % workers:
            raise ValueError(f"hpl_student: env.num_envs {cfg.env.num_envs} does not split over hpl.workers {workers}")
        if teacher is None:
            if not cfg.distill.teacher_checkpoints:
                raise ValueError("hpl_student: set distill.teacher_checkpoints to an hpl_oracle run's teacher.pt")
            teacher = load_teacher(Path(cfg.distill.teacher_checkpoints[0]))
        self.cfg, self.references, self.extra_provenance = cfg, references, provenance or {}
        share = cfg.env.num_envs // workers
        self.workers = Workers(
            [functools.partial(HPLShare, share_config(cfg, share, rank), None, references, teacher)
             for rank in range(workers)],
            processes=cfg.hpl.processes,
        )  # fmt: skip
        self.num_envs, self.num_actions = self.workers.num_envs, self.workers.num_actions
        self.max_episode_length = self.workers.max_episode_length
        p = cfg.policy
        self.manifest = student_manifest(self.name, p.rnn_hidden, {}, {}, latent_dim=p.depth_latent)
        self.termination_m = cfg.termination.tracking_error_m

    # -- TaskEnv: the workers' ---------------------------------------------------------------

    def observe(self) -> dict[str, NDArray[np.floating]]:
        return self.workers.observe()

    def step(self, actions: NDArray[np.float64]) -> tuple[dict[str, NDArray[np.floating]], Any, Any, dict[str, Any]]:
        return self.workers.step(actions)

    def close(self) -> None:
        self.workers.close()

    # -- hooks -------------------------------------------------------------------------------

    def before_iteration(self, runner: Runner, k: int, total: int | None, fraction: float) -> None:
        total = total or UNKNOWN_TOTAL
        point = 0 if self.cfg.hpl.pure_dagger else k
        self.termination_m = self.workers.call("relax_termination", point, total)[0]
        set_schedule_point(runner, point, total)

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        return row | figures_row(self.workers.call("take_figures"), self.termination_m)

    # -- the run -----------------------------------------------------------------------------

    def train_cfg(self) -> dict[str, Any]:
        return hybrid_student_cfg(self.cfg, ["privileged"], mask_group=MASK_GROUP)

    def initialize(self, runner: Runner) -> None:
        torch.manual_seed(self.cfg.run.seed)

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        model = runner.alg.get_policy()
        assert isinstance(model, DepthRecurrentModel)
        shares = self.workers.call("frames")
        frames = [f for share in zip(*shares, strict=False) for f in share][:CALIBRATION_FRAMES]
        rows = runner.rows
        h = self.cfg.hpl
        provenance = {
            "teacher": "an hpl_oracle run (training.methods.hpl.task): the scandot oracle",
            "training": f"{__name__} (rsl_rl PPO storage, HybridPPO, "
            f"{'DAgger only' if h.pure_dagger else 'PHP hybrid loss'}), config {size}, seed {self.cfg.run.seed}, "
            f"{len(rows)} iterations, {self.num_envs} envs in {h.workers} shares"
            f"{' (worker processes)' if h.processes else ''}",
            "references": [r.reference.name for r in self.references],
            "data": "none recorded: DAgger labels and rewards from training.envs.student (MuJoCo)",
            **run_provenance(self.cfg.run.seed, sum(r["wall_s"] for r in rows), runner.run_totals()),
            **self.extra_provenance,
        }
        bundle = out / "bundle"
        export_depth_student(model.cpu().eval(), bundle, f"hpl_student_{size}", provenance, frames, self.manifest)
        return {"bundle": str(bundle), "workers": h.workers, "processes": h.processes}
