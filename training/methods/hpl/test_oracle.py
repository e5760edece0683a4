"""The scandot encoder reads the env's height-scan grid; the oracle's actor sees [proprio, latent]."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from training.envs.privileged import privileged_size, scan_grid, term_slices
from training.methods.hpl.oracle import ScandotGrid, untrained_oracle
from training.methods.hpl.terrain import TerrainSpec, parkour_terrain


def test_scandot_grid_is_the_envs_height_scan_grid() -> None:
    grid = ScandotGrid()
    assert grid.num_points == 121 == term_slices()["height_scan"].stop - term_slices()["height_scan"].start
    assert np.array_equal(grid.offsets(), scan_grid())
    g = grid.offsets()
    assert g.min(0) == pytest.approx([-0.35, -0.35]) and g.max(0) == pytest.approx([0.35, 0.35])


def test_scandots_read_the_heightfield_around_the_robot() -> None:
    t = parkour_terrain("stairs_up", 1.0, TerrainSpec())  # step 0.2 m every 0.3 m from x = 1.0
    grid = ScandotGrid(size_m=0.6, points_per_side=3)  # offsets -0.3, 0, 0.3
    dots = grid.sample(t, np.array([1.0, 0.0, 0.8]), yaw=0.0).reshape(3, 3)
    assert dots[:, 1] == pytest.approx([0.8, 0.6, 0.4])  # behind: floor, here: step 1, ahead: step 2
    turned = grid.sample(t, np.array([1.0, 0.0, 0.8]), yaw=np.pi).reshape(3, 3)
    assert turned[:, 1] == pytest.approx([0.4, 0.6, 0.8])


def test_oracle_encodes_only_the_scan_and_keeps_the_rest_as_proprioception() -> None:
    oracle = untrained_oracle(privileged_size(), 29, (32, 32))
    scan = term_slices()["height_scan"]
    assert oracle.encoder.num_points == 121
    assert oracle.mlp[0].in_features == privileged_size() - 121 + oracle.encoder.latent_dim
    obs = torch.randn(5, privileged_size())
    other = obs.clone()
    other[:, scan] += 1.0
    base = oracle.act_inference(obs)
    assert base.shape == (5, 29)
    assert not torch.allclose(base, oracle.act_inference(other))  # the scan reaches the action
    other = obs.clone()
    other[:, : scan.start] += 1.0
    assert torch.allclose(oracle.encoder(obs[:, scan]), oracle.encoder(other[:, scan]))  # only the scan is encoded
