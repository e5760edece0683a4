"""The safety supervisor without ROS: one object the node feeds once per tick.

:class:`SupervisorCore` owns the mode, the stand-up interpolation, the fallback gait it runs by
itself in BLIND, the operator's button combos (Unitree remote and gamepad), the PD gains of every
bundle the policy node announced, the transition log, clamp counters and per-check fault
counters. ``tick(inputs)`` returns the clamped command to write and the transitions it made. The
node (``parkour_safety.supervisor_node``) only carries data between ROS/DDS and ``tick``, so
everything the supervisor decides is testable here with plain arrays and a fake clock.

The fallback gait (BLIND) is a blind walking bundle stepped at its own rate inside the tick, on
the supervisor's clock, with the operator's /cmd_vel (zero once it is older than the command
timeout). Its output is checked like the policy's: NaN/inf -> STAND on the next tick.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from parkour_core.math3d import tilt_rad
from parkour_core.obs import FloatArray
from parkour_core.robots import RobotSpec
from parkour_core.safety import (
    CHECKS,
    ClampCounts,
    EstopSource,
    JointCommand,
    Mode,
    Request,
    SafetyLimits,
    TickInputs,
    clamp_command,
    command_stale,
    damp_command,
    joint_position_ok,
    joint_velocity_ok,
    next_mode,
    pd_command,
    policy_ready,
    stand_command,
    stand_gains,
    stand_up_command,
    strongest_request,
)

if TYPE_CHECKING:
    from parkour_core.config import StackConfig

REQUESTS_LOGGED = 1000  # the request log keeps the first entries of a run; counters keep counting
QUATERNION_NORM_TOLERANCE = 0.05  # an IMU quaternion whose norm is further from 1 is corrupt


def _read_only(values: Iterable[float]) -> FloatArray:
    a = np.array(list(values), dtype=np.float64)
    a.setflags(write=False)
    return a


def _finite(*arrays: FloatArray) -> bool:
    return all(bool(np.all(np.isfinite(a))) for a in arrays)


@dataclass(frozen=True)
class BundleGains:
    """The PD gains a bundle's targets are run with, and whether it reads depth."""

    name: str
    kp: FloatArray
    kd: FloatArray
    uses_depth: bool

    @staticmethod
    def make(name: str, kp: Iterable[float], kd: Iterable[float], uses_depth: bool, num_joints: int) -> BundleGains:
        kp_a, kd_a = _read_only(kp), _read_only(kd)
        for key, a in (("kp", kp_a), ("kd", kd_a)):
            if a.shape != (num_joints,):
                raise ValueError(f"bundle {name!r}: {key} has {a.size} values for {num_joints} joints")
            if not (_finite(a) and np.all(a >= 0.0)):
                raise ValueError(f"bundle {name!r}: {key} must be finite and >= 0")
        return BundleGains(name, kp_a, kd_a, bool(uses_depth))


@dataclass(frozen=True)
class RobotReading:
    """The newest rt/lowstate in robot-spec joint order; ``stamp_s`` is its capture time on the
    supervisor's clock."""

    q: FloatArray
    dq: FloatArray
    quat_wxyz: FloatArray
    gyro: FloatArray
    stamp_s: float
    remote_keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PolicyTargets:
    """The newest /policy/joint_targets: positions in spec order, stamp, and the bundle that made them
    (``""``: not named; run with the configured bundle's gains)."""

    q: FloatArray
    stamp_s: float
    bundle: str = ""


@dataclass(frozen=True)
class VelocityCommand:
    """The newest /cmd_vel (vx m/s, vy m/s, yaw rate rad/s) and when it arrived."""

    velocity: FloatArray
    stamp_s: float


@dataclass(frozen=True)
class GamepadReading:
    """Buttons held in the newest /teleop/joy and when it arrived (the supervisor's clock)."""

    buttons: frozenset[int]
    stamp_s: float


