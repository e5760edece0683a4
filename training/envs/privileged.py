"""The teacher's privileged observation: small named terms, batched, pure numpy.

The order is data (:data:`PRIVILEGED_TERMS`, which says what each term means), like the student's
terms in a bundle manifest. Each term maps a :class:`PrivilegedInput` (N environments) to an
(N, dims) array.

The height scan is analytic (the terrain is yaw-only boxes on a floor at z = 0): the grid is centred
on the pelvis and turns with its heading; each point reads ``pelvis_z - terrain height``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from training.motion_matching import quat

F = NDArray[np.float64]

SCAN_SIZE_M = 0.7
SCAN_POINTS_PER_SIDE = 11
NO_BOX = -1.0  # half size of a padding box slot: no point is ever inside it


@dataclass(frozen=True)
class PrivilegedInput:
    """Everything the terms read, batched over N environments."""

    ref_joint_pos: F  # (N, J)
    ref_joint_vel: F  # (N, J)
    ref_anchor_pos: F  # (N, 3)
    ref_anchor_quat: F  # (N, 4)
    pelvis_pos: F  # (N, 3)
    pelvis_quat: F  # (N, 4)
    pelvis_lin_vel_w: F  # (N, 3)
    pelvis_ang_vel_b: F  # (N, 3)
    joint_pos: F  # (N, J)
    joint_vel: F  # (N, J)
    default_q: F  # (J,)
    last_action: F  # (N, J)
    box_center: F  # (N, B, 3), padded slots have half size NO_BOX
    box_half: F  # (N, B, 3)
    box_yaw: F  # (N, B)


@dataclass(frozen=True)
class PrivilegedTerm:
    name: str
    dims: int


def quat_to_matrix(q: F) -> F:
    """Rotation matrices (..., 3, 3) of unit w-first quaternions (..., 4)."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def six_d(q: F) -> F:
    """The first two columns of the rotation matrix, (..., 6): continuous, unlike a quaternion's sign."""
    m = quat_to_matrix(q)
    return np.concatenate([m[..., :, 0], m[..., :, 1]], axis=-1)


def scan_grid(size_m: float = SCAN_SIZE_M, points_per_side: int = SCAN_POINTS_PER_SIDE) -> F:
    """(S, 2) planar offsets in the heading frame, x forward, row-major from back-right."""
    side = np.linspace(-size_m / 2.0, size_m / 2.0, points_per_side)
    xx, yy = np.meshgrid(side, side, indexing="ij")
    return np.stack([xx.ravel(), yy.ravel()], axis=-1)


def terrain_height(box_center: F, box_half: F, box_yaw: F, points: F) -> F:
    """Height (N, P) of the terrain under world points (N, P, 2): the highest box top covering each, else 0."""
    if box_center.shape[1] == 0:
        return np.zeros(points.shape[:2])
    rel = points[:, None, :, :] - box_center[:, :, None, :2]  # (N, B, P, 2)
    c, s = np.cos(box_yaw)[:, :, None], np.sin(box_yaw)[:, :, None]
    lx = c * rel[..., 0] + s * rel[..., 1]
    ly = -s * rel[..., 0] + c * rel[..., 1]
    inside = (np.abs(lx) <= box_half[:, :, None, 0]) & (np.abs(ly) <= box_half[:, :, None, 1])
    tops = (box_center[:, :, 2] + box_half[:, :, 2])[:, :, None]
    return np.maximum(np.max(np.where(inside, tops, 0.0), axis=1), 0.0)


def scan_points_world(pelvis_pos: F, pelvis_quat: F, grid: F) -> F:
    """(N, S, 2) world positions of the grid around each pelvis, turned with its heading."""
    heading = quat.yaw(pelvis_quat)
    c, s = np.cos(heading)[:, None], np.sin(heading)[:, None]
    x = pelvis_pos[:, None, 0] + c * grid[None, :, 0] - s * grid[None, :, 1]
    y = pelvis_pos[:, None, 1] + s * grid[None, :, 0] + c * grid[None, :, 1]
    return np.stack([x, y], axis=-1)


_GRID = scan_grid()


