"""Fractal noise is seeded with the requested amplitude and roughness; each kind's geometry follows its difficulty."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from training.methods.hpl.terrain import (
    GAP_DEPTH_M,
    KINDS,
    STAIR_STEPS,
    TerrainSpec,
    add_hfield,
    fractal_noise,
    parkour_terrain,
    roughness,
    terrain_set,
)

SPEC = TerrainSpec()


def test_fractal_noise_is_seeded_with_the_requested_amplitude() -> None:
    a = fractal_noise((80, 60), 0.05, 0.07, seed=3)
    assert np.array_equal(a, fractal_noise((80, 60), 0.05, 0.07, seed=3))
    assert not np.allclose(a, fractal_noise((80, 60), 0.05, 0.07, seed=4))
    assert np.abs(a).max() == pytest.approx(0.07)
    assert abs(a.mean()) < 1e-12
    assert np.all(fractal_noise((10, 10), 0.05, 0.0) == 0.0)


def test_more_octaves_and_persistence_are_rougher_at_the_same_amplitude() -> None:
    smooth = roughness(fractal_noise((120, 120), 0.05, 0.05, octaves=1, seed=0), 0.05)
    rough = roughness(fractal_noise((120, 120), 0.05, 0.05, octaves=5, seed=0), 0.05)
    rougher = roughness(fractal_noise((120, 120), 0.05, 0.05, octaves=5, persistence=0.8, seed=0), 0.05)
    assert smooth < rough < rougher


def _runs(line: np.ndarray, xs: np.ndarray, value: float) -> list[float]:
    """Lengths of the runs of ``line == value``."""
    hit = np.isclose(line, value)
    edges = np.flatnonzero(np.diff(np.r_[0, hit.astype(int), 0]))
    return [(xs[1] - xs[0]) * (e1 - e0) for e0, e1 in zip(edges[::2], edges[1::2], strict=True)]


@pytest.mark.parametrize("difficulty", [0.0, 0.5, 1.0])
def test_each_kind_geometry_matches_its_difficulty(difficulty: float) -> None:
    d = difficulty
    t = parkour_terrain("gaps", d, SPEC)
    line, xs = t.heights[:, 0], t.xs()
    width = 0.10 + 0.60 * d
    assert t.params["width_m"] == pytest.approx(width)
    assert all(r == pytest.approx(width, abs=SPEC.resolution_m) for r in _runs(line, xs, -GAP_DEPTH_M))
    assert t.boxes is None  # pits are heightfield only

    t = parkour_terrain("hurdles", d, SPEC)
    assert t.heights.max() == pytest.approx(0.02 + 0.38 * d)
    assert all(b["half_size"][2] * 2 == pytest.approx(0.02 + 0.38 * d) for b in t.boxes)

    t = parkour_terrain("platforms", d, SPEC)
    assert t.heights.max() == pytest.approx(0.05 + 0.40 * d)

    step = 0.02 + 0.18 * d
    up = parkour_terrain("stairs_up", d, SPEC).heights[:, 0]
    assert np.allclose(np.unique(np.round(np.diff(up), 9)), [0.0, step]) or step == 0
    assert up.max() == pytest.approx(STAIR_STEPS * step) and up[0] == 0.0
    down = parkour_terrain("stairs_down", d, SPEC).heights[:, 0]
    assert down[0] == pytest.approx(STAIR_STEPS * step) and down[-1] == 0.0
    assert np.all(np.diff(down) <= 1e-12)

    t = parkour_terrain("slopes", d, SPEC)
    rise = np.diff(t.heights[:, 0]) / SPEC.resolution_m
    assert rise.max() == pytest.approx(np.tan(np.deg2rad(25.0 * d)), abs=1e-9)


def test_boxes_and_heightfield_agree() -> None:
    from training.envs.privileged import terrain_height

    t = parkour_terrain("stairs_up", 0.7, SPEC)
    c = np.array([b["pos"] for b in t.boxes])[None]
    h = np.array([b["half_size"] for b in t.boxes])[None]
    edges = np.array([b["pos"][0] + s * b["half_size"][0] for b in t.boxes for s in (-1, 1)])
    xs = t.xs()  # grid points (bilinear is exact there), box edges left out (boxes are closed, cells half-open)
    xs = xs[np.abs(xs[:, None] - edges[None]).min(1) > 1e-6]
    pts = np.stack([xs, np.full_like(xs, 0.3)], -1)[None]
    assert np.allclose(
        terrain_height(c, h, np.zeros((1, len(t.boxes))), pts)[0], t.height_at(xs, 0.3 + 0 * xs), atol=1e-9
    )


def test_mujoco_hfield_heights_match_the_numpy_terrain() -> None:
    t = parkour_terrain("gaps", 0.5, TerrainSpec(noise_amplitude_m=0.02))
    spec = mujoco.MjSpec()
    add_hfield(spec, t, pos=(1.0, -2.0))
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    geom = np.zeros(1, np.int32)
    for x, y in [(0.3, 0.0), (1.27, 0.41), (2.6, -0.7), (5.05, 0.2)]:
        dist = mujoco.mj_ray(
            model, data, np.array([x + 1.0, y - 2.0, 5.0]), np.array([0.0, 0.0, -1.0]), None, 1, -1, geom
        )
        assert 5.0 - dist == pytest.approx(float(t.height_at(x, y)), abs=2e-3)


def test_terrain_set_covers_every_kind_and_level() -> None:
    tiles = terrain_set(4, TerrainSpec(length_m=4.0))
    assert set(tiles) == set(KINDS)
    assert [t.difficulty for t in tiles["hurdles"]] == pytest.approx([0, 1 / 3, 2 / 3, 1])
