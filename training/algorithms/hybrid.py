"""PHP's hybrid DAgger + PPO loss, ``L = lambda_PPO L_PPO + lambda_D * 10 * L_D``, as pure functions.

- ``L_PPO``: rsl-rl's PPO loss (clipped surrogate, clipped value loss, entropy bonus).
- ``L_D``: mean squared error between the student's action (its Gaussian mean) and the teacher's,
  over the samples whose state did NOT break the teachers' original 0.5 m termination: there the
  teacher never trained, so its label is not worth imitating (:func:`dagger_mask`).
- The weights come from :mod:`training.algorithms.schedules`; the KL-adaptive learning rate
  (rsl-rl's rule, :func:`adapt_learning_rate`) runs only once lambda_PPO > 0.1.

The update that uses them is :class:`training.rl.algorithms.HybridPPO`, on rsl_rl's ``PPO``, its
storage and its recurrent mini-batches; :class:`HybridConfig` is the typed config's view of the
coefficients (``TrainConfig.hybrid_config``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from training.algorithms.schedules import ORIGINAL_TERMINATION_M

DAGGER_COEF = 10.0
"""PHP's coefficient of the DAgger MSE."""


def surrogate_loss(
    log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor, clip: float
) -> torch.Tensor:
    """PPO's clipped surrogate (to minimise): mean of max(-A r, -A clip(r, 1 - eps, 1 + eps))."""
    ratio = torch.exp(log_probs - old_log_probs)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip, 1.0 + clip)
    return torch.max(unclipped, clipped).mean()


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float | None
) -> torch.Tensor:
    """Squared error to the returns; with ``clip``, rsl-rl's pessimistic clipped variant."""
    losses = (values - returns).pow(2)
    if clip is None:
        return losses.mean()
    clipped_values = old_values + (values - old_values).clamp(-clip, clip)
    return torch.max(losses, (clipped_values - returns).pow(2)).mean()


def dagger_mask(deviation: torch.Tensor, threshold: float = ORIGINAL_TERMINATION_M) -> torch.Tensor:
    """True where the teacher's label is usable: the state is within the teachers' termination.

    ``deviation`` is the tracking error the termination checks (m), one per sample. The student
    runs with a relaxed threshold (up to 1.0 m), so it visits states past 0.5 m that a teacher's
    episode would have ended in; those samples are masked out of the DAgger loss.
    """
    return deviation <= threshold


def latch_until_reset(mask: torch.Tensor, dones: torch.Tensor) -> torch.Tensor:
    """Keep a [T, N] mask False from an env's first False until its episode ends.

    Once the student has broken the teacher's termination, the rest of that episode is off the
    teacher's distribution even if the error shrinks again. ``dones[t]`` True means step t was the
    last of its episode, so step t + 1 starts clean.
    """
    if mask.shape != dones.shape or mask.dim() != 2:
        raise ValueError(f"mask and dones must both be [T, N], got {tuple(mask.shape)} and {tuple(dones.shape)}")
    out = torch.empty_like(mask)
    ok = torch.ones_like(mask[0])
    for t in range(mask.shape[0]):
        ok = ok & mask[t]
        out[t] = ok
        ok = ok | dones[t]
    return out


def masked_mse(student_actions: torch.Tensor, teacher_actions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over action dims, then over the samples where ``mask`` is True (0 when none is).

    The teacher's actions are detached: the gradient reaches the student only.
    """
    per_sample = (student_actions - teacher_actions.detach()).pow(2).mean(dim=-1)
    weights = mask.to(per_sample.dtype)
    return (per_sample * weights).sum() / weights.sum().clamp(min=1.0)


def adapt_learning_rate(
    lr: float,
    kl: float,
    desired_kl: float,
    *,
    enabled: bool,
    factor: float = 1.5,
    min_lr: float = 1e-5,
    max_lr: float = 1e-2,
) -> float:
    """rsl-rl's KL rule: divide by 1.5 above 2 x desired_kl, multiply by 1.5 below desired_kl / 2.

    With ``enabled`` False (before lambda_PPO > 0.1) the learning rate is returned unchanged.
    """
    if not enabled:
        return lr
    if kl > 2.0 * desired_kl:
        return max(min_lr, lr / factor)
    if 0.0 < kl < desired_kl / 2.0:
        return min(max_lr, lr * factor)
    return lr


@dataclass(frozen=True)
class HybridConfig:
    """Coefficients of the hybrid update (rsl-rl's PPO defaults where PHP gives none)."""

    clip_param: float = 0.2
    value_loss_coef: float = 1.0
    entropy_coef: float = 0.005
    dagger_coef: float = DAGGER_COEF
    use_clipped_value_loss: bool = True
    # The critic is a separate network that the student's actions never depend on, and PPO needs
    # a fitted critic the moment lambda_PPO rises; so by default the value loss is not scaled by
    # lambda_PPO. (Our choice: PHP's text does not say.)
    critic_always_trained: bool = True
    normalize_advantages: bool = True
    num_epochs: int = 5
    num_mini_batches: int = 4
    learning_rate: float = 1e-3
    desired_kl: float | None = 0.01
    min_lr: float = 1e-5
    max_lr: float = 1e-2
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        for name in ("clip_param", "learning_rate", "max_grad_norm", "min_lr", "max_lr"):
            if not getattr(self, name) > 0:
                raise ValueError(f"HybridConfig.{name} must be > 0, got {getattr(self, name)}")
        for name in ("value_loss_coef", "entropy_coef", "dagger_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"HybridConfig.{name} must be >= 0, got {getattr(self, name)}")
        if self.num_epochs < 1 or self.num_mini_batches < 1:
            raise ValueError("HybridConfig.num_epochs and num_mini_batches must be >= 1")
        if self.desired_kl is not None and not self.desired_kl > 0:
            raise ValueError(f"HybridConfig.desired_kl must be > 0 or None, got {self.desired_kl}")
        if not self.min_lr <= self.learning_rate <= self.max_lr:
            raise ValueError("HybridConfig.learning_rate must lie in [min_lr, max_lr]")
