"""The ``php_teacher`` task: PHP's motion-tracking teacher, trained by rsl_rl's PPO (PHP's step 2).

Config: ``training/tasks/php_teacher/presets/php_teacher.yaml`` (``php_teacher_tiny.yaml`` for tests). References:
``env.motions`` (a ``parkour mm synth`` folder; '' = the synthetic squat), each cut to its first
``env.reference_s`` seconds. Environment: :class:`training.envs.tracking.TrackingEnv` (privileged
observation, domain randomization from the schema), its start phases drawn by PHP's adaptive
sampler (:class:`training.algorithms.sampling.AdaptiveStartSampler`), which is told where each
finished episode started and whether it failed. Episodes that reach the reference's end are time-outs
(rsl_rl bootstraps them). Actor and critic are rsl_rl's ``MLPModel`` with its empirical normalization.
``finish`` saves the actor as ``OUT/teacher.pt``; :func:`load_teacher` gives the students' stages
their labels (``act_inference``: the deterministic action).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from rsl_rl.models import MLPModel
from torch import nn

from training.algorithms.sampling import AdaptiveStartSampler
from training.configs.schema import TrainConfig
from training.envs.physics import Physics
from training.envs.reference import Reference, squat_reference
from training.envs.tracking import StartSampler, TrackingConfig, TrackingEnv
from training.rl.runner import Runner
from training.rl.task_cfg import ppo_mlp_cfg
from training.tasks.php_teacher.tracking import (
    SkillReference,
    cut_reference,
    phase_start_sampler,
    toy_references,
    tracking_config,
)

TEACHER_FILE = "teacher.pt"


def references_for(cfg: TrainConfig) -> list[SkillReference]:
    if cfg.env.motions:
        return toy_references(Path(cfg.env.motions), cfg.env.reference_s or float("inf"))
    squat = squat_reference()
    if cfg.env.reference_s:
        squat = cut_reference(squat, round(cfg.env.reference_s * squat.fps) + 1)
    return [SkillReference("squat", squat)]


class TrackingTeacher(nn.Module):
    """The trained actor on a plain privileged-observation tensor: normalizer, MLP, mean action."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.policy = actor

    @torch.no_grad()
    def act_inference(self, obs: torch.Tensor) -> torch.Tensor:
        return self.policy(obs)


def load_teacher(path: Path) -> TrackingTeacher:
    """``OUT/teacher.pt``: rsl_rl's deterministic export of the actor (``as_jit``), normalizer included."""
    return TrackingTeacher(torch.load(path, map_location="cpu", weights_only=False)).eval()


class TeacherTask:
    """A :class:`~training.rl.env.TaskEnv` over TrackingEnv with adaptive starts, and the runner's hooks."""

    name = "php_teacher"
    figures = ("tracking_error_m", "reward_per_step", "episode_length_s", "failed_fraction")

    def __init__(
        self, cfg: TrainConfig, num_envs: int | None = None, references: list[SkillReference] | None = None
    ) -> None:
        """``references``: a caller's own (the smoke chain's toy references), instead of the config's."""
        if cfg.kind != "teacher":
            raise ValueError(f"php_teacher trains a teacher: kind must be 'teacher', got {cfg.kind!r}")
        if num_envs is not None:
            cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, num_envs=num_envs))
        self.cfg = cfg
        self.references = references if references is not None else references_for(cfg)
        refs = [r.reference for r in self.references]
        track = tracking_config(cfg, cfg.run.seed)
        s = cfg.sampling
        self.sampler = AdaptiveStartSampler(s.bins, floor=s.uniform_fraction, decay=s.decay, enabled=s.adaptive)
        self.env = self.make_env(refs, track, phase_start_sampler(self.sampler, refs, track.min_episode_frames))
        self.num_envs, self.num_actions, self.dt_s = self.env.num_envs, self.env.num_actions, self.env.dt_s
        self.max_episode_length = max(round(r.num_frames / r.fps / self.dt_s) for r in refs)
        self._obs = self.env.reset()
        self._returns = np.zeros(self.num_envs)
        self._clear_figures()

    def make_env(self, refs: list[Reference], track: TrackingConfig, start_sampler: StartSampler) -> Any:
        """The environment (a method's own over the same references, tracking config and start sampler)."""
        return TrackingEnv(refs, track, start_sampler=start_sampler)

    @property
    def physics(self) -> Physics:
        return self.env.sim

    # -- TaskEnv -----------------------------------------------------------------------------

    def observe(self) -> dict[str, NDArray[np.floating]]:
        return {"policy": self._obs}

    def step(self, actions: NDArray[np.float64]) -> tuple[dict[str, NDArray[np.floating]], Any, Any, dict[str, Any]]:
        self._obs, reward, done, info = self.env.step(actions)
        ids = np.flatnonzero(done)
        if len(ids):
            self.sampler.record(info["episode_start_phase"][ids], info["terminated"][ids])
        self._account(reward, done, info["terminated"])
        self._errors.append(float(np.mean(info["tracking_error"])))
        return {"policy": self._obs}, reward, done, {"time_outs": info["truncated"], "log": {}}

    def _account(self, reward: NDArray[np.float64], done: NDArray[np.bool_], terminated: NDArray[np.bool_]) -> None:
        """Returns of finished episodes, failures, reward per step: the figures every tracking teacher shows."""
        ids = np.flatnonzero(done)
        self._returns += reward
        if len(ids):
            self._failed += int(terminated[ids].sum())
            self._finished_returns += self._returns[ids].tolist()
            self._returns[ids] = 0.0
        self._rewards.append(float(np.mean(reward)))

    def close(self) -> None:
        self.env.close()

    # -- hooks -------------------------------------------------------------------------------

    def _clear_figures(self) -> None:
        self._errors: list[float] = []
        self._rewards: list[float] = []
        self._finished_returns: list[float] = []
        self._failed = 0

    def before_iteration(self, runner: Runner, k: int, total: int | None, fraction: float) -> None:
        pass

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        ended = len(self._finished_returns)
        row |= {
            "tracking_error_m": float(np.mean(self._errors)),
            "reward_per_step": float(np.mean(self._rewards)),
            # This iteration's finished episodes (rsl_rl's mean_reward is over the last 100), else the
            # running ones so far: a number from the first iteration on.
            "episode_return": float(np.mean(self._finished_returns if ended else self._returns)),
            "episode_length_s": row.get("mean_episode_length", float("nan")) * self.dt_s,
            "episodes": ended,
            "failed_fraction": self._failed / ended if ended else 0.0,
        }
        self._clear_figures()
        return row

    # -- the run -----------------------------------------------------------------------------

    def train_cfg(self) -> dict[str, Any]:
        return ppo_mlp_cfg(self.cfg, ["policy"], ["policy"])

    def initialize(self, runner: Runner) -> None:
        torch.manual_seed(self.cfg.run.seed)

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        actor = runner.alg.get_policy()
        assert isinstance(actor, MLPModel)
        path = out / TEACHER_FILE
        torch.save(actor.cpu().eval().as_jit(), path)
        return {
            "teacher": str(path),
            "references": [
                {"name": r.reference.name, "skill": r.skill, "frames": r.reference.num_frames} for r in self.references
            ],
            "start_sampler_probabilities": self.sampler.probabilities().tolist(),
        }
