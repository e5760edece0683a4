"""The AMP discriminator: it separates real from generated transitions, its gradient penalty is
||grad D||^2 (finite differences), and the style reward is in [0, 1] and monotone in D."""

from __future__ import annotations

import numpy as np
import torch

from training.methods.hil.discriminator import (
    AMPDiscriminator,
    DiscriminatorConfig,
    DiscriminatorTrainer,
    discriminator_loss,
    gradient_penalty,
    style_reward,
)


def _rotate_pairs(s: torch.Tensor, angle: float) -> torch.Tensor:
    """Rotate each consecutive coordinate pair of s by ``angle`` (a toy 'dynamics')."""
    c, si = np.cos(angle), np.sin(angle)
    x, y = s[:, 0::2], s[:, 1::2]
    out = torch.empty_like(s)
    out[:, 0::2], out[:, 1::2] = c * x - si * y, si * x + c * y
    return out


def _toy(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Real transitions turn the state by +0.4 rad, generated ones by -0.4 rad (same marginals of s and s')."""
    s = torch.randn(n, 4, generator=generator)
    real = AMPDiscriminator.transition(s, _rotate_pairs(s, 0.4))
    s = torch.randn(n, 4, generator=generator)
    fake = AMPDiscriminator.transition(s, _rotate_pairs(s, -0.4))
    return real, fake


def test_discriminator_separates_real_from_generated_transitions() -> None:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    cfg = DiscriminatorConfig(hidden=(64, 64), learning_rate=3e-3, gp_weight=1.0, batch_size=128)
    disc = AMPDiscriminator(8, cfg.hidden)
    trainer = DiscriminatorTrainer(disc, cfg)
    first = trainer.step(*_toy(cfg.batch_size, g))
    for _ in range(300):
        trainer.step(*_toy(cfg.batch_size, g))
    real, fake = _toy(2000, g)  # held out
    with torch.no_grad():
        out = discriminator_loss(disc, real, fake, cfg.loss, gp_weight=0.0)
    accuracy = 0.5 * (out.accuracy_real + out.accuracy_fake)
    assert first["disc_accuracy"] < 0.75
    assert accuracy > 0.9, accuracy
    # The style reward follows: real transitions are rated higher than generated ones.
    assert trainer.reward(real).mean() > trainer.reward(fake).mean() + 0.3


def test_gradient_penalty_matches_finite_differences() -> None:
    torch.manual_seed(1)
    disc = AMPDiscriminator(6, (16, 16), normalize=True).double()
    x = torch.randn(32, 6, dtype=torch.float64) * 3.0 + 1.0
    disc.normalizer.update(x)  # non-trivial normalization: the penalty is on the normalized input
    gp = float(gradient_penalty(disc, x).detach())
    z = disc.normalizer(x).detach()
    h = 1e-6
    grad = torch.zeros_like(z)
    with torch.no_grad():
        for j in range(z.shape[1]):
            e = torch.zeros_like(z)
            e[:, j] = h
            grad[:, j] = (disc.logits(z + e) - disc.logits(z - e)) / (2 * h)
    fd = float(grad.pow(2).sum(-1).mean())
    assert fd > 1e-3  # not a trivially zero gradient
    assert abs(gp - fd) / fd < 1e-3, (gp, fd)
    # The loss adds gp_weight / 2 times it, and the penalty is differentiable (it trains D).
    fake = torch.randn(32, 6, dtype=torch.float64)
    with_gp = discriminator_loss(disc, x, fake, "lsgan", gp_weight=10.0)
    without = discriminator_loss(disc, x, fake, "lsgan", gp_weight=0.0)
    assert abs(float((with_gp.total - without.total).detach()) - 5.0 * gp) < 1e-9
    with_gp.total.backward()
    assert all(p.grad is not None for p in disc.parameters())


def test_style_reward_is_in_unit_interval_and_monotone() -> None:
    d = torch.linspace(-5.0, 5.0, 1001, dtype=torch.float64)
    for loss in ("lsgan", "bce"):
        r = style_reward(d, loss)
        assert float(r.min()) >= 0.0 and float(r.max()) <= 1.0
        assert bool(torch.all(r[1:] >= r[:-1]))
    r = style_reward(d, "lsgan")
    # AMP's values: 0 at D <= -1 (generated target), 1 at D = 1 (real target), 0.75 at D = 0.
    assert float(r[d <= -1.0].max()) == 0.0
    np.testing.assert_allclose(float(style_reward(torch.tensor(0.0))), 0.75)
    np.testing.assert_allclose(float(style_reward(torch.tensor(1.0))), 1.0)
    np.testing.assert_allclose(float(style_reward(torch.tensor(0.5))), 1 - 0.25 * 0.25)
