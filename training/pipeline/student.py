"""Distilling a teacher into the recurrent depth student with PHP's hybrid DAgger + PPO (toy sized).

Every iteration ``k`` of ``K``:

- the student env's termination is relaxed on the schedule (``schedules.termination_threshold``,
  0.5 m -> 1.0 m by K/2);
- skills are drawn with equal probability (``sampling.SkillSampler``), then one of that skill's
  references; start phases are uniform (``AdaptiveStartSampler(enabled=False)``: adaptive sampling
  is off for the student);
- the student acts (a draw from its Gaussian) on its own observation only: the bundle's
  proprioceptive terms through parkour_core, the simulated depth image and the command; the
  teacher labels every step from its privileged observation of the same state (its mean action);
- the DAgger mask keeps the steps whose state is within the teachers' original 0.5 m
  (``hybrid.dagger_mask``), latched off until the episode ends once broken
  (``hybrid.latch_until_reset``, ``distill.latch_mask``);
- :class:`~training.pipeline.student_update.RecurrentHybridUpdate` runs the hybrid loss on BPTT
  windows of the rollout.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from training.algorithms.hybrid import compute_gae, dagger_mask, latch_until_reset
from training.algorithms.sampling import AdaptiveStartSampler, SkillSampler
from training.algorithms.schedules import termination_threshold
from training.configs.schema import TrainConfig
from training.envs.student import CameraConfig, StudentConfig, StudentEnv
from training.export.models import DepthBackbone, RecurrentStudent, StudentSize
from training.export.student import student_manifest
from training.pipeline.student_update import RecurrentDepthActorCritic, RecurrentHybridUpdate, SequenceBatch
from training.pipeline.teacher import (
    EpisodeTracker,
    Log,
    SkillReference,
    TeacherPolicy,
    gaussian_sample,
    phase_start_sampler,
    tracking_config,
)

Ints = NDArray[np.int64]


def skill_ref_sampler(references: Sequence[SkillReference]):
    """TrackingEnv ref sampler: a skill uniformly (SkillSampler), then one of its references uniformly."""
    skills = sorted({r.skill for r in references})
    sampler = SkillSampler(skills)
    by_skill = [np.array([i for i, r in enumerate(references) if r.skill == s]) for s in skills]

    def draw(env_ids: Ints, rng: np.random.Generator) -> Ints:
        chosen = sampler.sample(len(env_ids), rng)
        return np.array([by_skill[s][rng.integers(len(by_skill[s]))] for s in chosen], dtype=np.int64)

    return draw


def build_student(size: StudentSize, seed: int, privileged_dim: int, cfg: TrainConfig) -> RecurrentDepthActorCritic:
    """training.export's backbone + recurrent student (the bundle's obs terms and depth size), plus std and critic."""
    manifest = student_manifest("training", size.gru_hidden, {}, {}, latent_dim=size.latent_dim)
    assert manifest.depth is not None
    torch.manual_seed(seed)
    spec = manifest.depth.spec
    backbone = DepthBackbone(size, spec.height, spec.width)
    num_obs = sum(t.dims for t in manifest.obs_terms)
    student = RecurrentStudent(num_obs, size, len(manifest.joint_names))
    return RecurrentDepthActorCritic(
        backbone,
        student,
        privileged_dim,
        tuple(cfg.policy.critic_hidden),
        cfg.policy.init_noise_std,
        normalize_critic=cfg.policy.obs_normalization,
    )


@dataclass
class StudentResult:
    model: RecurrentDepthActorCritic
    iterations: list[dict[str, Any]] = field(default_factory=list)
    calibration_frames: list[np.ndarray] = field(default_factory=list)


def train_student(
    references: Sequence[SkillReference],
    teacher: TeacherPolicy,
    cfg: TrainConfig,
    size: StudentSize,
    camera: CameraConfig,
    seed: int,
    bptt_steps: int = 8,
    calibration_frames: int = 64,
    log: Log = print,
) -> StudentResult:
    """``cfg.run.max_iterations`` iterations of collection + hybrid update; ``cfg`` is a student config."""
    if cfg.kind != "student":
        raise ValueError(f"train_student needs a student config (kind: student), got kind {cfg.kind!r}")
    total = cfg.run.max_iterations
    generator = torch.Generator().manual_seed(seed)
    refs = [r.reference for r in references]
    track_cfg = tracking_config(cfg, seed + 1)
    s = cfg.sampling
    uniform = AdaptiveStartSampler(s.bins, floor=s.uniform_fraction, decay=s.decay, enabled=s.adaptive)
    manifest = student_manifest("training", size.gru_hidden, {}, {}, latent_dim=size.latent_dim)
    env = StudentEnv(refs, StudentConfig(tracking=track_cfg, camera=camera), manifest)
    env.tracking.start_sampler = phase_start_sampler(uniform, refs, track_cfg.min_episode_frames)
    env.tracking.ref_sampler = skill_ref_sampler(references)
    model = build_student(size, seed, env.tracking.num_obs, cfg)
    updater = RecurrentHybridUpdate(model, total, cfg.hybrid_config(), bptt_steps, generator)
    teacher.eval()
    gamma, lam = cfg.ppo.gamma, cfg.ppo.lam
    steps, n, a = cfg.ppo.num_steps_per_env, env.num_envs, env.num_actions
    result = StudentResult(model)
    episodes = EpisodeTracker(n)
    rng = np.random.default_rng(seed + 2)
    original_m = cfg.termination.tracking_error_m
    try:
        obs = env.reset()
        hidden = model.initial_hidden(n)
        starts = torch.ones(n, dtype=torch.bool)
        deviation = env.tracking.current_tracking_error()
        for k in range(total):
            started = time.perf_counter()
            env.termination_m = termination_threshold(k, total, original_m, cfg.termination.relaxed_tracking_error_m)
            buf: dict[str, torch.Tensor] = {
                "obs": torch.zeros(steps, n, env.num_obs),
                "depth": torch.zeros(steps, n, *obs["depth"].shape[1:]),
                "privileged": torch.zeros(steps, n, env.tracking.num_obs),
                "hidden": torch.zeros(steps, n, model.hidden_size),
                "starts": torch.zeros(steps, n, dtype=torch.bool),
                "actions": torch.zeros(steps, n, a),
                "log_probs": torch.zeros(steps, n),
                "values": torch.zeros(steps, n),
                "rewards": torch.zeros(steps, n),
                "dones": torch.zeros(steps, n, dtype=torch.bool),
                "mean": torch.zeros(steps, n, a),
                "std": torch.zeros(steps, n, a),
                "teacher": torch.zeros(steps, n, a),
                "deviation": torch.zeros(steps, n),
            }
            for t in range(steps):
                o, d, p = (torch.from_numpy(obs[key]) for key in ("policy", "depth", "privileged"))
                model.critic_normalizer.update(p)
                with torch.no_grad():
                    mean, next_hidden = model.step(o, d, hidden)
                    dist = model.distribution(mean)
                    action = gaussian_sample(mean, dist.stddev, generator)
                    buf["log_probs"][t] = dist.log_prob(action).sum(-1)
                    buf["values"][t] = model.value(p)
                    buf["teacher"][t] = teacher.act_inference(p)
                buf["obs"][t], buf["depth"][t], buf["privileged"][t] = o, d, p
                buf["hidden"][t], buf["starts"][t] = hidden[0], starts
                buf["actions"][t], buf["mean"][t], buf["std"][t] = action, mean, dist.stddev
                buf["deviation"][t] = torch.from_numpy(deviation)
                obs, reward, done, info = env.step(action.numpy().astype(np.float64))
                episodes.add(reward, done, info["terminated"])
                if len(result.calibration_frames) < calibration_frames and rng.random() < 0.25:
                    result.calibration_frames.append(obs["depth"][rng.integers(n)].copy())
                ids = np.flatnonzero(done)
                reward = reward.copy()
                timed_out = info["truncated"][ids]
                if timed_out.any():
                    with torch.no_grad():
                        final_values = model.value(torch.from_numpy(info["final_obs"][timed_out])).numpy()
                    reward[ids[timed_out]] += gamma * final_values
                buf["rewards"][t] = torch.from_numpy(reward).float()
                buf["dones"][t] = torch.from_numpy(done)
                starts = torch.from_numpy(done.copy())
                hidden = next_hidden * (~starts).float()[None, :, None]
                # The tracking error of the state the next observation shows (0 after a reset).
                deviation = env.tracking.current_tracking_error()
            with torch.no_grad():
                last_values = model.value(torch.from_numpy(obs["privileged"]))
            advantages, returns = compute_gae(buf["rewards"], buf["values"], buf["dones"], last_values, gamma, lam)
            mask = dagger_mask(buf["deviation"], original_m)
            if cfg.distill.latch_mask:
                mask = latch_until_reset(mask, buf["dones"])
            batch = SequenceBatch(
                obs=buf["obs"],
                depth=buf["depth"],
                privileged=buf["privileged"],
                hidden=buf["hidden"],
                starts=buf["starts"],
                actions=buf["actions"],
                log_probs=buf["log_probs"],
                values=buf["values"],
                advantages=advantages,
                returns=returns,
                action_mean=buf["mean"],
                action_std=buf["std"],
                teacher_actions=buf["teacher"],
                dagger_mask=mask,
            )
            collected = time.perf_counter()
            stats = updater.update(batch, k)
            row = {
                "iteration": k,
                **stats.as_dict(),
                "termination_m": env.termination_m,
                "teacher_student_mse": float((buf["mean"] - buf["teacher"]).pow(2).mean()),
                **episodes.summary(env.tracking.dt_s),
                "reward_per_step": float(buf["rewards"].mean()),
                "tracking_error_m": float(buf["deviation"].mean()),
                "collect_s": collected - started,
                "update_s": time.perf_counter() - collected,
            }
            result.iterations.append(row)
            log(
                f"student {k + 1}/{total}: loss {row['total']:.3f} (DAgger {row['dagger']:.4f} x lambda_D "
                f"{row['dagger_weight']:.2f}, surrogate {row['surrogate']:.4f} x lambda_PPO {row['ppo_weight']:.2f}), "
                f"imitated {row['imitated_fraction']:.2f}, termination {row['termination_m']:.2f} m, "
                f"return {row['episode_return']:.1f}"
            )
    finally:
        env.close()
    return result
