"""HPL's oracle: a privileged policy that sees the terrain as scandots through a small encoder.

- **Scandots**: terrain heights at a fixed grid of points around the robot, turned with its heading
  (:class:`ScandotGrid`). In the CPU tracking env the grid is the privileged observation's
  ``height_scan`` (11 x 11 over 0.7 m x 0.7 m, ``training.envs.privileged.scan_grid``, each value
  ``pelvis_z - terrain height``); :meth:`ScandotGrid.sample` reads the same kind of grid from a
  :class:`~training.methods.hpl.terrain.ParkourTerrain` heightfield.
- **Encoder**: an ELU MLP from the scandots to a small latent (HPL: 32; here ``latent_dim``).
- **Policy**: an ELU MLP on ``[proprioception, latent]`` (every other privileged term is the
  proprioception), a state-independent std, and a critic on the whole observation. It has the
  interface of ``training.pipeline.teacher.TeacherPolicy`` (``action_distribution``, ``value``,
  ``act_inference``, ``log_std``, ``normalizer``), so ``training.pipeline.teacher.ppo_update`` trains
  it and the ``php_student`` task (``training.php_student.task``) can take its labels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn
from torch.distributions import Normal

from training.envs.privileged import SCAN_POINTS_PER_SIDE, SCAN_SIZE_M, scan_grid, term_slices
from training.methods.hpl.terrain import ParkourTerrain
from training.pipeline.normalizer import EmpiricalNormalizer

F = NDArray[np.float64]


@dataclass(frozen=True)
class ScandotGrid:
    """A square grid of ``points_per_side``^2 points over ``size_m`` x ``size_m``, heading frame, x forward."""

    size_m: float = SCAN_SIZE_M
    points_per_side: int = SCAN_POINTS_PER_SIDE

    @property
    def num_points(self) -> int:
        return self.points_per_side**2

    def offsets(self) -> F:
        """(S, 2) offsets, row-major from back-right: the env's ``scan_grid`` for the default size."""
        return scan_grid(self.size_m, self.points_per_side)

    def sample(self, terrain: ParkourTerrain, base_xyz: F, yaw: float) -> F:
        """(S,) ``base_z - terrain height`` at the grid points around ``base_xyz`` (tile coordinates)."""
        g = self.offsets()
        c, s = math.cos(yaw), math.sin(yaw)
        x = base_xyz[0] + c * g[:, 0] - s * g[:, 1]
        y = base_xyz[1] + s * g[:, 0] + c * g[:, 1]
        return base_xyz[2] - terrain.height_at(x, y)


def _mlp(inputs: int, hidden: Sequence[int], outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [nn.Linear(inputs, size), nn.ELU()]
        inputs = size
    layers.append(nn.Linear(inputs, outputs))
    return nn.Sequential(*layers)


class ScandotEncoder(nn.Module):
    def __init__(self, num_points: int, hidden: Sequence[int] = (64,), latent_dim: int = 16) -> None:
        super().__init__()
        self.num_points = num_points
        self.latent_dim = latent_dim
        self.net = _mlp(num_points, hidden, latent_dim)

    def forward(self, scandots: torch.Tensor) -> torch.Tensor:
        if scandots.shape[-1] != self.num_points:
            raise ValueError(f"the scandot encoder takes {self.num_points} heights, got {scandots.shape[-1]}")
        return self.net(scandots)


class OraclePolicy(nn.Module):
    """``actor([proprio, encoder(scandots)])`` with a Gaussian head; critic on the full observation."""

    def __init__(
        self,
        obs_dim: int,
        num_actions: int,
        scan: slice,
        hidden: Sequence[int] = (64, 64),
        encoder_hidden: Sequence[int] = (64,),
        latent_dim: int = 16,
        init_std: float = 1.0,
        normalize: bool = True,
    ) -> None:
        super().__init__()
        self.obs_dim = obs_dim
        keep = np.ones(obs_dim, dtype=bool)
        keep[scan] = False
        self.register_buffer("proprio_index", torch.from_numpy(np.flatnonzero(keep)), persistent=False)
        self.register_buffer("scan_index", torch.arange(obs_dim)[scan], persistent=False)
        self.encoder = ScandotEncoder(len(self.scan_index), encoder_hidden, latent_dim)
        self.actor = _mlp(len(self.proprio_index) + latent_dim, hidden, num_actions)
        self.critic = _mlp(obs_dim, hidden, 1)
        self.log_std = nn.Parameter(torch.full((num_actions,), math.log(init_std)))
        self.normalizer = EmpiricalNormalizer(obs_dim, enabled=normalize)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """``[proprio, latent]``: the actor's input (observations normalized first)."""
        x = self.normalizer(obs)
        return torch.cat([x[..., self.proprio_index], self.encoder(x[..., self.scan_index])], dim=-1)

    def act_inference(self, obs: torch.Tensor) -> torch.Tensor:
        """The mean action: the DAgger label."""
        return self.actor(self.features(obs))

    def action_distribution(self, obs: torch.Tensor) -> Normal:
        mean = self.act_inference(obs)
        return Normal(mean, self.log_std.exp().expand_as(mean))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.normalizer(obs)).squeeze(-1)


def tracking_oracle(
    num_obs: int, num_actions: int, hidden: Sequence[int], init_std: float, normalize: bool
) -> OraclePolicy:
    """The oracle on the CPU tracking env's privileged observation (its ``height_scan`` term are the scandots)."""
    return OraclePolicy(
        num_obs, num_actions, term_slices()["height_scan"], hidden=hidden, init_std=init_std, normalize=normalize
    )
