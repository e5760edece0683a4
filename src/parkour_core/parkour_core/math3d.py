"""Small rotation helpers (quaternions are w, x, y, z like MuJoCo and Unitree's IMU)."""

from __future__ import annotations

import math

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


def yaw_joint_imu_to_base(
    quat_wxyz: FloatArray, gyro: FloatArray, accel: FloatArray, yaw: float, yaw_rate: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """An IMU reading taken on a body that turns on the base about the base's z axis (the H1's torso on
    its waist ``torso_joint``), in the base's frame: orientation, angular velocity and accelerometer.

    With R_b, R_t the base's and the IMU body's orientations (world from body) and ``yaw`` the joint's
    angle, R_t = R_b Rz(yaw), so R_b = R_t Rz(-yaw): the quaternion ``q_t * (cos(yaw/2), 0, 0, -sin(yaw/2))``.
    The bodies' world angular velocities differ by the joint's: w_t = w_b + R_b z yaw_rate, so in the
    base's frame w_b = R_b^T w_t - z yaw_rate = Rz(yaw) (R_t^T w_t) - z yaw_rate: the gyro turned by
    Rz(yaw), less the joint's rate about z. As Unitree's deployers (``transform_imu_data``, unitree_rl_gym).
    The accelerometer is turned into the base's axes, Rz(yaw) a; it stays the specific force at the IMU
    (the lever arm to the base is not taken out). Checked against MuJoCo (parkour_sim/test/test_imu_frame.py).
    """
    h = 0.5 * yaw
    ch, sh = math.cos(h), math.sin(h)
    w, x, y, z = np.asarray(quat_wxyz, dtype=np.float64).tolist()
    quat = np.array([w * ch + z * sh, x * ch - y * sh, y * ch + x * sh, z * ch - w * sh])
    c, s = math.cos(yaw), math.sin(yaw)
    gx, gy, gz = np.asarray(gyro, dtype=np.float64).tolist()
    ax, ay, az = np.asarray(accel, dtype=np.float64).tolist()
    base_gyro = np.array([c * gx - s * gy, s * gx + c * gy, gz - yaw_rate])
    base_accel = np.array([c * ax - s * ay, s * ax + c * ay, az])
    return quat, base_gyro, base_accel
