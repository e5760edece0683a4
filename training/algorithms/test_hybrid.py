"""The hybrid DAgger + PPO update: mask, gradient path, learning on toy problems, the KL gate."""

from __future__ import annotations

import pytest
import torch

from training.algorithms.hybrid import (
    HybridConfig,
    HybridPPODagger,
    MLPActorCritic,
    RolloutBatch,
    adapt_learning_rate,
    compute_gae,
    dagger_mask,
    hybrid_loss,
    latch_until_reset,
    masked_mse,
    surrogate_loss,
)

K = 100  # total iterations of the schedules in these tests: k = 0 is pure DAgger, k = K is PPO-heavy


def _batch(
    policy: MLPActorCritic,
    obs: torch.Tensor,
    teacher_actions: torch.Tensor,
    mask: torch.Tensor,
    rewards_fn=None,
    generator: torch.Generator | None = None,
) -> RolloutBatch:
    """Act with ``policy`` on ``obs``; 1-step episodes, so returns are the rewards."""
    with torch.no_grad():
        dist = policy.action_distribution(obs)
        actions = dist.mean + dist.stddev * torch.randn(dist.mean.shape, generator=generator)
        values = policy.value(obs)
        returns = rewards_fn(actions) if rewards_fn is not None else torch.zeros(len(obs))
        return RolloutBatch(
            obs=obs,
            actions=actions,
            log_probs=dist.log_prob(actions).sum(-1),
            advantages=returns - values,
            returns=returns,
            values=values,
            action_mean=dist.mean,
            action_std=dist.stddev,
            teacher_actions=teacher_actions,
            dagger_mask=mask,
        )


# ----------------------------------------------------------------------------- the mask


def test_dagger_mask_is_the_teachers_original_termination() -> None:
    deviation = torch.tensor([0.0, 0.49, 0.5, 0.51, 0.9, 1.2])
    assert dagger_mask(deviation).tolist() == [True, True, True, False, False, False]
    assert dagger_mask(deviation, threshold=1.0).tolist() == [True] * 5 + [False]


def test_masked_mse_ignores_exactly_the_masked_samples() -> None:
    student = torch.tensor([[1.0, 1.0], [0.0, 0.0], [2.0, 0.0]], requires_grad=True)
    teacher = torch.tensor([[0.0, 1.0], [5.0, 5.0], [0.0, 0.0]])
    mask = torch.tensor([True, False, True])
    loss = masked_mse(student, teacher, mask)
    assert loss.item() == pytest.approx((0.5 + 2.0) / 2)  # per-sample means 0.5 and 2.0; sample 1 ignored
    loss.backward()
    assert student.grad is not None
    # d/ds of sum_i mask_i mean_j (s_ij - t_ij)^2 / sum(mask) = 2 (s - t) / (2 dims x 2 samples), 0 where masked.
    torch.testing.assert_close(student.grad, torch.tensor([[0.5, 0.0], [0.0, 0.0], [1.0, 0.0]]))
    # Any label under the mask leaves the loss unchanged.
    teacher_changed = teacher.clone()
    teacher_changed[1] = -100.0
    assert masked_mse(student, teacher_changed, mask).item() == loss.item()
    # Nothing imitable: zero loss, zero gradient, no NaN.
    none = masked_mse(student, teacher, torch.zeros(3, dtype=torch.bool))
    assert none.item() == 0.0
    assert torch.autograd.grad(none, student)[0].abs().sum().item() == 0.0


def test_latch_keeps_the_mask_off_until_the_episode_resets() -> None:
    #            t:    0     1      2     3      4
    mask = torch.tensor([[True, False, True, True, True]]).T  # [T=5, N=1]
    dones = torch.tensor([[False, False, True, False, False]]).T
    assert latch_until_reset(mask, dones)[:, 0].tolist() == [True, False, False, True, True]


# ----------------------------------------------------------------------------- gradient path


def test_gradient_reaches_the_student_only() -> None:
    torch.manual_seed(0)
    student = MLPActorCritic(4, 2, hidden=(8,))
    teacher = torch.nn.Linear(4, 2)
    obs = torch.randn(16, 4)
    teacher_actions = teacher(obs)  # NOT detached by the caller: the loss must detach it
    dist = student.action_distribution(obs)
    loss = hybrid_loss(
        surrogate=torch.zeros(()),
        value=torch.zeros(()),
        entropy=torch.zeros(()),
        dagger=masked_mse(dist.mean, teacher_actions, torch.ones(16, dtype=torch.bool)),
        ppo_weight=0.0,
        dagger_weight=1.0,
        config=HybridConfig(),
    )
    loss.total.backward()
    assert all(p.grad is None for p in teacher.parameters())
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in student.actor.parameters())


