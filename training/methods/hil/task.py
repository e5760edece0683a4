"""The ``hil_teacher`` task: HIL's teacher through the one runner: rsl_rl's PPO on the hybrid env, AMP as hooks.

Config: ``training/configs/hil_teacher.yaml`` (``_tiny`` for tests); its ``hil`` section sets the env
split and the discriminator. It is PHP's teacher task (:class:`~training.php_teacher.task.TeacherTask`:
references, adaptive starts, rsl_rl's PPO and ``MLPModel``, ``teacher.pt``) on
:class:`~training.methods.hil.hybrid_env.HybridEnv`: tracking envs earn PHP's tracking reward,
adversarial envs ``task + style`` with the current discriminator. The discriminator is the runner's
hook: every env step's transitions are kept, and after each PPO update ``hil.disc_steps_per_iteration``
steps train it on real transitions from the motion library
(:class:`~training.methods.hil.features.MotionLibrary`) against this iteration's (every policy
transition is "generated", as in AMP). Only the tracking envs' failures reach the start sampler (an
adversarial env's fall is not a tracking failure). ``finish`` also saves ``discriminator.pt``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from training.configs.schema import TrainConfig
from training.envs.reference import Reference
from training.envs.tracking import StartSampler, TrackingConfig
from training.methods.hil.discriminator import AMPDiscriminator, DiscriminatorConfig, DiscriminatorTrainer
from training.methods.hil.features import TRANSITION_DIM, MotionLibrary
from training.methods.hil.hybrid_env import HybridEnv, HybridEnvConfig, hybrid_observation
from training.php_teacher.task import TeacherTask
from training.pipeline.teacher import SkillReference
from training.rl.runner import Runner

DISCRIMINATOR_FILE = "discriminator.pt"


def hybrid_env_config(cfg: TrainConfig) -> HybridEnvConfig:
    h, n = cfg.hil, cfg.env.num_envs
    tracking = round(h.tracking_fraction * n)
    return HybridEnvConfig(
        num_tracking=tracking, num_adversarial=n - tracking, task_weight=h.task_weight, style_weight=h.style_weight,
        arrive_m=h.arrive_m, min_speed_mps=h.min_speed_mps, fall_height_m=h.fall_height_m, max_tilt_rad=h.max_tilt_rad,
    )  # fmt: skip


def discriminator_config(cfg: TrainConfig) -> DiscriminatorConfig:
    h = cfg.hil
    return DiscriminatorConfig(
        hidden=tuple(h.disc_hidden), loss=h.disc_loss, gp_weight=h.disc_gp_weight, learning_rate=h.disc_learning_rate,
        weight_decay=h.disc_weight_decay, batch_size=h.disc_batch_size, steps_per_iteration=h.disc_steps_per_iteration,
        normalize=h.disc_normalize,
    )  # fmt: skip


class HILTeacherTask(TeacherTask):
    """See the module docstring."""

    name = "hil_teacher"
    figures = ("tracking_error_m", "style_reward", "disc_accuracy", "failed_fraction")

    def __init__(
        self, cfg: TrainConfig, num_envs: int | None = None, references: list[SkillReference] | None = None
    ) -> None:
        self.disc_cfg = discriminator_config(cfg)
        self.discriminator = AMPDiscriminator(TRANSITION_DIM, self.disc_cfg.hidden, self.disc_cfg.normalize)
        self.trainer = DiscriminatorTrainer(self.discriminator, self.disc_cfg)
        self.rng = np.random.default_rng(cfg.run.seed + 7)
        super().__init__(cfg, num_envs, references)

    def make_env(self, refs: list[Reference], track: TrackingConfig, start_sampler: StartSampler) -> HybridEnv:
        env = HybridEnv(
            refs, track, hybrid_env_config(self.cfg), start_sampler=start_sampler,
            style_reward_fn=lambda x: self.trainer.reward(torch.from_numpy(x)).numpy(),
        )  # fmt: skip
        self.library = MotionLibrary(refs, env.dt_s, slots=track.max_boxes)
        self.tracking = ~env.adversarial
        return env

    def step(self, actions: NDArray[np.float64]) -> tuple[dict[str, NDArray[np.floating]], Any, Any, dict[str, Any]]:
        self._obs, reward, done, info = self.env.step(actions)
        ids = np.flatnonzero(done & self.tracking)
        if len(ids):
            self.sampler.record(info["episode_start_phase"][ids], info["terminated"][ids])
        self._account(reward, done, info["terminated"])
        self._generated.append(info["transitions"])
        adversarial = self.env.adversarial
        if self.tracking.any():
            self._errors.append(float(np.mean(info["tracking_error"][self.tracking])))
            self._sums["tracking_reward"].append(float(np.mean(info["tracking_reward"][self.tracking])))
        if adversarial.any():
            self._sums["task_reward"].append(float(np.mean(info["task_reward"][adversarial])))
            self._sums["style_reward"].append(float(np.mean(info["style_reward"][adversarial])))
        return {"policy": self._obs}, reward, done, {"time_outs": info["truncated"], "log": {}}

    def _clear_figures(self) -> None:
        super()._clear_figures()
        self._generated: list[NDArray[np.float32]] = []
        self._sums: dict[str, list[float]] = {"tracking_reward": [], "task_reward": [], "style_reward": []}

    def _train_discriminator(self) -> dict[str, float]:
        """The hook's work: real library transitions against this iteration's generated ones."""
        generated = np.concatenate(self._generated) if self._generated else np.zeros((0, TRANSITION_DIM))
        rows = []
        for _ in range(self.disc_cfg.steps_per_iteration if len(generated) else 0):
            b = min(self.disc_cfg.batch_size, len(generated))
            real = torch.from_numpy(self.library.sample(b, self.rng))
            fake = torch.from_numpy(generated[self.rng.integers(0, len(generated), size=b)])
            rows.append(self.trainer.step(real, fake))
        return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]} if rows else {}

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        row |= self._train_discriminator()
        row |= {key: float(np.mean(v)) if v else float("nan") for key, v in self._sums.items()}
        if not self._errors:  # no tracking envs: no tracking error
            self._errors.append(float("nan"))
        return super().after_iteration(runner, k, row)

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        report = super().finish(runner, out, size)
        torch.save(self.discriminator.state_dict(), out / DISCRIMINATOR_FILE)
        return {**report, "discriminator": str(out / DISCRIMINATOR_FILE), "env": dataclasses.asdict(self.env.cfg)}


class HILTeacherAdapter(nn.Module):
    """The HIL policy as a PHP teacher: ``act_inference(privileged)`` puts the privileged observation
    into the hybrid layout with the tracking goal (exact: that goal is a function of it) and returns
    the policy's mean action, so the ``php_student`` task distills it as it would PHP's teacher."""

    def __init__(self, policy: nn.Module) -> None:
        """``policy``: ``act_inference(hybrid observation)`` (``training.php_teacher.task.load_teacher``)."""
        super().__init__()
        self.policy = policy

    @torch.no_grad()
    def act_inference(self, privileged: torch.Tensor) -> torch.Tensor:
        obs = torch.from_numpy(hybrid_observation(privileged.detach().cpu().numpy()))
        return self.policy.act_inference(obs)