@dataclass(frozen=True)
class SupervisorInputs:
    now_s: float
    robot: RobotReading
    targets: PolicyTargets | None = None
    depth_stamp_s: float | None = None  # exposure stamp of the newest policy depth frame
    command: VelocityCommand | None = None
    gamepad: GamepadReading | None = None
    requests: tuple[tuple[Request, str], ...] = ()  # (request, source) received since the last tick
    estop_service: bool = False  # /supervisor/estop was called since the last tick


@dataclass(frozen=True)
class Combos:
    """Which buttons, held together, mean what. Keys are remote key names or gamepad button indices."""

    estop: frozenset
    requests: tuple[tuple[Request, frozenset], ...] = ()

    def estop_held(self, held: frozenset) -> bool:
        return bool(self.estop) and self.estop <= held

    def pressed(self, before: frozenset, now: frozenset) -> list[Request]:
        """Requests whose combo is fully held now and was not before."""
        return [r for r, combo in self.requests if combo and combo <= now and not combo <= before]


@dataclass(frozen=True)
class SupervisorSettings:
    limits: SafetyLimits
    kd_damp: float = 3.0
    stand_up_duration_s: float = 2.0
    joint_margin_rad: float = 0.02
    joint_limit_tolerance_rad: float = 0.1
    target_limit_tolerance_rad: float = 0.5
    velocity_limit_factor: float = 1.5
    gamepad_timeout_s: float = 0.5
    stand_gains: dict[str, list[float]] = field(default_factory=dict)  # joint -> [kp, kd] over the spec's
    remote: Combos = field(default_factory=lambda: Combos(frozenset({"L2", "B"})))
    gamepad: Combos = field(default_factory=lambda: Combos(frozenset({4, 5})))

    @staticmethod
    def from_config(cfg: StackConfig, fallback_available: bool) -> SupervisorSettings:
        """From a StackConfig: the supervisor section, depth.stale_after_s and policy.command_timeout_s."""
        s = cfg.supervisor
        fallback = Mode.BLIND if (s.fallback == "blind" and fallback_available) else Mode.STAND
        limits = SafetyLimits(
            lowstate_timeout_s=s.lowstate_timeout_s,
            target_timeout_s=s.target_timeout_s,
            max_tilt_rad=s.max_tilt_rad,
            depth_timeout_s=cfg.depth.stale_after_s,
            blind_resume_after_s=s.blind_resume_after_s,
            command_timeout_s=cfg.policy.command_timeout_s,
            fallback=fallback,
        )
        remote = Combos(
            frozenset(s.remote_estop_keys),
            (
                (Request.STAND_UP, frozenset(s.remote_stand_up_keys)),
                (Request.ACTIVATE, frozenset(s.remote_activate_keys)),
                (Request.STAND, frozenset(s.remote_stand_keys)),
            ),
        )
        gamepad = Combos(
            frozenset(s.gamepad_estop_buttons),
            (
                (Request.STAND_UP, frozenset(s.gamepad_stand_up_buttons)),
                (Request.ACTIVATE, frozenset(s.gamepad_activate_buttons)),
                (Request.STAND, frozenset(s.gamepad_stand_buttons)),
            ),
        )
        return SupervisorSettings(
            limits=limits,
            kd_damp=s.kd_damp,
            stand_up_duration_s=s.stand_up_duration_s,
            joint_margin_rad=s.joint_margin_rad,
            joint_limit_tolerance_rad=s.joint_limit_tolerance_rad,
            target_limit_tolerance_rad=s.target_limit_tolerance_rad,
            velocity_limit_factor=s.velocity_limit_factor,
            gamepad_timeout_s=s.gamepad_timeout_s,
            stand_gains=dict(s.stand_gains),
            remote=remote,
            gamepad=gamepad,
        )


class FallbackGait(Protocol):
    """A blind walking policy the supervisor runs itself (BLIND): targets in spec order."""

    name: str
    period_s: float
    kp: FloatArray
    kd: FloatArray

    def reset(self) -> None: ...

    def step(
        self, q: FloatArray, dq: FloatArray, quat_wxyz: FloatArray, gyro: FloatArray, velocity: FloatArray
    ) -> FloatArray: ...


