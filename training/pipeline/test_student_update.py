"""The recurrent student's sequence update: windows replay the rollout exactly, and DAgger learns."""

from __future__ import annotations

import torch

from training.algorithms.hybrid import HybridConfig, masked_mse
from training.export.models import SIZES, DepthBackbone, RecurrentStudent
from training.pipeline.student_update import RecurrentDepthActorCritic, RecurrentHybridUpdate, SequenceBatch

T, N, OBS, PRIV, ACT, H, W = 16, 4, 12, 10, 29, 58, 87


def _model(seed: int = 0) -> RecurrentDepthActorCritic:
    torch.manual_seed(seed)
    size = SIZES["tiny"]
    return RecurrentDepthActorCritic(DepthBackbone(size, H, W), RecurrentStudent(OBS, size, ACT), PRIV, (16,), 0.1)


def _rollout(model: RecurrentDepthActorCritic, seed: int = 1) -> SequenceBatch:
    """A fixed recurrent rollout with an episode start mid-way, acted step by step like the collector."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(T, N, OBS, generator=g)
    depth = torch.rand(T, N, H, W, generator=g)
    privileged = torch.randn(T, N, PRIV, generator=g)
    starts = torch.zeros(T, N, dtype=torch.bool)
    starts[0] = True
    starts[5, 1] = starts[11, 2] = True
    hidden = model.initial_hidden(N)
    hiddens, means = [], []
    with torch.no_grad():
        for t in range(T):
            hidden = hidden * (~starts[t]).float()[None, :, None]
            hiddens.append(hidden[0])
            mean, hidden = model.step(obs[t], depth[t], hidden)
            means.append(mean)
    mean = torch.stack(means)
    std = torch.full_like(mean, 0.1)
    actions = mean + std * torch.randn(mean.shape, generator=g)
    # A teacher the student can fit: a fixed linear map of the proprioception.
    teacher = 0.5 * torch.tanh(obs @ torch.randn(OBS, ACT, generator=g))
    mask = torch.ones(T, N, dtype=torch.bool)
    mask[8:, 3] = False  # env 3 broke the expert's termination: its later labels are poisoned and masked
    teacher[8:, 3] = 100.0
    zeros = torch.zeros(T, N)
    return SequenceBatch(
        obs=obs, depth=depth, privileged=privileged, hidden=torch.stack(hiddens), starts=starts, actions=actions,
        log_probs=torch.distributions.Normal(mean, std).log_prob(actions).sum(-1), values=zeros,
        advantages=torch.randn(T, N, generator=g), returns=zeros, action_mean=mean, action_std=std,
        teacher_actions=teacher, dagger_mask=mask,
    )  # fmt: skip


def test_windows_from_stored_hidden_states_replay_the_rollout() -> None:
    model = _model()
    batch = _rollout(model)
    for length in (4, 8, 16):
        windows = batch.windows(length)
        assert windows.obs.shape == (length, N * T // length, OBS)
        with torch.no_grad():
            means = model.sequence(windows.obs, windows.depth, windows.hidden[0][None], windows.starts)
        torch.testing.assert_close(means, windows.action_mean, rtol=0, atol=1e-6)


def _dagger_loss(model: RecurrentDepthActorCritic, batch: SequenceBatch) -> float:
    with torch.no_grad():
        means = model.sequence(batch.obs, batch.depth, batch.hidden[0][None], batch.starts)
    return float(masked_mse(means, batch.teacher_actions, batch.dagger_mask))


def test_sequence_update_reduces_the_masked_dagger_loss_on_a_fixed_batch() -> None:
    model = _model()
    batch = _rollout(model)
    cfg = HybridConfig(num_epochs=4, num_mini_batches=2, learning_rate=3e-3, desired_kl=0.01)
    updater = RecurrentHybridUpdate(model, total_iterations=100, config=cfg, bptt_steps=8,
                                    generator=torch.Generator().manual_seed(0))  # fmt: skip
    before = _dagger_loss(model, batch)
    for _ in range(5):
        stats = updater.update(batch, k=0)  # lambda_D = 1, lambda_PPO = 0: pure DAgger
    after = _dagger_loss(model, batch)
    assert (stats.dagger_weight, stats.ppo_weight) == (1.0, 0.0)
    assert stats.learning_rate == cfg.learning_rate  # the KL rule is gated off while lambda_PPO <= 0.1
    assert stats.imitated_fraction == batch.dagger_mask.float().mean().item()
    # The poisoned labels (100.0) sit behind the mask: had they leaked, the loss could not fall.
    assert after < 0.5 * before, (before, after)
