"""Box terrain: oriented boxes (center, half size, yaw), their placement and their height field.

Skills are captured on boxes; the holosoma-retargeting meshes are 8-vertex boxes that we turn into
oriented boxes. Placing a skill's terrain for a synthesized motion is a planar rigid transform: the
one that carries the matched clip frame's root onto the character's root.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]


@dataclass(frozen=True)
class Boxes:
    center: F  # (B, 3)
    half: F  # (B, 3)
    yaw: F  # (B,)

    def __len__(self) -> int:
        return len(self.yaw)

    @classmethod
    def empty(cls) -> Boxes:
        return cls(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))

    def concat(self, other: Boxes) -> Boxes:
        return Boxes(
            np.concatenate([self.center, other.center]),
            np.concatenate([self.half, other.half]),
            np.concatenate([self.yaw, other.yaw]),
        )

    def mirrored(self) -> Boxes:
        """Reflection y -> -y (boxes are symmetric, so only the center and yaw change)."""
        return Boxes(self.center * np.array([1.0, -1.0, 1.0]), self.half.copy(), -self.yaw)


def box_from_vertices(v: F) -> tuple[F, F, float]:
    """Oriented box (center, half size, yaw in (-pi/2, pi/2]) of the 8 corners of a z-up box mesh."""
    if v.shape != (8, 3):
        raise ValueError(f"a box mesh has 8 vertices, got {v.shape[0]}")
    z0, z1 = v[:, 2].min(), v[:, 2].max()
    bottom = v[v[:, 2] < (z0 + z1) / 2, :2]
    if len(bottom) != 4:
        raise ValueError("a box mesh needs 4 bottom corners (is it a sloped mesh?)")
    c = bottom.mean(axis=0)
    d = np.linalg.norm(bottom[1:] - bottom[0], axis=1)
    order = np.argsort(d)
    e1 = bottom[1 + order[0]] - bottom[0]
    e2 = bottom[1 + order[1]] - bottom[0]
    # x extent along e1 with yaw folded into (-pi/2, pi/2]
    yaw = float(np.arctan2(e1[1], e1[0]))
    if yaw <= -np.pi / 2:
        yaw += np.pi
    elif yaw > np.pi / 2:
        yaw -= np.pi
    half = np.array([np.linalg.norm(e1) / 2, np.linalg.norm(e2) / 2, (z1 - z0) / 2])
    return np.array([c[0], c[1], (z0 + z1) / 2]), half, yaw


def place(
    boxes: Boxes, clip_root_xy: F, clip_heading: float, world_root_xy: F, world_heading: float, dz: float
) -> Boxes:
    """Carry boxes from clip coordinates to the world: the clip frame's root (xy, heading) lands on the
    character's root (xy, heading); heights shift by ``dz`` (the ground level under the character)."""
    dyaw = world_heading - clip_heading
    c, s = np.cos(dyaw), np.sin(dyaw)
    rel = boxes.center[:, :2] - clip_root_xy
    xy = np.stack([c * rel[:, 0] - s * rel[:, 1], s * rel[:, 0] + c * rel[:, 1]], axis=1) + world_root_xy
    center = np.concatenate([xy, boxes.center[:, 2:] + dz], axis=1)
    yaw = (boxes.yaw + dyaw + np.pi) % (2 * np.pi) - np.pi
    return Boxes(center, boxes.half.copy(), yaw)


def local_xy(boxes: Boxes, points: F) -> F:
    """Points (P, 2) in each box's frame: (B, P, 2)."""
    rel = points[None, :, :] - boxes.center[:, None, :2]
    c, s = np.cos(boxes.yaw)[:, None], np.sin(boxes.yaw)[:, None]
    return np.stack([c * rel[..., 0] + s * rel[..., 1], -s * rel[..., 0] + c * rel[..., 1]], axis=-1)


def ground_height(boxes: Boxes, points: F) -> F:
    """Terrain height under planar points (P, 2): the highest box top covering each, else 0."""
    if len(boxes) == 0:
        return np.zeros(len(points))
    loc = local_xy(boxes, points)
    inside = np.all(np.abs(loc) <= boxes.half[:, None, :2], axis=-1)
    tops = (boxes.center[:, 2] + boxes.half[:, 2])[:, None]
    return np.maximum(np.max(np.where(inside, tops, 0.0), axis=0), 0.0)


def footprint_distance(boxes: Boxes, points: F) -> F:
    """Planar distance (B, P) from points to each box's footprint (0 inside)."""
    loc = local_xy(boxes, points)
    out = np.maximum(np.abs(loc) - boxes.half[:, None, :2], 0.0)
    return np.linalg.norm(out, axis=-1)
