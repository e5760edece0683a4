"""Safety rules as pure functions: the supervisor's state machine and command shaping.

The state machine is a table of guarded transitions, evaluated in order; the first row whose
source modes hold the current mode and whose guard is true fires, so at most one transition
happens per tick. Faults come first so that no request can outrank them, and DAMP is left only
on a stand-up request while no fault is present. Nothing here touches ROS or DDS.

Modes: DAMP (kp 0, kd > 0) -> STAND_UP (interpolate to the default pose) -> STAND (PD to the
default pose) -> ACTIVE (the policy's targets) <-> BLIND (the supervisor's own fallback gait).

``clamp_command`` shapes every command before it is written: targets inside the joint limits
(less a margin), velocity targets inside the velocity limits, feed-forward inside the effort
limits, and the PD torque estimate ``kp (q_t - q) + kd (dq_t - dq) + tau_ff`` inside the effort
limits for any finite state.
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
    BLIND = "BLIND"


class Request(enum.Enum):
    NONE = "none"
    STAND_UP = "stand_up"
    ACTIVATE = "activate"
    STAND = "stand"
    DAMP = "damp"


# When several requests arrive within one tick, the most conservative one is acted on.
REQUEST_PRIORITY: tuple[Request, ...] = (Request.DAMP, Request.STAND, Request.STAND_UP, Request.ACTIVATE)


def strongest_request(requests: tuple[Request, ...] | list[Request]) -> Request:
    """The request this tick acts on: DAMP before STAND before STAND_UP before ACTIVATE."""
    for r in REQUEST_PRIORITY:
        if r in requests:
            return r
    return Request.NONE


class EstopSource(enum.Enum):
    SERVICE = "service"  # /supervisor/estop (std_srvs/Trigger)
    REMOTE = "remote"  # the Unitree wireless remote's key combo, read from rt/lowstate
    GAMEPAD = "gamepad"  # the gamepad's button combo, read from /teleop/joy


@dataclass(frozen=True)
class SafetyLimits:
    """The thresholds of the rules. ``fallback`` is where ACTIVE degrades to: BLIND when the
    supervisor has a fallback gait, STAND otherwise."""

    lowstate_timeout_s: float
    target_timeout_s: float
    max_tilt_rad: float
    depth_timeout_s: float = 0.25
    blind_resume_after_s: float = 0.5
    command_timeout_s: float = 0.5  # /cmd_vel older than this: the fallback gait walks at zero velocity
    fallback: Mode = Mode.STAND

    def __post_init__(self) -> None:
        if self.fallback not in (Mode.BLIND, Mode.STAND):
            raise ValueError(f"fallback must be BLIND or STAND, got {self.fallback}")


@dataclass(frozen=True)
class TickInputs:
    """What the supervisor knows at one tick. Ages are inf when nothing has arrived; NaN ages
    count as stale."""

    lowstate_age_s: float
    target_age_s: float  # inf when no usable target (none yet, or from a bundle without known gains)
    tilt_rad: float
    state_finite: bool
    targets_finite: bool
    stand_up_progress: float  # 0..1 while in STAND_UP
    request: Request = Request.NONE
    estop: frozenset[EstopSource] = frozenset()
    depth_age_s: float = float("inf")
    uses_depth: bool = False  # the bundle behind the targets reads depth
    joint_position_ok: bool = True  # measured positions within the limits plus tolerance
    joint_velocity_ok: bool = True  # measured speeds within the limits times the factor
    gamepad_lost: bool = False  # joy messages were arriving and stopped
    fallback_ok: bool = True  # the fallback gait's last output was finite
    active_inputs_fresh_for_s: float = float("inf")  # how long targets (and depth if used) have been fresh
    command_age_s: float = 0.0  # age of the newest /cmd_vel (inf: none)
    targets_in_range: bool = True  # every target within the joint limits plus the target tolerance


Guard = Callable[[TickInputs, SafetyLimits], bool]


def _stale(age_s: float, timeout_s: float) -> bool:
    # Written as "not fresh" so NaN counts as stale; exactly at the limit is still fresh.
    return not age_s <= timeout_s


def lowstate_stale(i: TickInputs, lim: SafetyLimits) -> bool:
    return _stale(i.lowstate_age_s, lim.lowstate_timeout_s)


def state_nonfinite(i: TickInputs, lim: SafetyLimits) -> bool:
    return not i.state_finite


def tilted(i: TickInputs, lim: SafetyLimits) -> bool:
    return not i.tilt_rad <= lim.max_tilt_rad


def joint_position_fault(i: TickInputs, lim: SafetyLimits) -> bool:
    return not i.joint_position_ok


def joint_velocity_fault(i: TickInputs, lim: SafetyLimits) -> bool:
    return not i.joint_velocity_ok


def estop_from(source: EstopSource) -> Guard:
    def guard(i: TickInputs, lim: SafetyLimits) -> bool:
        return source in i.estop

    return guard


def robot_fault(i: TickInputs, lim: SafetyLimits) -> bool:
    """Anything that sends every moving mode to DAMP (a request to damp aside)."""
    return bool(i.estop) or any(check(i, lim) for check in _ROBOT_FAULTS)


_ROBOT_FAULTS: tuple[Guard, ...] = (
    state_nonfinite,
    lowstate_stale,
    tilted,
    joint_position_fault,
    joint_velocity_fault,
)


def targets_stale(i: TickInputs, lim: SafetyLimits) -> bool:
    return _stale(i.target_age_s, lim.target_timeout_s)


def targets_nonfinite(i: TickInputs, lim: SafetyLimits) -> bool:
    return not i.targets_finite


def targets_unusable(i: TickInputs, lim: SafetyLimits) -> bool:
    return targets_stale(i, lim) or targets_nonfinite(i, lim)


def targets_out_of_range(i: TickInputs, lim: SafetyLimits) -> bool:
    """Targets far beyond the joint limits: the policy is broken, not merely clamped."""
    return not i.targets_in_range


def depth_stale(i: TickInputs, lim: SafetyLimits) -> bool:
    """Stale depth matters only to a bundle that reads it."""
    return i.uses_depth and _stale(i.depth_age_s, lim.depth_timeout_s)


def policy_ready(i: TickInputs, lim: SafetyLimits) -> bool:
    return not (targets_unusable(i, lim) or targets_out_of_range(i, lim) or depth_stale(i, lim))


def command_stale(i: TickInputs, lim: SafetyLimits) -> bool:
    return _stale(i.command_age_s, lim.command_timeout_s)


def gamepad_lost(i: TickInputs, lim: SafetyLimits) -> bool:
    return i.gamepad_lost


def fallback_failed(i: TickInputs, lim: SafetyLimits) -> bool:
    return not i.fallback_ok


def requested(request: Request) -> Guard:
    def guard(i: TickInputs, lim: SafetyLimits) -> bool:
        return i.request is request

    return guard


def _degrade_to(fallback: Mode, cause: Guard) -> Guard:
    def guard(i: TickInputs, lim: SafetyLimits) -> bool:
        return lim.fallback is fallback and cause(i, lim)

    return guard


def _may_stand_up(i: TickInputs, lim: SafetyLimits) -> bool:
    return i.request is Request.STAND_UP and not robot_fault(i, lim)


def _stand_up_done(i: TickInputs, lim: SafetyLimits) -> bool:
    return i.stand_up_progress >= 1.0


def _may_activate(i: TickInputs, lim: SafetyLimits) -> bool:
    return i.request is Request.ACTIVATE and policy_ready(i, lim) and not i.gamepad_lost


def _may_resume(i: TickInputs, lim: SafetyLimits) -> bool:
    return policy_ready(i, lim) and i.active_inputs_fresh_for_s >= lim.blind_resume_after_s and not i.gamepad_lost


@dataclass(frozen=True)
class Transition:
    sources: frozenset[Mode]
    guard: Guard
    target: Mode
    reason: str


_ALL = frozenset(Mode)
_UP = frozenset({Mode.STAND_UP, Mode.STAND, Mode.ACTIVE, Mode.BLIND})  # every mode but DAMP
_MOVING = frozenset({Mode.ACTIVE, Mode.BLIND})

TRANSITIONS: tuple[Transition, ...] = (
    # Faults: every mode but DAMP goes to DAMP; nothing below can outrank them.
    Transition(_UP, estop_from(EstopSource.SERVICE), Mode.DAMP, "e-stop from the ROS service"),
    Transition(_UP, estop_from(EstopSource.REMOTE), Mode.DAMP, "e-stop from the Unitree remote"),
    Transition(_UP, estop_from(EstopSource.GAMEPAD), Mode.DAMP, "e-stop from the gamepad"),
    Transition(_UP, state_nonfinite, Mode.DAMP, "robot state has NaN/inf"),
    Transition(_UP, lowstate_stale, Mode.DAMP, "lowstate stale"),
    Transition(_UP, tilted, Mode.DAMP, "base tilt beyond limit (fall)"),
    Transition(_UP, joint_position_fault, Mode.DAMP, "joint position beyond limit"),
    Transition(_UP, joint_velocity_fault, Mode.DAMP, "joint velocity beyond limit"),
    Transition(_UP, requested(Request.DAMP), Mode.DAMP, "damp requested"),
    # Degradations of the moving modes: to a gait the supervisor runs by itself.
    # A lost gamepad stops the walk, balanced: the supervisor's gait at zero velocity (a plain
    # STAND from walking speed falls over). No resume to ACTIVE until it is back.
    Transition(frozenset({Mode.ACTIVE}), _degrade_to(Mode.BLIND, gamepad_lost), Mode.BLIND, "gamepad lost"),
    Transition(frozenset({Mode.ACTIVE}), _degrade_to(Mode.STAND, gamepad_lost), Mode.STAND, "gamepad lost"),
    Transition(frozenset({Mode.BLIND}), fallback_failed, Mode.STAND, "fallback gait output not finite"),
    Transition(_MOVING, requested(Request.STAND), Mode.STAND, "stand requested"),
    Transition(
        frozenset({Mode.ACTIVE}),
        _degrade_to(Mode.BLIND, targets_unusable),
        Mode.BLIND,
        "policy targets stale or not finite",
    ),
    Transition(
        frozenset({Mode.ACTIVE}),
        _degrade_to(Mode.STAND, targets_unusable),
        Mode.STAND,
        "policy targets stale or not finite",
    ),
    Transition(
        frozenset({Mode.ACTIVE}),
        _degrade_to(Mode.BLIND, targets_out_of_range),
        Mode.BLIND,
        "policy targets far beyond joint limits",
    ),
    Transition(
        frozenset({Mode.ACTIVE}),
        _degrade_to(Mode.STAND, targets_out_of_range),
        Mode.STAND,
        "policy targets far beyond joint limits",
    ),
    Transition(frozenset({Mode.ACTIVE}), _degrade_to(Mode.BLIND, depth_stale), Mode.BLIND, "depth stale"),
    Transition(frozenset({Mode.ACTIVE}), _degrade_to(Mode.STAND, depth_stale), Mode.STAND, "depth stale"),
    Transition(frozenset({Mode.BLIND}), _may_resume, Mode.ACTIVE, "policy targets and depth fresh again"),
    # Requests.
    Transition(frozenset({Mode.DAMP}), _may_stand_up, Mode.STAND_UP, "stand up requested"),
    Transition(frozenset({Mode.STAND_UP}), _stand_up_done, Mode.STAND, "stand-up complete"),
    Transition(frozenset({Mode.STAND}), _may_activate, Mode.ACTIVE, "activate requested"),
)


def next_mode(mode: Mode, inputs: TickInputs, limits: SafetyLimits) -> tuple[Mode, str | None]:
    """The mode after this tick and the reason for a change (None when unchanged)."""
    for t in TRANSITIONS:
        if mode in t.sources and t.guard(inputs, limits):
            return t.target, t.reason
    return mode, None


@dataclass(frozen=True)
class Check:
    """One per-tick check, counted while armed (in ``armed_in``) for supervisor.json."""

    name: str
    armed_in: frozenset[Mode]
    failing: Guard


CHECKS: tuple[Check, ...] = (
    Check("estop_service", _ALL, estop_from(EstopSource.SERVICE)),
    Check("estop_remote", _ALL, estop_from(EstopSource.REMOTE)),
    Check("estop_gamepad", _ALL, estop_from(EstopSource.GAMEPAD)),
    Check("state_nonfinite", _ALL, state_nonfinite),
    Check("lowstate_stale", _ALL, lowstate_stale),
    Check("tilt", _ALL, tilted),
    Check("joint_position", _ALL, joint_position_fault),
    Check("joint_velocity", _ALL, joint_velocity_fault),
    Check("gamepad_lost", _ALL, gamepad_lost),
    Check("targets_stale", _MOVING, targets_stale),
    Check("targets_nonfinite", _MOVING, targets_nonfinite),
    Check("targets_out_of_range", _MOVING, targets_out_of_range),
    Check("depth_stale", _MOVING, depth_stale),
    Check("command_timeout", frozenset({Mode.BLIND}), command_stale),
    Check("fallback_nonfinite", frozenset({Mode.BLIND}), fallback_failed),
)


# ----------------------------------------------------------------------------- state checks


def joint_position_ok(spec: RobotSpec, q: FloatArray, tolerance_rad: float) -> bool:
    """Every measured position within [q_min - tolerance, q_max + tolerance] (NaN fails)."""
    q = np.asarray(q, dtype=np.float64)
    return bool(np.all(q >= spec.q_min - tolerance_rad) and np.all(q <= spec.q_max + tolerance_rad))


def joint_velocity_ok(spec: RobotSpec, dq: FloatArray, factor: float) -> bool:
    """Every measured speed within factor x the joint's velocity limit (NaN fails)."""
    return bool(np.all(np.abs(np.asarray(dq, dtype=np.float64)) <= factor * spec.dq_max))


