"""Fault injection on the simulated robot, and an independent audit of what reached the motors.

The audit does not reuse the supervisor's clamp: it checks every received rt/lowcmd against the
robot spec on its own, so a bug in the safety code cannot hide itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from parkour_core.config import BRIDGE_FAULTS, FaultsConfig
from parkour_core.obs import FloatArray
from parkour_core.robots import RobotSpec
from parkour_core.safety import JointCommand

# The supervisor clamps with the newest rt/lowstate it has read, which may be a sample or two behind
# the bridge (it ticks at 200 Hz, lowstate comes at 500 Hz, and lockstep holds sim time at each of its
# ticks). The bridge judges the torque estimate against each of the last AUDIT_STATES samples it sent,
# with 10 % for motion in between. (An e-stop acts in its service callback, between two ticks.)
AUDIT_STATES = 4
TORQUE_AUDIT_TOLERANCE = 1.10


@dataclass
class Window:
    start_s: float = -1.0  # < 0: not triggered
    duration_s: float = 0.0

    @property
    def triggered(self) -> bool:
        return self.start_s >= 0.0

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s

    def active(self, t_s: float) -> bool:
        return self.triggered and self.start_s <= t_s < self.end_s


class BridgeFaults:
    """The bridge's injected faults: each starts when triggered (at a sim time) and lasts its duration."""

    def __init__(self, cfg: FaultsConfig) -> None:
        self.camera_stall = Window(duration_s=cfg.camera_stall_for_s)
        self.lowstate_stall = Window(duration_s=cfg.lowstate_stall_for_s)
        self.push = Window(duration_s=cfg.push_for_s)
        self.push_force_n = np.asarray(cfg.push_force_n, dtype=np.float64)
        self.triggered: list[dict[str, float | str]] = []

    def trigger(self, name: str, t_s: float) -> None:
        if name not in BRIDGE_FAULTS:
            raise ValueError(f"unknown bridge fault {name!r}; known: {BRIDGE_FAULTS}")
        getattr(self, name).start_s = t_s
        self.triggered.append({"fault": name, "t": round(t_s, 4)})

    def push_force(self, t_s: float) -> FloatArray:
        return self.push_force_n if self.push.active(t_s) else np.zeros(3)


@dataclass(frozen=True)
class CommandGaps:
    """Arriving commands dropped for ``gap_s`` at the start of every ``every_s`` of sim time (0: never):
    a host that stalls, as the robot sees it (the motors keep the last command)."""

    gap_s: float
    every_s: float

    def dropping(self, t_s: float) -> bool:
        return self.gap_s > 0.0 and (t_s % self.every_s) < self.gap_s


def command_violations(
    spec: RobotSpec, cmd: JointCommand, enabled: FloatArray, states: Sequence[tuple[FloatArray, FloatArray]]
) -> int:
    """Joints of one written command that break a limit: non-finite, a target outside the joint
    range, negative gains, or (unless it only damps) a PD torque estimate beyond the effort limit
    under every one of ``states`` (the recent rt/lowstate samples, any of which the supervisor may
    have acted on)."""
    on = np.asarray(enabled, dtype=bool)
    finite = np.isfinite(cmd.q) & np.isfinite(cmd.dq) & np.isfinite(cmd.kp) & np.isfinite(cmd.kd) & np.isfinite(cmd.tau)
    with np.errstate(invalid="ignore", over="ignore"):
        damping_only = cmd.kp == 0.0  # a damping command's q target is unused (kp 0): not a position violation
        outside = ~damping_only & ((cmd.q < spec.q_min - 1e-9) | (cmd.q > spec.q_max + 1e-9))
        negative = (cmd.kp < 0.0) | (cmd.kd < 0.0)
        # Pure damping (kp 0, no velocity target, no feed-forward) only takes energy out; how hard it
        # brakes at an impact is the motor driver's to limit, and no state the supervisor saw predicts it.
        dissipative = damping_only & (cmd.dq == 0.0) & (cmd.tau == 0.0)
        over = ~dissipative
        for q, dq in reversed(states):  # newest first: usually the one that clears every joint
            if not over.any():
                break
            tau = cmd.kp * (cmd.q - q) + cmd.kd * (cmd.dq - dq) + cmd.tau
            over &= np.abs(tau) > TORQUE_AUDIT_TOLERANCE * spec.tau_max
    bad = on & (~finite | outside | negative | over)
    return int(np.count_nonzero(bad))
