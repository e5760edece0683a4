"""Quaternion and planar-frame helpers (w-first quaternions, batched over leading axes).

Pure numpy functions; the database stores orientations as unit quaternions (w, x, y, z) like mjlab
and MuJoCo, and the motion-matching features live in the yaw-only "character frame".
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]


def normalize(q: F) -> F:
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def mul(a: F, b: F) -> F:
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def conj(q: F) -> F:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def rotate(q: F, v: F) -> F:
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def yaw(q: F) -> F:
    """Heading angle: the yaw of the body's x axis projected on the ground plane."""
    fwd = rotate(q, np.broadcast_to(np.array([1.0, 0.0, 0.0]), (*q.shape[:-1], 3)))
    return np.arctan2(fwd[..., 1], fwd[..., 0])


def from_yaw(angle: F | float) -> F:
    a = np.asarray(angle, dtype=np.float64) * 0.5
    z = np.zeros_like(a)
    return np.stack([np.cos(a), z, z, np.sin(a)], axis=-1)


def wrap(angle: F | float) -> F:
    """Angle wrapped to [-pi, pi)."""
    a = np.asarray(angle, dtype=np.float64)
    return (a + np.pi) % (2.0 * np.pi) - np.pi


def to_rotvec(q: F) -> F:
    """Rotation vector (axis * angle) of unit quaternions, taking the short way round."""
    q = np.where(q[..., :1] < 0.0, -q, q)
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    # sin(x)/x -> 1 near zero: use the first-order limit there instead of dividing by ~0.
    scale = np.where(s > 1e-12, angle / np.maximum(s, 1e-12), 2.0)
    return q[..., 1:] * scale


def from_rotvec(r: F) -> F:
    angle = np.linalg.norm(r, axis=-1, keepdims=True)
    half = 0.5 * angle
    scale = np.where(angle > 1e-12, np.sin(half) / np.maximum(angle, 1e-12), 0.5)
    return np.concatenate([np.cos(half), r * scale], axis=-1)


def rot2(angle: F | float) -> F:
    """2x2 rotation matrices for planar angles (..., 2, 2)."""
    a = np.asarray(angle, dtype=np.float64)
    c, s = np.cos(a), np.sin(a)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def from_matrix(m: F) -> F:
    """Unit quaternion of one 3x3 rotation matrix (Shepperd's method: stable for every angle)."""
    tr = float(np.trace(m))
    if tr > 0.0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0, 0.0, 0.0, 0.0]
        q[0] = (m[k, j] - m[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (m[j, i] + m[i, j]) / s
        q[1 + k] = (m[k, i] + m[i, k]) / s
    out = np.array(q)
    return out / np.linalg.norm(out) * (1.0 if out[0] >= 0 else -1.0)
