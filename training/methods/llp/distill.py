"""LLP's distillation at toy size: PHP's hybrid DAgger + PPO, plus the height-scan reconstruction loss and
the conditional transition prior, on the student env with LLP's camera timing.

Per iteration (as PHP's student did before it became the ``php_student`` task; its pieces are reused):

- the student acts on its own observation (bundle terms + depth, LLP timing); the teacher labels the
  step from its privileged observation; the DAgger mask and termination relaxation are PHP's;
- each step's **group** (approach / skill / exit) is read from the reference's phase at the state's
  frame; it enters the critic's input only (:func:`training.methods.llp.student.with_group`);
- the policy's joint transition is scored by the **conditional prior** and its style reward is added to
  the task reward; after the rollout the discriminator trains on the reference's transitions (real)
  against the policy's (fake), per group;
- :class:`LLPHybridUpdate`: PHP's recurrent hybrid loss plus ``reconstruction_weight`` x the MSE of
  the decoder's height scan from every GRU state of the BPTT windows.

The loop is written here: LLP's student (its decoder and prior) has not moved onto the runner as
the ``php_student`` task did; see README.md.
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

from training.algorithms.hybrid import (
    HybridConfig,
    HybridLoss,
    UpdateStats,
    compute_gae,
    dagger_mask,
    latch_until_reset,
)
from training.algorithms.sampling import AdaptiveStartSampler
from training.algorithms.schedules import termination_threshold
from training.configs.schema import TrainConfig
from training.envs.student import CameraConfig, StudentConfig
from training.export.student import student_manifest
from training.methods.llp.entry_exit import EntryExitScore, Trajectory, aggregate, score_trial, skill_windows
from training.methods.llp.references import LLPReference
from training.methods.llp.student import LLPActorCritic, LLPSize, build_llp_student, reconstruction_loss, with_group
from training.methods.llp.timing import LLPTiming, llp_student_env
from training.methods.llp.transition_prior import GROUPS, ConditionalPrior, PriorConfig, group_labels, transitions
from training.pipeline.student_update import RecurrentHybridUpdate, SequenceBatch
from training.pipeline.teacher import (
    EpisodeTracker,
    Log,
    gaussian_sample,
    phase_start_sampler,
    skill_ref_sampler,
    tracking_config,
)

DEFAULT_TIMING = LLPTiming()
DEFAULT_PRIOR = PriorConfig()


class LLPHybridUpdate(RecurrentHybridUpdate):
    """PHP's recurrent hybrid update with the height-scan reconstruction term added to every mini-batch."""

    def __init__(self, model: LLPActorCritic, total_iterations: int, config: HybridConfig | None = None,
                 bptt_steps: int = 8, generator: torch.Generator | None = None,
                 reconstruction_weight: float = 1.0) -> None:  # fmt: skip
        super().__init__(model, total_iterations, config, bptt_steps, generator)
        self.model: LLPActorCritic = model
        self.reconstruction_weight = reconstruction_weight
        self._recon: list[float] = []

    def losses(self, mb: SequenceBatch, ppo_weight: float, dagger_weight: float) -> tuple[HybridLoss, float]:
        loss, kl = super().losses(mb, ppo_weight, dagger_weight)  # runs model.sequence: keeps the GRU states
        assert self.model.last_states is not None
        recon = reconstruction_loss(self.model.decode(self.model.last_states), mb.privileged)
        self._recon.append(float(recon.item()))
        return dataclasses.replace(loss, total=loss.total + self.reconstruction_weight * recon), kl

    def update(self, batch: SequenceBatch, k: int) -> UpdateStats:
        self._recon = []
        return super().update(batch, k)

    @property
    def reconstruction(self) -> float:
        """The mean reconstruction loss over the last update's mini-batches."""
        return float(np.mean(self._recon)) if self._recon else float("nan")


@dataclass
class LLPStudentResult:
    model: LLPActorCritic
    prior: ConditionalPrior
    iterations: list[dict[str, Any]] = field(default_factory=list)
    calibration_frames: list[np.ndarray] = field(default_factory=list)


