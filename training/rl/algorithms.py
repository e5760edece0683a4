"""Our two algorithms, each a small subclass of rsl_rl's, over rsl_rl's storage and models.

- :class:`BlendedDistillation`: rsl_rl's ``Distillation`` (DAgger) acting with a blend of teacher and
  student, its update running the student over whole trajectories at once. Stage 1 of the walking student.
- :class:`HybridPPO`: PHP's objective on rsl_rl's ``PPO``: the DAgger loss added to PPO's, both weighted
  by a schedule over the run. Stage 2.

Each class's docstring says what it changes of rsl_rl's and why.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch
from rsl_rl.algorithms import PPO, Distillation
from rsl_rl.utils import split_and_pad_trajectories, unpad_trajectories
from tensordict import TensorDict
from torch import nn

from training.algorithms.hybrid import adapt_learning_rate, masked_mse, surrogate_loss, value_loss
from training.algorithms.schedules import schedule_at
from training.rl.models import TEACHER_GROUP


def teacher_env_count(num_envs: int, fraction: float) -> int:
    """Environments that always run the teacher (the first ones): at least one if the fraction is not 0."""
    return max(1, int(num_envs * fraction)) if fraction else 0


class BlendedDistillation(Distillation):
    """rsl_rl's ``Distillation`` (DAgger: the teacher labels every step the student visits) acting with a blend.

    The action is ``a = w t + (1 - w) s``: ``w = beta`` falling 1 -> 0 over the first ``beta_end_fraction`` of
    the run, and ``w = 1`` in a fixed first ``teacher_env_fraction`` of the environments (the speed reference).
    Its update runs the student over whole trajectories at once, the way rsl_rl's PPO runs a recurrent policy
    (the rollout split at dones, padded, masked, each trajectory from the hidden state it started with), in
    ``num_mini_batches`` groups of environments: rsl_rl's own distillation update steps the student one tick at
    a time (48 small passes of the depth CNN per iteration here), which cost three times as much for the same
    samples. Stage 1 of the walking student.
    """

    def __init__(
        self,
        *args: Any,
        beta_end_fraction: float = 0.5,
        teacher_env_fraction: float = 0.125,
        num_mini_batches: int = 4,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.num_mini_batches = num_mini_batches
        if not 0.0 < beta_end_fraction <= 1.0 or not 0.0 <= teacher_env_fraction <= 1.0:
            raise ValueError(f"beta_end_fraction {beta_end_fraction} must be in (0, 1], teacher_env_fraction "
                             f"{teacher_env_fraction} in [0, 1]")  # fmt: skip
        self.beta_end_fraction = beta_end_fraction
        self.teacher_envs = teacher_env_count(self.storage.num_envs, teacher_env_fraction)
        self.beta = 1.0
        # The teacher's labels come with the observation: it has no weights to load.
        self.teacher_loaded = True

    def set_progress(self, fraction: float) -> None:
        """Where the run is (0..1, by iterations or by its time box): sets beta."""
        self.beta = max(0.0, 1.0 - fraction / self.beta_end_fraction)

    def blend_weights(self, num_envs: int, device: torch.device | str) -> torch.Tensor:
        weights = torch.full((num_envs, 1), self.beta, device=device)
        weights[: self.teacher_envs] = 1.0
        return weights

    def act(self, obs: TensorDict) -> torch.Tensor:
        # The storage keeps each step's hidden state: the update starts every trajectory from its own.
        self.transition.hidden_states = (self.student.get_hidden_state(), None)
        student = super().act(obs)
        teacher = self.transition.privileged_actions
        assert teacher is not None
        weights = self.blend_weights(student.shape[0], student.device)
        return weights * teacher + (1.0 - weights) * student

    def update(self) -> dict[str, float]:
        st = self.storage
        observations, masks = split_and_pad_trajectories(st.observations, st.dones)
        starts = trajectory_starts(st.dones)
        hidden = trajectory_start_hidden(st.saved_hidden_state_a, starts)
        # Trajectories are ordered environment by environment: those of envs [a, b) are a slice.
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), starts.sum(dim=0).cumsum(0)]).tolist()
        envs = st.num_envs
        size = max(1, envs // min(self.num_mini_batches, envs))
        losses = []
        for _ in range(self.num_learning_epochs):
            for start in range(0, envs, size):
                stop = min(envs, start + size)
                first, last = offsets[start], offsets[stop]
                actions = self.student(observations[:, first:last], masks=masks[:, first:last],
                                       hidden_state=hidden[:, first:last] if hidden is not None else None)  # fmt: skip
                loss = self.loss_fn(actions, st.privileged_actions[:, start:stop])
                self.optimizer.zero_grad()
                loss.backward()
                if self.is_multi_gpu:
                    self.reduce_parameters()
                if self.max_grad_norm:
                    nn.utils.clip_grad_norm_(self.student.parameters(), self.max_grad_norm)
                self.optimizer.step()
                losses.append(float(loss.item()))
        st.clear()
        return {"behavior": sum(losses) / len(losses)}


def trajectory_starts(dones: torch.Tensor) -> torch.Tensor:
    """[T, N] True where a trajectory of ``split_and_pad_trajectories`` starts (t = 0 and after each done)."""
    starts = torch.ones_like(dones.squeeze(-1), dtype=torch.bool)
    starts[1:] = dones.squeeze(-1)[:-1].bool()
    return starts


def trajectory_start_hidden(saved: list[torch.Tensor] | None, starts: torch.Tensor) -> torch.Tensor | None:
    """The GRU state each trajectory started from, [layers, trajectories, H], in
    ``split_and_pad_trajectories``' order (environment by environment; rsl_rl's recurrent indexing)."""
    if saved is None:
        return None
    (states,) = saved  # a GRU keeps one state tensor: [T, layers, N, H]
    return states.permute(2, 0, 1, 3)[starts.permute(1, 0)].transpose(1, 0).contiguous()


@runtime_checkable
class AuxiliaryLosses(Protocol):
    """An actor with training-only terms of its own: ``{name: weighted loss}`` of the mini-batch its last
    forward pass ran on (``observations``, ``masks`` as the update handed them to the actor)."""

    def auxiliary_losses(self, observations: TensorDict, masks: torch.Tensor | None) -> dict[str, torch.Tensor]: ...


class HybridPPO(PPO):
    """PHP's objective ``L = lambda_PPO (L_surr - c_H H) + c_V L_V + lambda_D c_D L_D`` on rsl_rl's ``PPO``.

    rsl_rl's storage, GAE, recurrent mini-batches, clipped surrogate and value loss, with the DAgger MSE of the
    policy's mean to the teacher's labels added and both weighted by
    ``training.algorithms.schedules.schedule_at(k, K)`` (lambda_D = max(0.1, 1 - k / (K/2)), lambda_PPO =
    1 - lambda_D; the KL-adaptive learning rate only once lambda_PPO > 0.1). ``k`` is set from outside
    (``schedule_iteration``): a task may gate it on success. An actor that has :class:`AuxiliaryLosses` adds
    its own terms (a reconstruction head's loss, say) to every mini-batch's loss. Stage 2.

    rsl_rl's ``PPO.update`` computes its loss inline, so :meth:`update` restates its mini-batch loop with the
    extra term, the loss pieces from :mod:`training.algorithms.hybrid`. Its multi-GPU part is rsl_rl's, kept
    step for step: the KL averaged over ranks before rank 0 sets the learning rate for all, and
    ``reduce_parameters`` (the gradients averaged over ranks) between ``backward`` and the clip. RND and
    symmetry are refused rather than half-kept.
    """

    def __init__(
        self,
        *args: Any,
        dagger_coef: float = 10.0,
        critic_always_trained: bool = True,
        min_lr: float = 1e-5,
        max_lr: float = 1e-2,
        teacher_group: str = TEACHER_GROUP,
        mask_group: str | None = None,
        total_iterations: int = 1,
        **kwargs: Any,
    ) -> None:
        """``mask_group``: an observation group [N, 1] (1: imitate, 0: not) weighting L_D per step (PHP
        imitates only within the teachers' 0.5 m of their reference)."""
        if kwargs.get("rnd_cfg") or kwargs.get("symmetry_cfg"):
            raise ValueError("HybridPPO: RND, symmetry: not supported (its update restates PPO's without them)")
        super().__init__(*args, **kwargs)
        self.dagger_coef = dagger_coef
        self.critic_always_trained = critic_always_trained
        self.min_lr, self.max_lr = min_lr, max_lr
        self.teacher_group = teacher_group
        self.mask_group = mask_group
        self.total_iterations = total_iterations  # K; a time-boxed run sets it once its pace is known
        self.schedule_iteration = 0  # k

    def _adapt_learning_rate(self, kl_mean: torch.Tensor) -> None:
        """rsl_rl's KL rule in our [min_lr, max_lr], over ranks as rsl_rl's PPO runs it: the KL averaged,
        rank 0's rate for every rank (so the optimizers stay alike)."""
        if self.is_multi_gpu:
            torch.distributed.all_reduce(kl_mean, op=torch.distributed.ReduceOp.SUM)
            kl_mean /= self.gpu_world_size
        if self.gpu_global_rank == 0:
            self.learning_rate = adapt_learning_rate(
                self.learning_rate,
                float(kl_mean),
                self.desired_kl,
                enabled=True,
                min_lr=self.min_lr,
                max_lr=self.max_lr,
            )
        if self.is_multi_gpu:
            rate = torch.tensor(self.learning_rate, device=self.device)
            torch.distributed.broadcast(rate, src=0)
            self.learning_rate = rate.item()
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate

    def update(self) -> dict[str, float]:
        point = schedule_at(self.schedule_iteration, max(self.total_iterations, self.schedule_iteration + 1))
        recurrent = self.actor.is_recurrent or self.critic.is_recurrent
        batches = (
            self.storage.recurrent_mini_batch_generator(self.num_mini_batches, self.num_learning_epochs)
            if recurrent
            else self.storage.mini_batch_generator(self.num_mini_batches, self.num_learning_epochs)
        )
        sums = dict.fromkeys(("total", "surrogate", "value", "entropy", "dagger", "kl"), 0.0)
        auxiliary = self.actor if isinstance(self.actor, AuxiliaryLosses) else None
        updates = 0
        value_weight = 1.0 if self.critic_always_trained else point.ppo_weight
        for batch in batches:
            assert batch.observations is not None and batch.actions is not None
            self.actor(
                batch.observations, masks=batch.masks, hidden_state=batch.hidden_states[0], stochastic_output=True
            )
            log_prob = self.actor.get_output_log_prob(batch.actions)
            values = self.critic(batch.observations, masks=batch.masks, hidden_state=batch.hidden_states[1])
            entropy = self.actor.output_entropy
            mean = self.actor.output_mean
            teacher = batch.observations[self.teacher_group]
            imitate = batch.observations[self.mask_group] if self.mask_group else torch.ones_like(teacher[..., :1])
            if batch.masks is not None:
                teacher = unpad_trajectories(teacher, batch.masks)
                imitate = unpad_trajectories(imitate, batch.masks)
            with torch.inference_mode():
                kl = self.actor.get_kl_divergence(batch.old_distribution_params, self.actor.output_distribution_params)
                kl_mean = kl.mean()
                if self.desired_kl is not None and self.schedule == "adaptive" and point.adaptive_lr:
                    self._adapt_learning_rate(kl_mean)

            surrogate = surrogate_loss(
                log_prob, torch.squeeze(batch.old_actions_log_prob), torch.squeeze(batch.advantages), self.clip_param
            )
            value = value_loss(
                values, batch.values, batch.returns, self.clip_param if self.use_clipped_value_loss else None
            )
            # Over the imitated steps only (all of them without a mask: the plain mean).
            dagger = masked_mse(mean, teacher, imitate.squeeze(-1))
            loss = (
                point.ppo_weight * (surrogate - self.entropy_coef * entropy.mean())
                + value_weight * self.value_loss_coef * value
                + point.dagger_weight * self.dagger_coef * dagger
            )
            extra = auxiliary.auxiliary_losses(batch.observations, batch.masks) if auxiliary is not None else {}
            for name, term in extra.items():
                loss = loss + term
                sums[name] = sums.get(name, 0.0) + float(term.item())
            self.optimizer.zero_grad()
            loss.backward()
            if self.is_multi_gpu:
                self.reduce_parameters()
            nn.utils.clip_grad_norm_(self.actor.parameters(), self.max_grad_norm)
            nn.utils.clip_grad_norm_(self.critic.parameters(), self.max_grad_norm)
            self.optimizer.step()
            for name, term in (("total", loss), ("surrogate", surrogate), ("value", value),
                               ("entropy", entropy.mean()), ("dagger", dagger)):  # fmt: skip
                sums[name] += float(term.item())
            sums["kl"] += float(kl_mean)
            updates += 1
        self.storage.clear()
        stats = {name: total / max(updates, 1) for name, total in sums.items()}
        return stats | {
            "learning_rate": self.learning_rate,
            "dagger_weight": point.dagger_weight,
            "ppo_weight": point.ppo_weight,
        }
