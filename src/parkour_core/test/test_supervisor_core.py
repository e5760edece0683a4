"""SupervisorCore: the supervisor's whole tick without ROS, driven by a fake clock and a fake fallback gait."""

from __future__ import annotations

import dataclasses
import json
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from parkour_core.bundle import BundleError
from parkour_core.config import ConfigError, load_config
from parkour_core.robots import G1, H1
from parkour_core.safety import EstopSource, JointCommand, Mode, Request, SafetyLimits, position_bounds, torque_estimate
from parkour_core.supervisor_core import (
    REQUESTS_LOGGED,
    BundleGains,
    Combos,
    GamepadReading,
    PolicyTargets,
    RobotReading,
    RunnerGait,
    SupervisorCore,
    SupervisorInputs,
    SupervisorSettings,
    VelocityCommand,
)

N = G1.num_joints
DT = 0.005  # 200 Hz
UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
LIMITS = SafetyLimits(
    lowstate_timeout_s=0.1,
    target_timeout_s=0.1,
    max_tilt_rad=0.8,
    depth_timeout_s=0.25,
    blind_resume_after_s=0.5,
    command_timeout_s=0.5,
    fallback=Mode.BLIND,
)
SETTINGS = SupervisorSettings(
    limits=LIMITS,
    kd_damp=3.0,
    stand_up_duration_s=2.0,
    joint_margin_rad=0.02,
    joint_limit_tolerance_rad=0.1,
    velocity_limit_factor=1.5,
    gamepad_timeout_s=0.5,
    remote=Combos(
        frozenset({"L2", "B"}),
        (
            (Request.STAND_UP, frozenset({"L1", "Up"})),
            (Request.ACTIVATE, frozenset({"R1", "A"})),
            (Request.STAND, frozenset({"R1", "X"})),
        ),
    ),
    gamepad=Combos(
        frozenset({4, 5}),
        (
            (Request.STAND_UP, frozenset({7, 0})),
            (Request.ACTIVATE, frozenset({7, 3})),
            (Request.STAND, frozenset({7, 2})),
        ),
    ),
)
STUDENT = BundleGains.make("student", np.full(N, 60.0), np.full(N, 2.0), uses_depth=True, num_joints=N)
WALK = BundleGains.make("walk", np.full(N, 40.0), np.full(N, 1.0), uses_depth=False, num_joints=N)
DEFAULT = BundleGains.make("", np.full(N, 30.0), np.full(N, 1.5), uses_depth=False, num_joints=N)


class FakeGait:
    name = "fake_walk"
    period_s = 0.02

    def __init__(self) -> None:
        self.kp = np.full(N, 45.0)
        self.kd = np.full(N, 1.2)
        self.output = G1.default_q + 0.01
        self.velocities: list[np.ndarray] = []
        self.resets = 0
        self.fail: str | None = None  # "nan" or "raise"

    def reset(self) -> None:
        self.resets += 1

    def step(self, q, dq, quat_wxyz, gyro, velocity) -> np.ndarray:
        self.velocities.append(np.array(velocity))
        if self.fail == "raise":
            raise RuntimeError("onnxruntime exploded")
        if self.fail == "nan":
            return np.full(N, np.nan)
        return self.output.copy()


@dataclass
class Rig:
    """A robot, a policy node, a depth camera and an operator around one SupervisorCore, on a fake clock."""

    core: SupervisorCore
    fake_gait: FakeGait | None
    now: float = 0.0
    q: np.ndarray = field(default_factory=lambda: G1.default_q.copy())
    dq: np.ndarray = field(default_factory=lambda: np.zeros(N))
    quat: np.ndarray = field(default_factory=lambda: UPRIGHT.copy())
    lowstate_alive: bool = True
    lowstate_stamp: float = 0.0
    remote_keys: frozenset = frozenset()
    policy_alive: bool = True
    policy_q: np.ndarray = field(default_factory=lambda: G1.default_q + 0.05)
    bundle: str = "student"
    targets: PolicyTargets | None = None
    depth_alive: bool = True
    depth_stamp: float | None = None
    cmd_vel: np.ndarray | None = None
    cmd_alive: bool = True
    cmd_stamp: float | None = None
    gamepad_buttons: frozenset | None = None  # None: no gamepad ever
    gamepad_alive: bool = True
    gamepad_stamp: float = 0.0
    mode_log: list[Mode] = field(default_factory=list)

    @property
    def gait(self) -> FakeGait:
        assert self.fake_gait is not None, "this rig runs without a fake gait"
        return self.fake_gait

    def step(self, dt: float = DT, requests=(), estop_service: bool = False):
        self.now += dt
        if self.lowstate_alive:
            self.lowstate_stamp = self.now - 0.002
        if self.policy_alive:
            self.targets = PolicyTargets(self.policy_q.copy(), self.now - 0.003, self.bundle)
        if self.depth_alive:
            self.depth_stamp = self.now - 0.07
        if self.cmd_vel is not None and self.cmd_alive:
            self.cmd_stamp = self.now
        gamepad = None
        if self.gamepad_buttons is not None:
            if self.gamepad_alive:
                self.gamepad_stamp = self.now
            gamepad = GamepadReading(self.gamepad_buttons, self.gamepad_stamp)
        inputs = SupervisorInputs(
            now_s=self.now,
            robot=RobotReading(self.q, self.dq, self.quat, np.zeros(3), self.lowstate_stamp, self.remote_keys),
            targets=self.targets,
            depth_stamp_s=self.depth_stamp,
            command=None if self.cmd_vel is None else VelocityCommand(self.cmd_vel, self.cmd_stamp or 0.0),
            gamepad=gamepad,
            requests=tuple((r, "ros") for r in requests),
            estop_service=estop_service,
        )
        cmd, records = self.core.tick(inputs)
        self.mode_log.append(self.core.mode)
        return cmd, records

    def run(self, seconds: float, dt: float = DT) -> list:
        records = []
        for _ in range(round(seconds / dt)):
            records += self.step(dt)[1]
        return records

    def to_stand(self) -> None:
        self.step(requests=[Request.STAND_UP])
        self.run(2.05)
        assert self.core.mode is Mode.STAND

    def to_active(self) -> None:
        self.to_stand()
        self.step(requests=[Request.ACTIVATE])
        assert self.core.mode is Mode.ACTIVE


def make_rig(settings: SupervisorSettings = SETTINGS, gait: bool = True, default: BundleGains | None = None) -> Rig:
    fake = FakeGait() if gait else None
    core = SupervisorCore(G1, settings, fallback=fake, default_gains=default)
    core.register_bundle(STUDENT)
    core.register_bundle(WALK)
    return Rig(core, fake)