def test_ppo_weight_zero_gives_the_actor_no_ppo_gradient() -> None:
    torch.manual_seed(0)
    student = MLPActorCritic(3, 1, hidden=(8,))
    obs = torch.randn(32, 3)
    batch = _batch(student, obs, torch.zeros(32, 1), torch.zeros(32, dtype=torch.bool), lambda a: -(a[:, 0] ** 2))
    dist = student.action_distribution(obs)
    loss = hybrid_loss(
        surrogate=surrogate_loss(dist.log_prob(batch.actions).sum(-1), batch.log_probs, batch.advantages, 0.2),
        value=torch.zeros(()),
        entropy=dist.entropy().sum(-1).mean(),
        dagger=masked_mse(dist.mean, batch.teacher_actions, batch.dagger_mask),
        ppo_weight=0.0,
        dagger_weight=1.0,
        config=HybridConfig(),
    )
    loss.total.backward()
    assert all(p.grad is None or p.grad.abs().sum() == 0 for p in student.actor.parameters())
    assert student.log_std.grad is None or student.log_std.grad.abs().sum() == 0


# ----------------------------------------------------------------------------- learning


def test_pure_dagger_update_imitates_the_teacher() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    student = MLPActorCritic(4, 2, hidden=(32, 32))
    teacher_w = torch.tensor([[1.0, -2.0, 0.5, 0.0], [0.0, 1.0, 1.0, -1.0]])
    obs = torch.randn(256, 4, generator=gen)
    teacher_actions = obs @ teacher_w.T
    mask = torch.ones(256, dtype=torch.bool)

    def mse() -> float:
        with torch.no_grad():
            return float((student.action_distribution(obs).mean - teacher_actions).pow(2).mean())

    algo = HybridPPODagger(student, K, HybridConfig(learning_rate=3e-3), generator=gen)
    before = mse()
    for _ in range(3):
        stats = algo.update(_batch(student, obs, teacher_actions, mask, generator=gen), k=0)
        assert (stats.dagger_weight, stats.ppo_weight) == (1.0, 0.0)
    after = mse()
    print(f"dagger mse {before:.3f} -> {after:.4f}")
    assert after < 0.2 * before, (before, after)


def test_masked_samples_are_not_imitated() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    student = MLPActorCritic(2, 1, hidden=(16,))
    obs = torch.randn(128, 2, generator=gen)
    mask = obs[:, 0] > 0
    teacher_actions = torch.where(mask, torch.ones(128), torch.full((128,), 100.0)).unsqueeze(-1)
    algo = HybridPPODagger(student, K, HybridConfig(learning_rate=3e-3), generator=gen)
    for _ in range(5):
        stats = algo.update(_batch(student, obs, teacher_actions, mask, generator=gen), k=0)
    with torch.no_grad():
        out = student.action_distribution(obs).mean[:, 0]
    # The (poisoned) 100.0 labels behind the mask never pull the student up.
    assert out.max().item() < 5.0
    assert (out[mask] - 1.0).abs().mean().item() < 0.3
    assert stats.imitated_fraction == pytest.approx(mask.float().mean().item())


