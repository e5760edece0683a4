"""HIL's teacher: PPO on the hybrid env with the AMP style reward, the discriminator trained alongside.

Every iteration: collect ``num_steps_per_env`` steps on all envs of :class:`HybridEnv` (tracking
envs earn PHP's tracking reward, adversarial envs ``task + style`` with the discriminator of the
previous iteration), run the pipeline's PPO update (:func:`training.pipeline.teacher.ppo_update`),
then ``steps_per_iteration`` discriminator steps on real transitions from the motion library
(:class:`~training.methods.hil.features.MotionLibrary`) against the policy's transitions of this
iteration (all envs: every policy transition is "generated", as in AMP).

Start states (reference state initialization) come from the pipeline's adaptive sampler; only the
tracking envs' failures are recorded in it (an adversarial env's fall is not a tracking failure).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from training.algorithms.sampling import AdaptiveStartSampler
from training.configs.schema import TrainConfig
from training.methods.hil.discriminator import AMPDiscriminator, DiscriminatorConfig, DiscriminatorTrainer
from training.methods.hil.features import TRANSITION_DIM, MotionLibrary
from training.methods.hil.hybrid_env import HybridEnv, HybridEnvConfig, hybrid_observation
from training.pipeline.teacher import (
    EpisodeTracker,
    Log,
    SkillReference,
    TeacherPolicy,
    gaussian_sample,
    make_teacher,
    phase_start_sampler,
    ppo_update,
    rollout_batch,
    tracking_config,
)


@dataclass(frozen=True)
class HILConfig:
    """HIL's settings on top of the TrainConfig: the env split and the discriminator."""

    tracking_fraction: float = 0.5  # of cfg.env.num_envs; the rest are adversarial envs
    env: HybridEnvConfig = field(default_factory=HybridEnvConfig)  # num_* are overwritten by the split
    discriminator: DiscriminatorConfig = field(default_factory=DiscriminatorConfig)

    def __post_init__(self) -> None:
        if not 0.0 <= self.tracking_fraction <= 1.0:
            raise ValueError(f"hil.tracking_fraction must be in [0, 1], got {self.tracking_fraction}")

    def split(self, num_envs: int) -> HybridEnvConfig:
        tracking = round(self.tracking_fraction * num_envs)
        return HybridEnvConfig(
            **{**dataclasses.asdict(self.env), "num_tracking": tracking, "num_adversarial": num_envs - tracking}
        )


class HILTeacherAdapter(nn.Module):
    """The HIL policy as a PHP teacher: ``act_inference(privileged)`` puts the privileged observation
    into the hybrid layout with the tracking goal (exact: that goal is a function of it) and returns
    the policy's mean action, so the ``php_student`` task (the smoke's student stage) distills it as is."""

    def __init__(self, policy: TeacherPolicy) -> None:
        super().__init__()
        self.policy = policy

    @torch.no_grad()
    def act_inference(self, privileged: torch.Tensor) -> torch.Tensor:
        obs = torch.from_numpy(hybrid_observation(privileged.detach().cpu().numpy()))
        return self.policy.act_inference(obs)


@dataclass
class HILTeacherResult:
    model: TeacherPolicy
    discriminator: AMPDiscriminator
    iterations: list[dict[str, Any]] = field(default_factory=list)
    sampler_probabilities: list[float] = field(default_factory=list)


