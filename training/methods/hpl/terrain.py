"""HPL's terrains: fractal-noise heightfields and the parkour terrain set, as numpy and as MuJoCo hfields.

- :func:`fractal_noise`: octaves of seeded value noise (smoothstep-interpolated random lattices, each
  octave ``lacunarity`` times finer and ``persistence`` times weaker), zero mean, scaled so that the
  largest absolute height is exactly ``amplitude_m``. HPL lays such noise under every terrain.
- :func:`parkour_terrain`: one tile of a kind in :data:`KINDS` at a difficulty in [0, 1]. A tile runs
  along +x from x = 0 (a flat start zone of ``start_m``, where the robot spawns) to ``length_m``,
  centred on y = 0. The geometry of each kind is a linear function of the difficulty
  (:data:`RANGES`): platform height, gap width, hurdle height, stair step height, slope angle.
- Kinds whose profile is piecewise constant and never below the ground (platforms, hurdles, stairs)
  also come as boxes (``ParkourTerrain.boxes``, the ``{"pos", "half_size"}`` dicts of
  ``parkour_sim.scene``), so the box-only CPU environments can use them; gaps (pits) and slopes
  exist only as heightfields.
- :func:`add_hfield`: a heightfield geom on an ``mujoco.MjSpec`` (new to this stack: the scenes of
  ``parkour_sim.scene`` are boxes on a plane).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]

KINDS = ("platforms", "gaps", "hurdles", "stairs_up", "stairs_down", "slopes")

# (easiest, hardest) of each kind's parameter; a difficulty d in [0, 1] takes lo + d * (hi - lo).
RANGES: dict[str, tuple[str, float, float]] = {
    "platforms": ("height_m", 0.05, 0.45),
    "gaps": ("width_m", 0.10, 0.70),
    "hurdles": ("height_m", 0.02, 0.40),
    "stairs_up": ("step_height_m", 0.02, 0.20),
    "stairs_down": ("step_height_m", 0.02, 0.20),
    "slopes": ("angle_deg", 0.0, 25.0),
}
GAP_DEPTH_M = 1.0  # pits are this deep (the hfield's floor)
STAIR_TREAD_M = 0.30
STAIR_STEPS = 6
HURDLE_THICKNESS_M = 0.10
OBSTACLE_SPACING_M = 1.5  # platforms, gaps and hurdles repeat at this pitch after the start zone
PLATFORM_LENGTH_M = 0.8


def level_value(kind: str, difficulty: float) -> float:
    """The kind's governing parameter at ``difficulty`` (clipped to [0, 1])."""
    if kind not in RANGES:
        raise ValueError(f"terrain kind {kind!r} is not one of {', '.join(KINDS)}")
    _, lo, hi = RANGES[kind]
    return lo + float(np.clip(difficulty, 0.0, 1.0)) * (hi - lo)


# -- fractal noise ---------------------------------------------------------------------------------


def _smoothstep(t: F) -> F:
    return t * t * (3.0 - 2.0 * t)


def _value_noise(shape: tuple[int, int], cell: float, rng: np.random.Generator) -> F:
    """One octave: random values on a lattice of ``cell`` samples, smoothstep-interpolated, in [-1, 1]."""
    cell = max(cell, 1.0)
    lattice = rng.uniform(-1.0, 1.0, size=(int(np.ceil(shape[0] / cell)) + 2, int(np.ceil(shape[1] / cell)) + 2))
    u = np.arange(shape[0]) / cell
    v = np.arange(shape[1]) / cell
    i0, j0 = np.floor(u).astype(int), np.floor(v).astype(int)
    su, sv = _smoothstep(u - i0)[:, None], _smoothstep(v - j0)[None, :]
    a = lattice[np.ix_(i0, j0)]
    b = lattice[np.ix_(i0 + 1, j0)]
    c = lattice[np.ix_(i0, j0 + 1)]
    d = lattice[np.ix_(i0 + 1, j0 + 1)]
    return (a * (1 - su) + b * su) * (1 - sv) + (c * (1 - su) + d * su) * sv