def is_damping(cmd: JointCommand) -> bool:
    """kp 0, kd > 0 (velocity target and feed-forward may have moved to keep the braking torque in bounds)."""
    return bool(np.all(cmd.kp == 0) and np.all(cmd.kd > 0))


# ----------------------------------------------------------------------------- the nominal sequence


def test_stand_up_then_activate_logs_each_transition_with_time_and_reason():
    rig = make_rig()
    cmd, records = rig.step()
    assert rig.core.mode is Mode.DAMP and records == () and is_damping(cmd)
    rig.to_active()
    got = [(r.from_mode, r.to_mode, r.reason) for r in rig.core.transitions]
    assert got == [
        (Mode.DAMP, Mode.STAND_UP, "stand up requested"),
        (Mode.STAND_UP, Mode.STAND, "stand-up complete"),
        (Mode.STAND, Mode.ACTIVE, "activate requested"),
    ]
    t_up, t_stand, _ = (r.t for r in rig.core.transitions)
    assert t_stand - t_up == pytest.approx(2.0, abs=DT)
    report = rig.core.report()
    assert [t["to"] for t in report["supervisor_transitions"]] == ["STAND_UP", "STAND", "ACTIVE"]
    assert set(report["supervisor_transitions"][0]) == {"t", "from", "to", "reason"}
    assert report["final_mode"] == "ACTIVE"
    assert report["time_in_mode_s"]["STAND_UP"] == pytest.approx(2.0, abs=DT)
    assert sum(report["time_in_mode_s"].values()) == pytest.approx(rig.now - DT)


def test_stand_up_interpolates_from_the_measured_pose():
    rig = make_rig()
    rig.q = np.clip(np.zeros(N), G1.q_min, G1.q_max)
    start = rig.q.copy()
    cmd, _ = rig.step(requests=[Request.STAND_UP])
    np.testing.assert_allclose(cmd.q, np.clip(start, *position_bounds(G1, 0.02)), atol=1e-12)
    np.testing.assert_array_equal(cmd.kp, G1.kp_stand)
    rig.run(1.0)
    cmd, _ = rig.step(0.0)
    np.testing.assert_allclose(cmd.q, 0.5 * (start + G1.default_q), atol=1e-9)  # smoothstep(0.5) = 0.5


def test_active_runs_the_targets_with_the_gains_of_the_bundle_that_made_them():
    rig = make_rig()
    rig.bundle = "walk"
    rig.to_active()
    cmd, _ = rig.step()
    np.testing.assert_allclose(cmd.q, rig.policy_q)
    np.testing.assert_array_equal(cmd.kp, WALK.kp)
    np.testing.assert_array_equal(cmd.kd, WALK.kd)
    rig.bundle = "student"  # a model swap: the new bundle was announced before its targets arrive
    cmd, _ = rig.step()
    np.testing.assert_array_equal(cmd.kp, STUDENT.kp)
    assert rig.core.mode is Mode.ACTIVE


def test_targets_from_a_bundle_without_known_gains_are_not_used():
    rig = make_rig()
    rig.bundle = "mystery"
    rig.to_stand()
    rig.step(requests=[Request.ACTIVATE])
    assert rig.core.mode is Mode.STAND  # refused: no gains to run them with
    assert rig.core.unknown_bundle_ticks > 0
    rig.bundle = "student"
    rig.step(requests=[Request.ACTIVATE])
    assert rig.core.mode is Mode.ACTIVE
    rig.bundle = "mystery"  # swapped without an announcement
    _, records = rig.step()
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.BLIND, "policy targets stale or not finite")]


def test_unnamed_targets_run_with_the_configured_bundles_gains():
    rig = make_rig(default=DEFAULT)
    rig.bundle = ""
    rig.to_active()
    cmd, _ = rig.step()
    np.testing.assert_array_equal(cmd.kp, DEFAULT.kp)
    no_default = make_rig()
    no_default.bundle = ""
    no_default.to_stand()
    no_default.step(requests=[Request.ACTIVATE])
    assert no_default.core.mode is Mode.STAND


def test_a_registered_bundle_can_be_replaced():
    rig = make_rig()
    rig.core.register_bundle(BundleGains.make("student", np.full(N, 70.0), np.full(N, 3.0), True, N))
    replaced = rig.core.gains_for("student")
    assert replaced is not None and replaced.kp[0] == 70.0
    assert rig.core.gains_for("nope") is None


# ----------------------------------------------------------------------------- BLIND


def test_a_dead_policy_hands_over_to_the_fallback_gait_at_its_own_rate():
    rig = make_rig()
    rig.cmd_vel = np.array([0.4, 0.0, 0.1])
    rig.to_active()
    rig.policy_alive = False
    records = rig.run(0.09)
    assert records == []  # within the 0.1 s target timeout
    records = rig.run(0.05)
    assert [(r.from_mode, r.to_mode, r.reason) for r in records] == [
        (Mode.ACTIVE, Mode.BLIND, "policy targets stale or not finite")
    ]
    assert rig.gait.resets == 1
    steps_before = rig.core.fallback_steps
    rig.run(1.0)
    assert rig.core.fallback_steps - steps_before == 50  # 50 Hz on a 200 Hz tick
    cmd, _ = rig.step()
    np.testing.assert_allclose(cmd.q, rig.gait.output)
    np.testing.assert_array_equal(cmd.kp, rig.gait.kp)
    np.testing.assert_array_equal(cmd.kd, rig.gait.kd)
    np.testing.assert_array_equal(rig.gait.velocities[-1], [0.4, 0.0, 0.1])
    assert rig.core.mode is Mode.BLIND
    report = rig.core.report()
    assert report["faults"]["targets_stale"]["onsets"] == 1
    assert report["fallback"] == {
        "gait": "fake_walk",
        "degrades_to": "BLIND",
        "steps": rig.core.fallback_steps,
        "errors": [],
    }


def test_the_fallback_gait_walks_at_zero_velocity_once_cmd_vel_is_stale():
    rig = make_rig()
    rig.cmd_vel = np.array([0.4, 0.0, 0.0])
    rig.to_active()
    rig.policy_alive = False
    rig.run(0.2)
    rig.cmd_alive = False  # the teleop node died too
    rig.run(0.45)
    np.testing.assert_array_equal(rig.gait.velocities[-1], [0.4, 0.0, 0.0])  # within the 0.5 s timeout
    rig.run(0.1)
    np.testing.assert_array_equal(rig.gait.velocities[-1], np.zeros(3))
    assert rig.core.faults["command_timeout"].onsets == 1


