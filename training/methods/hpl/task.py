"""The ``hpl_oracle`` task: HPL's scandot oracle through the one runner (rsl_rl's PPO, curriculum as hooks).

Config: ``training/configs/hpl_oracle.yaml`` (``_tiny`` for tests); its ``hpl`` section sets the
curriculum's levels and the scandot encoder. It is PHP's teacher task
(:class:`~training.php_teacher.task.TeacherTask`) with HPL's parts:

- **references**: a pipeline's curriculum references (``training.methods.hpl.smoke.curriculum_references``:
  reference ``r`` at level ``l`` is entry ``r * levels + l``, a hurdle of that level across its path);
- **episodes** start at the start of their terrain; each environment's reference copy is chosen by
  its curriculum level (:class:`~training.methods.hpl.curriculum.Curriculum`), which moves after every
  episode by the distance covered along the path over the path's length (``completion``);
- **actor**: :class:`~training.methods.hpl.oracle.ScandotModel` (rsl_rl's ``MLPModel`` whose latent
  encodes the height scan as scandots); the critic is an ``MLPModel`` on the whole observation.

``finish`` saves the actor's labels as ``teacher.pt`` (:class:`~training.methods.hpl.oracle.ScandotActor`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from training.configs.schema import TrainConfig
from training.envs.privileged import term_slices
from training.envs.reference import Reference
from training.envs.tracking import StartSampler, TrackingConfig, TrackingEnv
from training.methods.hpl.curriculum import Curriculum, CurriculumConfig
from training.methods.hpl.oracle import oracle_actor_cfg
from training.php_teacher.task import TeacherTask
from training.pipeline.teacher import SkillReference
from training.rl.runner import Runner


def path_of(ref: Reference) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Start xy, unit direction and length of the reference's root path (start to end)."""
    start, end = ref.root_pos[0, :2], ref.root_pos[-1, :2]
    length = float(np.linalg.norm(end - start))
    direction = (end - start) / length if length > 1e-6 else np.array([1.0, 0.0])
    return start, direction, length


def completion(ref: Reference, final_xy: NDArray[np.float64]) -> float:
    """Distance covered along the path over the path's length (episodes start at the path's start)."""
    start, direction, length = path_of(ref)
    return float(np.dot(final_xy - start, direction) / length) if length > 1e-6 else 1.0


class HPLOracleTask(TeacherTask):
    """See the module docstring."""

    name = "hpl_oracle"
    figures = ("episode_return", "completion", "mean_level", "failed_fraction")

    def __init__(
        self, cfg: TrainConfig, num_envs: int | None = None, references: list[SkillReference] | None = None
    ) -> None:
        levels = cfg.hpl.levels
        if references is None or len(references) % levels:
            raise ValueError(
                f"hpl_oracle trains on curriculum references (every reference at each of hpl.levels = {levels} "
                "levels: training.methods.hpl.smoke.curriculum_references)"
            )
        self.levels, self.base_count = levels, len(references) // levels
        self.ref_rng = np.random.default_rng(cfg.run.seed)
        self.pelvis = term_slices()["pelvis_pos_w"]
        super().__init__(cfg, num_envs, references)

    def make_env(self, refs: list[Reference], track: TrackingConfig, start_sampler: StartSampler) -> TrackingEnv:
        track = dataclasses.replace(track, max_boxes=max(len(r.terrain) for r in refs))
        self.curriculum = Curriculum(track.num_envs, CurriculumConfig(levels=self.levels), self.cfg.run.seed)
        curriculum, rng, base = self.curriculum, self.ref_rng, self.base_count
        return TrackingEnv(
            refs, track,
            start_sampler=lambda ids, ref_ids, _: np.zeros(len(ids), dtype=np.int64),
            ref_sampler=lambda ids, _: rng.integers(0, base, size=len(ids)) * self.levels + curriculum.levels[ids],
        )  # fmt: skip

    def step(self, actions: NDArray[np.float64]) -> tuple[dict[str, NDArray[np.floating]], Any, Any, dict[str, Any]]:
        ref_ids = self.env.ref_id.copy()
        self._obs, reward, done, info = self.env.step(actions)
        ids = np.flatnonzero(done)
        if len(ids):
            final_xy = info["final_obs"][:, self.pelvis][:, :2]
            refs = self.env.references
            done_completion = np.array([completion(refs[ref_ids[i]], xy) for i, xy in zip(ids, final_xy, strict=True)])
            self._completions += done_completion.tolist()
            self.curriculum.record(ids, done_completion)
        self._account(reward, done, info["terminated"])
        self._errors.append(float(np.mean(info["tracking_error"])))
        return {"policy": self._obs}, reward, done, {"time_outs": info["truncated"], "log": {}}

    def _clear_figures(self) -> None:
        super()._clear_figures()
        self._completions: list[float] = []

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        row |= {
            "completion": float(np.mean(self._completions)) if self._completions else float("nan"),
            "mean_level": self.curriculum.mean_level(),
        }
        return super().after_iteration(runner, k, row)

    def train_cfg(self) -> dict[str, Any]:
        cfg = super().train_cfg()
        actor = cfg["actor"]
        h = self.cfg.hpl
        cfg["actor"] = oracle_actor_cfg(
            actor["hidden_dims"], h.encoder_hidden, h.latent_dim, activation=actor["activation"],
            obs_normalization=actor["obs_normalization"], distribution_cfg=actor["distribution_cfg"],
        )  # fmt: skip
        return cfg

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        c = self.curriculum
        return {
            **super().finish(runner, out, size),
            "curriculum": {
                "levels": self.levels, "final_levels": c.levels.tolist(), "promotions": c.promotions,
                "demotions": c.demotions,
            },
        }  # fmt: skip