def fractal_noise(
    shape: tuple[int, int],
    resolution_m: float,
    amplitude_m: float,
    *,
    feature_m: float = 1.0,
    octaves: int = 4,
    persistence: float = 0.5,
    lacunarity: float = 2.0,
    seed: int = 0,
) -> F:
    """Zero-mean fractal value noise, max |height| = ``amplitude_m`` (0 everywhere if ``amplitude_m`` is 0).

    ``feature_m``: the lattice spacing of the first octave; each next octave is ``lacunarity`` times
    finer with ``persistence`` times the weight, so more octaves or a higher persistence make a rougher
    surface at the same amplitude.
    """
    if octaves < 1:
        raise ValueError(f"octaves must be >= 1, got {octaves}")
    rng = np.random.default_rng(seed)
    total = np.zeros(shape)
    for k in range(octaves):
        total += persistence**k * _value_noise(shape, feature_m / resolution_m / lacunarity**k, rng)
    total -= total.mean()
    peak = np.abs(total).max()
    return total * (amplitude_m / peak) if peak > 0 else total


def roughness(heights: F, resolution_m: float) -> float:
    """Mean absolute slope (m/m) between neighbouring cells: the measure the tests compare."""
    gx = np.abs(np.diff(heights, axis=0)).mean()
    gy = np.abs(np.diff(heights, axis=1)).mean()
    return float((gx + gy) / 2.0 / resolution_m)


# -- the parkour terrain set -----------------------------------------------------------------------


@dataclass(frozen=True)
class TerrainSpec:
    length_m: float = 8.0  # along x
    width_m: float = 2.0  # along y, centred on 0
    resolution_m: float = 0.05
    start_m: float = 1.0  # flat spawn zone at the start
    noise_amplitude_m: float = 0.0  # fractal noise added to the heightfield (not to the boxes)
    noise_octaves: int = 4
    seed: int = 0


@dataclass(frozen=True)
class ParkourTerrain:
    kind: str
    difficulty: float
    params: dict[str, float]
    heights: F  # (nx, ny): height at x = i * resolution, y = -width / 2 + j * resolution
    resolution_m: float
    boxes: list[dict[str, Any]] | None = field(default=None)  # None: not box-representable

    @property
    def length_m(self) -> float:
        return (self.heights.shape[0] - 1) * self.resolution_m

    @property
    def width_m(self) -> float:
        return (self.heights.shape[1] - 1) * self.resolution_m

    def xs(self) -> F:
        return np.arange(self.heights.shape[0]) * self.resolution_m

    def height_at(self, x: F, y: F) -> F:
        """Bilinear height at tile coordinates (x along the tile, y across, centred), edges clamped."""
        fx = np.clip(np.asarray(x, dtype=float) / self.resolution_m, 0, self.heights.shape[0] - 1)
        fy = np.clip((np.asarray(y, dtype=float) + self.width_m / 2) / self.resolution_m, 0, self.heights.shape[1] - 1)
        i0 = np.minimum(np.floor(fx).astype(int), self.heights.shape[0] - 2)
        j0 = np.minimum(np.floor(fy).astype(int), self.heights.shape[1] - 2)
        tx, ty = fx - i0, fy - j0
        h = self.heights
        return (h[i0, j0] * (1 - tx) + h[i0 + 1, j0] * tx) * (1 - ty) + (
            h[i0, j0 + 1] * (1 - tx) + h[i0 + 1, j0 + 1] * tx
        ) * ty


Profile = list[tuple[float, float, float]]  # runs (x0, x1, height) along x; the rest of the tile is 0


def _repeat(spec: TerrainSpec, length: float, height: float) -> Profile:
    runs, x = [], spec.start_m
    while x + length <= spec.length_m - 0.5:
        runs.append((x, x + length, height))
        x += OBSTACLE_SPACING_M
    return runs


def _stairs(spec: TerrainSpec, step: float, up: bool) -> Profile:
    runs = []
    for k in range(STAIR_STEPS):
        x0 = spec.start_m + k * STAIR_TREAD_M
        level = k + 1 if up else STAIR_STEPS - k - 1
        runs.append((x0, x0 + STAIR_TREAD_M, level * step))
    top = spec.start_m + STAIR_STEPS * STAIR_TREAD_M
    if up:
        runs.append((top, spec.length_m, STAIR_STEPS * step))
    else:  # stairs down: start on the top landing (the spawn zone included)
        runs.insert(0, (0.0, spec.start_m, STAIR_STEPS * step))
    return [r for r in runs if r[2] > 0]


def _profile(kind: str, spec: TerrainSpec, value: float) -> tuple[Profile, dict[str, float]]:
    if kind == "platforms":
        return _repeat(spec, PLATFORM_LENGTH_M, value), {"height_m": value, "length_m": PLATFORM_LENGTH_M}
    if kind == "gaps":
        return _repeat(spec, value, -GAP_DEPTH_M), {"width_m": value, "depth_m": GAP_DEPTH_M}
    if kind == "hurdles":
        return _repeat(spec, HURDLE_THICKNESS_M, value), {"height_m": value, "thickness_m": HURDLE_THICKNESS_M}
    if kind in ("stairs_up", "stairs_down"):
        return _stairs(spec, value, kind == "stairs_up"), {"step_height_m": value, "tread_m": STAIR_TREAD_M}
    raise ValueError(kind)