def test_blind_resumes_active_once_the_policy_has_been_back_long_enough():
    rig = make_rig()
    rig.to_active()
    rig.policy_alive = False
    rig.run(0.2)
    assert rig.core.mode is Mode.BLIND
    rig.policy_alive = True
    rig.run(0.49)
    assert rig.core.mode is Mode.BLIND
    records = rig.run(0.02)
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.ACTIVE, "policy targets and depth fresh again")]


def test_stale_depth_sends_a_depth_bundle_blind_and_fresh_depth_brings_it_back():
    rig = make_rig()
    rig.to_active()
    rig.depth_alive = False
    records = rig.run(0.25)
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.BLIND, "depth stale")]
    rig.depth_alive = True
    records = rig.run(0.6)
    assert [r.to_mode for r in records] == [Mode.ACTIVE]
    assert rig.core.faults["depth_stale"].onsets == 1


def test_stale_depth_does_not_matter_to_a_blind_bundle():
    rig = make_rig()
    rig.bundle = "walk"
    rig.depth_alive = False
    rig.depth_stamp = None
    rig.to_active()
    assert rig.run(1.0) == []
    assert rig.core.faults["depth_stale"].ticks == 0


def test_with_fallback_stand_a_dead_policy_stands_the_robot():
    settings = dataclasses.replace(SETTINGS, limits=dataclasses.replace(LIMITS, fallback=Mode.STAND))
    rig = make_rig(settings, gait=False)
    rig.to_active()
    rig.policy_alive = False
    records = rig.run(0.2)
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.STAND, "policy targets stale or not finite")]
    cmd, _ = rig.step()
    np.testing.assert_allclose(cmd.q, G1.default_q)
    assert rig.core.report()["fallback"]["degrades_to"] == "STAND"


def test_blind_needs_a_fallback_gait():
    with pytest.raises(ValueError, match="no fallback gait"):
        SupervisorCore(G1, SETTINGS, fallback=None)


@pytest.mark.parametrize("failure", ["nan", "raise"])
def test_a_failing_fallback_gait_stands_the_robot(failure):
    rig = make_rig()
    rig.to_active()
    rig.gait.fail = failure
    rig.policy_alive = False
    for _ in range(40):
        cmd, records = rig.step()
        if records:
            break
    assert [r.to_mode for r in records] == [Mode.BLIND]
    np.testing.assert_allclose(cmd.q, G1.default_q)  # this tick: the stand command, never NaN
    np.testing.assert_array_equal(cmd.kp, G1.kp_stand)
    _, records = rig.step()
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.STAND, "fallback gait output not finite")]
    assert rig.core.faults["fallback_nonfinite"].onsets == 1
    assert bool(rig.core.fallback_errors) == (failure == "raise")


# ----------------------------------------------------------------------------- e-stop and operator inputs


def reach(rig: Rig, mode: Mode) -> None:
    if mode is Mode.STAND_UP:
        rig.step(requests=[Request.STAND_UP])
    elif mode is Mode.STAND:
        rig.to_stand()
    elif mode is Mode.ACTIVE:
        rig.to_active()
    elif mode is Mode.BLIND:
        rig.to_active()
        rig.policy_alive = False
        rig.run(0.15)
    assert rig.core.mode is mode


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("source", list(EstopSource))
def test_estop_from_every_source_in_every_mode_damps_in_the_same_tick(mode, source):
    rig = make_rig()
    rig.gamepad_buttons = frozenset()
    reach(rig, mode)
    estop_service = source is EstopSource.SERVICE
    if source is EstopSource.REMOTE:
        rig.remote_keys = frozenset({"L2", "B"})
    if source is EstopSource.GAMEPAD:
        rig.gamepad_buttons = frozenset({4, 5, 9})
    cmd, records = rig.step(estop_service=estop_service)
    assert rig.core.mode is Mode.DAMP
    assert is_damping(cmd)
    reason = {
        EstopSource.SERVICE: "e-stop from the ROS service",
        EstopSource.REMOTE: "e-stop from the Unitree remote",
        EstopSource.GAMEPAD: "e-stop from the gamepad",
    }[source]
    assert [r.reason for r in records] == ([] if mode is Mode.DAMP else [reason])
    assert rig.core.faults[f"estop_{source.value}"].onsets == 1


def test_a_held_estop_blocks_standing_up_until_released():
    rig = make_rig()
    rig.remote_keys = frozenset({"L2", "B"})
    rig.step(requests=[Request.STAND_UP])
    assert rig.core.mode is Mode.DAMP
    rig.remote_keys = frozenset()
    rig.step(requests=[Request.STAND_UP])
    assert rig.core.mode is Mode.STAND_UP


def test_remote_requests_fire_on_the_press_not_while_held():
    rig = make_rig()
    rig.remote_keys = frozenset({"L1", "Up"})
    rig.step()
    assert rig.core.mode is Mode.STAND_UP
    rig.step(estop_service=True)
    assert rig.core.mode is Mode.DAMP
    rig.run(0.5)  # the stand-up combo is still held: it must not stand the robot up again
    assert rig.core.mode is Mode.DAMP
    rig.remote_keys = frozenset({"L1"})
    rig.step()
    rig.remote_keys = frozenset({"L1", "Up"})
    rig.step()
    assert rig.core.mode is Mode.STAND_UP
    assert rig.core.request_counts["remote:stand_up"] == 2
    rig.run(2.1)
    rig.remote_keys = frozenset({"R1", "A"})
    rig.step()
    assert rig.core.mode is Mode.ACTIVE
    rig.remote_keys = frozenset({"R1", "A", "X"})  # R1 + X: stand
    _, records = rig.step()
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.STAND, "stand requested")]


def test_gamepad_requests_and_request_log():
    rig = make_rig()
    rig.gamepad_buttons = frozenset({7, 0})
    rig.step()
    assert rig.core.mode is Mode.STAND_UP
    rig.run(2.1)
    rig.gamepad_buttons = frozenset({7, 3})
    rig.step()
    assert rig.core.mode is Mode.ACTIVE
    log = rig.core.report()["requests"]
    assert [(e["source"], e["request"], e["mode"], e["then"]) for e in log] == [
        ("gamepad", "stand_up", "DAMP", "STAND_UP"),
        ("gamepad", "activate", "STAND", "ACTIVE"),
    ]