def test_ppo_update_improves_reward_on_a_bandit() -> None:
    """1-step bandit, reward -(a - 1)^2: expected reward is -((mu - 1)^2 + sigma^2)."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(2)
    policy = MLPActorCritic(1, 1, hidden=(16,))
    obs = torch.zeros(256, 1)
    no_teacher = torch.zeros(256, dtype=torch.bool)  # the DAgger term is off: PPO alone must learn

    def expected_reward() -> float:
        with torch.no_grad():
            dist = policy.action_distribution(obs[:1])
            return float(-((dist.mean - 1.0) ** 2 + dist.stddev**2).sum())

    algo = HybridPPODagger(policy, K, HybridConfig(learning_rate=1e-2, max_lr=1e-1), generator=gen)
    before = expected_reward()
    for _ in range(15):
        batch = _batch(policy, obs, torch.zeros(256, 1), no_teacher, lambda a: -((a[:, 0] - 1.0) ** 2), gen)
        stats = algo.update(batch, k=K)
        assert stats.dagger == 0.0
    after = expected_reward()
    print(f"bandit expected reward {before:.3f} -> {after:.3f}")
    assert before < -1.0  # sigma starts at 1
    # Measured: -1.28 -> -0.08 here, and -2.2..-3.3 -> above -0.08 for seeds 1-4; with the
    # advantage's sign flipped the same run falls to about -50.
    assert after - before > 0.5 and after > -0.4, (before, after)


# ----------------------------------------------------------------------------- learning rate


def test_kl_rule() -> None:
    assert adapt_learning_rate(1e-3, 0.1, 0.01, enabled=True) == pytest.approx(1e-3 / 1.5)
    assert adapt_learning_rate(1e-3, 0.001, 0.01, enabled=True) == pytest.approx(1.5e-3)
    assert adapt_learning_rate(1e-3, 0.01, 0.01, enabled=True) == 1e-3
    assert adapt_learning_rate(1e-3, 0.0, 0.01, enabled=True) == 1e-3  # rsl-rl: no raise at KL 0
    assert adapt_learning_rate(1e-5, 1.0, 0.01, enabled=True) == 1e-5  # clamped
    assert adapt_learning_rate(1e-3, 0.1, 0.01, enabled=False) == 1e-3
    assert adapt_learning_rate(1e-3, 0.001, 0.01, enabled=False) == 1e-3


@pytest.mark.parametrize(("k", "adapts"), [(0, False), (5, False), (6, True), (K, True)])
def test_adaptive_lr_waits_for_the_gate(k: int, adapts: bool) -> None:
    torch.manual_seed(0)
    policy = MLPActorCritic(2, 1, hidden=(8,))
    obs = torch.randn(32, 2)
    batch = _batch(policy, obs, torch.zeros(32, 1), torch.ones(32, dtype=torch.bool))
    # Pretend the rollout policy acted far from the current one: KL >> 2 x desired_kl.
    far = RolloutBatch(**{**batch.__dict__, "action_mean": batch.action_mean + 3.0})
    cfg = HybridConfig(learning_rate=1e-3, num_epochs=1, num_mini_batches=2)
    algo = HybridPPODagger(policy, K, cfg)
    stats = algo.update(far, k=k)
    assert stats.kl > 4.0
    if adapts:
        assert stats.learning_rate == pytest.approx(1e-3 / 1.5**2)
    else:
        assert stats.learning_rate == 1e-3
    assert algo.optimizer.param_groups[0]["lr"] == stats.learning_rate


# ----------------------------------------------------------------------------- returns, batch checks


def test_gae_by_hand() -> None:
    rewards = torch.tensor([[1.0], [2.0]])
    values = torch.tensor([[0.5], [1.0]])
    last = torch.tensor([3.0])
    gamma, lam = 0.9, 0.5
    d1 = 2.0 + gamma * 3.0 - 1.0
    d0 = 1.0 + gamma * 1.0 - 0.5
    adv, ret = compute_gae(rewards, values, torch.zeros(2, 1), last, gamma, lam)
    assert adv[:, 0].tolist() == pytest.approx([d0 + gamma * lam * d1, d1])
    assert ret[:, 0].tolist() == pytest.approx([d0 + gamma * lam * d1 + 0.5, d1 + 1.0])
    # A done at step 0 stops the bootstrap from step 1.
    adv, _ = compute_gae(rewards, values, torch.tensor([[True], [False]]), last, gamma, lam)
    assert adv[0, 0].item() == pytest.approx(1.0 - 0.5)


def test_batch_shapes_are_checked() -> None:
    policy = MLPActorCritic(2, 1, hidden=(4,))
    batch = _batch(policy, torch.zeros(4, 2), torch.zeros(4, 1), torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="teacher_actions"):
        RolloutBatch(**{**batch.__dict__, "teacher_actions": torch.zeros(4, 2)})
    with pytest.raises(ValueError, match="dagger_mask"):
        RolloutBatch(**{**batch.__dict__, "dagger_mask": torch.ones(4)})
    with pytest.raises(ValueError, match="samples"):
        RolloutBatch(**{**batch.__dict__, "returns": torch.zeros(3)})