# ----------------------------------------------------------------------------- commands


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


def damp_command(spec: RobotSpec, kd: float, kd_stand: FloatArray | None = None) -> JointCommand:
    """kp 0, kd > 0: the motors only resist motion. The position target (unused) is the default pose,
    which lies inside every joint's limits. A joint's kd is at most its stand kd (``kd_stand``: the
    supervisor's, overrides included; default the spec's): the bound that keeps a light joint's
    damping stable where the torque is held between commands bounds its damping too."""
    n = spec.num_joints
    zeros = np.zeros(n)
    kd_joints = np.minimum(kd, spec.kd_stand if kd_stand is None else kd_stand)
    return JointCommand(q=spec.default_q.copy(), dq=zeros.copy(), kp=zeros.copy(), kd=kd_joints, tau=zeros.copy())


def stand_up_command(
    spec: RobotSpec, q_start: FloatArray, progress: float, gains: tuple[FloatArray, FloatArray] | None = None
) -> JointCommand:
    """Interpolate from the pose at stand-up start to the default pose (smoothstep in time).

    ``gains`` (kp, kd): in place of the spec's stand gains (``supervisor.stand_gains``)."""
    s = float(np.clip(progress, 0.0, 1.0))
    s = s * s * (3.0 - 2.0 * s)
    q = (1.0 - s) * q_start + s * spec.default_q
    n = spec.num_joints
    kp, kd = gains if gains is not None else (spec.kp_stand, spec.kd_stand)
    return JointCommand(q=q, dq=np.zeros(n), kp=np.array(kp, dtype=np.float64), kd=np.array(kd, dtype=np.float64),
                        tau=np.zeros(n))  # fmt: skip