def test_a_lost_gamepad_stops_walking_on_the_fallback_gait_until_it_is_back():
    rig = make_rig()
    rig.gamepad_buttons = frozenset()
    reach(rig, Mode.ACTIVE)
    rig.gamepad_alive = False
    assert rig.run(0.45) == []  # within the 0.5 s timeout: not lost yet
    records = rig.run(0.1)
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.BLIND, "gamepad lost")]
    assert rig.run(1.0) == []  # the policy is fine, but no resume without the gamepad
    rig.gamepad_alive = True
    records = rig.run(1.0)
    assert [r.to_mode for r in records] == [Mode.ACTIVE]
    assert rig.core.faults["gamepad_lost"].onsets == 1


def test_a_lost_gamepad_blocks_activation_from_stand():
    rig = make_rig()
    rig.gamepad_buttons = frozenset()
    reach(rig, Mode.STAND)
    rig.gamepad_alive = False
    rig.run(0.6)
    rig.step(requests=[Request.ACTIVATE])
    assert rig.core.mode is Mode.STAND
    rig.gamepad_alive = True
    rig.step(requests=[Request.ACTIVATE])
    assert rig.core.mode is Mode.ACTIVE


def test_a_gamepad_that_never_connected_is_not_lost():
    rig = make_rig()
    rig.to_active()
    assert rig.run(2.0) == []
    assert rig.core.faults["gamepad_lost"].ticks == 0


def test_the_strongest_of_several_requests_in_one_tick_wins():
    rig = make_rig()
    rig.to_active()
    _, records = rig.step(requests=[Request.ACTIVATE, Request.DAMP, Request.STAND])
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.DAMP, "damp requested")]


# ----------------------------------------------------------------------------- robot faults


@pytest.mark.parametrize(
    "fault,reason,check",
    [
        ("nan", "robot state has NaN/inf", "state_nonfinite"),
        ("tilt", "base tilt beyond limit (fall)", "tilt"),
        ("position", "joint position beyond limit", "joint_position"),
        ("velocity", "joint velocity beyond limit", "joint_velocity"),
        ("lowstate", "lowstate stale", "lowstate_stale"),
    ],
)
def test_robot_faults_damp_and_are_counted(fault, reason, check):
    rig = make_rig()
    rig.to_active()
    if fault == "nan":
        rig.q = rig.q.copy()
        rig.q[3] = np.nan
    elif fault == "tilt":
        rig.quat = np.array([np.cos(0.45), np.sin(0.45), 0.0, 0.0])  # 0.9 rad about x
    elif fault == "position":
        rig.q = rig.q.copy()
        rig.q[3] = G1.q_max[3] + 0.15
    elif fault == "velocity":
        rig.dq = np.zeros(N)
        rig.dq[0] = 1.6 * G1.dq_max[0]
    elif fault == "lowstate":
        rig.lowstate_alive = False
    records = rig.run(0.15)
    assert [(r.from_mode, r.to_mode, r.reason) for r in records] == [(Mode.ACTIVE, Mode.DAMP, reason)]
    cmd, _ = rig.step()
    assert is_damping(cmd) and cmd.is_finite()
    report = rig.core.report()
    assert report["faults"][check]["onsets"] == 1
    assert report["faults"][check]["ticks"] > 1
    rig.step(requests=[Request.STAND_UP])
    assert rig.core.mode is Mode.DAMP  # refused while the fault lasts


def test_fault_onsets_count_each_time_a_check_starts_failing():
    rig = make_rig()
    for _ in range(3):
        rig.lowstate_alive = False
        rig.run(0.2)
        rig.lowstate_alive = True
        rig.run(0.05)
    counter = rig.core.report()["faults"]["lowstate_stale"]
    assert counter["onsets"] == 3
    # Each outage: 40 ticks; the last sample was 2 ms old, so the 0.1 s timeout passes after 0.098 s: 21 stale.
    assert counter["ticks"] == 3 * 21


def test_clamps_are_counted_by_kind():
    rig = make_rig()
    rig.policy_q = G1.default_q.copy()
    rig.policy_q[3] = G1.q_max[3] + 0.3  # within target_limit_tolerance_rad: clamped, not a fault
    rig.to_active()
    cmd, _ = rig.step()
    assert cmd.q[3] == G1.q_max[3] - 0.02
    report = rig.core.report()
    assert report["limit_clamps_by_kind"]["position"] >= 1
    assert report["limit_clamps"] == report["limit_clamps_by_kind"]["total"] > 0


def test_targets_far_beyond_limits_are_a_policy_fault():
    rig = make_rig()
    rig.to_active()
    rig.policy_q = G1.default_q.copy()
    rig.policy_q[5] = G1.q_max[5] + 1.0  # beyond target_limit_tolerance_rad (0.5)
    cmd, records = rig.step()
    assert rig.core.mode is Mode.BLIND
    assert [r.reason for r in records] == ["policy targets far beyond joint limits"]
    assert G1.q_min[5] <= cmd.q[5] <= G1.q_max[5]
    assert rig.core.report()["max_target_excess_rad"] >= 1.0


# ----------------------------------------------------------------------------- configuration


def test_settings_from_the_sim_config(repo_root):
    cfg = load_config(repo_root / "config" / "g1_sim.yaml")
    s = SupervisorSettings.from_config(cfg, fallback_available=True)
    assert s.limits.fallback is Mode.BLIND
    assert s.limits.depth_timeout_s == cfg.depth.stale_after_s
    assert s.limits.command_timeout_s == cfg.policy.command_timeout_s
    assert s.remote.estop == frozenset({"L2", "B"})
    assert s.gamepad.estop == frozenset({4, 5})
    assert (Request.STAND_UP, frozenset({"L1", "Up"})) in s.remote.requests
    assert SupervisorSettings.from_config(cfg, fallback_available=False).limits.fallback is Mode.STAND
    stand = load_config(repo_root / "config" / "g1_sim.yaml", overrides={"supervisor.fallback": "stand"})
    assert SupervisorSettings.from_config(stand, fallback_available=True).limits.fallback is Mode.STAND


@pytest.mark.parametrize(
    "key,value,match",
    [
        ("remote_estop_keys", ["L2", "Z"], r"supervisor.remote_estop_keys: \['Z'\] are not Unitree remote keys"),
        ("remote_estop_keys", [], "supervisor.remote_estop_keys: the e-stop combo cannot be empty"),
        ("gamepad_estop_buttons", [], "supervisor.gamepad_estop_buttons: the e-stop combo cannot be empty"),
        ("remote_stand_keys", ["B", "L2"], "is also supervisor.remote_estop_keys"),
        ("gamepad_activate_buttons", [7, 7], "names a button twice"),
        ("gamepad_stand_buttons", [-1], "button indices 0..63"),
        ("gamepad_stand_buttons", [1.5], "button indices 0..63"),
        ("fallback", "walk", r"'walk' is not one of \['blind', 'stand'\]"),
        ("velocity_limit_factor", 0.5, "outside the allowed range"),
    ],
)
def test_bad_supervisor_config_is_refused_with_the_key_named(repo_root, key, value, match):
    with pytest.raises(ConfigError, match=match):
        load_config(repo_root / "config" / "g1_sim.yaml", overrides={f"supervisor.{key}": value})


