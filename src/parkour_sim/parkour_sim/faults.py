"""Fault injection on the simulated robot, and an independent audit of what reached the motors.

The audit does not reuse the supervisor's clamp: it checks every received rt/lowcmd against the
robot spec on its own, so a bug in the safety code cannot hide itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parkour_core.config import FaultsConfig
from parkour_core.obs import FloatArray
from parkour_core.robots import RobotSpec
from parkour_core.safety import JointCommand

# The supervisor clamps with the state it last read (about 2 ms old); the bridge checks with the
# state now. Torque estimates may differ by that much motion: allow 10 %.
TORQUE_AUDIT_TOLERANCE = 1.10


@dataclass(frozen=True)
class Window:
    start_s: float
    duration_s: float

    def active(self, t_s: float) -> bool:
        return self.start_s >= 0.0 and self.start_s <= t_s < self.start_s + self.duration_s


class BridgeFaults:
    """Which injected faults are active at a sim time."""

    def __init__(self, cfg: FaultsConfig) -> None:
        self.camera_stall = Window(cfg.camera_stall_at_s, cfg.camera_stall_for_s)
        self.lowstate_stall = Window(cfg.lowstate_stall_at_s, cfg.lowstate_stall_for_s)
        self.push = Window(cfg.push_at_s, cfg.push_for_s)
        self.push_force_n = np.asarray(cfg.push_force_n, dtype=np.float64)

    def push_force(self, t_s: float) -> FloatArray:
        return self.push_force_n if self.push.active(t_s) else np.zeros(3)


def command_violations(spec: RobotSpec, cmd: JointCommand, enabled: FloatArray, q: FloatArray, dq: FloatArray) -> int:
    """Joints of one written command that break a limit (non-finite, target outside the joint
    range, negative gains, or a PD torque estimate beyond the effort limit)."""
    on = np.asarray(enabled, dtype=bool)
    finite = np.isfinite(cmd.q) & np.isfinite(cmd.dq) & np.isfinite(cmd.kp) & np.isfinite(cmd.kd) & np.isfinite(cmd.tau)
    with np.errstate(invalid="ignore"):
        damping_only = cmd.kp == 0.0  # a damping command's q target is unused (kp 0): not a position violation
        outside = ~damping_only & ((cmd.q < spec.q_min - 1e-9) | (cmd.q > spec.q_max + 1e-9))
        negative = (cmd.kp < 0.0) | (cmd.kd < 0.0)
        tau = cmd.kp * (cmd.q - q) + cmd.kd * (cmd.dq - dq) + cmd.tau
        over = np.abs(tau) > TORQUE_AUDIT_TOLERANCE * spec.tau_max
    bad = on & (~finite | outside | negative | over)
    return int(np.count_nonzero(bad))
