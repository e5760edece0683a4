"""The hand-written recurrent hybrid update LLP's student and HPL's collectors still run.

PHP's own student is the ``php_student`` task (rsl_rl's storage and
:class:`training.rl.algorithms.HybridPPO` through the one runner); this module goes once LLP's and
HPL's students move onto it too.

PHP's hybrid DAgger + PPO update for the recurrent depth student, on sequence mini-batches.

``training.algorithms.hybrid.HybridPPODagger`` draws flat, shuffled samples, which a GRU cannot use:
its action at step t depends on every earlier step of the episode. Here the collected rollout
``[T, N]`` is cut into windows of ``bptt_steps`` consecutive steps per environment (truncated
backpropagation through time): each window starts from the hidden state the acting policy had at
its first step (stored during the rollout, detached) and runs the student forward through the
window, zeroing the hidden state where an episode starts (as the runtime's ``PolicyRunner.reset``
does on activation). Mini-batches are sets of whole windows.

The loss is the one of :mod:`training.algorithms.hybrid`, term for term, on the window's samples:
``surrogate_loss``, ``value_loss``, the entropy bonus, ``masked_mse`` against the teacher's actions
under the DAgger mask, combined by ``hybrid_loss`` with the weights of
``training.algorithms.schedules.schedule_at(k, K)``; the KL-adaptive learning rate
(``adapt_learning_rate``) runs only once lambda_PPO > 0.1. The modules are the ones
``training.export`` exports (:class:`~training.export.models.DepthBackbone` and
:class:`~training.export.models.RecurrentStudent`, one step of its ``forward`` per tick), plus a
state-independent action std and a critic. The critic reads the teacher's privileged observation
(an asymmetric actor-critic: it never runs on the robot, so it is not exported).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

import torch
from torch import nn
from torch.distributions import Normal

from training.algorithms.hybrid import (
    HybridConfig,
    UpdateStats,
    adapt_learning_rate,
    gaussian_kl,
    hybrid_loss,
    masked_mse,
    surrogate_loss,
    value_loss,
)
from training.algorithms.schedules import schedule_at
from training.configs.schema import TrainConfig
from training.export.models import DepthBackbone, RecurrentStudent, StudentSize
from training.export.student import student_manifest
from training.pipeline.normalizer import EmpiricalNormalizer


def _mlp(inputs: int, hidden: Sequence[int], outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = inputs
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ELU()]
        width = size
    layers.append(nn.Linear(width, outputs))
    return nn.Sequential(*layers)


class RecurrentDepthActorCritic(nn.Module):
    """The exported student pair as a Gaussian policy, with an asymmetric critic.

    The action mean is exactly what the bundle computes: ``backbone(depth)`` -> latent, then one
    ``RecurrentStudent.forward`` per tick with the hidden state passed in and out.
    """

    def __init__(
        self,
        backbone: DepthBackbone,
        student: RecurrentStudent,
        privileged_dim: int,
        critic_hidden: Sequence[int] = (64, 64),
        init_std: float = 0.1,
        normalize_critic: bool = True,
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.student = student
        last = student.mlp[-1]
        assert isinstance(last, nn.Linear)
        self.log_std = nn.Parameter(torch.full((last.out_features,), math.log(init_std)))
        # The critic's input statistics; the caller updates them with collected observations.
        self.critic_normalizer = EmpiricalNormalizer(privileged_dim, enabled=normalize_critic)
        self.critic = _mlp(privileged_dim, critic_hidden, 1)

    @property
    def hidden_size(self) -> int:
        return int(self.student.gru.hidden_size)

    def initial_hidden(self, batch: int) -> torch.Tensor:
        return torch.zeros(1, batch, self.hidden_size)

    def step(self, obs: torch.Tensor, depth: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One tick for a batch: obs [B, O], depth [B, H, W], hidden [1, B, G] -> mean [B, A], hidden."""
        return self.student(obs, self.backbone(depth), hidden)

    def sequence(
        self, obs: torch.Tensor, depth: torch.Tensor, hidden: torch.Tensor, starts: torch.Tensor
    ) -> torch.Tensor:
        """Action means [T, B, A] over windows: obs [T, B, O], depth [T, B, H, W], hidden [1, B, G] at t = 0.

        ``starts[t]`` True: an episode starts at step t, so the hidden state is zeroed before it.
        """
        steps, batch = obs.shape[:2]
        latent = self.backbone(depth.reshape(steps * batch, *depth.shape[2:])).reshape(steps, batch, -1)
        keep = (~starts).to(obs.dtype)[:, None, :, None]  # [T, 1, B, 1]
        means = []
        for t in range(steps):
            mean, hidden = self.student(obs[t], latent[t], hidden * keep[t])
            means.append(mean)
        return torch.stack(means)

    def distribution(self, mean: torch.Tensor) -> Normal:
        return Normal(mean, self.log_std.exp().expand_as(mean))

    def value(self, privileged: torch.Tensor) -> torch.Tensor:
        return self.critic(self.critic_normalizer(privileged)).squeeze(-1)


