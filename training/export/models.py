"""Torch modules of the parkour student, sized like PHP's, with the recurrent state explicit.

The student is a pair, exported as two ONNX files (see ``parkour_core.bundle``):

- :class:`DepthBackbone` (extreme-parkour style): depth image [1, H, W] -> latent [1, latent_dim].
  It runs only when a camera frame is new (30 Hz), so its latent is cached between ticks.
- :class:`RecurrentStudent`: (obs [1, n_obs], latent [1, latent_dim], hidden [1, 1, gru]) ->
  (action [1, n_actions], hidden [1, 1, gru]). The GRU state is an input and an output, never
  hidden inside the module, so the runtime owns it and can zero it on (re)activation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class StudentSize:
    """Layer sizes of the backbone and the student."""

    conv_channels: tuple[int, int] = (32, 64)
    backbone_hidden: int = 128
    latent_dim: int = 32
    gru_hidden: int = 256
    mlp_hidden: tuple[int, ...] = (2048, 1024, 512, 256, 128)


def student_size(config: str) -> StudentSize:
    """The layer sizes a training config's ``policy`` section gives the student: ``php_student_gpu`` is
    the network PHP deploys (11.6M parameters, about 46 MB of fp32 weights), ``php_student_tiny`` the
    same structure and I/O in a few thousand parameters (exports and checks in about a second)."""
    from training.configs import load_train_config

    p = load_train_config(config).policy
    c1, c2 = p.conv_channels
    return StudentSize(
        conv_channels=(int(c1), int(c2)),
        backbone_hidden=p.backbone_hidden,
        latent_dim=p.depth_latent,
        gru_hidden=p.rnn_hidden,
        mlp_hidden=tuple(int(w) for w in p.actor_hidden),
    )


def _conv_output_hw(height: int, width: int) -> tuple[int, int]:
    # conv 5x5 (valid) -> maxpool 2 -> conv 3x3 (valid)
    height, width = (height - 4) // 2 - 2, (width - 4) // 2 - 2
    if height < 1 or width < 1:
        raise ValueError("the depth image is too small for the backbone (needs at least 10x10)")
    return height, width


class DepthBackbone(nn.Module):
    """Depth [1, H, W] (normalised, see parkour_core.depth) -> latent [1, latent_dim]."""

    def __init__(self, size: StudentSize, height: int = 58, width: int = 87) -> None:
        super().__init__()
        c1, c2 = size.conv_channels
        out_h, out_w = _conv_output_hw(height, width)
        self.layers = nn.Sequential(
            nn.Conv2d(1, c1, kernel_size=5),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.ELU(),
            nn.Conv2d(c1, c2, kernel_size=3),
            nn.ELU(),
            nn.Flatten(),
            nn.Linear(c2 * out_h * out_w, size.backbone_hidden),
            nn.ELU(),
            nn.Linear(size.backbone_hidden, size.latent_dim),
        )

    def forward(self, depth: torch.Tensor) -> torch.Tensor:
        # The runtime feeds [1, H, W]; the channel axis is added here so the ONNX input matches it.
        return self.layers(depth.unsqueeze(1))


class RecurrentStudent(nn.Module):
    """concat(obs, latent) -> GRU -> ELU MLP -> action; the hidden state goes in and comes out."""

    def __init__(self, obs_size: int, size: StudentSize, num_actions: int) -> None:
        super().__init__()
        self.gru = nn.GRU(obs_size + size.latent_dim, size.gru_hidden, num_layers=1)
        layers: list[nn.Module] = []
        width = size.gru_hidden
        for hidden in size.mlp_hidden:
            layers += [nn.Linear(width, hidden), nn.ELU()]
            width = hidden
        layers.append(nn.Linear(width, num_actions))
        self.mlp = nn.Sequential(*layers)

    def forward(
        self, obs: torch.Tensor, latent: torch.Tensor, hidden: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # One time step of a batch of one: GRU input [seq 1, batch 1, features].
        features = torch.cat([obs, latent], dim=-1).unsqueeze(0)
        out, hidden_out = self.gru(features, hidden)
        return self.mlp(out[0]), hidden_out


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