def stand_command(spec: RobotSpec, gains: tuple[FloatArray, FloatArray] | None = None) -> JointCommand:
    return stand_up_command(spec, spec.default_q, 1.0, gains)


def stand_gains(spec: RobotSpec, overrides: dict[str, list[float]]) -> tuple[FloatArray, FloatArray]:
    """The spec's stand gains with ``overrides`` (joint name -> [kp, kd]) applied."""
    kp, kd = spec.kp_stand.copy(), spec.kd_stand.copy()
    index = {name: i for i, name in enumerate(spec.joint_names)}
    for joint, (joint_kp, joint_kd) in overrides.items():
        kp[index[joint]], kd[index[joint]] = joint_kp, joint_kd
    return kp, kd


def pd_command(spec: RobotSpec, q_target: FloatArray, kp: FloatArray, kd: FloatArray) -> JointCommand:
    """Position targets with the given gains, zero velocity target and feed-forward (a policy's command)."""
    n = spec.num_joints
    return JointCommand(
        q=np.array(q_target, dtype=np.float64),
        dq=np.zeros(n),
        kp=np.array(kp, dtype=np.float64),
        kd=np.array(kd, dtype=np.float64),
        tau=np.zeros(n),
    )


@dataclass
class ClampCounts:
    """How many joint values ``clamp_command`` changed, by kind."""

    position: int = 0  # position target outside the limits (less the margin)
    velocity: int = 0  # velocity target beyond the velocity limit
    feedforward: int = 0  # feed-forward torque beyond the effort limit
    gains: int = 0  # negative kp or kd
    torque: int = 0  # PD torque estimate beyond the effort limit (targets pulled in)
    damped: int = 0  # joints whose estimate no target could bring inside: damped alone
    nonfinite: int = 0  # NaN/inf in the command or state: the whole command became damping

    @property
    def total(self) -> int:
        return self.position + self.velocity + self.feedforward + self.gains + self.torque + self.nonfinite

    def add(self, other: ClampCounts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__} | {"total": self.total}


