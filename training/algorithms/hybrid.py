"""PHP's hybrid DAgger + PPO update: ``L = lambda_PPO L_PPO + lambda_D * 10 * L_D``.

- ``L_PPO``: rsl-rl's PPO loss (clipped surrogate, clipped value loss, entropy bonus).
- ``L_D``: mean squared error between the student's action (its Gaussian mean) and the teacher's,
  over the samples whose state did NOT break the teachers' original 0.5 m termination: there the
  teacher never trained, so its label is not worth imitating (:func:`dagger_mask`).
- The weights come from :mod:`training.algorithms.schedules`; the KL-adaptive learning rate
  (rsl-rl's rule) runs only once lambda_PPO > 0.1.

The loss pieces are pure functions on tensors; :class:`HybridPPODagger` runs mini-batch epochs
over a flat rollout batch with any module that follows :class:`ActorCritic`. We do not build on
rsl-rl-lib's ``PPO``: its ``update()`` draws batches from its own ``RolloutStorage`` and computes
the loss inline, with no hook for a second term, so using it would mean copying that method.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn
from torch.distributions import Normal

from training.algorithms.schedules import ORIGINAL_TERMINATION_M, SchedulePoint, schedule_at

DAGGER_COEF = 10.0
"""PHP's coefficient of the DAgger MSE."""


# ----------------------------------------------------------------------------- loss pieces


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


def gaussian_kl(
    old_mean: torch.Tensor, old_std: torch.Tensor, new_mean: torch.Tensor, new_std: torch.Tensor
) -> torch.Tensor:
    """KL(old || new) of diagonal Gaussians, summed over the action dims (as rsl-rl computes it)."""
    return torch.distributions.kl_divergence(Normal(old_mean, old_std), Normal(new_mean, new_std)).sum(dim=-1)


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


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_values: torch.Tensor,
    gamma: float = 0.99,
    lam: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over a [T, N] rollout; returns (advantages, returns).

    ``dones[t]`` True stops bootstrapping after step t. Time-outs should be bootstrapped by the
    environment into the reward (as rsl-rl does), not signalled as ``dones`` here.
    """
    if not rewards.shape == values.shape == dones.shape or last_values.shape != rewards.shape[1:]:
        raise ValueError("rewards, values, dones must be [T, N] and last_values [N]")
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(last_values)
    not_done = 1.0 - dones.to(rewards.dtype)
    for t in reversed(range(rewards.shape[0])):
        next_values = last_values if t == rewards.shape[0] - 1 else values[t + 1]
        delta = rewards[t] + gamma * not_done[t] * next_values - values[t]
        running = delta + gamma * lam * not_done[t] * running
        advantages[t] = running
    return advantages, advantages + values


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


@dataclass(frozen=True)
class HybridLoss:
    """The total loss and its unweighted parts (``entropy`` is the mean entropy, a bonus)."""

    total: torch.Tensor
    surrogate: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor
    dagger: torch.Tensor


def hybrid_loss(
    *,
    surrogate: torch.Tensor,
    value: torch.Tensor,
    entropy: torch.Tensor,
    dagger: torch.Tensor,
    ppo_weight: float,
    dagger_weight: float,
    config: HybridConfig,
) -> HybridLoss:
    """lambda_PPO (surrogate - c_H H) + w_V c_V L_V + lambda_D c_D L_D, w_V = 1 or lambda_PPO."""
    value_weight = 1.0 if config.critic_always_trained else ppo_weight
    total = (
        ppo_weight * (surrogate - config.entropy_coef * entropy)
        + value_weight * config.value_loss_coef * value
        + dagger_weight * config.dagger_coef * dagger
    )
    return HybridLoss(total=total, surrogate=surrogate, value=value, entropy=entropy, dagger=dagger)


# ----------------------------------------------------------------------------- models and batches


class ActorCritic(nn.Module):
    """What the update needs from a student: a Gaussian policy and a value, on flat observations.

    Subclass it (or follow the two methods). The DAgger term imitates the distribution's mean.
    """

    def action_distribution(self, obs: torch.Tensor) -> Normal:
        raise NotImplementedError

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """One value per sample: [B]."""
        raise NotImplementedError


def _mlp(inputs: int, hidden: Sequence[int], outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = inputs
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ELU()]
        width = size
    layers.append(nn.Linear(width, outputs))
    return nn.Sequential(*layers)


class MLPActorCritic(ActorCritic):
    """Separate ELU MLPs for actor and critic, state-independent std (rsl-rl's default shape)."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: Sequence[int] = (64, 64), init_std: float = 1.0):
        super().__init__()
        self.actor = _mlp(obs_dim, hidden, num_actions)
        self.critic = _mlp(obs_dim, hidden, 1)
        self.log_std = nn.Parameter(torch.full((num_actions,), math.log(init_std)))

    def action_distribution(self, obs: torch.Tensor) -> Normal:
        mean = self.actor(obs)
        return Normal(mean, self.log_std.exp().expand_as(mean))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)


