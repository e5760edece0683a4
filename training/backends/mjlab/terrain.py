"""Each reference's box terrain and the teacher's privileged height scan, through mjlab's own APIs.

Runs inside ``.venv-mjlab`` only. The terrain is one tile per reference in mjlab's terrain generator
(:func:`reference_terrain_cfg`, which says why tiles and not per-environment terrain); the height scan
is a yaw-aligned ray-cast sensor on the pelvis over the CPU env's grid (:func:`height_scan_sensor_cfg`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from training.envs.privileged import SCAN_POINTS_PER_SIDE, SCAN_SIZE_M, scan_grid

SCAN_SENSOR = "privileged_scan"
SCAN_LIFT_M = 3.0  # rays start this far above the pelvis: above any box a reference climbs
TILE_MARGIN_M = 1.5  # free ground around a reference's path and boxes on its tile
BORDER_M = 5.0  # flat ground around the whole field
TERRAIN_GEOM_GROUP = 0


# ----------------------------------------------------------------------------- the boxes of a reference


@dataclass(frozen=True)
class Boxes:
    """Yaw-only boxes in a reference's frame (as ``training.envs.reference.Terrain``)."""

    center: np.ndarray  # (B, 3)
    half_size: np.ndarray  # (B, 3)
    yaw: np.ndarray  # (B,)

    @staticmethod
    def of_motion(npz: Path | str) -> Boxes:
        """The boxes stored beside a converted motion (``terrain_box_*``; none if absent)."""
        with np.load(npz) as z:
            if "terrain_box_center" not in z:
                return Boxes(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
            return Boxes(
                np.asarray(z["terrain_box_center"], dtype=np.float64).reshape(-1, 3),
                np.asarray(z["terrain_box_half_size"], dtype=np.float64).reshape(-1, 3),
                np.asarray(z["terrain_box_yaw"], dtype=np.float64).reshape(-1),
            )

    def corners_xy(self) -> np.ndarray:
        """(4 B, 2) footprint corners."""
        out = []
        for c, h, y in zip(self.center, self.half_size, self.yaw, strict=True):
            cy, sy = math.cos(y), math.sin(y)
            for sx, sy_ in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                lx, ly = sx * h[0], sy_ * h[1]
                out.append((c[0] + cy * lx - sy * ly, c[1] + sy * lx + cy * ly))
        return np.asarray(out).reshape(-1, 2)


def _footprint(npz: Path | str) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper xy corner of everything a reference touches: its bodies' path and its boxes."""
    with np.load(npz) as z:
        xy = np.asarray(z["body_pos_w"], dtype=np.float64)[..., :2].reshape(-1, 2)
    xy = np.concatenate([xy, Boxes.of_motion(npz).corners_xy()])
    return xy.min(axis=0), xy.max(axis=0)


@dataclass(frozen=True)
class TileLayout:
    """One tile size for all references, and where each reference's frame origin lies on its tile."""

    size: tuple[float, float]
    origins: tuple[tuple[float, float], ...]  # tile-local xy of each reference's frame origin


def tile_layout(motion_files: list[Path] | list[str], margin_m: float = TILE_MARGIN_M) -> TileLayout:
    lows, highs = zip(*(_footprint(f) for f in motion_files), strict=True)
    extent = np.max(np.stack(highs) - np.stack(lows), axis=0) + 2.0 * margin_m
    size = (float(np.ceil(extent[0])), float(np.ceil(extent[1])))
    origins = []
    for lo, hi in zip(lows, highs, strict=True):
        centre = (lo + hi) / 2.0
        origins.append((size[0] / 2.0 - float(centre[0]), size[1] / 2.0 - float(centre[1])))
    return TileLayout(size, tuple(origins))


# ----------------------------------------------------------------------------- mjlab's terrain generator


def _yaw_quat(yaw: float) -> tuple[float, float, float, float]:
    return (math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0))


def reference_tile_cfg_class():
    """``ReferenceBoxesTerrainCfg``: a SubTerrainCfg (defined lazily: mjlab is imported only here)."""
    from mjlab.terrains.terrain_generator import SubTerrainCfg, TerrainGeometry, TerrainOutput
    from mjlab.terrains.utils import make_plane

    @dataclass(kw_only=True)
    class ReferenceBoxesTerrainCfg(SubTerrainCfg):
        """A tile: ground with its top at z = 0 and one reference's boxes, its frame origin at ``origin_xy``."""

        origin_xy: tuple[float, float] = (0.0, 0.0)
        centers: tuple = ()
        half_sizes: tuple = ()
        yaws: tuple = ()

        def function(self, difficulty: float, spec: mujoco.MjSpec, rng: np.random.Generator) -> TerrainOutput:
            del difficulty, rng
            body = spec.body("terrain")
            geoms = [TerrainGeometry(geom=make_plane(body, self.size, 0.0, center_zero=False)[0])]
            ox, oy = self.origin_xy
            for c, h, y in zip(self.centers, self.half_sizes, self.yaws, strict=True):
                g = body.add_geom(
                    type=mujoco.mjtGeom.mjGEOM_BOX,
                    size=tuple(h),
                    pos=(ox + c[0], oy + c[1], c[2]),
                    quat=_yaw_quat(y),
                    group=TERRAIN_GEOM_GROUP,
                )
                geoms.append(TerrainGeometry(geom=g))
            return TerrainOutput(origin=np.array([ox, oy, 0.0]), geometries=geoms)

    return ReferenceBoxesTerrainCfg


