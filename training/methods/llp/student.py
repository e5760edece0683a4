"""LLP's depth student: MLP -> GRU -> MLP, with an auxiliary height-scan decoder used only in training.

- :class:`LLPModel` is the depth student as an rsl_rl model (:class:`training.rl.models.DepthRecurrentModel`)
  with an ELU MLP encoder over ``concat(obs, depth latent)`` before the GRU, and the
  :class:`HeightScanDecoder` (GRU state -> the privileged 11 x 11 height scan, ``training.envs.privileged``'s
  ``height_scan`` term) beside it. Its :meth:`~LLPModel.auxiliary_losses` hands the hybrid update
  (:class:`training.rl.algorithms.HybridPPO`) the decoder's MSE from every GRU state of the mini-batch.
- :class:`LLPStudent` is the bundle's recurrent student (:class:`training.export.models.RecurrentStudent`)
  whose recurrent core is an :class:`EncodedGRU`; ``LLPModel.bundle_pair`` fills it with the model's own
  modules, so ``training.export.export_student`` exports it unchanged (depth backbone ONNX + recurrent
  student ONNX with the hidden state as explicit input/output) and its parity checks run. The decoder is
  not in the pair: the loss uses it, the bundle does not carry it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from rsl_rl.modules import MLP, RNN
from rsl_rl.utils import unpad_trajectories
from tensordict import TensorDict
from torch import nn

from training.envs.privileged import PRIVILEGED_TERMS, term_slices
from training.export.models import DepthBackbone, RecurrentStudent, StudentSize
from training.rl.models import DepthRecurrentModel

HEIGHT_SCAN = term_slices(PRIVILEGED_TERMS)["height_scan"]
HEIGHT_SCAN_DIM = HEIGHT_SCAN.stop - HEIGHT_SCAN.start
PRIVILEGED_GROUP = "privileged"


class EncodedGRU(nn.Module):
    """MLP encoder -> GRU, called like ``nn.GRU`` on ``[1, B, features]`` (the export reads its sizes)."""

    def __init__(self, input_size: int, encoder_hidden: Sequence[int], encoder_out: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size = input_size  # what the export's dummy obs is sized from (obs + latent)
        self.hidden_size = hidden_size
        self.encoder = nn.Sequential(MLP(input_size, encoder_out, list(encoder_hidden)), nn.ELU())
        self.gru = nn.GRU(encoder_out, hidden_size, num_layers=1)

    def forward(self, features: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.gru(self.encoder(features), hidden)


class LLPStudent(RecurrentStudent):
    """concat(obs, latent) -> MLP -> GRU -> MLP -> action; hidden state in and out (the bundle's I/O)."""

    def __init__(
        self, obs_size: int, size: StudentSize, num_actions: int, encoder_hidden: Sequence[int], encoder_out: int
    ) -> None:
        super().__init__(obs_size, size, num_actions)
        self.gru = EncodedGRU(obs_size + size.latent_dim, encoder_hidden, encoder_out, size.gru_hidden)


class HeightScanDecoder(nn.Module):
    """GRU state [..., G] -> height scan [..., 121] (training only; never exported)."""

    def __init__(self, hidden_size: int, widths: Sequence[int], out: int = HEIGHT_SCAN_DIM) -> None:
        super().__init__()
        self.net = MLP(hidden_size, out, list(widths))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.net(hidden)


def reconstruction_loss(predicted: torch.Tensor, privileged: torch.Tensor) -> torch.Tensor:
    """MSE between the decoded scan and the privileged observation's height scan (metres)."""
    return (predicted - privileged[..., HEIGHT_SCAN]).pow(2).mean()


class LLPModel(DepthRecurrentModel):
    """See the module docstring. The actor reads the bundle's groups only; the decoder's target is the
    ``scan_group`` observation (the critic's privileged one), which the rollout storage keeps beside them."""

    def __init__(
        self,
        obs: TensorDict,
        obs_groups: dict[str, list[str]],
        obs_set: str,
        output_dim: int,
        encoder_hidden: Sequence[int] = (256,),
        encoder_out: int = 128,
        decoder_hidden: Sequence[int] = (128,),
        reconstruction_weight: float = 1.0,
        scan_group: str = PRIVILEGED_GROUP,
        **kwargs: Any,
    ) -> None:
        super().__init__(obs, obs_groups, obs_set, output_dim, **kwargs)
        self.encoder_hidden, self.encoder_out = tuple(encoder_hidden), encoder_out
        self.encoder = nn.Sequential(
            MLP(self.obs_dim + self.size.latent_dim, encoder_out, list(encoder_hidden)), nn.ELU()
        )
        self.rnn = RNN(encoder_out, self.rnn_hidden_dim, 1, "gru")
        self.decoder = HeightScanDecoder(self.rnn_hidden_dim, decoder_hidden)
        self.reconstruction_weight = reconstruction_weight
        self.scan_group = scan_group
        self.last_states: torch.Tensor | None = None  # the GRU states of the last forward pass with gradients

    def get_latent(self, obs: TensorDict, masks: torch.Tensor | None = None, hidden_state: Any = None) -> torch.Tensor:
        proprio = torch.cat([obs[g] for g in self.obs_groups], dim=-1)
        features = self.encoder(torch.cat([proprio, self.encode_depth(obs[self.depth_group])], dim=-1))
        states = self.rnn(features, masks, hidden_state).squeeze(0)
        if torch.is_grad_enabled():
            self.last_states = states
        return states

    def auxiliary_losses(self, observations: TensorDict, masks: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """``reconstruction_weight`` x the decoder's MSE to the height scan, over the last forward pass's states."""
        if self.last_states is None:
            raise RuntimeError("LLPModel.auxiliary_losses: no forward pass with gradients ran before it")
        target = observations[self.scan_group]
        if masks is not None:
            target = unpad_trajectories(target, masks)
        return {
            "reconstruction": self.reconstruction_weight * reconstruction_loss(self.decoder(self.last_states), target)
        }

    def bundle_pair(self) -> tuple[DepthBackbone, RecurrentStudent]:
        """The exported modules, sharing this model's parameters (not the decoder's)."""
        student = LLPStudent(self.obs_dim, self.size, self.mlp[-1].out_features, self.encoder_hidden, self.encoder_out)
        student.gru.encoder = self.encoder
        student.gru.gru = self.rnn.rnn
        student.mlp = self.mlp
        return self.backbone, student


def export_llp_student(
    model: LLPModel,
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
    from parkour_core.bundle import Manifest, load_bundle, write_manifest
    from training.export import export_student

    backbone, student = model.bundle_pair()
    bundle = export_student(
        backbone.eval(),
        student.eval(),
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