def position_bounds(spec: RobotSpec, margin_rad: float) -> tuple[FloatArray, FloatArray]:
    """The joint limits shrunk by ``margin_rad`` on each side (to the midpoint where the range is narrower)."""
    mid = 0.5 * (spec.q_min + spec.q_max)
    lo = np.minimum(spec.q_min + margin_rad, mid)
    hi = np.maximum(spec.q_max - margin_rad, mid)
    return lo, hi


def _pick(candidate: FloatArray, lo: FloatArray, hi: FloatArray, current: FloatArray, where: np.ndarray) -> FloatArray:
    """The candidate clipped to [lo, hi] where ``where`` holds and it is not NaN; elsewhere ``current``."""
    usable = where & ~np.isnan(candidate)
    return np.where(usable, np.clip(np.nan_to_num(candidate, nan=0.0), lo, hi), current)


def clamp_command(
    spec: RobotSpec,
    cmd: JointCommand,
    q: FloatArray,
    dq: FloatArray,
    margin_rad: float = 0.0,
    kd_damp: float | None = None,
) -> tuple[JointCommand, ClampCounts]:
    """Keep every value of the command inside the robot's limits, and the PD torque estimate too.

    A non-finite measured state makes the whole command damping (kp 0, kd ``kd_damp``), and so does
    a non-finite command, its damping torque then limited like any other: never pass NaN to the
    motors. Otherwise: gains at least 0; position targets inside the joint limits less
    ``margin_rad``; velocity targets inside +-dq_max; feed-forward inside +-tau_max. Where the
    estimate ``kp (q_t - q) + kd (dq_t - dq) + tau_ff`` at the measured state still exceeds tau_max,
    the targets are pulled in, one term at a time and each within its own limit: first the position
    target, then the velocity target, then the feed-forward. A joint that none of them can bring
    inside (measured far beyond its limits or its velocity limit) is damped alone, with kd lowered
    so that the damping torque itself stays within the limit.
    """
    kd_damp = spec.kd_damp if kd_damp is None else kd_damp
    n = spec.num_joints
    counts = ClampCounts()
    q = np.asarray(q, dtype=np.float64)
    dq = np.asarray(dq, dtype=np.float64)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
        counts.nonfinite = n
        return damp_command(spec, kd_damp), counts
    if not cmd.is_finite():
        # Damping, itself kept within the effort limits at this state (a fast joint would brake harder).
        damping, counts = clamp_command(spec, damp_command(spec, kd_damp), q, dq, margin_rad, kd_damp)
        counts.nonfinite = n
        return damping, counts

    lo, hi = position_bounds(spec, margin_rad)
    kp = np.maximum(cmd.kp, 0.0)
    kd = np.maximum(cmd.kd, 0.0)
    counts.gains = int(np.count_nonzero(kp != cmd.kp) + np.count_nonzero(kd != cmd.kd))
    q_t = np.clip(cmd.q, lo, hi)
    counts.position = int(np.count_nonzero(q_t != cmd.q))
    dq_t = np.clip(cmd.dq, -spec.dq_max, spec.dq_max)
    counts.velocity = int(np.count_nonzero(dq_t != cmd.dq))
    tau_ff = np.clip(cmd.tau, -spec.tau_max, spec.tau_max)
    counts.feedforward = int(np.count_nonzero(tau_ff != cmd.tau))

    tau_max = spec.tau_max
    # Huge finite gains or states overflow to inf here; every such value is caught below.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):

        def estimate() -> FloatArray:
            return kp * (q_t - q) + kd * (dq_t - dq) + tau_ff

        est = estimate()
        over = ~(np.abs(est) <= tau_max)
        counts.torque = int(np.count_nonzero(over))
        if counts.torque:
            # Aim a hair inside the limit so rounding in the estimate cannot leave it just outside.
            goal = np.where(est < 0, -1.0, 1.0) * tau_max * (1.0 - 1e-9)
            q_t = _pick(
                q + (goal - kd * (dq_t - dq) - tau_ff) / np.where(kp > 0, kp, 1.0), lo, hi, q_t, over & (kp > 0)
            )
            over = ~(np.abs(estimate()) <= tau_max)
            dq_want = dq + (goal - kp * (q_t - q) - tau_ff) / np.where(kd > 0, kd, 1.0)
            dq_t = _pick(dq_want, -spec.dq_max, spec.dq_max, dq_t, over & (kd > 0))
            over = ~(np.abs(estimate()) <= tau_max)
            tau_ff = _pick(goal - kp * (q_t - q) - kd * (dq_t - dq), -tau_max, tau_max, tau_ff, over)
            over = ~(np.abs(estimate()) <= tau_max)
            if np.any(over):
                counts.damped = int(np.count_nonzero(over))
                speed = np.abs(dq)
                kd_limit = np.where(speed > 0, tau_max / np.where(speed > 0, speed, 1.0), np.inf)
                kp = np.where(over, 0.0, kp)
                kd = np.where(over, np.minimum(kd, kd_limit), kd)
                dq_t = np.where(over, 0.0, dq_t)
                tau_ff = np.where(over, 0.0, tau_ff)
    return JointCommand(q=q_t, dq=dq_t, kp=kp, kd=kd, tau=tau_ff), counts


def torque_estimate(cmd: JointCommand, q: FloatArray, dq: FloatArray) -> FloatArray:
    """The PD torque the motors would produce at the measured state (before their own saturation)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return cmd.kp * (cmd.q - q) + cmd.kd * (cmd.dq - dq) + cmd.tau