def reference_terrain_cfg(motion_files: list[Path] | list[str], seed: int = 0):
    """mjlab's ``TerrainEntityCfg``: one tile per reference (column k = reference k).

    Curriculum mode with one row, so tile ``k`` is column ``k`` and mjlab's ``TerrainEntity`` places the
    environments on the columns in equal shares, fixed for the run. A tile is a ground slab with its top at
    z = 0 and the reference's boxes (``terrain_box_*`` of the synth motion) on it, laid out in the
    reference's own frame shifted by the tile's spawn origin. mjlab's ``MotionCommand`` already adds each
    environment's origin (``scene.env_origins``) to the reference's world poses, so an environment tracks
    its reference over that reference's boxes.

    Why one shared field of tiles rather than per-environment terrain (the CPU env's box slots moved at
    every reset): mjlab compiles ONE MjModel for all worlds, and terrain is static geometry of that model
    (its ``terrain`` body). Per-world geometry would need each box slot's ``geom_pos`` and ``geom_size``
    expanded per world (mjlab's domain-randomization path, ``Simulation.expand_model_fields``) and the
    ray-cast BVH (built over static geoms by mujoco_warp's render context, ``flg_static``) rebuilt for
    every world; tiles are what mjlab's own terrain generator, env origins and motion command are built
    around, and they cost nothing per step. The price: an environment's reference is fixed by its column
    for the run (the CPU env redraws a reference at every reset), and ``env.num_envs`` must be at least
    the number of references.
    """
    from mjlab.terrains import TerrainEntityCfg
    from mjlab.terrains.terrain_generator import TerrainGeneratorCfg

    layout = tile_layout(motion_files)
    tile = reference_tile_cfg_class()
    sub = {}
    for k, (f, origin) in enumerate(zip(motion_files, layout.origins, strict=True)):
        b = Boxes.of_motion(f)
        sub[f"ref{k:03d}"] = tile(
            proportion=1.0,
            origin_xy=origin,
            centers=tuple(map(tuple, b.center)),
            half_sizes=tuple(map(tuple, b.half_size)),
            yaws=tuple(float(y) for y in b.yaw),
        )
    generator = TerrainGeneratorCfg(
        seed=seed,
        curriculum=True,  # one column per sub-terrain, environments spread over columns by proportion
        size=layout.size,
        border_width=BORDER_M,
        border_height=1.0,
        num_rows=1,
        num_cols=len(sub),
        color_scheme="none",
        sub_terrains=sub,
    )
    return TerrainEntityCfg(terrain_type="generator", terrain_generator=generator, max_init_terrain_level=0)


# ----------------------------------------------------------------------------- the height scan


def scan_pattern_cfg_class():
    from mjlab.sensor import GridPatternCfg

    @dataclass
    class PrivilegedScanPatternCfg(GridPatternCfg):
        """The CPU env's scan grid (:func:`training.envs.privileged.scan_grid`), lifted ``lift_m`` above the frame."""

        size: tuple[float, float] = (SCAN_SIZE_M, SCAN_SIZE_M)
        points_per_side: int = SCAN_POINTS_PER_SIDE
        lift_m: float = SCAN_LIFT_M
        direction: tuple[float, float, float] = field(default=(0.0, 0.0, -1.0))

        def generate_rays(self, mj_model, device):
            import torch

            grid = scan_grid(self.size[0], self.points_per_side)
            offsets = torch.zeros((len(grid), 3), device=device, dtype=torch.float32)
            offsets[:, :2] = torch.as_tensor(grid, dtype=torch.float32, device=device)
            offsets[:, 2] = self.lift_m
            down = torch.tensor(self.direction, device=device, dtype=torch.float32)
            return offsets, (down / down.norm()).expand(len(grid), 3).clone()

    return PrivilegedScanPatternCfg


def height_scan_sensor_cfg(frame_body: str = "pelvis"):
    """mjlab's ``RayCastSensorCfg`` for the privileged scan: yaw-aligned on the pelvis, terrain geoms only.

    The CPU env's own grid (:func:`training.envs.privileged.scan_grid`: 11 x 11 points over 0.7 m x 0.7 m,
    x forward, row-major from back-right, turned with the pelvis heading), cast straight down from
    ``SCAN_LIFT_M`` above the pelvis at terrain geoms only (geom group 0; mjlab's G1 sits in groups 2 and
    3). mjlab's ``height_scan`` term then reads ``pelvis_z - hit_z`` per point: the CPU env's
    ``pelvis_z - terrain height`` (:mod:`training.envs.privileged`), including under a box whose top is
    above the pelvis (a ray started at the pelvis would begin inside it).
    """
    from mjlab.sensor import ObjRef, RayCastSensorCfg

    return RayCastSensorCfg(
        name=SCAN_SENSOR,
        frame=ObjRef(type="body", name=frame_body, entity="robot"),
        pattern=scan_pattern_cfg_class()(),
        ray_alignment="yaw",
        max_distance=SCAN_LIFT_M + 20.0,
        exclude_parent_body=True,
        include_geom_groups=(TERRAIN_GEOM_GROUP,),
    )


def height_scan_term_cfg():
    """The observation term: ``pelvis_z - hit_z`` per grid point (mjlab's ``height_scan``), 121 values."""
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.observation_manager import ObservationTermCfg

    return ObservationTermCfg(func=envs_mdp.height_scan, params={"sensor_name": SCAN_SENSOR})
