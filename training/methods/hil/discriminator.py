"""HIL's adversarial motion prior: a discriminator over state transitions that becomes a style reward.

- :class:`AMPDiscriminator` scores a transition ``D(s, s', scene)`` (the scene samples are part of
  the state features of :mod:`training.methods.hil.features`, or a separate tensor): an MLP behind
  an empirical input normalizer, one logit per transition.
- :func:`discriminator_loss`: AMP's least-squares GAN loss (real -> +1, generated -> -1) or the
  binary cross-entropy of GAIL, plus ``gp_weight / 2 * E_real ||grad_x D||^2``, the gradient
  penalty on real samples that keeps D smooth around the motion data. The gradient is taken with
  respect to the network's (normalized) input, as AMP does.
- :func:`style_reward`: AMP's ``r = max(0, 1 - 0.25 (D - 1)^2)`` for the LSGAN loss, with D clamped
  at the real target 1 so the reward is monotone in D (it equals AMP's for D <= 1, where D sits for
  anything the discriminator does not call "more real than real"); ``sigmoid(D)`` for BCE.
- :class:`DiscriminatorTrainer`: Adam steps on (real, generated) batches; reports loss, penalty
  and accuracy (real scored > 0, generated < 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from training.pipeline.normalizer import EmpiricalNormalizer

LOSSES = ("lsgan", "bce")


@dataclass(frozen=True)
class DiscriminatorConfig:
    hidden: tuple[int, ...] = (256, 128)
    loss: str = "lsgan"
    gp_weight: float = 5.0  # AMP's w_gp (the loss adds w_gp / 2 * E ||grad D||^2)
    learning_rate: float = 1e-4
    weight_decay: float = 1e-4  # on the output layer's logit weights (AMP regularizes them)
    batch_size: int = 256
    steps_per_iteration: int = 4
    normalize: bool = True

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"discriminator.loss: {self.loss!r} is not one of {', '.join(LOSSES)}")
        if self.gp_weight < 0 or self.learning_rate <= 0 or self.batch_size < 1 or self.steps_per_iteration < 0:
            raise ValueError(
                "discriminator: gp_weight must be >= 0, learning_rate > 0, batch_size >= 1, steps_per_iteration >= 0"
            )


class AMPDiscriminator(nn.Module):
    """``D(s, s', scene)``: a ReLU MLP over the concatenated transition, one logit per row."""

    def __init__(self, input_dim: int, hidden: Sequence[int] = (256, 128), normalize: bool = True) -> None:
        super().__init__()
        self.input_dim = input_dim
        self.normalizer = EmpiricalNormalizer(input_dim, enabled=normalize)
        layers: list[nn.Module] = []
        width = input_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.trunk = nn.Sequential(*layers)
        self.head = nn.Linear(width, 1)

    @staticmethod
    def transition(s: torch.Tensor, s_next: torch.Tensor, scene: torch.Tensor | None = None) -> torch.Tensor:
        parts = [s, s_next] + ([scene] if scene is not None else [])
        return torch.cat(parts, dim=-1)

    def logits(self, z: torch.Tensor) -> torch.Tensor:
        """D on an already normalized input (the gradient penalty differentiates this)."""
        return self.head(self.trunk(z)).squeeze(-1)

    def forward(self, s: torch.Tensor, s_next: torch.Tensor | None = None, scene: torch.Tensor | None = None):
        """D of transitions: ``forward(x)`` with x = [s, s', scene] concatenated, or the pieces."""
        x = s if s_next is None else self.transition(s, s_next, scene)
        return self.logits(self.normalizer(x))


def gradient_penalty(disc: AMPDiscriminator, x_real: torch.Tensor) -> torch.Tensor:
    """``E_real ||grad_z D(z)||^2`` at z = the normalized real transitions (differentiable)."""
    z = disc.normalizer(x_real).detach().requires_grad_(True)
    d = disc.logits(z)
    (grad,) = torch.autograd.grad(d.sum(), z, create_graph=True)
    return grad.pow(2).sum(-1).mean()


@dataclass(frozen=True)
class DiscriminatorLoss:
    total: torch.Tensor
    adversarial: torch.Tensor
    gradient_penalty: torch.Tensor
    d_real: torch.Tensor  # mean logits
    d_fake: torch.Tensor
    accuracy_real: float
    accuracy_fake: float

    def as_dict(self) -> dict[str, float]:
        return {
            "disc_loss": float(self.total.detach()),
            "disc_adversarial": float(self.adversarial.detach()),
            "disc_gradient_penalty": float(self.gradient_penalty.detach()),
            "disc_d_real": float(self.d_real.detach()),
            "disc_d_fake": float(self.d_fake.detach()),
            "disc_accuracy_real": self.accuracy_real,
            "disc_accuracy_fake": self.accuracy_fake,
            "disc_accuracy": 0.5 * (self.accuracy_real + self.accuracy_fake),
        }


def discriminator_loss(
    disc: AMPDiscriminator, real: torch.Tensor, fake: torch.Tensor, loss: str = "lsgan", gp_weight: float = 5.0
) -> DiscriminatorLoss:
    d_real, d_fake = disc(real), disc(fake)
    if loss == "lsgan":
        adversarial = 0.5 * ((d_real - 1.0).pow(2).mean() + (d_fake + 1.0).pow(2).mean())
    elif loss == "bce":
        adversarial = nn.functional.softplus(-d_real).mean() + nn.functional.softplus(d_fake).mean()
    else:
        raise ValueError(f"loss {loss!r} is not one of {', '.join(LOSSES)}")
    gp = gradient_penalty(disc, real) if gp_weight > 0 else torch.zeros((), dtype=real.dtype)
    return DiscriminatorLoss(
        total=adversarial + 0.5 * gp_weight * gp,
        adversarial=adversarial,
        gradient_penalty=gp,
        d_real=d_real.mean(),
        d_fake=d_fake.mean(),
        accuracy_real=float((d_real.detach() > 0).float().mean()),
        accuracy_fake=float((d_fake.detach() < 0).float().mean()),
    )


def style_reward(d: torch.Tensor, loss: str = "lsgan") -> torch.Tensor:
    """The style reward of logits ``d``, in [0, 1] and non-decreasing in d (see the module docstring)."""
    if loss == "lsgan":
        return torch.clamp(1.0 - 0.25 * (torch.clamp(d, max=1.0) - 1.0).pow(2), min=0.0)
    if loss == "bce":
        return torch.sigmoid(d)
    raise ValueError(f"loss {loss!r} is not one of {', '.join(LOSSES)}")


class DiscriminatorTrainer:
    """Adam on the discriminator loss; the normalizer sees every batch before the step."""

    def __init__(self, disc: AMPDiscriminator, cfg: DiscriminatorConfig) -> None:
        self.disc = disc
        self.cfg = cfg
        head = list(disc.head.parameters())
        head_ids = {id(p) for p in head}
        trunk = [p for p in disc.parameters() if id(p) not in head_ids]
        self.optimizer = torch.optim.Adam(
            [{"params": trunk, "weight_decay": 0.0}, {"params": head, "weight_decay": cfg.weight_decay}],
            lr=cfg.learning_rate,
        )

    def step(self, real: torch.Tensor, fake: torch.Tensor) -> dict[str, float]:
        self.disc.normalizer.update(torch.cat([real, fake]))
        out = discriminator_loss(self.disc, real, fake, self.cfg.loss, self.cfg.gp_weight)
        self.optimizer.zero_grad()
        out.total.backward()
        self.optimizer.step()
        return out.as_dict()

    @torch.no_grad()
    def reward(self, transitions: torch.Tensor) -> torch.Tensor:
        return style_reward(self.disc(transitions), self.cfg.loss)