def test_disabled_request_combos_are_allowed(repo_root):
    cfg = load_config(
        repo_root / "config" / "g1_robot.yaml",
        overrides={"supervisor.remote_activate_keys": [], "supervisor.gamepad_activate_buttons": []},
    )
    s = SupervisorSettings.from_config(cfg, fallback_available=True)
    assert s.remote.pressed(frozenset(), frozenset(REMOTE_ALL)) == [Request.STAND_UP, Request.STAND]


REMOTE_ALL = ("R1", "L1", "Start", "Select", "R2", "L2", "F1", "F2", "A", "B", "X", "Y", "Up", "Right", "Down", "Left")


# ----------------------------------------------------------------------------- the real fallback gait


def test_the_g1_walk_bundle_as_fallback_gait(g1_walk_dir):
    gait = RunnerGait.load(g1_walk_dir, G1)
    assert gait.name == "g1_walk" and gait.period_s == pytest.approx(0.02)
    manifest = json.loads((g1_walk_dir / "manifest.json").read_text())
    np.testing.assert_allclose(gait.kp, manifest["kp"])
    core = SupervisorCore(G1, SETTINGS, fallback=gait)
    core.register_bundle(WALK)
    rig = Rig(core, None, bundle="walk")
    rig.cmd_vel = np.array([0.5, 0.0, 0.0])
    rig.to_active()
    rig.policy_alive = False
    rig.run(0.5)
    assert core.mode is Mode.BLIND and core.fallback_steps >= 20
    cmd, _ = rig.step()
    assert cmd.is_finite()
    np.testing.assert_allclose(cmd.kd, manifest["kd"])
    assert not np.allclose(cmd.q, G1.default_q)  # the policy's targets, not the stand pose


def test_a_depth_bundle_is_refused_as_fallback_gait():
    class Manifest:
        uses_depth = True
        name = "student"

    class Runner:
        manifest = Manifest()

    with pytest.raises(ValueError, match="must be a blind bundle"):
        RunnerGait(Runner())


# ----------------------------------------------------------------------------- exact edges, bookkeeping, report
# Each test below pins a behaviour that, by mutation testing (bench/mutation/run.py), no other test holds.


def robot_at(now: float, **changes) -> RobotReading:
    """A healthy standing robot, its reading taken at ``now``."""
    fields = {"q": G1.default_q.copy(), "dq": np.zeros(N), "quat_wxyz": UPRIGHT.copy(), "gyro": np.zeros(3)}
    return RobotReading(stamp_s=now, **(fields | changes))


def test_settings_from_config_carry_every_value(repo_root):
    overrides = {
        "supervisor.lowstate_timeout_s": 0.07,
        "supervisor.target_timeout_s": 0.09,
        "supervisor.max_tilt_rad": 0.7,
        "supervisor.stand_up_duration_s": 2.5,
        "supervisor.kd_damp": 4.5,
        "supervisor.blind_resume_after_s": 0.75,
        "supervisor.joint_margin_rad": 0.03,
        "supervisor.target_limit_tolerance_rad": 0.4,
        "supervisor.joint_limit_tolerance_rad": 0.15,
        "supervisor.velocity_limit_factor": 1.7,
        "supervisor.gamepad_timeout_s": 0.6,
        "supervisor.stand_gains": {"left_knee_joint": [150.0, 5.0]},
        "depth.stale_after_s": 0.3,
        "policy.command_timeout_s": 0.8,
    }
    cfg = load_config(repo_root / "config" / "g1_sim.yaml", overrides=overrides)
    s = SupervisorSettings.from_config(cfg, fallback_available=True)
    sup = cfg.supervisor
    assert s.limits == SafetyLimits(
        lowstate_timeout_s=0.07,
        target_timeout_s=0.09,
        max_tilt_rad=0.7,
        depth_timeout_s=0.3,
        blind_resume_after_s=0.75,
        command_timeout_s=0.8,
        fallback=Mode.BLIND,
    )
    assert (s.kd_damp, s.stand_up_duration_s, s.joint_margin_rad) == (4.5, 2.5, 0.03)
    assert (s.target_limit_tolerance_rad, s.joint_limit_tolerance_rad) == (0.4, 0.15)
    assert (s.velocity_limit_factor, s.gamepad_timeout_s) == (1.7, 0.6)
    assert s.stand_gains == {"left_knee_joint": [150.0, 5.0]}
    assert s.remote == Combos(
        frozenset(sup.remote_estop_keys),
        (
            (Request.STAND_UP, frozenset(sup.remote_stand_up_keys)),
            (Request.ACTIVATE, frozenset(sup.remote_activate_keys)),
            (Request.STAND, frozenset(sup.remote_stand_keys)),
        ),
    )
    assert s.gamepad == Combos(
        frozenset(sup.gamepad_estop_buttons),
        (
            (Request.STAND_UP, frozenset(sup.gamepad_stand_up_buttons)),
            (Request.ACTIVATE, frozenset(sup.gamepad_activate_buttons)),
            (Request.STAND, frozenset(sup.gamepad_stand_buttons)),
        ),
    )


def test_bundle_gains_are_float64_and_zero_gains_are_allowed():
    g = BundleGains.make("b", [0] * N, [1] * (N - 1) + [0.5], uses_depth=True, num_joints=N)  # ints, as JSON has them
    assert g.kp.dtype == np.float64 and g.kd.dtype == np.float64
    np.testing.assert_array_equal(g.kp, np.zeros(N))
    assert g.kd[0] == 1.0 and g.kd[-1] == 0.5
    assert g.uses_depth is True


@pytest.mark.parametrize("key", ["kp", "kd"])
def test_bad_bundle_gains_name_the_gain_at_fault(key):
    good = [1.0] * N
    short = {"kp": good, "kd": good} | {key: [1.0] * (N - 1)}
    with pytest.raises(ValueError, match=f"^bundle 'b': {key} has 28 values for 29 joints$"):
        BundleGains.make("b", short["kp"], short["kd"], False, N)
    negative = {"kp": good, "kd": good} | {key: [-1.0] * N}
    with pytest.raises(ValueError, match=f"^bundle 'b': {key} must be finite and >= 0$"):
        BundleGains.make("b", negative["kp"], negative["kd"], False, N)


