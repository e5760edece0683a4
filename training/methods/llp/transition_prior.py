"""LLP's transition training: a conditional adversarial motion prior over transitions, per group.

Parkour transitions (walking into a skill, leaving it for the next) are where a distilled policy
breaks. LLP trains them with an adversarial prior (:class:`TransitionDiscriminator`, its
:func:`style_reward` added to the task reward with a weight) conditioned on which part of the motion
a step belongs to, the **group** (:data:`GROUPS`: ``approach`` before the skill, ``skill``, ``exit``
after it, from the motion file's ``phase``). The policy gradient reaches the student only through the
PPO term of the hybrid loss.

**The label is seen by the critic only.** The actor is the exported student: its input layout is
the bundle's observation terms and the depth latent (:func:`actor_input_layout`), with no label;
the critic reads ``concat(privileged, one_hot(group))`` (:func:`critic_input_layout`). On the robot
nobody knows the group, so the policy must not need it; the value of a state does depend on it
(the same pose is worth more before a vault than after a fall).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray
from rsl_rl.modules import MLP
from torch import nn

from training.envs.privileged import PRIVILEGED_TERMS, term_slices
from training.export.student import STUDENT_OBS_TERMS

GROUPS: tuple[str, ...] = ("approach", "skill", "exit")  # = the motion file's phase 0 / 1 / 2
APPROACH, SKILL, EXIT = range(3)
_SLICES = term_slices(PRIVILEGED_TERMS)
ROBOT_JOINTS = _SLICES["joint_pos"]
REFERENCE_JOINTS = _SLICES["ref_joint_pos"]


def actor_input_layout(latent_dim: int) -> list[tuple[str, int]]:
    """What the actor (the exported student) reads, in order: the bundle's terms, then the depth latent."""
    return [(t.name, t.dims) for t in STUDENT_OBS_TERMS] + [("depth_latent", latent_dim)]


def critic_input_layout() -> list[tuple[str, int]]:
    """What the critic reads: the privileged terms, then the group one-hot."""
    return [(t.name, t.dims) for t in PRIVILEGED_TERMS] + [("group_onehot", len(GROUPS))]


def group_labels(phase: NDArray[np.integer], frames: NDArray[np.integer]) -> NDArray[np.int64]:
    """The group of each frame from a motion's per-frame phase (0 approach, 1 skill, 2 exit)."""
    frames = np.clip(np.asarray(frames, dtype=np.int64), 0, len(phase) - 1)
    return np.asarray(phase, dtype=np.int64)[frames]


def transitions(privileged: torch.Tensor, next_privileged: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(policy, reference) transitions [.., 2 J] from two consecutive privileged observations."""
    policy = torch.cat([privileged[..., ROBOT_JOINTS], next_privileged[..., ROBOT_JOINTS]], dim=-1)
    reference = torch.cat([privileged[..., REFERENCE_JOINTS], next_privileged[..., REFERENCE_JOINTS]], dim=-1)
    return policy, reference


class TransitionDiscriminator(nn.Module):
    """D(s, s' | group) -> a score (+1 reference-like, -1 policy-like under the LSGAN targets).

    A transition is the joint positions (the privileged observation's ``joint_pos``) of two consecutive
    steps, scored under the group's one-hot. Real transitions are the reference's (the same observation's
    ``ref_joint_pos``), fake ones the policy's. Least-squares GAN loss (targets +1 / -1) with a gradient
    penalty on the real samples, as in AMP.
    """

    def __init__(self, transition_dim: int, num_groups: int = len(GROUPS), hidden: Sequence[int] = (64, 64)) -> None:
        super().__init__()
        self.num_groups = num_groups
        self.net = MLP(transition_dim + num_groups, 1, list(hidden))

    def forward(self, transition: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
        onehot = nn.functional.one_hot(group.long(), self.num_groups).to(transition.dtype)
        return self.net(torch.cat([transition, onehot], dim=-1)).squeeze(-1)


def style_reward(score: torch.Tensor) -> torch.Tensor:
    """AMP's least-squares style reward ``max(0, 1 - 0.25 (D - 1)^2)``, in [0, 1]."""
    return torch.clamp(1.0 - 0.25 * (score - 1.0).pow(2), min=0.0)


@dataclass(frozen=True)
class PriorConfig:
    reward_weight: float = 0.5  # style reward added to the task reward per step
    learning_rate: float = 1e-3
    gradient_penalty: float = 5.0
    epochs: int = 2
    hidden: tuple[int, ...] = (64, 64)


@dataclass(frozen=True)
class PriorStats:
    loss: float
    real_score: float
    fake_score: float
    style_reward: float

    def as_dict(self) -> dict[str, float]:
        return {
            "prior_loss": self.loss,
            "prior_real_score": self.real_score,
            "prior_fake_score": self.fake_score,
            "style_reward": self.style_reward,
        }


class ConditionalPrior:
    """The discriminator and its optimizer; ``reward`` for the rollout, ``update`` once per iteration."""

    def __init__(self, cfg: PriorConfig = PriorConfig(), transition_dim: int = 2 * 29, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.cfg = cfg
        self.discriminator = TransitionDiscriminator(transition_dim, len(GROUPS), cfg.hidden)
        self.optimizer = torch.optim.Adam(self.discriminator.parameters(), lr=cfg.learning_rate)

    @torch.no_grad()
    def reward(self, policy_transition: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
        return self.cfg.reward_weight * style_reward(self.discriminator(policy_transition, group))

    def loss(
        self, real: torch.Tensor, real_group: torch.Tensor, fake: torch.Tensor, fake_group: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        real = real.detach().requires_grad_(True)
        d_real = self.discriminator(real, real_group)
        d_fake = self.discriminator(fake.detach(), fake_group)
        (grad,) = torch.autograd.grad(d_real.sum(), real, create_graph=True)
        penalty = grad.pow(2).sum(-1).mean()
        loss = (d_real - 1).pow(2).mean() + (d_fake + 1).pow(2).mean() + self.cfg.gradient_penalty * penalty
        return loss, d_real.detach(), d_fake.detach()

    def update(
        self, real: torch.Tensor, real_group: torch.Tensor, fake: torch.Tensor, fake_group: torch.Tensor
    ) -> PriorStats:
        """Full-batch epochs on valid transitions (flattened: [M, 2 J] and [M] labels)."""
        loss = d_real = d_fake = torch.zeros(())
        for _ in range(self.cfg.epochs):
            loss, d_real, d_fake = self.loss(real, real_group, fake, fake_group)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        return PriorStats(
            loss=float(loss.item()),
            real_score=float(d_real.mean().item()),
            fake_score=float(d_fake.mean().item()),
            style_reward=float(style_reward(d_fake).mean().item()),
        )