def train_hil_teacher(
    references: Sequence[SkillReference], cfg: TrainConfig, hil: HILConfig, seed: int, log: Log = print
) -> HILTeacherResult:
    """PPO + AMP for ``cfg.run.max_iterations`` iterations of ``num_envs x num_steps_per_env`` steps."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed + 7)
    refs = [r.reference for r in references]
    track_cfg = tracking_config(cfg, seed)
    s = cfg.sampling
    sampler = AdaptiveStartSampler(s.bins, floor=s.uniform_fraction, decay=s.decay, enabled=s.adaptive)
    dcfg = hil.discriminator
    disc = AMPDiscriminator(TRANSITION_DIM, dcfg.hidden, dcfg.normalize)
    trainer = DiscriminatorTrainer(disc, dcfg)
    env = HybridEnv(
        refs,
        track_cfg,
        hil.split(cfg.env.num_envs),
        start_sampler=phase_start_sampler(sampler, refs, track_cfg.min_episode_frames),
        style_reward_fn=lambda x: trainer.reward(torch.from_numpy(x)).numpy(),
    )
    library = MotionLibrary(refs, env.dt_s, slots=track_cfg.max_boxes)
    model = make_teacher(cfg, env.num_obs, env.num_actions)
    hybrid = cfg.hybrid_config()
    optimizer = torch.optim.Adam(model.parameters(), lr=hybrid.learning_rate)
    lr = hybrid.learning_rate
    gamma, lam = cfg.ppo.gamma, cfg.ppo.lam
    steps, n, a = cfg.ppo.num_steps_per_env, env.num_envs, env.num_actions
    tracking = ~env.adversarial
    result = HILTeacherResult(model, disc)
    episodes = EpisodeTracker(n)
    try:
        obs = torch.from_numpy(env.reset())
        for k in range(cfg.run.max_iterations):
            started = time.perf_counter()
            buf = {
                "obs": torch.zeros(steps, n, env.num_obs),
                "actions": torch.zeros(steps, n, a),
                "log_probs": torch.zeros(steps, n),
                "values": torch.zeros(steps, n),
                "rewards": torch.zeros(steps, n),
                "dones": torch.zeros(steps, n, dtype=torch.bool),
                "mean": torch.zeros(steps, n, a),
                "std": torch.zeros(steps, n, a),
            }
            fake = np.zeros((steps, n, TRANSITION_DIM), dtype=np.float32)
            sums = dict.fromkeys(("tracking_error_m", "tracking_reward", "task_reward", "style_reward"), 0.0)
            for t in range(steps):
                model.normalizer.update(obs)
                with torch.no_grad():
                    dist = model.action_distribution(obs)
                    action = gaussian_sample(dist.mean, dist.stddev, generator)
                    buf["log_probs"][t] = dist.log_prob(action).sum(-1)
                    buf["values"][t] = model.value(obs)
                buf["obs"][t], buf["actions"][t], buf["mean"][t], buf["std"][t] = obs, action, dist.mean, dist.stddev
                next_obs, reward, done, info = env.step(action.numpy().astype(np.float64))
                fake[t] = info["transitions"]
                episodes.add(reward, done, info["terminated"])
                ids = np.flatnonzero(done & tracking)
                if len(ids):
                    sampler.record(info["episode_start_phase"][ids], info["terminated"][ids])
                ids = np.flatnonzero(done)
                reward = reward.copy()
                timed_out = info["truncated"][ids]
                if timed_out.any():  # bootstrap time-outs: the episode did not fail
                    with torch.no_grad():
                        final_values = model.value(torch.from_numpy(info["final_obs"][timed_out])).numpy()
                    reward[ids[timed_out]] += gamma * final_values
                buf["rewards"][t] = torch.from_numpy(reward).float()
                buf["dones"][t] = torch.from_numpy(done)
                if tracking.any():
                    sums["tracking_error_m"] += float(np.mean(info["tracking_error"][tracking]))
                    sums["tracking_reward"] += float(np.mean(info["tracking_reward"][tracking]))
                if env.adversarial.any():
                    sums["task_reward"] += float(np.mean(info["task_reward"][env.adversarial]))
                    sums["style_reward"] += float(np.mean(info["style_reward"][env.adversarial]))
                obs = torch.from_numpy(next_obs)
            batch = rollout_batch(model, buf, obs, gamma, lam)
            collected = time.perf_counter()
            lr, losses = ppo_update(model, optimizer, batch, hybrid, lr, generator)
            generated = fake.reshape(steps * n, TRANSITION_DIM)
            disc_rows = []
            for _ in range(dcfg.steps_per_iteration):
                b = min(dcfg.batch_size, len(generated))
                real = torch.from_numpy(library.sample(b, rng))
                gen = torch.from_numpy(generated[rng.integers(0, len(generated), size=b)])
                disc_rows.append(trainer.step(real, gen))
            disc_stats = {key: float(np.mean([r[key] for r in disc_rows])) for key in disc_rows[0]} if disc_rows else {}
            stats = {
                "iteration": k,
                **episodes.summary(env.dt_s),
                "reward_per_step": float(buf["rewards"].mean()),
                **{key: value / steps for key, value in sums.items()},
                "action_std": float(model.log_std.detach().exp().mean()),
                **losses,
                **disc_stats,
                "learning_rate": lr,
                "collect_s": collected - started,
                "update_s": time.perf_counter() - collected,
            }
            result.iterations.append(stats)
            log(
                f"hil teacher {k + 1}/{cfg.run.max_iterations}: return {stats['episode_return']:.2f}, "
                f"tracking error {stats['tracking_error_m']:.3f} m, task {stats['task_reward']:.3f}, "
                f"style {stats['style_reward']:.3f}, D accuracy {stats.get('disc_accuracy', float('nan')):.2f}"
            )
    finally:
        env.close()
    result.sampler_probabilities = sampler.probabilities().tolist()
    return result