def test_the_fallback_gait_is_loaded_for_this_robot_on_one_thread(g1_walk_dir):
    gait = RunnerGait.load(g1_walk_dir, G1)
    assert gait.runner.session.get_session_options().intra_op_num_threads == 1
    assert gait.runner.bundle.robot is G1
    with pytest.raises(BundleError):
        RunnerGait.load(g1_walk_dir, H1)  # a G1 bundle does not drive another robot


@pytest.mark.parametrize("part", ["dq", "quat_wxyz", "gyro"])
def test_nan_anywhere_in_the_robot_state_is_a_state_fault(part):
    rig = make_rig()
    rig.to_active()
    core = rig.core
    bad = {"dq": np.full(N, np.nan), "quat_wxyz": np.array([np.nan, 0, 0, 0]), "gyro": np.array([0, np.nan, 0])}
    _, records = core.tick(SupervisorInputs(rig.now + DT, robot_at(rig.now + DT, **{part: bad[part]})))
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.DAMP, "robot state has NaN/inf")]
    assert core.faults["state_nonfinite"].onsets == 1


def test_a_quaternion_of_the_wrong_length_reads_as_a_fall():
    rig = make_rig()
    rig.to_active()
    rig.quat = np.array([1.0, 0.0, 0.0])
    _, records = rig.step()
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.DAMP, "base tilt beyond limit (fall)")]


@pytest.mark.parametrize("quat", [[2.0, 0.0, 0.0, 0.0], [1e200, 1e200, 0.0, 0.0], [0.9, 0.0, 0.0, 0.0], [0.0] * 4])
def test_a_quaternion_that_is_not_unit_reads_as_a_fall(quat):
    """The tilt reads a unit quaternion; [2, 0, 0, 0] and [1e200, 1e200, 0, 0] would otherwise read as upright."""
    rig = make_rig()
    rig.to_active()
    rig.quat = np.array(quat)
    _, records = rig.step()
    assert [(r.to_mode, r.reason) for r in records] == [(Mode.DAMP, "base tilt beyond limit (fall)")]


def test_a_quaternion_a_little_off_unit_is_an_imu_reading():
    rig = make_rig()
    rig.to_active()
    rig.quat = np.array([1.04, 0.0, 0.0, 0.0])  # float32 IMU output, renormalised late: not a fault
    _, records = rig.step()
    assert not records and rig.core.mode is Mode.ACTIVE


def test_a_huge_quaternion_raises_no_floating_point_warning():
    rig = make_rig()
    rig.to_active()
    rig.quat = np.array([1e200, 1e200, 1e200, 1e200])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cmd, _ = rig.step()
    assert cmd.is_finite()


@pytest.mark.parametrize("velocity", [[np.nan, 0.0, 0.0], [0.4, 0.0], [0.4, 0.0, 0.0, 0.0]])
def test_the_fallback_gait_walks_at_zero_velocity_on_an_unusable_cmd_vel(velocity):
    rig = make_rig()
    rig.cmd_vel = np.array(velocity)
    rig.to_active()
    rig.policy_alive = False
    rig.run(0.2)
    assert rig.core.mode is Mode.BLIND
    assert rig.gait.velocities[-1].dtype == np.float64
    np.testing.assert_array_equal(rig.gait.velocities[-1], np.zeros(3))


def test_damping_for_a_nan_state_uses_the_configured_kd():
    rig = make_rig(dataclasses.replace(SETTINGS, kd_damp=5.0))
    q = G1.default_q.copy()
    q[2] = np.nan
    cmd, _ = rig.core.tick(SupervisorInputs(0.0, robot_at(0.0, q=q)))
    np.testing.assert_array_equal(cmd.kd, np.minimum(5.0, G1.kd_stand))  # 5 where the joint stands with more
    np.testing.assert_array_equal(cmd.kp, np.zeros(N))


def test_ticks_and_ticks_with_unannounced_targets_are_counted_exactly():
    core = make_rig().core
    mystery = PolicyTargets(G1.default_q.copy(), 0.0, "mystery")
    for k in range(3):
        core.tick(SupervisorInputs(k * DT, robot_at(k * DT), targets=mystery))
    for k in range(3, 5):
        core.tick(SupervisorInputs(k * DT, robot_at(k * DT)))  # no targets at all: nothing unannounced
    report = core.report()
    assert report["ticks"] == 5
    assert report["unknown_bundle_ticks"] == 3


def test_nan_targets_are_not_counted_as_out_of_range():
    rig = make_rig()
    rig.to_active()
    rig.policy_q = np.full(N, np.nan)
    _, records = rig.step()
    assert [r.reason for r in records] == ["policy targets stale or not finite"]
    rig.run(0.1)
    assert rig.core.faults["targets_nonfinite"].ticks > 1
    assert rig.core.faults["targets_out_of_range"].ticks == 0
    rig.policy_q = G1.default_q[:-1].copy()  # the wrong number of joints: unusable, not out of range
    rig.run(0.1)
    assert rig.core.faults["targets_out_of_range"].ticks == 0


def test_targets_exactly_at_the_target_tolerance_are_in_range():
    edge = G1.q_max[5] + 0.25
    settings = dataclasses.replace(SETTINGS, target_limit_tolerance_rad=edge - G1.q_max[5])
    rig = make_rig(settings)
    rig.policy_q = G1.default_q.copy()
    rig.policy_q[5] = edge
    rig.to_active()
    assert rig.run(0.1) == []
    rig.policy_q[5] = np.nextafter(edge, np.inf)
    _, records = rig.step()
    assert [r.reason for r in records] == ["policy targets far beyond joint limits"]


def test_unknown_bundles_are_not_counted_as_reading_depth():
    rig = make_rig()
    rig.to_active()
    rig.bundle = "mystery"
    rig.depth_alive = False
    rig.run(0.5)
    assert rig.core.mode is Mode.BLIND
    assert rig.core.faults["depth_stale"].ticks == 0


def test_a_gamepad_silent_for_exactly_its_timeout_is_not_lost():
    rig = make_rig()
    rig.gamepad_buttons = frozenset()
    rig.to_active()
    rig.now = 8.0  # binary-exact times from here on
    rig.step(0.0)
    rig.gamepad_alive = False
    assert rig.step(0.5)[1] == ()  # silent for 0.5 s, the timeout
    _, records = rig.step(1 / 64)
    assert [r.reason for r in records] == ["gamepad lost"]


