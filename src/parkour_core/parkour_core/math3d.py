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


def projected_gravity_one(w: float, x: float, y: float, z: float) -> tuple[float, float, float]:
    """:func:`projected_gravity` of one quaternion in Python floats, bit for bit.

    The same IEEE operations in the same order (``np.cross`` with gravity's zeros multiplied in, the
    sum started from +0.0 as numpy's reduction does), so signed zeros, inf and NaN come out alike; a
    control step uses it because numpy's per-call cost on three elements outweighs the arithmetic.
    """
    a = 2.0 * w * w - 1.0
    c0 = y * -1.0 - z * 0.0
    c1 = z * 0.0 - x * -1.0
    c2 = x * 0.0 - y * 0.0
    tw = 2.0 * w
    s = 2.0 * (((0.0 + x * 0.0) + y * 0.0) + z * -1.0)
    return 0.0 * a - c0 * tw + x * s, 0.0 * a - c1 * tw + y * s, -1.0 * a - c2 * tw + z * s


def tilt_rad(quat_wxyz: FloatArray) -> float:
    """Angle between the body z axis and the world vertical."""
    g = projected_gravity(quat_wxyz)
    return float(np.arccos(np.clip(-g[2], -1.0, 1.0)))


def yaw_of(quat_wxyz: FloatArray) -> float:
    w, x, y, z = quat_wxyz
    return float(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))
