"""LLP's depth student: MLP -> GRU -> MLP, with an auxiliary height-scan decoder used only in training.

- :class:`LLPStudent` is a :class:`training.export.models.RecurrentStudent` whose recurrent core is an
  :class:`EncodedGRU`: an ELU MLP encoder over ``concat(obs, depth latent)`` feeding the GRU. The head
  is RecurrentStudent's ELU MLP. Its ``forward(obs, latent, hidden) -> (action, hidden)`` is the
  bundle's, so ``training.export.export_student`` exports it unchanged (depth backbone ONNX +
  recurrent student ONNX with the hidden state as explicit input/output) and its parity checks run.
- :class:`HeightScanDecoder`: GRU state -> the privileged 11 x 11 height scan
  (``training.envs.privileged``'s ``height_scan`` term). It lives in :class:`LLPActorCritic`, not in
  the student, so the export never sees it: the loss uses it, the bundle does not carry it.
- :class:`LLPActorCritic`: the training wrapper (action std, decoder, and a critic that also reads
  the transition prior's group label, see :mod:`training.methods.llp.transition_prior`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from parkour_core.obs import observation_size
from parkour_core.robots import G1
from training.envs.privileged import PRIVILEGED_TERMS, term_slices
from training.export.models import DepthBackbone, RecurrentStudent, StudentSize
from training.export.student import STUDENT_OBS_TERMS, student_manifest
from training.pipeline.student_update import RecurrentDepthActorCritic, _mlp

HEIGHT_SCAN = term_slices(PRIVILEGED_TERMS)["height_scan"]
HEIGHT_SCAN_DIM = HEIGHT_SCAN.stop - HEIGHT_SCAN.start


@dataclass(frozen=True)
class LLPSize:
    """The backbone's sizes (training.export's StudentSize) plus LLP's encoder and decoder widths."""

    student: StudentSize = field(default_factory=StudentSize)
    encoder_hidden: tuple[int, ...] = (256,)
    encoder_out: int = 128
    decoder_hidden: tuple[int, ...] = (128,)


SIZES: dict[str, LLPSize] = {
    "tiny": LLPSize(
        StudentSize(conv_channels=(4, 8), backbone_hidden=16, latent_dim=16, gru_hidden=16, mlp_hidden=(32, 16)),
        encoder_hidden=(32,),
        encoder_out=32,
        decoder_hidden=(32,),
    ),
    "smoke": LLPSize(
        StudentSize(conv_channels=(4, 8), backbone_hidden=32, latent_dim=16, gru_hidden=32, mlp_hidden=(64, 32)),
        encoder_hidden=(64,),
        encoder_out=64,
        decoder_hidden=(64,),
    ),
    # LLP's deployable size: PHP's backbone, a 256-unit GRU behind a 256 -> 128 encoder, a smaller head.
    "llp": LLPSize(StudentSize(mlp_hidden=(512, 256, 128))),
}