def test_the_fallback_gait_steps_on_its_period_and_runs_on_after_a_stall():
    rig = make_rig()
    rig.gait.period_s = 1 / 16  # binary-exact times
    rig.to_active()
    rig.policy_alive = False
    rig.now = 8.0 - 1 / 16
    rig.step(1 / 16)  # BLIND at t = 8 s: the first step, the next one due at 8.0625
    assert rig.core.mode is Mode.BLIND and rig.core.fallback_steps == 1
    rig.step(1 / 32)
    assert rig.core.fallback_steps == 1
    rig.step(1 / 32)  # exactly due
    assert rig.core.fallback_steps == 2
    rig.step(1 / 8)  # a stall: one period late (8.1875, the step due at 8.125)
    assert rig.core.fallback_steps == 3
    rig.step(1 / 32)  # the next step is one period after the late one, not the missed one
    assert rig.core.fallback_steps == 3
    rig.step(1 / 32)
    assert rig.core.fallback_steps == 4
    rig.step(1 / 2)  # a long stall: one step, no catching up
    assert rig.core.fallback_steps == 5
    rig.step(1 / 32)
    assert rig.core.fallback_steps == 5
    rig.step(1 / 32)
    assert rig.core.fallback_steps == 6


def test_fallback_step_times_are_measured_around_each_step():
    rig = make_rig()
    rig.to_active()
    rig.policy_alive = False
    rig.run(0.2)
    assert rig.core.mode is Mode.BLIND
    for _ in range(8):
        steps = rig.core.fallback_steps
        start = time.perf_counter()
        rig.step()
        elapsed = time.perf_counter() - start
        if rig.core.fallback_steps > steps:
            assert 0.0 <= rig.core.fallback_step_s[-1] <= elapsed
    assert len(rig.core.fallback_step_s) == rig.core.fallback_steps


class LongErrorGait(FakeGait):
    def step(self, q, dq, quat_wxyz, gyro, velocity) -> np.ndarray:
        raise ValueError("x" * 400)


def test_a_fallback_gait_error_is_kept_as_its_type_and_message_cut_to_300_characters():
    core = SupervisorCore(G1, SETTINGS, fallback=LongErrorGait())
    core.register_bundle(STUDENT)
    rig = Rig(core, None)
    rig.to_active()
    rig.policy_alive = False
    rig.run(0.2)
    assert core.fallback_errors[0] == ("ValueError: " + "x" * 400)[:300]
    assert len(core.fallback_errors[0]) == 300


def test_the_report_keeps_the_first_twenty_fallback_errors():
    core = make_rig().core
    core.fallback_errors.extend(f"RuntimeError: {k}" for k in range(25))
    assert core.report()["fallback"]["errors"] == [f"RuntimeError: {k}" for k in range(20)]


def test_a_failing_fallback_gait_stands_with_the_configured_stand_gains():
    settings = dataclasses.replace(SETTINGS, stand_gains={"left_knee_joint": [150.0, 5.0]})
    rig = make_rig(settings)
    rig.to_active()
    rig.gait.fail = "nan"
    rig.policy_alive = False
    for _ in range(40):
        cmd, records = rig.step()
        if records:
            break
    assert rig.core.mode is Mode.BLIND and not rig.core._fallback_ok
    assert cmd.kp[3] == 150.0 and cmd.kd[3] == 5.0
    np.testing.assert_array_equal(np.delete(cmd.kp, 3), np.delete(G1.kp_stand, 3))


def test_stand_up_and_stand_use_the_configured_stand_gains():
    settings = dataclasses.replace(SETTINGS, stand_gains={"left_knee_joint": [150.0, 5.0]})
    rig = make_rig(settings)
    stand_up, _ = rig.step(requests=[Request.STAND_UP])
    rig.run(2.05)
    assert rig.core.mode is Mode.STAND
    stand, _ = rig.step()
    for cmd in (stand_up, stand):
        assert cmd.kp[3] == 150.0 and cmd.kd[3] == 5.0
        np.testing.assert_array_equal(np.delete(cmd.kd, 3), np.delete(G1.kd_stand, 3))


def test_damping_is_bounded_by_the_configured_stand_damping_too():
    # A stand kd lowered in config for a peer that holds the torque must bound DAMP's kd as well:
    # with the spec's kd there, the damped arms swung on such a peer before the stand-up began.
    wrist, knee = G1.joint_names.index("left_wrist_roll_joint"), G1.joint_names.index("left_knee_joint")
    settings = dataclasses.replace(SETTINGS, stand_gains={"left_wrist_roll_joint": [40.0, 0.05],
                                                          "left_knee_joint": [150.0, 1.0]})  # fmt: skip
    rig = make_rig(settings)
    damp, _ = rig.step()
    assert rig.core.mode is Mode.DAMP
    assert damp.kd[wrist] == 0.05 and damp.kd[knee] == 1.0 and not damp.kp.any()
    others = np.delete(np.arange(G1.num_joints), [wrist, knee])
    np.testing.assert_array_equal(damp.kd[others], np.minimum(SETTINGS.kd_damp, G1.kd_stand)[others])


def test_a_blind_fallback_without_a_gait_is_refused_in_so_many_words():
    with pytest.raises(ValueError, match=r"^limits\.fallback is BLIND but no fallback gait was given$"):
        SupervisorCore(G1, SETTINGS, fallback=None)


def test_the_request_log_keeps_the_first_thousand_requests_and_counts_them_all():
    core = make_rig().core
    core.tick(SupervisorInputs(0.0, robot_at(0.0), requests=((Request.STAND, "ros"),) * (REQUESTS_LOGGED + 5)))
    assert len(core.requests) == REQUESTS_LOGGED
    assert core.request_counts == {"ros:stand": REQUESTS_LOGGED + 5}


def test_a_service_estop_is_logged_as_a_request_when_it_arrives():
    rig = make_rig()
    rig.to_active()
    rig.step(estop_service=True)
    assert rig.core.requests[-1] == {
        "t": round(rig.now, 4),
        "request": "estop",
        "source": "service",
        "mode": "ACTIVE",
        "then": "DAMP",
    }
    rig.step()
    assert rig.core.request_counts["service:estop"] == 1