def _rasterize(profile: Profile, xs: F) -> F:
    h = np.zeros_like(xs)
    for x0, x1, height in profile:
        # a run to the tile's end keeps the last grid point
        end = xs <= x1 + 1e-9 if x1 >= xs[-1] - 1e-9 else xs < x1 - 1e-9
        h[(xs >= x0 - 1e-9) & end] = height
    return h


def _boxes(profile: Profile, width: float) -> list[dict[str, Any]]:
    return [
        {"pos": [(x0 + x1) / 2, 0.0, height / 2], "half_size": [(x1 - x0) / 2, width / 2, height / 2]}
        for x0, x1, height in profile
    ]


def parkour_terrain(kind: str, difficulty: float, spec: TerrainSpec = TerrainSpec()) -> ParkourTerrain:
    """One tile of ``kind`` at ``difficulty`` in [0, 1] (see the module docstring)."""
    value = level_value(kind, difficulty)
    nx = round(spec.length_m / spec.resolution_m) + 1
    ny = round(spec.width_m / spec.resolution_m) + 1
    xs = np.arange(nx) * spec.resolution_m
    boxes: list[dict[str, Any]] | None
    if kind == "slopes":
        theta = np.deg2rad(value)
        ramp = (spec.length_m - spec.start_m) / 2  # up to the middle, then down
        d = np.clip(xs - spec.start_m, 0.0, None)
        line = np.tan(theta) * np.where(d <= ramp, d, np.maximum(2 * ramp - d, 0.0))
        params = {"angle_deg": value, "peak_m": float(np.tan(theta) * ramp)}
        boxes = None
    else:
        profile, params = _profile(kind, spec, value)
        line = _rasterize(profile, xs)
        boxes = _boxes(profile, spec.width_m) if all(h > 0 for _, _, h in profile) else None
    heights = np.repeat(line[:, None], ny, axis=1)
    if spec.noise_amplitude_m > 0:
        heights = heights + fractal_noise(
            (nx, ny), spec.resolution_m, spec.noise_amplitude_m, octaves=spec.noise_octaves, seed=spec.seed
        )
    return ParkourTerrain(kind, float(np.clip(difficulty, 0, 1)), params, heights, spec.resolution_m, boxes)


def terrain_set(levels: int, spec: TerrainSpec = TerrainSpec()) -> dict[str, list[ParkourTerrain]]:
    """Every kind at ``levels`` difficulties evenly spaced over [0, 1] (HPL's grid of terrain tiles)."""
    difficulties = np.linspace(0.0, 1.0, levels) if levels > 1 else np.zeros(1)
    return {kind: [parkour_terrain(kind, float(d), spec) for d in difficulties] for kind in KINDS}


# -- MuJoCo ------------------------------------------------------------------------------------------


def add_hfield(
    spec: Any, terrain: ParkourTerrain, name: str = "terrain", pos: tuple[float, float] = (0.0, 0.0), **geom: Any
):
    """Add ``terrain`` as an hfield asset and geom to a ``mujoco.MjSpec``; returns the geom.

    The tile's x = 0, y = 0 (centre line) lands at ``pos``. MuJoCo's hfield rows run along y and its
    columns along x, heights normalized to [0, 1] over [min, max]; the geom sits at z = min height so
    world heights equal the terrain's (a flat tile gets a 1 mm elevation range: MuJoCo needs > 0).
    """
    import mujoco

    h = terrain.heights
    lo, hi = float(h.min()), float(h.max())
    span = max(hi - lo, 1e-3)
    hfield = spec.add_hfield()
    hfield.name = name
    hfield.nrow, hfield.ncol = h.shape[1], h.shape[0]
    base = 0.1 + max(0.0, -lo)  # the hfield's solid base below its lowest point
    hfield.size = [terrain.length_m / 2, terrain.width_m / 2, span, base]
    hfield.userdata = ((h.T - lo) / span).astype(np.float32).ravel().tolist()
    return spec.worldbody.add_geom(
        name=name,
        type=mujoco.mjtGeom.mjGEOM_HFIELD,
        hfieldname=name,
        pos=[pos[0] + terrain.length_m / 2, pos[1], lo],
        **geom,
    )


TerrainFactory = Callable[[str, float], ParkourTerrain]
