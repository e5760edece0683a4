"""Left/right mirroring of G1 frames about the character's sagittal (x-z) plane.

A reflection y -> -y maps a rotation about x or z to its negative and leaves rotations about y
unchanged. Every G1 hinge has the same axis on both sides (checked against the MJCF in the tests),
so a mirrored frame swaps each left joint with its right twin and negates roll and yaw joints.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from training.motion_matching.kinematics import JOINT_NAMES

F = NDArray[np.float64]

# Joints rotating about x (roll) or z (yaw) change sign under the reflection.
_NEGATED_KINDS = ("_roll_joint", "_yaw_joint")


def _twin(name: str) -> str:
    if name.startswith("left_"):
        return "right_" + name.removeprefix("left_")
    if name.startswith("right_"):
        return "left_" + name.removeprefix("right_")
    return name


def joint_mirror_map(names: tuple[str, ...] = JOINT_NAMES) -> tuple[NDArray[np.int64], F]:
    """(index of each joint's twin, sign): mirrored[:, i] = sign[i] * q[:, twin[i]]."""
    index = {n: i for i, n in enumerate(names)}
    twin = np.array([index[_twin(n)] for n in names], dtype=np.int64)
    sign = np.array([-1.0 if n.endswith(_NEGATED_KINDS) else 1.0 for n in names])
    return twin, sign


_TWIN, _SIGN = joint_mirror_map()


def mirror_joints(q: F) -> F:
    return q[..., _TWIN] * _SIGN


def mirror_positions(p: F) -> F:
    return p * np.array([1.0, -1.0, 1.0])


def mirror_quat(q: F) -> F:
    # R' = S R S with S = diag(1, -1, 1): the x and z rotation components flip, y stays.
    return q * np.array([1.0, -1.0, 1.0, -1.0])


def mirror_frames(root_pos: F, root_quat: F, joints: F) -> tuple[F, F, F]:
    return mirror_positions(root_pos), mirror_quat(root_quat), mirror_joints(joints)
