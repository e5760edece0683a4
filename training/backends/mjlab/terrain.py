"""The privileged height scan through mjlab's own APIs (the step-up student's critic reads it).

Runs inside ``.venv-mjlab`` only: a yaw-aligned ray-cast sensor on the pelvis over the CPU env's grid
(:func:`height_scan_sensor_cfg`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from training.envs.privileged import SCAN_POINTS_PER_SIDE, SCAN_SIZE_M, scan_grid

SCAN_SENSOR = "privileged_scan"
SCAN_LIFT_M = 3.0  # rays start this far above the pelvis: above any box a reference climbs
TERRAIN_GEOM_GROUP = 0


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
