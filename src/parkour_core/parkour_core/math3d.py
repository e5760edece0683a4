"""Small rotation helpers (quaternions are w, x, y, z like MuJoCo and Unitree's IMU)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
GRAVITY_WORLD = np.array([0.0, 0.0, -1.0])


def rotate_inverse(quat_wxyz: FloatArray, v: FloatArray) -> FloatArray:
    """Express world vector ``v`` in the body frame given the body's orientation (both may carry leading
    batch axes: quaternions [..., 4], vectors [..., 3])."""
    w = quat_wxyz[..., :1]
    qv = quat_wxyz[..., 1:4]
    return v * (2.0 * w * w - 1.0) - np.cross(qv, v) * (2.0 * w) + qv * (2.0 * np.sum(qv * v, axis=-1, keepdims=True))


def projected_gravity(quat_wxyz: FloatArray) -> FloatArray:
    """Unit gravity direction in the body frame: (0, 0, -1) when upright."""
    return rotate_inverse(np.asarray(quat_wxyz, dtype=np.float64), GRAVITY_WORLD)


def tilt_rad(quat_wxyz: FloatArray) -> float:
    """Angle between the body z axis and the world vertical."""
    g = projected_gravity(quat_wxyz)
    return float(np.arccos(np.clip(-g[2], -1.0, 1.0)))


def yaw_of(quat_wxyz: FloatArray) -> float:
    w, x, y, z = quat_wxyz
    return float(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))
