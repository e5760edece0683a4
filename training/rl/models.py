"""The depth student as an rsl_rl model, and a teacher whose actions the environment labels.

:class:`DepthRecurrentModel` is rsl_rl's ``RNNModel`` with a depth image beside the 1-D groups:
``DepthBackbone(depth)`` -> latent, concatenated with the proprioceptive groups, -> GRU -> MLP ->
(Gaussian) action. Its modules are the ones the bundle ships (``training.export.models``): the
backbone is the exported ``DepthBackbone`` itself, and the GRU and the MLP are laid out like
``RecurrentStudent``'s, so :meth:`bundle_pair` hands the exporter the same tensors without a copy.
It runs in rsl_rl's two modes: one tick of a batch (the rollout; the GRU state lives in the model)
and padded trajectories with masks (PPO's recurrent mini-batches).

:class:`ObservedTeacher` is the teacher of a distillation whose labels come from the environment
(the walking policy and its step-up reflex need the simulator's state, not an observation): it
returns the observation group that carries them.
"""

from __future__ import annotations

from typing import Any

import torch
from rsl_rl.models import MLPModel
from rsl_rl.modules import RNN, HiddenState
from tensordict import TensorDict
from torch import nn

from training.export.models import DepthBackbone, RecurrentStudent, StudentSize

DEPTH_GROUP = "depth"
TEACHER_GROUP = "teacher_actions"