@dataclass(frozen=True)
class RolloutBatch:
    """A flat rollout batch, N samples. ``action_mean``/``action_std`` are the acting policy's, for KL."""

    obs: torch.Tensor  # [N, obs]
    actions: torch.Tensor  # [N, A]
    log_probs: torch.Tensor  # [N], summed over action dims
    advantages: torch.Tensor  # [N]
    returns: torch.Tensor  # [N]
    values: torch.Tensor  # [N]
    action_mean: torch.Tensor  # [N, A]
    action_std: torch.Tensor  # [N, A]
    teacher_actions: torch.Tensor  # [N, A]
    dagger_mask: torch.Tensor  # [N] bool, True = imitate (see dagger_mask())

    def __post_init__(self) -> None:
        n = self.obs.shape[0]
        shape_a = tuple(self.actions.shape)
        if len(shape_a) != 2 or shape_a[0] != n:
            raise ValueError(f"RolloutBatch.actions must be [N={n}, A], got {shape_a}")
        for f in fields(self):
            tensor = getattr(self, f.name)
            if tensor.shape[0] != n:
                raise ValueError(f"RolloutBatch.{f.name} has {tensor.shape[0]} samples, obs has {n}")
            if f.name in ("action_mean", "action_std", "teacher_actions") and tuple(tensor.shape) != shape_a:
                raise ValueError(f"RolloutBatch.{f.name} must be {shape_a}, got {tuple(tensor.shape)}")
            if f.name in ("log_probs", "advantages", "returns", "values", "dagger_mask") and tensor.dim() != 1:
                raise ValueError(f"RolloutBatch.{f.name} must be [N], got {tuple(tensor.shape)}")
        if self.dagger_mask.dtype != torch.bool:
            raise ValueError("RolloutBatch.dagger_mask must be a bool tensor")

    def __len__(self) -> int:
        return int(self.obs.shape[0])

    def select(self, index: torch.Tensor) -> RolloutBatch:
        return RolloutBatch(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    def with_advantages(self, advantages: torch.Tensor) -> RolloutBatch:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["advantages"] = advantages
        return RolloutBatch(**values)


@dataclass(frozen=True)
class UpdateStats:
    """Means over the mini-batch steps of one update, plus the schedule it ran with."""

    total: float
    surrogate: float
    value: float
    entropy: float
    dagger: float
    kl: float
    learning_rate: float
    dagger_weight: float
    ppo_weight: float
    imitated_fraction: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


# ----------------------------------------------------------------------------- the update


class HybridPPODagger:
    """Mini-batch epochs of the hybrid loss at iteration ``k`` of ``total_iterations``."""

    def __init__(
        self,
        actor_critic: ActorCritic,
        total_iterations: int,
        config: HybridConfig | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        self.actor_critic = actor_critic
        self.total_iterations = total_iterations
        self.config = config or HybridConfig()
        self.learning_rate = self.config.learning_rate
        self.optimizer = torch.optim.Adam(actor_critic.parameters(), lr=self.learning_rate)
        self.generator = generator
        schedule_at(0, total_iterations)  # validates total_iterations

    def _mini_batches(self, n: int) -> Iterator[torch.Tensor]:
        for _ in range(self.config.num_epochs):
            order = torch.randperm(n, generator=self.generator)
            yield from order.chunk(self.config.num_mini_batches)

    def _set_learning_rate(self, lr: float) -> None:
        self.learning_rate = lr
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def update(self, batch: RolloutBatch, k: int) -> UpdateStats:
        cfg = self.config
        point: SchedulePoint = schedule_at(k, self.total_iterations)
        if cfg.normalize_advantages and len(batch) > 1:
            adv = batch.advantages
            batch = batch.with_advantages((adv - adv.mean()) / (adv.std() + 1e-8))
        sums = dict.fromkeys(("total", "surrogate", "value", "entropy", "dagger", "kl"), 0.0)
        steps = 0
        for index in self._mini_batches(len(batch)):
            mb = batch.select(index)
            dist = self.actor_critic.action_distribution(mb.obs)
            with torch.no_grad():
                kl = gaussian_kl(mb.action_mean, mb.action_std, dist.mean, dist.stddev).mean().item()
            if cfg.desired_kl is not None:
                lr = adapt_learning_rate(
                    self.learning_rate,
                    kl,
                    cfg.desired_kl,
                    enabled=point.adaptive_lr,
                    min_lr=cfg.min_lr,
                    max_lr=cfg.max_lr,
                )
                self._set_learning_rate(lr)
            loss = hybrid_loss(
                surrogate=surrogate_loss(
                    dist.log_prob(mb.actions).sum(-1), mb.log_probs, mb.advantages, cfg.clip_param
                ),
                value=value_loss(
                    self.actor_critic.value(mb.obs),
                    mb.values,
                    mb.returns,
                    cfg.clip_param if cfg.use_clipped_value_loss else None,
                ),
                entropy=dist.entropy().sum(-1).mean(),
                dagger=masked_mse(dist.mean, mb.teacher_actions, mb.dagger_mask),
                ppo_weight=point.ppo_weight,
                dagger_weight=point.dagger_weight,
                config=cfg,
            )
            self.optimizer.zero_grad()
            loss.total.backward()
            nn.utils.clip_grad_norm_(self.actor_critic.parameters(), cfg.max_grad_norm)
            self.optimizer.step()
            for name in ("total", "surrogate", "value", "entropy", "dagger"):
                sums[name] += float(getattr(loss, name).item())
            sums["kl"] += kl
            steps += 1
        means = {name: value / steps for name, value in sums.items()}
        return UpdateStats(
            **means,
            learning_rate=self.learning_rate,
            dagger_weight=point.dagger_weight,
            ppo_weight=point.ppo_weight,
            imitated_fraction=float(batch.dagger_mask.float().mean().item()),
        )