def test_the_report_names_every_entry_and_rounds_to_a_tenth_of_a_millisecond():
    core = make_rig().core
    dq = np.zeros(N)
    dq[0] = 0.123456 * G1.dq_max[0]
    q = G1.default_q.copy()
    q[0] = G1.q_max[0] + 0.0123456
    targets = G1.default_q.copy()
    targets[1] = G1.q_max[1] + 0.0234567
    core.tick(SupervisorInputs(0.0, robot_at(0.0)))
    core.tick(
        SupervisorInputs(
            1.23456,
            robot_at(1.23456, q=q, dq=dq),
            targets=PolicyTargets(targets, 1.23456, "walk"),
            requests=((Request.STAND_UP, "ros"),),
        )
    )
    report = core.report()
    assert set(report) == {
        "final_mode",
        "supervisor_transitions",
        "limit_clamps",
        "limit_clamps_by_kind",
        "faults",
        "time_in_mode_s",
        "ticks",
        "requests",
        "request_counts",
        "fallback",
        "max_speed_ratio",
        "max_limit_excess_rad",
        "max_target_excess_rad",
        "bundles_known",
        "unknown_bundle_ticks",
    }
    assert report["supervisor_transitions"] == [
        {"t": 1.2346, "from": "DAMP", "to": "STAND_UP", "reason": "stand up requested"}
    ]
    assert report["requests"] == [
        {"t": 1.2346, "request": "stand_up", "source": "ros", "mode": "DAMP", "then": "STAND_UP"}
    ]
    assert report["request_counts"] == {"ros:stand_up": 1}
    assert report["time_in_mode_s"]["DAMP"] == 1.2346
    assert report["ticks"] == 2
    assert report["max_speed_ratio"] == 0.1235
    assert report["max_limit_excess_rad"] == 0.0123
    assert report["max_target_excess_rad"] == 0.0235
    assert report["bundles_known"] == ["student", "walk"]
    assert report["unknown_bundle_ticks"] == 0


# ----------------------------------------------------------------------------- properties over any sequence

any_float = st.floats(allow_nan=True, allow_infinity=True)
joint_arrays = st.one_of(
    st.just(G1.default_q),
    arrays(np.float64, N, elements=st.floats(-3.0, 3.0)),
    arrays(np.float64, N, elements=any_float),
)
velocity_arrays = st.one_of(
    st.just(np.zeros(N)),
    arrays(np.float64, N, elements=st.floats(-60.0, 60.0)),
    arrays(np.float64, N, elements=any_float),
)
quats = st.one_of(
    st.just(UPRIGHT),
    arrays(np.float64, 4, elements=st.floats(-1.0, 1.0)),
    arrays(np.float64, 4, elements=any_float),
)
tick_events = st.fixed_dictionaries(
    {
        "dt": st.sampled_from([0.0, 0.005, 0.05, 0.3, 1.0, 2.5]),
        "q": joint_arrays,
        "dq": velocity_arrays,
        "quat": quats,
        "lowstate_age": st.sampled_from([0.002, 0.5, np.inf, np.nan]),
        "targets": st.one_of(st.none(), joint_arrays),
        "target_age": st.sampled_from([0.003, 0.5, np.nan]),
        "bundle": st.sampled_from(["", "student", "walk", "mystery"]),
        "depth_age": st.sampled_from([None, 0.07, 1.0]),
        "requests": st.lists(st.sampled_from(list(Request)), max_size=3),
        "estop_service": st.booleans(),
        "remote_keys": st.frozensets(st.sampled_from(["L1", "Up", "R1", "A", "X", "L2", "B"])),
        "gamepad": st.one_of(st.none(), st.tuples(st.frozensets(st.integers(0, 9)), st.sampled_from([0.0, 1.0]))),
        "command": st.one_of(st.none(), arrays(np.float64, 3, elements=any_float)),
        "gait_fails": st.sampled_from([None, None, "nan", "raise"]),
    }
)


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(tick_events, min_size=1, max_size=40))
def test_no_sequence_of_inputs_gets_a_command_past_the_limits(events):
    """Whatever the robot, the policy, the camera and the operator do: every command is finite and within
    the position, velocity and effort limits, its torque estimate too (or it is damping); DAMP is left
    only on a stand-up request; an e-stop from any source gives DAMP and a damping command in that tick."""
    gait = FakeGait()
    core = SupervisorCore(G1, SETTINGS, fallback=gait, default_gains=DEFAULT)
    core.register_bundle(STUDENT)
    core.register_bundle(WALK)
    lo, hi = position_bounds(G1, SETTINGS.joint_margin_rad)
    now = 0.0
    for e in events:
        now += e["dt"]
        gait.fail = e["gait_fails"]
        targets = None if e["targets"] is None else PolicyTargets(e["targets"], now - e["target_age"], e["bundle"])
        gamepad = None if e["gamepad"] is None else GamepadReading(e["gamepad"][0], now - e["gamepad"][1])
        inputs = SupervisorInputs(
            now_s=now,
            robot=RobotReading(e["q"], e["dq"], e["quat"], np.zeros(3), now - e["lowstate_age"], e["remote_keys"]),
            targets=targets,
            depth_stamp_s=None if e["depth_age"] is None else now - e["depth_age"],
            command=None if e["command"] is None else VelocityCommand(e["command"], now),
            gamepad=gamepad,
            requests=tuple((r, "ros") for r in e["requests"]),
            estop_service=e["estop_service"],
        )
        before = core.mode
        cmd, records = core.tick(inputs)
        assert len(records) <= 1
        assert cmd.is_finite()
        assert np.all(cmd.q >= lo) and np.all(cmd.q <= hi)
        assert np.all(np.abs(cmd.dq) <= G1.dq_max)
        assert np.all(np.abs(cmd.tau) <= G1.tau_max)
        assert np.all(cmd.kp >= 0) and np.all(cmd.kd >= 0)
        if np.all(np.isfinite(e["q"])) and np.all(np.isfinite(e["dq"])):
            est = torque_estimate(cmd, e["q"], e["dq"])
            assert np.all(np.abs(est) <= G1.tau_max * (1 + 1e-12))
        else:
            assert is_damping(cmd)
        if before is Mode.DAMP and core.mode is not Mode.DAMP:
            stand_up_pressed = {"L1", "Up"} <= e["remote_keys"] or (
                e["gamepad"] is not None and {7, 0} <= e["gamepad"][0]
            )
            assert Request.STAND_UP in e["requests"] or stand_up_pressed
            assert core.mode is Mode.STAND_UP
        estop = (
            e["estop_service"]
            or {"L2", "B"} <= e["remote_keys"]
            or (e["gamepad"] is not None and {4, 5} <= e["gamepad"][0])
        )
        if estop:
            assert core.mode is Mode.DAMP
            assert is_damping(cmd)
    json.dumps(core.report())  # supervisor.json must always serialise
