"""The supervisor's limits on policy targets, as the training envs apply them.

On the robot ``parkour_core``'s supervisor clamps every target ``joint_margin_rad`` inside its joint's
limits before the motors get it, and takes the robot from a policy whose targets lie past a limit by
more than ``target_limit_tolerance_rad``. Its defaults are the ones used here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from parkour_core.config import SupervisorConfig

F = NDArray[np.float64]

SUPERVISOR = SupervisorConfig()


def clamp_bounds(q_min: F, q_max: F) -> tuple[F, F]:
    """(low, high) where the supervisor clamps the targets."""
    return q_min + SUPERVISOR.joint_margin_rad, q_max - SUPERVISOR.joint_margin_rad


def target_excess(targets: F, q_min: F, q_max: F) -> F:
    """How far each target lies past its joint's limit (0 inside)."""
    return np.maximum(np.maximum(q_min - targets, targets - q_max), 0.0)


def refused(excess: F) -> NDArray[np.bool_]:
    """(N,) the supervisor would take the robot from targets this far past their limits, (N, joints)."""
    return excess.max(axis=-1) > SUPERVISOR.target_limit_tolerance_rad