class DepthRecurrentModel(MLPModel):
    """See the module docstring. ``obs_groups[obs_set]`` lists 1-D groups and ``depth_group`` ([N, H, W])."""

    is_recurrent = True

    def __init__(
        self,
        obs: TensorDict,
        obs_groups: dict[str, list[str]],
        obs_set: str,
        output_dim: int,
        hidden_dims: tuple[int, ...] | list[int] = (256, 128),
        activation: str = "elu",
        obs_normalization: bool = False,
        distribution_cfg: dict | None = None,
        rnn_hidden_dim: int = 256,
        conv_channels: tuple[int, int] | list[int] = (8, 8),
        backbone_hidden: int = 32,
        latent_dim: int = 32,
        depth_group: str = DEPTH_GROUP,
    ) -> None:
        if obs_normalization:
            # The bundle feeds the student the manifest's scaled terms as they are; a normalizer would
            # have to be exported too.
            raise ValueError("DepthRecurrentModel: obs_normalization is not part of the bundle contract")
        if activation != "elu":
            raise ValueError(f"DepthRecurrentModel: the exported student uses ELU, got {activation!r}")
        self.depth_group = depth_group
        self.rnn_hidden_dim = rnn_hidden_dim
        self.size = StudentSize(
            conv_channels=(int(conv_channels[0]), int(conv_channels[1])), backbone_hidden=backbone_hidden,
            latent_dim=latent_dim, gru_hidden=rnn_hidden_dim, mlp_hidden=tuple(hidden_dims),
        )  # fmt: skip
        if depth_group not in obs_groups[obs_set]:
            raise ValueError(f"DepthRecurrentModel: obs set {obs_set!r} has no {depth_group!r} group")
        height, width = obs[depth_group].shape[-2:]
        super().__init__(obs, obs_groups, obs_set, output_dim, hidden_dims, activation, False, distribution_cfg)
        # channels-last convolutions: a quarter less time forward and backward on this CPU, the same numbers
        self.backbone = DepthBackbone(self.size, int(height), int(width)).to(memory_format=torch.channels_last)
        self.rnn = RNN(self.obs_dim + latent_dim, rnn_hidden_dim, 1, "gru")
        self._last_depth: torch.Tensor | None = None  # the rollout's previous frames and their latents
        self._last_latent = torch.zeros(0)
        self._last_weights: tuple[int, ...] = ()

    # -- rsl_rl's model interface ------------------------------------------------------------

    def _get_obs_dim(self, obs: TensorDict, obs_groups: dict[str, list[str]], obs_set: str) -> tuple[list[str], int]:
        flat = [g for g in obs_groups[obs_set] if g != self.depth_group]
        return super()._get_obs_dim(obs, {obs_set: flat}, obs_set)

    def _get_latent_dim(self) -> int:
        return self.rnn_hidden_dim

    def _backbone(self, depth: torch.Tensor) -> torch.Tensor:
        return self.backbone.layers(depth.unsqueeze(1).contiguous(memory_format=torch.channels_last))

    def encode_depth(self, depth: torch.Tensor) -> torch.Tensor:
        """Backbone latents of ``depth`` ([N, H, W] one tick, or [T, B, H, W] sequences), run on new frames only.

        The camera publishes at 30 Hz and the policy ticks at 50 Hz, so about 2 ticks in 5 see the
        frame of the tick before (the runtime caches the latent the same way). In a sequence a frame
        equal to the previous step's reuses its latent (gradients flow to the one computation); in a
        rollout (no gradient) an environment whose frame did not change reuses last tick's latent.
        """
        if depth.dim() == 4:
            steps, batch = depth.shape[:2]
            flat = depth.reshape(steps, batch, -1)
            new = torch.ones(steps, batch, dtype=torch.bool, device=depth.device)
            new[1:] = (flat[1:] != flat[:-1]).any(dim=-1)
            order = torch.arange(steps * batch, device=depth.device).reshape(steps, batch)
            # Each step's source: the newest new frame at or before it (cummax of the new frames' indices).
            source = torch.where(new, order, torch.full_like(order, -1)).cummax(dim=0).values
            unique = self._backbone(depth.reshape(steps * batch, *depth.shape[2:])[new.reshape(-1)])
            position = torch.cumsum(new.reshape(-1), 0) - 1  # index into `unique` of each new frame
            return unique[position[source.reshape(-1)]].reshape(steps, batch, -1)
        # In-place updates (an optimizer step, load_state_dict) bump a parameter's version: the cache is
        # valid only for the weights it was computed with.
        weights = tuple(p._version for p in self.backbone.parameters())
        last = self._last_depth
        if torch.is_grad_enabled() or last is None or last.shape != depth.shape or weights != self._last_weights:
            latent = self._backbone(depth)
        else:
            changed = (depth != last).flatten(1).any(dim=1)
            latent = self._last_latent.clone()
            if changed.any():
                latent[changed] = self._backbone(depth[changed])
        if not torch.is_grad_enabled():
            self._last_depth, self._last_latent, self._last_weights = depth.clone(), latent, weights
        return latent

    def get_latent(
        self, obs: TensorDict, masks: torch.Tensor | None = None, hidden_state: HiddenState = None
    ) -> torch.Tensor:
        proprio = torch.cat([obs[g] for g in self.obs_groups], dim=-1)
        latent = self.encode_depth(obs[self.depth_group])
        return self.rnn(torch.cat([proprio, latent], dim=-1), masks, hidden_state).squeeze(0)

    def reset(self, dones: torch.Tensor | None = None, hidden_state: HiddenState = None) -> None:
        self.rnn.reset(dones, hidden_state)

    def get_hidden_state(self) -> HiddenState:
        return self.rnn.hidden_state

    def detach_hidden_state(self, dones: torch.Tensor | None = None) -> None:
        self.rnn.detach_hidden_state(dones)

    def as_jit(self) -> nn.Module:
        raise NotImplementedError("the student is exported as a bundle (bundle_pair + training.export)")

    def as_onnx(self, verbose: bool = False) -> nn.Module:
        raise NotImplementedError("the student is exported as a bundle (bundle_pair + training.export)")

    # -- the bundle's pair -------------------------------------------------------------------

    def bundle_pair(self) -> tuple[DepthBackbone, RecurrentStudent]:
        """The exported modules, sharing this model's parameters (the action is the Gaussian's mean)."""
        student = RecurrentStudent(self.obs_dim, self.size, self.mlp[-1].out_features)
        student.gru = self.rnn.rnn
        student.mlp = self.mlp
        return self.backbone, student

    def pair_state_dict(self) -> dict[str, torch.Tensor]:
        """The weights under the bundle pair's names (``backbone.*``, ``student.gru.*``, ``student.mlp.*``)."""
        backbone, student = self.bundle_pair()
        state = {f"backbone.{k}": v for k, v in backbone.state_dict().items()}
        return state | {f"student.{k}": v for k, v in student.state_dict().items()}

    def load_pair_state_dict(self, state: dict[str, Any]) -> None:
        """Load weights saved by :meth:`pair_state_dict` (a student bundle's ``checkpoint.pt``)."""
        backbone, student = self.bundle_pair()
        backbone.load_state_dict({k[len("backbone.") :]: v for k, v in state.items() if k.startswith("backbone.")})
        student.load_state_dict({k[len("student.") :]: v for k, v in state.items() if k.startswith("student.")})


class ObservedTeacher(nn.Module):
    """A teacher whose actions are an observation group (labelled by the environment); see the module docstring."""

    is_recurrent = False

    def __init__(self, obs: TensorDict, obs_groups: dict[str, list[str]], obs_set: str, output_dim: int) -> None:
        super().__init__()
        (self.group,) = obs_groups[obs_set]
        if obs[self.group].shape[-1] != output_dim:
            raise ValueError(f"teacher group {self.group!r} has {obs[self.group].shape[-1]} actions, not {output_dim}")

    def forward(self, obs: TensorDict, masks: torch.Tensor | None = None, **_: Any) -> torch.Tensor:
        return obs[self.group]

    def reset(self, dones: torch.Tensor | None = None, hidden_state: HiddenState = None) -> None:
        pass

    def get_hidden_state(self) -> HiddenState:
        return None

    def detach_hidden_state(self, dones: torch.Tensor | None = None) -> None:
        pass

    def update_normalization(self, obs: TensorDict) -> None:
        pass