class RunnerGait:
    """A blind bundle on :class:`parkour_core.runner.PolicyRunner` as the supervisor's fallback gait."""

    def __init__(self, runner: Any) -> None:
        m = runner.manifest
        if m.uses_depth:
            raise ValueError(f"bundle {m.name!r} reads depth: the fallback gait must be a blind bundle")
        self.runner = runner
        self.name: str = m.name
        self.period_s: float = 1.0 / m.policy_hz
        self.kp: FloatArray = _read_only(m.kp)
        self.kd: FloatArray = _read_only(m.kd)

    @staticmethod
    def load(path: Path | str, spec: RobotSpec) -> RunnerGait:
        """Load and verify a bundle folder (hashes, contract, ONNX I/O) on one CPU thread."""
        from parkour_core.bundle import load_bundle
        from parkour_core.inference import CPU
        from parkour_core.runner import PolicyRunner

        return RunnerGait(PolicyRunner(load_bundle(path, robot=spec), intra_op_threads=1, providers=[CPU]))

    def reset(self) -> None:
        self.runner.reset()

    def step(
        self, q: FloatArray, dq: FloatArray, quat_wxyz: FloatArray, gyro: FloatArray, velocity: FloatArray
    ) -> FloatArray:
        from parkour_core.runner import RobotState

        return np.asarray(self.runner.step(RobotState(q, dq, quat_wxyz, gyro), velocity), dtype=np.float64)


@dataclass
class TransitionRecord:
    t: float
    from_mode: Mode
    to_mode: Mode
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"t": round(self.t, 4), "from": self.from_mode.value, "to": self.to_mode.value, "reason": self.reason}


@dataclass
class FaultCounter:
    """How often a check started failing while armed (onsets), and for how many ticks it failed."""

    onsets: int = 0
    ticks: int = 0
    failing: bool = False