class EncodedGRU(nn.Module):
    """MLP encoder -> GRU, called like ``nn.GRU`` on ``[1, B, features]`` (the export reads its sizes)."""

    def __init__(self, input_size: int, encoder_hidden: Sequence[int], encoder_out: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size = input_size  # what the export's dummy obs is sized from (obs + latent)
        self.hidden_size = hidden_size
        self.encoder = nn.Sequential(_mlp(input_size, encoder_hidden, encoder_out), nn.ELU())
        self.gru = nn.GRU(encoder_out, hidden_size, num_layers=1)

    def forward(self, features: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.gru(self.encoder(features), hidden)


class LLPStudent(RecurrentStudent):
    """concat(obs, latent) -> MLP -> GRU -> MLP -> action; hidden state in and out (the bundle's I/O)."""

    def __init__(self, obs_size: int, size: LLPSize, num_actions: int) -> None:
        super().__init__(obs_size, size.student, num_actions)
        self.gru = EncodedGRU(
            obs_size + size.student.latent_dim, size.encoder_hidden, size.encoder_out, size.student.gru_hidden
        )


class HeightScanDecoder(nn.Module):
    """GRU state [..., G] -> height scan [..., 121] (training only; never exported)."""

    def __init__(self, hidden_size: int, widths: Sequence[int], out: int = HEIGHT_SCAN_DIM) -> None:
        super().__init__()
        self.net = _mlp(hidden_size, widths, out)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.net(hidden)


def with_group(privileged: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    """The critic's (and the rollout buffer's) [..., P + 1]: the privileged observation, then the group
    label as a float column. The height scan keeps its place (``HEIGHT_SCAN`` indexes both)."""
    return torch.cat([privileged, group.to(privileged.dtype).unsqueeze(-1)], dim=-1)


def reconstruction_loss(predicted: torch.Tensor, privileged: torch.Tensor) -> torch.Tensor:
    """MSE between the decoded scan and the privileged observation's height scan (metres)."""
    return (predicted - privileged[..., HEIGHT_SCAN]).pow(2).mean()


class LLPActorCritic(RecurrentDepthActorCritic):
    """The exported pair as a Gaussian policy, the height-scan decoder, and a label-conditioned critic.

    The actor (backbone + student) reads the bundle's observation and the depth latent only. The critic
    reads ``concat(privileged, one_hot(group))``: the group label exists in training only.
    """

    def __init__(
        self,
        backbone: DepthBackbone,
        student: LLPStudent,
        privileged_dim: int,
        num_groups: int,
        decoder_hidden: Sequence[int],
        critic_hidden: Sequence[int] = (64, 64),
        init_std: float = 0.1,
        normalize_critic: bool = True,
    ) -> None:
        super().__init__(backbone, student, privileged_dim, critic_hidden, init_std, normalize_critic)
        self.num_groups = num_groups
        self.privileged_dim = privileged_dim
        self.critic = _mlp(privileged_dim + num_groups, critic_hidden, 1)  # replaces the label-free critic
        self.decoder = HeightScanDecoder(self.hidden_size, decoder_hidden)
        self.last_states: torch.Tensor | None = None

    def critic_input(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """``with_group(privileged, group)`` -> ``concat(normalized privileged, one_hot(group))``."""
        privileged, group = critic_obs[..., :-1], critic_obs[..., -1].round().long()
        onehot = nn.functional.one_hot(group, self.num_groups).to(privileged.dtype)
        return torch.cat([self.critic_normalizer(privileged), onehot], dim=-1)

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """V(privileged, group): ``critic_obs`` is :func:`with_group`'s [..., P + 1]."""
        if critic_obs.shape[-1] != self.privileged_dim + 1:
            raise ValueError(
                f"LLP's critic reads the privileged observation ({self.privileged_dim}) and the group label "
                f"(1, see with_group), got {critic_obs.shape[-1]} columns"
            )
        return self.critic(self.critic_input(critic_obs)).squeeze(-1)

    def sequence_with_hidden(
        self, obs: torch.Tensor, depth: torch.Tensor, hidden: torch.Tensor, starts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Action means [T, B, A] and the GRU state after each step [T, B, G] (see ``sequence``)."""
        steps, batch = obs.shape[:2]
        latent = self.backbone(depth.reshape(steps * batch, *depth.shape[2:])).reshape(steps, batch, -1)
        keep = (~starts).to(obs.dtype)[:, None, :, None]
        means, states = [], []
        for t in range(steps):
            mean, hidden = self.student(obs[t], latent[t], hidden * keep[t])
            means.append(mean)
            states.append(hidden[0])
        return torch.stack(means), torch.stack(states)

    def sequence(
        self, obs: torch.Tensor, depth: torch.Tensor, hidden: torch.Tensor, starts: torch.Tensor
    ) -> torch.Tensor:
        """As the base class; the GRU states of the call are kept in ``last_states`` for the decoder loss."""
        means, self.last_states = self.sequence_with_hidden(obs, depth, hidden, starts)
        return means

    def decode(self, states: torch.Tensor) -> torch.Tensor:
        return self.decoder(states)


def build_llp_student(
    size: LLPSize, seed: int, privileged_dim: int, num_groups: int, critic_hidden: Sequence[int] = (64, 64),
    init_std: float = 0.1, normalize_critic: bool = True,
) -> LLPActorCritic:  # fmt: skip
    """Backbone + LLP student on the bundle's observation terms and depth size, with decoder and critic."""
    manifest = student_manifest("training", size.student.gru_hidden, {}, {}, latent_dim=size.student.latent_dim)
    assert manifest.depth is not None
    torch.manual_seed(seed)
    spec = manifest.depth.spec
    backbone = DepthBackbone(size.student, spec.height, spec.width)
    student = LLPStudent(observation_size(STUDENT_OBS_TERMS), size, G1.num_joints)
    return LLPActorCritic(
        backbone, student, privileged_dim, num_groups, size.decoder_hidden, critic_hidden, init_std, normalize_critic
    )


def export_llp_student(
    model: LLPActorCritic,
    out_dir: Path,
    name: str,
    provenance: dict[str, Any],
    latency_s: tuple[float, float],
    camera_hz: float,
    calibration_frames: list | None = None,
    precision: str = "int8",
) -> Path:
    """``training.export.export_student`` on the backbone and the student only (the decoder and the
    critic stay behind), then the manifest's trained depth timing set to LLP's."""
    import dataclasses
    import json

    from parkour_core.bundle import Manifest, load_bundle, write_manifest
    from training.export import export_student

    bundle = export_student(
        model.backbone.eval(),
        model.student.eval(),
        out_dir,
        name=name,
        provenance={**provenance, "method": "llp", "dropped_at_export": ["height_scan_decoder", "critic"]},
        precision=precision,
        calibration_frames=calibration_frames,
    )
    manifest = Manifest.from_dict(json.loads((bundle / "manifest.json").read_text()))
    assert manifest.depth is not None
    depth = dataclasses.replace(manifest.depth, latency_s=tuple(latency_s), camera_hz=float(camera_hz))
    write_manifest(bundle, dataclasses.replace(manifest, depth=depth))
    load_bundle(bundle)
    return bundle
