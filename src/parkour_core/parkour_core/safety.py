"""Safety rules as pure functions: the supervisor's state machine and command shaping.

The state machine is a table of guarded transitions, evaluated in order; faults come first
so that no request can outrank them. Nothing here touches ROS or DDS.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from parkour_core.obs import FloatArray
from parkour_core.robots import RobotSpec


class Mode(enum.Enum):
    DAMP = "DAMP"
    STAND_UP = "STAND_UP"
    STAND = "STAND"
    ACTIVE = "ACTIVE"


class Request(enum.Enum):
    NONE = "none"
    STAND_UP = "stand_up"
    ACTIVATE = "activate"
    DAMP = "damp"


@dataclass(frozen=True)
class SafetyLimits:
    lowstate_timeout_s: float
    target_timeout_s: float
    max_tilt_rad: float


@dataclass(frozen=True)
class TickInputs:
    """What the supervisor knows at one tick."""

    lowstate_age_s: float
    target_age_s: float  # inf when no target has arrived
    tilt_rad: float
    state_finite: bool
    targets_finite: bool
    stand_up_progress: float  # 0..1 while in STAND_UP
    request: Request = Request.NONE


Guard = Callable[[TickInputs, SafetyLimits], bool]


@dataclass(frozen=True)
class Transition:
    sources: frozenset[Mode]  # empty: from any mode except the target
    guard: Guard
    target: Mode
    reason: str


_NOT_DAMP = frozenset({Mode.STAND_UP, Mode.STAND, Mode.ACTIVE})

TRANSITIONS: tuple[Transition, ...] = (
    Transition(_NOT_DAMP, lambda i, lim: not i.state_finite, Mode.DAMP, "robot state has NaN/inf"),
    Transition(_NOT_DAMP, lambda i, lim: i.lowstate_age_s > lim.lowstate_timeout_s, Mode.DAMP, "lowstate stale"),
    Transition(_NOT_DAMP, lambda i, lim: i.tilt_rad > lim.max_tilt_rad, Mode.DAMP, "base tilt beyond limit (fall)"),
    Transition(_NOT_DAMP, lambda i, lim: i.request is Request.DAMP, Mode.DAMP, "damp requested"),
    Transition(
        frozenset({Mode.ACTIVE}),
        lambda i, lim: i.target_age_s > lim.target_timeout_s or not i.targets_finite,
        Mode.STAND,
        "policy targets stale or not finite",
    ),
    Transition(
        frozenset({Mode.DAMP}),
        lambda i, lim: i.request is Request.STAND_UP and i.lowstate_age_s <= lim.lowstate_timeout_s and i.state_finite,
        Mode.STAND_UP,
        "stand up requested",
    ),
    Transition(frozenset({Mode.STAND_UP}), lambda i, lim: i.stand_up_progress >= 1.0, Mode.STAND, "stand-up complete"),
    Transition(
        frozenset({Mode.STAND}),
        lambda i, lim: i.request is Request.ACTIVATE and i.target_age_s <= lim.target_timeout_s and i.targets_finite,
        Mode.ACTIVE,
        "activate requested",
    ),
)


def next_mode(mode: Mode, inputs: TickInputs, limits: SafetyLimits) -> tuple[Mode, str | None]:
    """The mode after this tick and the reason for a change (None when unchanged)."""
    for t in TRANSITIONS:
        if mode in t.sources and t.guard(inputs, limits):
            return t.target, t.reason
    return mode, None


@dataclass
class JointCommand:
    """Per joint: position target, velocity target, gains and feed-forward torque."""

    q: FloatArray
    dq: FloatArray
    kp: FloatArray
    kd: FloatArray
    tau: FloatArray

    def is_finite(self) -> bool:
        return all(bool(np.all(np.isfinite(a))) for a in (self.q, self.dq, self.kp, self.kd, self.tau))


def damp_command(spec: RobotSpec, kd: float) -> JointCommand:
    n = spec.num_joints
    zeros = np.zeros(n)
    return JointCommand(q=zeros.copy(), dq=zeros.copy(), kp=zeros.copy(), kd=np.full(n, kd), tau=zeros.copy())


def stand_up_command(spec: RobotSpec, q_start: FloatArray, progress: float) -> JointCommand:
    """Interpolate from the pose at stand-up start to the default pose (smoothstep in time)."""
    s = float(np.clip(progress, 0.0, 1.0))
    s = s * s * (3.0 - 2.0 * s)
    q = (1.0 - s) * q_start + s * spec.default_q
    n = spec.num_joints
    return JointCommand(q=q, dq=np.zeros(n), kp=spec.kp_stand.copy(), kd=spec.kd_stand.copy(), tau=np.zeros(n))


def stand_command(spec: RobotSpec) -> JointCommand:
    return stand_up_command(spec, spec.default_q, 1.0)


def clamp_command(spec: RobotSpec, cmd: JointCommand, q: FloatArray, dq: FloatArray) -> tuple[JointCommand, int]:
    """Keep targets inside joint limits and the PD torque estimate inside effort limits.

    Returns the clamped command and how many joint values were changed. A non-finite
    command or measured state becomes damping: never pass NaN to the motors.

    The torque bound holds per joint when q is inside its limits and the damping plus
    feed-forward terms alone are within the effort limit: only the position target moves.
    """
    state_finite = bool(np.all(np.isfinite(q)) and np.all(np.isfinite(dq)))
    if not (cmd.is_finite() and state_finite):
        return damp_command(spec, float(np.max(spec.kd_stand))), spec.num_joints
    q_target = np.clip(cmd.q, spec.q_min, spec.q_max)
    clamps = int(np.count_nonzero(q_target != cmd.q))
    kp = np.clip(cmd.kp, 0.0, None)
    kd = np.clip(cmd.kd, 0.0, None)
    tau_ff = np.clip(cmd.tau, -spec.tau_max, spec.tau_max)
    clamps += int(np.count_nonzero(tau_ff != cmd.tau))
    # Estimated PD torque at the current state; pull the target in where it would exceed the limit.
    tau_est = kp * (q_target - q) + kd * (cmd.dq - dq) + tau_ff
    over = np.abs(tau_est) > spec.tau_max
    if np.any(over):
        with np.errstate(divide="ignore", invalid="ignore"):
            allowed = np.sign(tau_est) * spec.tau_max - kd * (cmd.dq - dq) - tau_ff
            q_fixed = np.where(kp > 0, q + allowed / np.where(kp > 0, kp, 1.0), q_target)
        q_target = np.where(over, np.clip(q_fixed, spec.q_min, spec.q_max), q_target)
        clamps += int(np.count_nonzero(over))
    return JointCommand(q=q_target, dq=cmd.dq.copy(), kp=kp, kd=kd, tau=tau_ff), clamps