@dataclass(frozen=True)
class SequenceBatch:
    """A recurrent rollout, time-major: every tensor is [T, N, ...].

    ``hidden`` is the acting policy's GRU state before each step (already zeroed at episode starts),
    ``starts`` marks the steps that begin an episode, ``action_mean``/``action_std`` are the acting
    policy's (for the KL), ``dagger_mask`` True = imitate the teacher's label at that step.
    """

    obs: torch.Tensor  # [T, N, O] the student's proprioception + command (the bundle's terms)
    depth: torch.Tensor  # [T, N, H, W] the newest published, preprocessed depth image
    privileged: torch.Tensor  # [T, N, P] the teacher's observation (the critic's input)
    hidden: torch.Tensor  # [T, N, G]
    starts: torch.Tensor  # [T, N] bool
    actions: torch.Tensor  # [T, N, A]
    log_probs: torch.Tensor  # [T, N]
    values: torch.Tensor  # [T, N]
    advantages: torch.Tensor  # [T, N]
    returns: torch.Tensor  # [T, N]
    action_mean: torch.Tensor  # [T, N, A]
    action_std: torch.Tensor  # [T, N, A]
    teacher_actions: torch.Tensor  # [T, N, A]
    dagger_mask: torch.Tensor  # [T, N] bool

    def __post_init__(self) -> None:
        steps, n = self.obs.shape[:2]
        for f in fields(self):
            tensor = getattr(self, f.name)
            if tuple(tensor.shape[:2]) != (steps, n):
                raise ValueError(f"SequenceBatch.{f.name} must be [T={steps}, N={n}, ...], got {tuple(tensor.shape)}")
        for name in ("starts", "dagger_mask"):
            if getattr(self, name).dtype != torch.bool:
                raise ValueError(f"SequenceBatch.{name} must be a bool tensor")

    @property
    def steps(self) -> int:
        return int(self.obs.shape[0])

    @property
    def num_envs(self) -> int:
        return int(self.obs.shape[1])

    def windows(self, length: int) -> SequenceBatch:
        """The same samples as [length, N * T / length] windows (window w of env n at column w * N + n)."""
        if length < 1 or self.steps % length:
            raise ValueError(f"bptt_steps {length} must divide the rollout length {self.steps}")
        count = self.steps // length

        def cut(x: torch.Tensor) -> torch.Tensor:
            x = x.reshape(count, length, self.num_envs, *x.shape[2:])
            return x.transpose(0, 1).reshape(length, count * self.num_envs, *x.shape[3:])

        return SequenceBatch(**{f.name: cut(getattr(self, f.name)) for f in fields(self)})

    def columns(self, index: torch.Tensor) -> SequenceBatch:
        return SequenceBatch(**{f.name: getattr(self, f.name)[:, index] for f in fields(self)})


class RecurrentHybridUpdate:
    """Mini-batch epochs of PHP's hybrid loss over BPTT windows, at iteration ``k`` of ``total_iterations``."""

    def __init__(
        self,
        model: RecurrentDepthActorCritic,
        total_iterations: int,
        config: HybridConfig | None = None,
        bptt_steps: int = 8,
        generator: torch.Generator | None = None,
    ) -> None:
        self.model = model
        self.total_iterations = total_iterations
        self.config = config or HybridConfig()
        self.bptt_steps = bptt_steps
        self.learning_rate = self.config.learning_rate
        self.optimizer = torch.optim.Adam(model.parameters(), lr=self.learning_rate)
        self.generator = generator
        schedule_at(0, total_iterations)  # validates total_iterations

    def _mini_batches(self, windows: int) -> Iterator[torch.Tensor]:
        chunks = min(self.config.num_mini_batches, windows)
        for _ in range(self.config.num_epochs):
            yield from torch.randperm(windows, generator=self.generator).chunk(chunks)

    def _set_learning_rate(self, lr: float) -> None:
        self.learning_rate = lr
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def losses(self, mb: SequenceBatch, ppo_weight: float, dagger_weight: float):  # -> (HybridLoss, kl)
        """The hybrid loss of one mini-batch of windows, and KL(acting policy || current) for the LR rule."""
        cfg = self.config
        hidden0 = mb.hidden[0].unsqueeze(0).contiguous()  # [1, B, G]: the state the rollout had there
        means = self.model.sequence(mb.obs, mb.depth, hidden0, mb.starts)
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731  [L, B, ...] -> [L * B, ...]
        dist = self.model.distribution(flat(means))
        with torch.no_grad():
            kl = gaussian_kl(flat(mb.action_mean), flat(mb.action_std), dist.mean, dist.stddev).mean().item()
        loss = hybrid_loss(
            surrogate=surrogate_loss(
                dist.log_prob(flat(mb.actions)).sum(-1), flat(mb.log_probs), flat(mb.advantages), cfg.clip_param
            ),
            value=value_loss(
                self.model.value(flat(mb.privileged)),
                flat(mb.values),
                flat(mb.returns),
                cfg.clip_param if cfg.use_clipped_value_loss else None,
            ),
            entropy=dist.entropy().sum(-1).mean(),
            dagger=masked_mse(dist.mean, flat(mb.teacher_actions), flat(mb.dagger_mask)),
            ppo_weight=ppo_weight,
            dagger_weight=dagger_weight,
            config=cfg,
        )
        return loss, kl

    def update(self, batch: SequenceBatch, k: int) -> UpdateStats:
        cfg = self.config
        point = schedule_at(k, self.total_iterations)
        if cfg.normalize_advantages and batch.advantages.numel() > 1:
            adv = batch.advantages
            values = {f.name: getattr(batch, f.name) for f in fields(batch)}
            values["advantages"] = (adv - adv.mean()) / (adv.std() + 1e-8)
            batch = SequenceBatch(**values)
        windows = batch.windows(self.bptt_steps)
        sums = dict.fromkeys(("total", "surrogate", "value", "entropy", "dagger", "kl"), 0.0)
        steps = 0
        for index in self._mini_batches(windows.num_envs):
            loss, kl = self.losses(windows.columns(index), point.ppo_weight, point.dagger_weight)
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
            self.optimizer.zero_grad()
            loss.total.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
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
