"""HPL's oracle: a privileged policy that sees the terrain as scandots through a small encoder.

- **Scandots**: terrain heights at a fixed grid of points around the robot, turned with its heading
  (:class:`ScandotGrid`). In the CPU tracking env the grid is the privileged observation's
  ``height_scan`` (11 x 11 over 0.7 m x 0.7 m, ``training.envs.privileged.scan_grid``, each value
  ``pelvis_z - terrain height``); :meth:`ScandotGrid.sample` reads the same kind of grid from a
  :class:`~training.methods.hpl.terrain.ParkourTerrain` heightfield.
- **Encoder**: an ELU MLP from the scandots to a small latent (HPL: 32; here ``latent_dim``).
- **Policy**: rsl_rl's ``MLPModel`` on ``[proprioception, latent]`` (:class:`ScandotModel`: every other
  privileged term is the proprioception; rsl_rl's normalizer and Gaussian head), trained by rsl_rl's
  PPO in the ``hpl_oracle`` task with an ``MLPModel`` critic on the whole observation. Its labels
  come from :class:`ScandotActor` (``act_inference``, the mean action), as a PHP teacher's do.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from rsl_rl.models import MLPModel
from rsl_rl.modules import MLP
from tensordict import TensorDict
from torch import nn

from training.envs.privileged import SCAN_POINTS_PER_SIDE, SCAN_SIZE_M, scan_grid, term_slices
from training.methods.hpl.terrain import ParkourTerrain

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


class ScandotEncoder(nn.Module):
    def __init__(self, num_points: int, hidden: Sequence[int] = (64,), latent_dim: int = 16) -> None:
        super().__init__()
        self.num_points = num_points
        self.latent_dim = latent_dim
        self.net = MLP(num_points, latent_dim, list(hidden))

    def forward(self, scandots: torch.Tensor) -> torch.Tensor:
        if scandots.shape[-1] != self.num_points:
            raise ValueError(f"the scandot encoder takes {self.num_points} heights, got {scandots.shape[-1]}")
        return self.net(scandots)


class ScandotModel(MLPModel):
    """rsl_rl's ``MLPModel`` whose latent is ``[proprio, encoder(scandots)]`` (normalized observation first).

    ``scan_start:scan_stop`` is the scandots' slice of the observation; every other element is the
    proprioception. With a ``distribution_cfg`` it is the PPO actor; ``as_jit`` gives the deterministic
    :class:`ScandotActor` (the DAgger labels).
    """

    def __init__(
        self,
        obs: TensorDict,
        obs_groups: dict[str, list[str]],
        obs_set: str,
        output_dim: int,
        scan_start: int,
        scan_stop: int,
        encoder_hidden: Sequence[int] = (64,),
        latent_dim: int = 16,
        **mlp: Any,
    ) -> None:
        self.num_scan = scan_stop - scan_start
        self.scan_latent_dim = latent_dim
        super().__init__(obs, obs_groups, obs_set, output_dim, **mlp)
        keep = np.ones(self.obs_dim, dtype=bool)
        keep[scan_start:scan_stop] = False
        self.register_buffer("proprio_index", torch.from_numpy(np.flatnonzero(keep)), persistent=False)
        self.register_buffer("scan_index", torch.arange(scan_start, scan_stop), persistent=False)
        self.encoder = ScandotEncoder(self.num_scan, encoder_hidden, latent_dim)

    def _get_latent_dim(self) -> int:
        return self.obs_dim - self.num_scan + self.scan_latent_dim

    def get_latent(self, obs: TensorDict, masks: torch.Tensor | None = None, hidden_state: Any = None) -> torch.Tensor:
        x = super().get_latent(obs, masks, hidden_state)
        return torch.cat([x[..., self.proprio_index], self.encoder(x[..., self.scan_index])], dim=-1)

    def as_jit(self) -> nn.Module:
        return ScandotActor(self)


class ScandotActor(nn.Module):
    """The oracle's mean action on a plain privileged observation: normalizer, scandot encoder, MLP."""

    def __init__(self, model: ScandotModel) -> None:
        super().__init__()
        self.obs_normalizer = copy.deepcopy(model.obs_normalizer)
        self.encoder = copy.deepcopy(model.encoder)
        self.mlp = copy.deepcopy(model.mlp)
        self.deterministic_output = (
            model.distribution.as_deterministic_output_module() if model.distribution is not None else nn.Identity()
        )
        self.register_buffer("proprio_index", model.proprio_index.clone(), persistent=False)
        self.register_buffer("scan_index", model.scan_index.clone(), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = self.obs_normalizer(obs)
        latent = torch.cat([x[..., self.proprio_index], self.encoder(x[..., self.scan_index])], dim=-1)
        return self.deterministic_output(self.mlp(latent))

    @torch.no_grad()
    def act_inference(self, obs: torch.Tensor) -> torch.Tensor:
        return self(obs)


def oracle_actor_cfg(hidden: Sequence[int], encoder_hidden: Sequence[int], latent_dim: int, **mlp: Any) -> dict:
    """rsl_rl's actor config of the oracle on the CPU tracking env (its ``height_scan`` term are the scandots)."""
    scan = term_slices()["height_scan"]
    return {
        "class_name": ScandotModel, "scan_start": scan.start, "scan_stop": scan.stop,
        "encoder_hidden": tuple(encoder_hidden), "latent_dim": latent_dim, "hidden_dims": list(hidden), **mlp,
    }  # fmt: skip


def untrained_oracle(num_obs: int, num_actions: int, hidden: Sequence[int] = (64, 64), seed: int = 0) -> ScandotActor:
    """An untrained oracle's labels (tests, benchmarks): the same model as a trained one's, random weights."""
    torch.manual_seed(seed)
    obs = TensorDict({"policy": torch.zeros(1, num_obs)}, batch_size=[1])
    cfg = oracle_actor_cfg(hidden, (64,), 16, obs_normalization=True)
    cfg.pop("class_name")
    return ScandotModel(obs, {"actor": ["policy"]}, "actor", num_actions, **cfg).as_jit().eval()
