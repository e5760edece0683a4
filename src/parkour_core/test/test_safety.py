"""The supervisor's transition table: one hand-written test per row, plus properties over any input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parkour_core.robots import G1
from parkour_core.safety import (
    CHECKS,
    TRANSITIONS,
    EstopSource,
    Mode,
    Request,
    SafetyLimits,
    TickInputs,
    _degrade_to,
    estop_from,
    joint_position_ok,
    joint_velocity_ok,
    next_mode,
    requested,
    robot_fault,
    strongest_request,
    targets_unusable,
)

LIMITS = SafetyLimits(
    lowstate_timeout_s=0.1,
    target_timeout_s=0.1,
    max_tilt_rad=0.8,
    depth_timeout_s=0.25,
    blind_resume_after_s=0.5,
    command_timeout_s=0.5,
    fallback=Mode.BLIND,
)
LIMITS_STAND = dataclasses.replace(LIMITS, fallback=Mode.STAND)
OK = TickInputs(
    lowstate_age_s=0.005,
    target_age_s=0.01,
    tilt_rad=0.05,
    state_finite=True,
    targets_finite=True,
    stand_up_progress=0.0,
    depth_age_s=0.05,
    uses_depth=True,
    active_inputs_fresh_for_s=10.0,
    command_age_s=0.01,
)
UP = [Mode.STAND_UP, Mode.STAND, Mode.ACTIVE, Mode.BLIND]
PROPERTY = settings(max_examples=300, deadline=None, database=None)


def ok(**changes) -> TickInputs:
    return dataclasses.replace(OK, **changes)


# ----------------------------------------------------------------------------- faults -> DAMP

FAULTS = {
    "e-stop service": (ok(estop=frozenset({EstopSource.SERVICE})), "e-stop from the ROS service"),
    "e-stop remote": (ok(estop=frozenset({EstopSource.REMOTE})), "e-stop from the Unitree remote"),
    "e-stop gamepad": (ok(estop=frozenset({EstopSource.GAMEPAD})), "e-stop from the gamepad"),
    "nan state": (ok(state_finite=False), "robot state has NaN/inf"),
    "stale lowstate": (ok(lowstate_age_s=0.2), "lowstate stale"),
    "stale lowstate (never received)": (ok(lowstate_age_s=float("inf")), "lowstate stale"),
    "stale lowstate (NaN age)": (ok(lowstate_age_s=float("nan")), "lowstate stale"),
    "tilt": (ok(tilt_rad=0.81), "base tilt beyond limit (fall)"),
    "tilt NaN": (ok(tilt_rad=float("nan")), "base tilt beyond limit (fall)"),
    "joint position": (ok(joint_position_ok=False), "joint position beyond limit"),
    "joint velocity": (ok(joint_velocity_ok=False), "joint velocity beyond limit"),
    "damp request": (ok(request=Request.DAMP), "damp requested"),
}


@pytest.mark.parametrize("mode", UP)
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_faults_lead_to_damp(mode, fault):
    inputs, reason = FAULTS[fault]
    assert next_mode(mode, inputs, LIMITS) == (Mode.DAMP, reason)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_faults_keep_damp_without_a_new_transition(fault):
    inputs, _ = FAULTS[fault]
    assert next_mode(Mode.DAMP, inputs, LIMITS) == (Mode.DAMP, None)


@pytest.mark.parametrize("mode", UP)
@pytest.mark.parametrize("req", list(Request))
def test_faults_outrank_every_request(mode, req):
    inputs = ok(state_finite=False, request=req, stand_up_progress=1.0)
    assert next_mode(mode, inputs, LIMITS)[0] is Mode.DAMP


def test_estop_is_the_first_reason_given():
    both = ok(estop=frozenset({EstopSource.GAMEPAD}), state_finite=False, tilt_rad=2.0)
    assert next_mode(Mode.ACTIVE, both, LIMITS) == (Mode.DAMP, "e-stop from the gamepad")


@pytest.mark.parametrize("mode", UP)
def test_limits_are_strict(mode):
    # At exactly the limit nothing is stale or tilted.
    inputs = ok(lowstate_age_s=0.1, target_age_s=0.1, tilt_rad=0.8, depth_age_s=0.25, request=Request.NONE)
    expected = Mode.ACTIVE if mode is Mode.BLIND else mode  # BLIND resumes: everything is fresh
    assert next_mode(mode, inputs, LIMITS)[0] is expected


# ----------------------------------------------------------------------------- degradations of ACTIVE/BLIND


def test_gamepad_lost_stops_walking_on_the_fallback_gait():
    assert next_mode(Mode.ACTIVE, ok(gamepad_lost=True), LIMITS) == (Mode.BLIND, "gamepad lost")
    assert next_mode(Mode.BLIND, ok(gamepad_lost=True), LIMITS) == (Mode.BLIND, None)  # no resume


def test_gamepad_lost_without_a_fallback_gait_stands():
    limits = dataclasses.replace(LIMITS, fallback=Mode.STAND)
    assert next_mode(Mode.ACTIVE, ok(gamepad_lost=True), limits) == (Mode.STAND, "gamepad lost")


@pytest.mark.parametrize("mode", [Mode.STAND_UP, Mode.STAND, Mode.DAMP])
def test_gamepad_lost_does_not_move_a_robot_that_is_not_walking(mode):
    assert next_mode(mode, ok(gamepad_lost=True), LIMITS) == (mode, None)


def test_blind_with_a_failed_fallback_stands():
    assert next_mode(Mode.BLIND, ok(fallback_ok=False), LIMITS) == (Mode.STAND, "fallback gait output not finite")
    assert next_mode(Mode.ACTIVE, ok(fallback_ok=False), LIMITS) == (Mode.ACTIVE, None)


@pytest.mark.parametrize("mode", [Mode.ACTIVE, Mode.BLIND])
def test_stand_request_stops_walking(mode):
    assert next_mode(mode, ok(request=Request.STAND), LIMITS) == (Mode.STAND, "stand requested")


@pytest.mark.parametrize("mode", [Mode.DAMP, Mode.STAND_UP])
def test_stand_request_is_ignored_below_stand(mode):
    assert next_mode(mode, ok(request=Request.STAND), LIMITS) == (mode, None)


STALE_TARGETS = [
    ok(target_age_s=0.11),
    ok(target_age_s=float("inf")),
    ok(target_age_s=float("nan")),
    ok(targets_finite=False),
]


@pytest.mark.parametrize("bad", STALE_TARGETS)
def test_active_with_bad_targets_goes_blind(bad):
    assert next_mode(Mode.ACTIVE, bad, LIMITS) == (Mode.BLIND, "policy targets stale or not finite")


@pytest.mark.parametrize("bad", STALE_TARGETS)
def test_active_with_bad_targets_stands_when_the_fallback_is_stand(bad):
    assert next_mode(Mode.ACTIVE, bad, LIMITS_STAND) == (Mode.STAND, "policy targets stale or not finite")


@pytest.mark.parametrize("depth_age", [0.26, float("inf"), float("nan")])
def test_active_with_stale_depth_goes_blind(depth_age):
    assert next_mode(Mode.ACTIVE, ok(depth_age_s=depth_age), LIMITS) == (Mode.BLIND, "depth stale")
    assert next_mode(Mode.ACTIVE, ok(depth_age_s=depth_age), LIMITS_STAND) == (Mode.STAND, "depth stale")


def test_stale_depth_does_not_matter_to_a_blind_bundle():
    assert next_mode(Mode.ACTIVE, ok(depth_age_s=float("inf"), uses_depth=False), LIMITS) == (Mode.ACTIVE, None)


def test_stand_request_outranks_stale_targets():
    assert next_mode(Mode.ACTIVE, ok(target_age_s=1.0, request=Request.STAND), LIMITS) == (
        Mode.STAND,
        "stand requested",
    )


def test_active_stays_active_with_fresh_inputs():
    for request in (Request.NONE, Request.ACTIVATE, Request.STAND_UP):
        assert next_mode(Mode.ACTIVE, ok(request=request), LIMITS) == (Mode.ACTIVE, None)


# ----------------------------------------------------------------------------- BLIND -> ACTIVE


def test_blind_resumes_once_targets_and_depth_have_been_fresh_long_enough():
    assert next_mode(Mode.BLIND, ok(active_inputs_fresh_for_s=0.5), LIMITS) == (
        Mode.ACTIVE,
        "policy targets and depth fresh again",
    )
    assert next_mode(Mode.BLIND, ok(active_inputs_fresh_for_s=0.49), LIMITS) == (Mode.BLIND, None)


@pytest.mark.parametrize(
    "bad",
    [ok(depth_age_s=0.3), ok(target_age_s=0.2), ok(targets_finite=False), ok(active_inputs_fresh_for_s=float("nan"))],
)
def test_blind_stays_blind_while_anything_is_stale(bad):
    assert next_mode(Mode.BLIND, bad, LIMITS) == (Mode.BLIND, None)


def test_blind_resumes_a_blind_bundle_whatever_the_depth():
    inputs = ok(uses_depth=False, depth_age_s=float("inf"))
    assert next_mode(Mode.BLIND, inputs, LIMITS)[0] is Mode.ACTIVE


# ----------------------------------------------------------------------------- requests


def test_damp_to_stand_up_on_request_with_a_healthy_robot():
    assert next_mode(Mode.DAMP, ok(request=Request.STAND_UP), LIMITS) == (Mode.STAND_UP, "stand up requested")


@pytest.mark.parametrize("fault", sorted(set(FAULTS) - {"damp request"}))
def test_damp_refuses_stand_up_while_any_fault_is_present(fault):
    inputs, _ = FAULTS[fault]
    assert next_mode(Mode.DAMP, dataclasses.replace(inputs, request=Request.STAND_UP), LIMITS) == (Mode.DAMP, None)


@pytest.mark.parametrize("req", [Request.NONE, Request.ACTIVATE, Request.STAND, Request.DAMP])
def test_damp_stays_damp_without_stand_up_request(req):
    assert next_mode(Mode.DAMP, ok(request=req), LIMITS) == (Mode.DAMP, None)


def test_stand_up_does_not_need_the_policy():
    inputs = ok(request=Request.STAND_UP, target_age_s=float("inf"), depth_age_s=float("inf"), gamepad_lost=True)
    assert next_mode(Mode.DAMP, inputs, LIMITS)[0] is Mode.STAND_UP


def test_stand_up_completes_at_progress_one():
    assert next_mode(Mode.STAND_UP, ok(stand_up_progress=0.999), LIMITS) == (Mode.STAND_UP, None)
    assert next_mode(Mode.STAND_UP, ok(stand_up_progress=1.0), LIMITS) == (Mode.STAND, "stand-up complete")
    assert next_mode(Mode.STAND_UP, ok(stand_up_progress=float("nan")), LIMITS) == (Mode.STAND_UP, None)


def test_stand_up_ignores_activate():
    inputs = ok(stand_up_progress=0.5, request=Request.ACTIVATE)
    assert next_mode(Mode.STAND_UP, inputs, LIMITS) == (Mode.STAND_UP, None)


def test_stand_activates_with_fresh_targets_and_depth():
    assert next_mode(Mode.STAND, ok(request=Request.ACTIVATE), LIMITS) == (Mode.ACTIVE, "activate requested")


@pytest.mark.parametrize(
    "bad",
    [*STALE_TARGETS, ok(depth_age_s=0.3), ok(depth_age_s=float("inf")), ok(gamepad_lost=True)],
)
def test_stand_refuses_activation_unless_everything_is_ready(bad):
    assert next_mode(Mode.STAND, dataclasses.replace(bad, request=Request.ACTIVATE), LIMITS) == (Mode.STAND, None)


def test_stand_activates_a_blind_bundle_without_depth():
    inputs = ok(request=Request.ACTIVATE, uses_depth=False, depth_age_s=float("inf"))
    assert next_mode(Mode.STAND, inputs, LIMITS)[0] is Mode.ACTIVE


def test_stand_without_request_stays():
    assert next_mode(Mode.STAND, OK, LIMITS) == (Mode.STAND, None)


def test_strongest_request_is_the_most_conservative():
    assert strongest_request([Request.ACTIVATE, Request.DAMP, Request.STAND_UP]) is Request.DAMP
    assert strongest_request([Request.ACTIVATE, Request.STAND]) is Request.STAND
    assert strongest_request([Request.ACTIVATE, Request.STAND_UP]) is Request.STAND_UP
    assert strongest_request([]) is Request.NONE


def test_fallback_must_be_blind_or_stand():
    with pytest.raises(ValueError, match="fallback"):
        dataclasses.replace(LIMITS, fallback=Mode.ACTIVE)


# ----------------------------------------------------------------------------- the guard factories
# The table builds its guards once, at import: these call the factories themselves.


@pytest.mark.parametrize("source", list(EstopSource))
def test_an_estop_guard_holds_exactly_while_its_own_source_is_held(source):
    guard = estop_from(source)
    assert guard(ok(estop=frozenset({source})), LIMITS)
    assert guard(ok(estop=frozenset(EstopSource)), LIMITS)
    assert not guard(ok(estop=frozenset(set(EstopSource) - {source})), LIMITS)
    assert not guard(OK, LIMITS)


@pytest.mark.parametrize("req", list(Request))
def test_a_request_guard_holds_only_for_its_own_request(req):
    guard = requested(req)
    assert [guard(ok(request=r), LIMITS) for r in Request] == [r is req for r in Request]


@pytest.mark.parametrize("fallback", [Mode.BLIND, Mode.STAND])
def test_a_degradation_needs_both_its_fallback_and_its_cause(fallback):
    guard = _degrade_to(fallback, targets_unusable)
    other = LIMITS_STAND if fallback is Mode.BLIND else LIMITS
    this = LIMITS if fallback is Mode.BLIND else LIMITS_STAND
    assert guard(ok(target_age_s=1.0), this)
    assert not guard(OK, this)  # no cause
    assert not guard(ok(target_age_s=1.0), other)  # the other fallback's row


# ----------------------------------------------------------------------------- the table's shape


def test_only_one_row_leaves_damp_and_it_goes_to_stand_up():
    rows = [t for t in TRANSITIONS if Mode.DAMP in t.sources]
    assert [(t.target, t.reason) for t in rows] == [(Mode.STAND_UP, "stand up requested")]


def test_every_row_leading_to_damp_comes_before_every_other_row():
    targets = [t.target for t in TRANSITIONS]
    last_damp = max(i for i, m in enumerate(targets) if m is Mode.DAMP)
    first_other = min(i for i, m in enumerate(targets) if m is not Mode.DAMP)
    assert last_damp < first_other


def test_every_check_has_a_unique_name():
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))


# ----------------------------------------------------------------------------- state checks


def test_joint_position_check_has_a_tolerance_beyond_the_limits():
    q = G1.default_q.copy()
    assert joint_position_ok(G1, q, 0.1)
    q[3] = G1.q_max[3] + 0.1
    assert joint_position_ok(G1, q, 0.1)
    q[3] = G1.q_max[3] + 0.11
    assert not joint_position_ok(G1, q, 0.1)
    q[3] = G1.q_min[3] - 0.1
    assert joint_position_ok(G1, q, 0.1)
    q[3] = G1.q_min[3] - 0.11
    assert not joint_position_ok(G1, q, 0.1)
    q[3] = np.nan
    assert not joint_position_ok(G1, q, 0.1)


def test_joint_velocity_check_scales_each_joints_limit():
    dq = np.zeros(G1.num_joints)
    dq[20] = 1.5 * G1.dq_max[20]  # wrist pitch, 22 rad/s
    assert joint_velocity_ok(G1, dq, 1.5)
    dq[20] = -1.51 * G1.dq_max[20]
    assert not joint_velocity_ok(G1, dq, 1.5)
    dq[20] = np.inf
    assert not joint_velocity_ok(G1, dq, 1.5)


def test_joint_velocity_check_reads_integer_speeds_as_numbers():
    # abs() of the most negative int64 is itself: the check must convert before taking it.
    assert not joint_velocity_ok(G1, np.full(G1.num_joints, np.iinfo(np.int64).min), 1.5)
    assert joint_velocity_ok(G1, np.zeros(G1.num_joints, dtype=np.int64), 1.5)


# ----------------------------------------------------------------------------- properties over any input

any_float = st.floats(allow_nan=True, allow_infinity=True)
estops = st.frozensets(st.sampled_from(list(EstopSource)))
tick_inputs = st.builds(
    TickInputs,
    lowstate_age_s=any_float,
    target_age_s=any_float,
    tilt_rad=any_float,
    state_finite=st.booleans(),
    targets_finite=st.booleans(),
    stand_up_progress=any_float,
    request=st.sampled_from(list(Request)),
    estop=estops,
    depth_age_s=any_float,
    uses_depth=st.booleans(),
    joint_position_ok=st.booleans(),
    joint_velocity_ok=st.booleans(),
    gamepad_lost=st.booleans(),
    fallback_ok=st.booleans(),
    active_inputs_fresh_for_s=any_float,
    command_age_s=any_float,
)
limits = st.builds(
    SafetyLimits,
    lowstate_timeout_s=st.floats(0.0, 10.0),
    target_timeout_s=st.floats(0.0, 10.0),
    max_tilt_rad=st.floats(0.0, 3.2),
    depth_timeout_s=st.floats(0.0, 10.0),
    blind_resume_after_s=st.floats(0.0, 10.0),
    command_timeout_s=st.floats(0.0, 10.0),
    fallback=st.sampled_from([Mode.BLIND, Mode.STAND]),
)
modes = st.sampled_from(list(Mode))


@PROPERTY
@given(tick_inputs, limits, st.sampled_from([r for r in Request if r is not Request.STAND_UP]))
def test_damp_is_never_left_without_a_stand_up_request(inputs, lim, request):
    inputs = dataclasses.replace(inputs, request=request)
    assert next_mode(Mode.DAMP, inputs, lim) == (Mode.DAMP, None)


@PROPERTY
@given(tick_inputs, limits)
def test_damp_is_left_only_for_stand_up_and_only_on_a_healthy_robot(inputs, lim):
    mode, _ = next_mode(Mode.DAMP, inputs, lim)
    if mode is not Mode.DAMP:
        assert mode is Mode.STAND_UP
        assert inputs.request is Request.STAND_UP
        assert not robot_fault(inputs, lim)


@PROPERTY
@given(tick_inputs, limits, modes, st.sampled_from(list(EstopSource)))
def test_estop_from_any_source_in_any_mode_damps_this_tick(inputs, lim, mode, source):
    inputs = dataclasses.replace(inputs, estop=inputs.estop | {source})
    assert next_mode(mode, inputs, lim)[0] is Mode.DAMP


@PROPERTY
@given(tick_inputs, limits, modes)
def test_no_request_outranks_a_fault(inputs, lim, mode):
    if robot_fault(inputs, lim):
        assert next_mode(mode, inputs, lim)[0] is Mode.DAMP


@PROPERTY
@given(tick_inputs, limits, modes)
def test_active_is_entered_only_from_stand_on_request_or_from_blind_when_ready(inputs, lim, mode):
    new, _ = next_mode(mode, inputs, lim)
    if new is Mode.ACTIVE and mode is not Mode.ACTIVE:
        assert not robot_fault(inputs, lim)
        assert not inputs.gamepad_lost
        assert not (inputs.target_age_s > lim.target_timeout_s) and inputs.targets_finite
        assert mode in (Mode.STAND, Mode.BLIND)
        if mode is Mode.STAND:
            assert inputs.request is Request.ACTIVATE


@PROPERTY
@given(tick_inputs, limits, modes)
def test_blind_is_entered_only_from_active_and_only_when_the_fallback_is_blind(inputs, lim, mode):
    new, _ = next_mode(mode, inputs, lim)
    if new is Mode.BLIND and mode is not Mode.BLIND:
        assert mode is Mode.ACTIVE
        assert lim.fallback is Mode.BLIND