def _height_scan(o: PrivilegedInput) -> F:
    points = scan_points_world(o.pelvis_pos, o.pelvis_quat, _GRID)
    return o.pelvis_pos[:, 2:3] - terrain_height(o.box_center, o.box_half, o.box_yaw, points)


def _anchor_pos_error_b(o: PrivilegedInput) -> F:
    inv = quat.conj(o.pelvis_quat)
    return quat.rotate(inv, o.ref_anchor_pos - o.pelvis_pos)


def _anchor_ori_error_b(o: PrivilegedInput) -> F:
    return six_d(quat.mul(quat.conj(o.pelvis_quat), o.ref_anchor_quat))


TERM_FUNCTIONS: dict[str, Callable[[PrivilegedInput], F]] = {
    "ref_joint_pos": lambda o: o.ref_joint_pos - o.default_q,
    "ref_joint_vel": lambda o: o.ref_joint_vel,
    "anchor_pos_error_b": _anchor_pos_error_b,
    "anchor_ori_error_b": _anchor_ori_error_b,
    "pelvis_pos_w": lambda o: o.pelvis_pos,
    "pelvis_ori_w": lambda o: six_d(o.pelvis_quat),
    "pelvis_lin_vel_w": lambda o: o.pelvis_lin_vel_w,
    "pelvis_ang_vel_b": lambda o: o.pelvis_ang_vel_b,
    "joint_pos": lambda o: o.joint_pos - o.default_q,
    "joint_vel": lambda o: o.joint_vel,
    "actions": lambda o: o.last_action,
    "height_scan": _height_scan,
}

PRIVILEGED_TERMS: tuple[PrivilegedTerm, ...] = (
    PrivilegedTerm("ref_joint_pos", 29),  # reference joint positions minus the default pose
    PrivilegedTerm("ref_joint_vel", 29),  # reference joint velocities
    PrivilegedTerm("anchor_pos_error_b", 3),  # reference pelvis position minus the robot's, in the robot's pelvis frame
    PrivilegedTerm("anchor_ori_error_b", 6),  # rotation from the robot's pelvis to the reference's (first two columns)
    PrivilegedTerm("pelvis_pos_w", 3),  # global pelvis position (the reference's world = the terrain's frame)
    PrivilegedTerm("pelvis_ori_w", 6),  # global pelvis orientation (first two matrix columns)
    PrivilegedTerm("pelvis_lin_vel_w", 3),  # global pelvis linear velocity
    PrivilegedTerm("pelvis_ang_vel_b", 3),  # pelvis angular velocity, body frame (the IMU's gyro)
    PrivilegedTerm("joint_pos", 29),  # joint positions minus the default pose
    PrivilegedTerm("joint_vel", 29),  # joint velocities
    PrivilegedTerm("actions", 29),  # the previous action
    # pelvis height above the terrain on an 11 x 11 grid over 0.7 m x 0.7 m
    PrivilegedTerm("height_scan", SCAN_POINTS_PER_SIDE**2),
)


def privileged_size(terms: Sequence[PrivilegedTerm] = PRIVILEGED_TERMS) -> int:
    return sum(t.dims for t in terms)


def term_slices(terms: Sequence[PrivilegedTerm] = PRIVILEGED_TERMS) -> dict[str, slice]:
    """Where each term sits in the concatenated observation."""
    out, start = {}, 0
    for t in terms:
        out[t.name] = slice(start, start + t.dims)
        start += t.dims
    return out


def build_privileged(o: PrivilegedInput, terms: Sequence[PrivilegedTerm] = PRIVILEGED_TERMS) -> NDArray[np.float32]:
    """(N, privileged_size) float32, the terms concatenated in order."""
    n = len(o.pelvis_pos)
    out = np.empty((n, privileged_size(terms)), dtype=np.float32)
    start = 0
    for t in terms:
        value = TERM_FUNCTIONS[t.name](o)
        if value.shape != (n, t.dims):
            raise ValueError(f"privileged term {t.name!r} gave shape {value.shape}, expected ({n}, {t.dims})")
        out[:, start : start + t.dims] = value
        start += t.dims
    return out