def train_llp_student(
    references: Sequence[LLPReference],
    teacher: nn.Module,
    cfg: TrainConfig,
    size: LLPSize,
    camera: CameraConfig,
    seed: int,
    timing: LLPTiming = DEFAULT_TIMING,
    prior_cfg: PriorConfig = DEFAULT_PRIOR,
    reconstruction_weight: float = 1.0,
    bptt_steps: int = 8,
    calibration_frames: int = 64,
    log: Log = print,
) -> LLPStudentResult:
    if cfg.kind != "student":
        raise ValueError(f"train_llp_student needs a student config (kind: student), got kind {cfg.kind!r}")
    total = cfg.run.max_iterations
    generator = torch.Generator().manual_seed(seed)
    skill_refs = [r.skill_reference for r in references]
    refs = [r.reference for r in references]
    phases = [r.phase for r in references]
    track_cfg = tracking_config(cfg, seed + 1)
    s = cfg.sampling
    uniform = AdaptiveStartSampler(s.bins, floor=s.uniform_fraction, decay=s.decay, enabled=s.adaptive)
    manifest = student_manifest("training", size.student.gru_hidden, {}, {}, latent_dim=size.student.latent_dim)
    env = llp_student_env(refs, StudentConfig(tracking=track_cfg, camera=camera), manifest, timing)
    env.tracking.start_sampler = phase_start_sampler(uniform, refs, track_cfg.min_episode_frames)
    env.tracking.ref_sampler = skill_ref_sampler(skill_refs)
    model = build_llp_student(
        size, seed, env.tracking.num_obs, len(GROUPS), tuple(cfg.policy.critic_hidden), cfg.policy.init_noise_std,
        cfg.policy.obs_normalization,
    )  # fmt: skip
    prior = ConditionalPrior(prior_cfg, seed=seed + 3)
    updater = LLPHybridUpdate(model, total, cfg.hybrid_config(), bptt_steps, generator, reconstruction_weight)
    teacher.eval()
    gamma, lam = cfg.ppo.gamma, cfg.ppo.lam
    steps, n, a = cfg.ppo.num_steps_per_env, env.num_envs, env.num_actions
    result = LLPStudentResult(model, prior)
    episodes = EpisodeTracker(n)
    rng = np.random.default_rng(seed + 2)
    original_m = cfg.termination.tracking_error_m

    def groups_now() -> torch.Tensor:
        t = env.tracking
        return torch.tensor([group_labels(phases[r], f) for r, f in zip(t.ref_id, t.frame, strict=True)])

    try:
        obs = env.reset()
        hidden = model.initial_hidden(n)
        starts = torch.ones(n, dtype=torch.bool)
        deviation = env.tracking.current_tracking_error()
        group = groups_now()
        for k in range(total):
            started = time.perf_counter()
            env.termination_m = termination_threshold(k, total, original_m, cfg.termination.relaxed_tracking_error_m)
            buf: dict[str, torch.Tensor] = {
                "obs": torch.zeros(steps, n, env.num_obs),
                "depth": torch.zeros(steps, n, *obs["depth"].shape[1:]),
                "critic": torch.zeros(steps, n, env.tracking.num_obs + 1),
                "hidden": torch.zeros(steps, n, model.hidden_size),
                "starts": torch.zeros(steps, n, dtype=torch.bool),
                "actions": torch.zeros(steps, n, a),
                "log_probs": torch.zeros(steps, n),
                "values": torch.zeros(steps, n),
                "rewards": torch.zeros(steps, n),
                "style": torch.zeros(steps, n),
                "dones": torch.zeros(steps, n, dtype=torch.bool),
                "mean": torch.zeros(steps, n, a),
                "std": torch.zeros(steps, n, a),
                "teacher": torch.zeros(steps, n, a),
                "deviation": torch.zeros(steps, n),
            }
            fake, real, labels = [], [], []
            for t in range(steps):
                o, d, p = (torch.from_numpy(obs[key]) for key in ("policy", "depth", "privileged"))
                critic_obs = with_group(p, group)
                model.critic_normalizer.update(p)
                with torch.no_grad():
                    mean, next_hidden = model.step(o, d, hidden)
                    dist = model.distribution(mean)
                    action = gaussian_sample(mean, dist.stddev, generator)
                    buf["log_probs"][t] = dist.log_prob(action).sum(-1)
                    buf["values"][t] = model.value(critic_obs)
                    buf["teacher"][t] = teacher.act_inference(p)
                buf["obs"][t], buf["depth"][t], buf["critic"][t] = o, d, critic_obs
                buf["hidden"][t], buf["starts"][t] = hidden[0], starts
                buf["actions"][t], buf["mean"][t], buf["std"][t] = action, mean, dist.stddev
                buf["deviation"][t] = torch.from_numpy(deviation)
                obs, reward, done, info = env.step(action.numpy().astype(np.float64))
                episodes.add(reward, done, info["terminated"])
                if len(result.calibration_frames) < calibration_frames and rng.random() < 0.25:
                    result.calibration_frames.append(obs["depth"][rng.integers(n)].copy())
                # The transition (s_t, s_t+1) of the envs that did not reset (after a reset obs is a new episode).
                alive = torch.from_numpy(~done)
                policy_tr, reference_tr = transitions(p, torch.from_numpy(obs["privileged"]))
                style = prior.reward(policy_tr, group) * alive
                fake.append(policy_tr[alive])
                real.append(reference_tr[alive])
                labels.append(group[alive])
                ids = np.flatnonzero(done)
                reward = reward.copy() + style.numpy()
                timed_out = info["truncated"][ids]
                if timed_out.any():
                    final = torch.from_numpy(info["final_obs"][timed_out])
                    with torch.no_grad():
                        final_values = model.value(with_group(final, group[ids[timed_out]])).numpy()
                    reward[ids[timed_out]] += gamma * final_values
                buf["rewards"][t] = torch.from_numpy(reward).float()
                buf["style"][t] = style
                buf["dones"][t] = torch.from_numpy(done)
                starts = torch.from_numpy(done.copy())
                hidden = next_hidden * (~starts).float()[None, :, None]
                deviation = env.tracking.current_tracking_error()
                group = groups_now()
            with torch.no_grad():
                last_values = model.value(with_group(torch.from_numpy(obs["privileged"]), group))
            advantages, returns = compute_gae(buf["rewards"], buf["values"], buf["dones"], last_values, gamma, lam)
            mask = dagger_mask(buf["deviation"], original_m)
            if cfg.distill.latch_mask:
                mask = latch_until_reset(mask, buf["dones"])
            batch = SequenceBatch(
                obs=buf["obs"], depth=buf["depth"], privileged=buf["critic"], hidden=buf["hidden"],
                starts=buf["starts"], actions=buf["actions"], log_probs=buf["log_probs"], values=buf["values"],
                advantages=advantages, returns=returns, action_mean=buf["mean"], action_std=buf["std"],
                teacher_actions=buf["teacher"], dagger_mask=mask,
            )  # fmt: skip
            collected = time.perf_counter()
            stats = updater.update(batch, k)
            fake_g = torch.cat(labels)
            prior_stats = prior.update(torch.cat(real), fake_g, torch.cat(fake), fake_g)
            counts = torch.bincount(fake_g, minlength=len(GROUPS)).tolist()
            row = {
                "iteration": k,
                **stats.as_dict(),
                "reconstruction": updater.reconstruction,
                **prior_stats.as_dict(),
                "style_reward_per_step": float(buf["style"].mean()),
                **{f"group_{g}_fraction": c / max(1, sum(counts)) for g, c in zip(GROUPS, counts, strict=True)},
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
                f"llp student {k + 1}/{total}: loss {row['total']:.3f} (DAgger {row['dagger']:.4f} x lambda_D "
                f"{row['dagger_weight']:.2f}), height-scan reconstruction {row['reconstruction']:.4f}, prior "
                f"D(real) {row['prior_real_score']:.2f} D(fake) {row['prior_fake_score']:.2f}, style reward "
                f"{row['style_reward_per_step']:.3f}/step, return {row['episode_return']:.1f}"
            )
    finally:
        env.close()
    return result