class SupervisorCore:
    """The supervisor's state and rules; ``tick(inputs)`` once per tick.

    Operator combos: a request (stand up, activate, stand) fires on the tick its combo becomes fully
    held, so a button held through a fault cannot re-arm the robot; an e-stop combo acts on every tick it
    is held, and a held e-stop also blocks standing up. A gamepad whose messages stop for
    ``gamepad_timeout_s`` after having arrived is lost: ACTIVE/BLIND -> STAND (the operator has lost their
    e-stop, so the robot stops walking), and activation is refused until it is back.
    """

    def __init__(
        self,
        spec: RobotSpec,
        settings: SupervisorSettings,
        fallback: FallbackGait | None = None,
        default_gains: BundleGains | None = None,
    ) -> None:
        if settings.limits.fallback is Mode.BLIND and fallback is None:
            raise ValueError("limits.fallback is BLIND but no fallback gait was given")
        self.spec = spec
        self.settings = settings
        self.limits = settings.limits
        self.fallback = fallback
        self.default_gains = default_gains  # for targets that do not name their bundle
        self.bundles: dict[str, BundleGains] = {}

        self.mode = Mode.DAMP
        self.transitions: list[TransitionRecord] = []
        self.clamps = ClampCounts()
        self.faults: dict[str, FaultCounter] = {c.name: FaultCounter() for c in CHECKS}
        self.time_in_mode_s: dict[str, float] = {m.value: 0.0 for m in Mode}
        self.requests: list[dict[str, Any]] = []
        self.request_counts: dict[str, int] = {}
        self.ticks = 0
        self.unknown_bundle_ticks = 0  # ticks whose newest targets came from a bundle without known gains
        self.fallback_steps = 0
        self.fallback_step_s: list[float] = []
        self.fallback_errors: list[str] = []
        # Largest measured |dq| / dq_max and distance beyond a joint limit seen (finite readings):
        # how much room velocity_limit_factor and joint_limit_tolerance_rad leave.
        self.max_speed_ratio = 0.0
        self.max_limit_excess_rad = 0.0
        self.max_target_excess_rad = 0.0  # how far policy targets reached past a joint limit

        self._last_now: float | None = None
        self._stand_up_start_s = 0.0
        self._stand_up_from = spec.default_q.copy()
        self._stand_gains = stand_gains(spec, settings.stand_gains)
        self._remote_held: frozenset = frozenset()
        self._gamepad_held: frozenset = frozenset()
        self._ready_since: float | None = None
        self._fallback_targets: FloatArray | None = None
        self._fallback_ok = True
        self._next_fallback_s = 0.0

    # ------------------------------------------------------------------ bundles
    def register_bundle(self, gains: BundleGains) -> None:
        """Gains for targets naming ``gains.name`` (the policy node announces them before they drive)."""
        self.bundles[gains.name] = gains

    def gains_for(self, bundle: str) -> BundleGains | None:
        if not bundle:
            return self.default_gains
        return self.bundles.get(bundle)

    # ------------------------------------------------------------------ the tick
    def tick(self, inputs: SupervisorInputs) -> tuple[JointCommand, tuple[TransitionRecord, ...]]:
        now = inputs.now_s
        self._account_time(now)
        robot = inputs.robot
        tick_inputs, targets, gains, velocity, request_sources = self._observe(inputs)
        self._count_checks(tick_inputs)

        before = self.mode
        new_mode, reason = next_mode(self.mode, tick_inputs, self.limits)
        records: tuple[TransitionRecord, ...] = ()
        if new_mode is not self.mode:
            records = (self._enter(new_mode, reason or "", now, robot),)
        for request, source in request_sources:
            self._log_request(now, request.value, source, before)
        if inputs.estop_service:
            self._log_request(now, "estop", "service", before)  # the fault suite times DAMP from its arrival

        command = self._command(now, robot, targets, gains, velocity)
        out, counts = clamp_command(
            self.spec, command, robot.q, robot.dq, self.settings.joint_margin_rad, self.settings.kd_damp
        )
        self.clamps.add(counts)
        self.ticks += 1
        return out, records

    def _observe(
        self, inputs: SupervisorInputs
    ) -> tuple[TickInputs, PolicyTargets | None, BundleGains | None, FloatArray, list[tuple[Request, str]]]:
        """Turn the raw inputs into the rules' view; update combo edges and the readiness clock."""
        now, robot, s = inputs.now_s, inputs.robot, self.settings
        n = self.spec.num_joints
        state_finite = _finite(robot.q, robot.dq, robot.quat_wxyz, robot.gyro) and robot.q.shape == (n,)

        targets = inputs.targets
        gains = self.gains_for(targets.bundle) if targets is not None else None
        if targets is not None and gains is None:
            self.unknown_bundle_ticks += 1
        usable = targets is not None and gains is not None
        target_age = now - targets.stamp_s if (usable and targets is not None) else math.inf
        targets_finite = targets is not None and targets.q.shape == (n,) and _finite(targets.q)
        targets_in_range = True
        if targets_finite and targets is not None:
            excess = float(np.max(np.maximum(self.spec.q_min - targets.q, targets.q - self.spec.q_max)))
            self.max_target_excess_rad = max(self.max_target_excess_rad, excess)
            targets_in_range = excess <= s.target_limit_tolerance_rad
        uses_depth = gains.uses_depth if gains is not None else False
        depth_age = now - inputs.depth_stamp_s if inputs.depth_stamp_s is not None else math.inf

        gamepad = inputs.gamepad
        gamepad_lost = gamepad is not None and not (now - gamepad.stamp_s <= s.gamepad_timeout_s)
        buttons: frozenset = gamepad.buttons if gamepad is not None else frozenset()
        estop: set[EstopSource] = set()
        if inputs.estop_service:
            estop.add(EstopSource.SERVICE)
        if s.remote.estop_held(robot.remote_keys):
            estop.add(EstopSource.REMOTE)
        if s.gamepad.estop_held(buttons):
            estop.add(EstopSource.GAMEPAD)

        request_sources = list(inputs.requests)
        request_sources += [(r, "remote") for r in s.remote.pressed(self._remote_held, robot.remote_keys)]
        request_sources += [(r, "gamepad") for r in s.gamepad.pressed(self._gamepad_held, buttons)]
        self._remote_held, self._gamepad_held = robot.remote_keys, buttons

        command = inputs.command
        command_age = now - command.stamp_s if command is not None else math.inf
        velocity = np.zeros(3)
        if command is not None and command.velocity.shape == (3,) and _finite(command.velocity):
            velocity = command.velocity

        if state_finite:
            self.max_speed_ratio = max(self.max_speed_ratio, float(np.max(np.abs(robot.dq) / self.spec.dq_max)))
            state_excess = np.maximum(self.spec.q_min - robot.q, robot.q - self.spec.q_max)
            self.max_limit_excess_rad = max(self.max_limit_excess_rad, float(np.max(state_excess)))
        quat_finite = _finite(robot.quat_wxyz) and robot.quat_wxyz.shape == (4,)
        with np.errstate(over="ignore", invalid="ignore"):
            norm = float(np.linalg.norm(robot.quat_wxyz)) if quat_finite else math.nan
            # The tilt reads a unit quaternion: any other is a corrupt IMU reading, counted as a fall (a
            # finite [2, 0, 0, 0] or [1e200, 1e200, 0, 0] would otherwise read as upright), as NaN and
            # overflow are.
            unit = abs(norm - 1.0) <= QUATERNION_NORM_TOLERANCE
            tilt = tilt_rad(robot.quat_wxyz) if unit else math.nan
        tick_inputs = TickInputs(
            lowstate_age_s=now - robot.stamp_s,
            target_age_s=target_age,
            tilt_rad=tilt,
            state_finite=state_finite,
            targets_finite=targets_finite,
            stand_up_progress=self._stand_up_progress(now) if self.mode is Mode.STAND_UP else 0.0,
            request=strongest_request([r for r, _ in request_sources]),
            estop=frozenset(estop),
            depth_age_s=depth_age,
            uses_depth=uses_depth,
            joint_position_ok=joint_position_ok(self.spec, robot.q, s.joint_limit_tolerance_rad),
            joint_velocity_ok=joint_velocity_ok(self.spec, robot.dq, s.velocity_limit_factor),
            gamepad_lost=gamepad_lost,
            fallback_ok=self._fallback_ok,
            command_age_s=command_age,
            targets_in_range=targets_in_range,
        )
        ready = policy_ready(tick_inputs, self.limits)
        if not ready:
            self._ready_since = None
        elif self._ready_since is None:
            self._ready_since = now
        fresh_for = now - self._ready_since if self._ready_since is not None else 0.0
        tick_inputs = _with_fresh_for(tick_inputs, fresh_for)
        if gamepad_lost or command_stale(tick_inputs, self.limits):
            velocity = np.zeros(3)  # the fallback gait walks only on a live command
        return tick_inputs, targets, gains, velocity, request_sources

    def _enter(self, mode: Mode, reason: str, now: float, robot: RobotReading) -> TransitionRecord:
        record = TransitionRecord(now, self.mode, mode, reason)
        self.transitions.append(record)
        if mode is Mode.STAND_UP:
            self._stand_up_start_s = now
            self._stand_up_from = robot.q.copy() if _finite(robot.q) else self.spec.default_q.copy()
        if mode is Mode.BLIND and self.fallback is not None:
            self.fallback.reset()
            self._fallback_targets = None
            self._fallback_ok = True
            self._next_fallback_s = now
        self.mode = mode
        return record

    def _command(
        self,
        now: float,
        robot: RobotReading,
        targets: PolicyTargets | None,
        gains: BundleGains | None,
        velocity: FloatArray,
    ) -> JointCommand:
        mode = self.mode
        if mode is Mode.STAND_UP:
            return stand_up_command(self.spec, self._stand_up_from, self._stand_up_progress(now), self._stand_gains)
        if mode is Mode.STAND:
            return stand_command(self.spec, self._stand_gains)
        if mode is Mode.ACTIVE and targets is not None and gains is not None:
            return pd_command(self.spec, targets.q, gains.kp, gains.kd)
        if mode is Mode.ACTIVE:
            return stand_command(
                self.spec, self._stand_gains
            )  # unreachable: ACTIVE is left the tick its targets go unusable
        if mode is Mode.BLIND:
            return self._fallback_command(now, robot, velocity)
        return damp_command(self.spec, self.settings.kd_damp, self._stand_gains[1])

    def _fallback_command(self, now: float, robot: RobotReading, velocity: FloatArray) -> JointCommand:
        gait = self.fallback
        if gait is None:
            return stand_command(self.spec, self._stand_gains)
        if self._fallback_targets is None or now >= self._next_fallback_s:
            start = time.perf_counter()
            try:
                q_target = gait.step(robot.q, robot.dq, robot.quat_wxyz, robot.gyro, velocity)
            except Exception as e:  # an onnxruntime failure must not take the supervisor down
                self.fallback_errors.append(f"{type(e).__name__}: {e}"[:300])
                q_target = np.full(self.spec.num_joints, np.nan)
            self.fallback_step_s.append(time.perf_counter() - start)
            self.fallback_steps += 1
            self._next_fallback_s += gait.period_s
            if self._next_fallback_s <= now:  # behind (a stall): run on from here rather than catch up
                self._next_fallback_s = now + gait.period_s
            if not (np.shape(q_target) == (self.spec.num_joints,) and _finite(q_target)):
                self._fallback_ok = False  # BLIND -> STAND on the next tick
                self._fallback_targets = None
                return stand_command(self.spec, self._stand_gains)
            self._fallback_targets = np.asarray(q_target, dtype=np.float64)
        return pd_command(self.spec, self._fallback_targets, gait.kp, gait.kd)

    # ------------------------------------------------------------------ bookkeeping
    def _stand_up_progress(self, now: float) -> float:
        return (now - self._stand_up_start_s) / self.settings.stand_up_duration_s

    def _account_time(self, now: float) -> None:
        if self._last_now is not None and now > self._last_now:
            self.time_in_mode_s[self.mode.value] += now - self._last_now
        self._last_now = now

    def _count_checks(self, inputs: TickInputs) -> None:
        for check in CHECKS:
            counter = self.faults[check.name]
            failing = self.mode in check.armed_in and check.failing(inputs, self.limits)
            if failing:
                counter.ticks += 1
                if not counter.failing:
                    counter.onsets += 1
            counter.failing = failing

    def _log_request(self, now: float, request: str, source: str, before: Mode) -> None:
        key = f"{source}:{request}"
        self.request_counts[key] = self.request_counts.get(key, 0) + 1
        if len(self.requests) < REQUESTS_LOGGED:
            self.requests.append(
                {
                    "t": round(now, 4),
                    "request": request,
                    "source": source,
                    "mode": before.value,
                    "then": self.mode.value,
                }
            )

    def report(self) -> dict[str, Any]:
        """Everything supervisor.json needs from the core (the node adds its timing and link counters)."""
        return {
            "final_mode": self.mode.value,
            "supervisor_transitions": [t.to_dict() for t in self.transitions],
            "limit_clamps": self.clamps.total,
            "limit_clamps_by_kind": self.clamps.to_dict(),
            "faults": {name: {"onsets": c.onsets, "ticks": c.ticks} for name, c in self.faults.items()},
            "time_in_mode_s": {m: round(v, 4) for m, v in self.time_in_mode_s.items()},
            "ticks": self.ticks,
            "requests": self.requests,
            "request_counts": self.request_counts,
            "fallback": {
                "gait": None if self.fallback is None else self.fallback.name,
                "degrades_to": self.limits.fallback.value,
                "steps": self.fallback_steps,
                "errors": self.fallback_errors[:20],
            },
            "max_speed_ratio": round(self.max_speed_ratio, 4),
            "max_limit_excess_rad": round(self.max_limit_excess_rad, 4),
            "max_target_excess_rad": round(self.max_target_excess_rad, 4),
            "bundles_known": sorted(self.bundles),
            "unknown_bundle_ticks": self.unknown_bundle_ticks,
        }


def _with_fresh_for(inputs: TickInputs, fresh_for_s: float) -> TickInputs:
    return replace(inputs, active_inputs_fresh_for_s=fresh_for_s)