def evaluate_entry_exit(
    model: LLPActorCritic,
    references: Sequence[LLPReference],
    cfg: TrainConfig,
    camera: CameraConfig,
    seed: int,
    timing: LLPTiming = DEFAULT_TIMING,
    before_s: float = 0.3,
    after_s: float = 0.3,
    max_error_m: float = 0.5,
) -> dict[str, Any]:
    """One trial per reference from its first frame, the student's mean action, until it ends; each
    trial scored at the skill's entry and exit windows (:mod:`training.methods.llp.entry_exit`)."""
    refs = [r.reference for r in references]
    track_cfg = dataclasses.replace(tracking_config(cfg, seed + 11), num_envs=len(refs))
    latent_dim = int(model.backbone.layers[-1].out_features)
    manifest = student_manifest("eval", model.hidden_size, {}, {}, latent_dim=latent_dim)
    env = llp_student_env(refs, StudentConfig(tracking=track_cfg, camera=camera), manifest, timing)
    env.termination_m = cfg.termination.relaxed_tracking_error_m
    n = len(refs)
    times: list[list[float]] = [[] for _ in range(n)]
    errors: list[list[float]] = [[] for _ in range(n)]
    failed_at: list[float | None] = [None] * n
    running = np.ones(n, dtype=bool)
    try:
        obs = env.reset(np.arange(n), np.zeros(n, dtype=np.int64), np.arange(n))
        hidden = model.initial_hidden(n)
        dt = env.tracking.dt_s
        step = 0
        while running.any():
            with torch.no_grad():
                mean, hidden = model.step(torch.from_numpy(obs["policy"]), torch.from_numpy(obs["depth"]), hidden)
            obs, _, done, info = env.step(mean.numpy().astype(np.float64))
            step += 1
            for i in np.flatnonzero(running):  # each trial is recorded up to its first episode's end
                times[i].append(step * dt)
                errors[i].append(float(info["tracking_error"][i]))
                if done[i]:
                    running[i] = False
                    if info["terminated"][i]:
                        failed_at[i] = step * dt
    finally:
        env.close()
    scores: list[EntryExitScore] = []
    for i, r in enumerate(references):
        windows = skill_windows(r.entry_frame, r.end_frame, r.reference.fps, before_s, after_s)
        scores.append(score_trial(Trajectory.of(times[i], errors[i], failed_at[i]), windows, max_error_m))
    return {
        "windows_s": {"before": before_s, "after": after_s},
        "max_error_m": max_error_m,
        "termination_m": cfg.termination.relaxed_tracking_error_m,
        "summary": aggregate(scores),
        "trials": [
            {"reference": r.reference.name, "ended_s": times[i][-1], "failed_at_s": failed_at[i], **s.to_dict()}
            for i, (r, s) in enumerate(zip(references, scores, strict=True))
        ],
    }
