from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from parkour_core.robots import G1
from parkour_core.safety import (
    JointCommand,
    Mode,
    Request,
    SafetyLimits,
    TickInputs,
    clamp_command,
    damp_command,
    next_mode,
    stand_command,
    stand_up_command,
)

N = G1.num_joints
LIMITS = SafetyLimits(lowstate_timeout_s=0.1, target_timeout_s=0.1, max_tilt_rad=0.8)
OK = TickInputs(
    lowstate_age_s=0.005,
    target_age_s=0.01,
    tilt_rad=0.05,
    state_finite=True,
    targets_finite=True,
    stand_up_progress=0.0,
)
PROPERTY = settings(max_examples=200, deadline=None, database=None)
# Extreme inputs overflow inside clamp_command (inf or NaN, then clipped or discarded): expected, not noise.
OVERFLOW_OK = pytest.mark.filterwarnings("ignore::RuntimeWarning")

any_float = st.floats(allow_nan=True, allow_infinity=True)
any_array = arrays(np.float64, N, elements=any_float)


def ok(**changes) -> TickInputs:
    return dataclasses.replace(OK, **changes)


def command(q=None, dq=None, kp=None, kd=None, tau=None) -> JointCommand:
    base = stand_command(G1)
    return JointCommand(
        q=base.q if q is None else np.asarray(q, dtype=np.float64),
        dq=np.zeros(N) if dq is None else np.asarray(dq, dtype=np.float64),
        kp=base.kp if kp is None else np.asarray(kp, dtype=np.float64),
        kd=base.kd if kd is None else np.asarray(kd, dtype=np.float64),
        tau=np.zeros(N) if tau is None else np.asarray(tau, dtype=np.float64),
    )


def torque_estimate(cmd: JointCommand, q, dq) -> np.ndarray:
    return cmd.kp * (cmd.q - q) + cmd.kd * (cmd.dq - dq) + cmd.tau


# ----------------------------------------------------------------------------- state machine


FAULTS = {
    "stale lowstate": (ok(lowstate_age_s=0.2), "lowstate stale"),
    "stale lowstate (never received)": (ok(lowstate_age_s=float("inf")), "lowstate stale"),
    "tilt": (ok(tilt_rad=0.81), "base tilt beyond limit (fall)"),
    "nan state": (ok(state_finite=False), "robot state has NaN/inf"),
    "damp request": (ok(request=Request.DAMP), "damp requested"),
}


@pytest.mark.parametrize("mode", [Mode.STAND_UP, Mode.STAND, Mode.ACTIVE])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_faults_lead_to_damp(mode, fault):
    inputs, reason = FAULTS[fault]
    assert next_mode(mode, inputs, LIMITS) == (Mode.DAMP, reason)


@pytest.mark.parametrize("mode", [Mode.STAND_UP, Mode.STAND, Mode.ACTIVE])
@pytest.mark.parametrize("req", list(Request))
def test_faults_outrank_every_request(mode, req):
    inputs = ok(state_finite=False, request=req, stand_up_progress=1.0)
    assert next_mode(mode, inputs, LIMITS)[0] is Mode.DAMP


@pytest.mark.parametrize("mode", [Mode.STAND_UP, Mode.STAND, Mode.ACTIVE])
def test_limits_are_strict(mode):
    # At exactly the limit nothing is stale or tilted.
    inputs = ok(lowstate_age_s=0.1, target_age_s=0.1, tilt_rad=0.8)
    assert next_mode(mode, inputs, LIMITS) == (mode, None)


@pytest.mark.parametrize("req", [Request.NONE, Request.ACTIVATE, Request.DAMP])
def test_damp_stays_damp_without_stand_up_request(req):
    assert next_mode(Mode.DAMP, ok(request=req), LIMITS) == (Mode.DAMP, None)


def test_damp_to_stand_up_on_request_with_fresh_state():
    assert next_mode(Mode.DAMP, ok(request=Request.STAND_UP), LIMITS) == (Mode.STAND_UP, "stand up requested")


@pytest.mark.parametrize("bad", [ok(lowstate_age_s=0.5), ok(state_finite=False)])
def test_damp_refuses_stand_up_with_bad_state(bad):
    assert next_mode(Mode.DAMP, dataclasses.replace(bad, request=Request.STAND_UP), LIMITS) == (Mode.DAMP, None)


def test_stand_up_completes_at_progress_one():
    assert next_mode(Mode.STAND_UP, ok(stand_up_progress=0.999), LIMITS) == (Mode.STAND_UP, None)
    assert next_mode(Mode.STAND_UP, ok(stand_up_progress=1.0), LIMITS) == (Mode.STAND, "stand-up complete")


def test_stand_up_ignores_activate():
    assert next_mode(Mode.STAND_UP, ok(stand_up_progress=0.5, request=Request.ACTIVATE), LIMITS) == (
        Mode.STAND_UP,
        None,
    )


def test_stand_activates_with_fresh_targets():
    assert next_mode(Mode.STAND, ok(request=Request.ACTIVATE), LIMITS) == (Mode.ACTIVE, "activate requested")


@pytest.mark.parametrize("bad", [ok(target_age_s=0.11), ok(target_age_s=float("inf")), ok(targets_finite=False)])
def test_stand_stays_with_stale_or_bad_targets(bad):
    assert next_mode(Mode.STAND, dataclasses.replace(bad, request=Request.ACTIVATE), LIMITS) == (Mode.STAND, None)


def test_stand_without_request_stays():
    assert next_mode(Mode.STAND, OK, LIMITS) == (Mode.STAND, None)


@pytest.mark.parametrize("bad", [ok(target_age_s=0.11), ok(targets_finite=False)])
def test_active_falls_back_to_stand_on_stale_targets(bad):
    assert next_mode(Mode.ACTIVE, bad, LIMITS) == (Mode.STAND, "policy targets stale or not finite")


def test_active_stays_active_with_fresh_targets():
    for request in (Request.NONE, Request.ACTIVATE, Request.STAND_UP):
        assert next_mode(Mode.ACTIVE, ok(request=request), LIMITS) == (Mode.ACTIVE, None)


tick_inputs = st.builds(
    TickInputs,
    lowstate_age_s=any_float,
    target_age_s=any_float,
    tilt_rad=any_float,
    state_finite=st.booleans(),
    targets_finite=st.booleans(),
    stand_up_progress=any_float,
    request=st.sampled_from([Request.NONE, Request.ACTIVATE, Request.DAMP]),
)
limits = st.builds(
    SafetyLimits,
    lowstate_timeout_s=st.floats(0.0, 10.0),
    target_timeout_s=st.floats(0.0, 10.0),
    max_tilt_rad=st.floats(0.0, 3.2),
)


@PROPERTY
@given(tick_inputs, limits)
def test_damp_is_never_left_without_stand_up_request(inputs, lim):
    assert next_mode(Mode.DAMP, inputs, lim) == (Mode.DAMP, None)


@PROPERTY
@given(tick_inputs, limits, st.sampled_from([Mode.STAND_UP, Mode.STAND, Mode.ACTIVE]))
def test_non_finite_state_always_damps(inputs, lim, mode):
    inputs = dataclasses.replace(inputs, state_finite=False)
    assert next_mode(mode, inputs, lim)[0] is Mode.DAMP


# ----------------------------------------------------------------------------- commands


def test_stand_up_command_endpoints():
    q_start = np.linspace(-0.3, 0.3, N)
    start = stand_up_command(G1, q_start, 0.0)
    np.testing.assert_allclose(start.q, q_start)
    end = stand_up_command(G1, q_start, 1.0)
    np.testing.assert_allclose(end.q, G1.default_q)
    for c in (start, end):
        np.testing.assert_array_equal(c.kp, G1.kp_stand)
        np.testing.assert_array_equal(c.kd, G1.kd_stand)
        np.testing.assert_array_equal(c.dq, np.zeros(N))
        np.testing.assert_array_equal(c.tau, np.zeros(N))


def test_stand_up_command_smoothstep_and_clipping():
    q_start = np.zeros(N)
    mid = stand_up_command(G1, q_start, 0.5)
    np.testing.assert_allclose(mid.q, 0.5 * G1.default_q)
    quarter = stand_up_command(G1, q_start, 0.25)
    np.testing.assert_allclose(quarter.q, 0.15625 * G1.default_q)  # 3s^2 - 2s^3 at s = 0.25
    np.testing.assert_allclose(stand_up_command(G1, q_start, -1.0).q, q_start)
    np.testing.assert_allclose(stand_up_command(G1, q_start, 5.0).q, G1.default_q)


def test_stand_up_command_does_not_alias_spec_arrays():
    c = stand_command(G1)
    c.kp[:] = 0.0
    assert np.all(G1.kp_stand > 0)


def test_damp_command():
    c = damp_command(G1, 3.0)
    np.testing.assert_array_equal(c.kp, np.zeros(N))
    np.testing.assert_array_equal(c.kd, np.full(N, 3.0))
    np.testing.assert_array_equal(c.tau, np.zeros(N))
    assert c.is_finite()


def test_clamp_passes_a_safe_command_unchanged():
    cmd = stand_command(G1)
    out, clamps = clamp_command(G1, cmd, G1.default_q, np.zeros(N))
    assert clamps == 0
    np.testing.assert_array_equal(out.q, cmd.q)
    np.testing.assert_array_equal(out.kp, cmd.kp)


def test_clamp_position_target_to_joint_limits():
    q = G1.default_q.copy()
    q[3] = G1.q_max[3] + 1.0
    q[4] = G1.q_min[4] - 1.0
    out, clamps = clamp_command(G1, command(q=q, kp=np.zeros(N)), G1.default_q, np.zeros(N))
    assert out.q[3] == G1.q_max[3]
    assert out.q[4] == G1.q_min[4]
    assert clamps == 2


def test_clamp_feed_forward_and_negative_gains():
    tau = np.zeros(N)
    tau[0] = 1e4
    tau[1] = -1e4
    kp = G1.kp_stand.copy()
    kp[2] = -5.0
    out, clamps = clamp_command(G1, command(tau=tau, kp=kp, kd=-G1.kd_stand), G1.default_q, np.zeros(N))
    assert out.tau[0] == G1.tau_max[0] and out.tau[1] == -G1.tau_max[1]
    assert out.kp[2] == 0.0 and np.all(out.kd == 0.0)
    assert clamps == 2


def test_clamp_pulls_target_in_to_keep_pd_torque_within_limit():
    q_target = G1.default_q.copy()
    q_target[3] += 1.0  # knee: kp 200 * 1 rad = 200 Nm > 139 Nm
    out, clamps = clamp_command(G1, command(q=q_target), G1.default_q, np.zeros(N))
    assert clamps == 1
    assert out.q[3] == pytest.approx(G1.default_q[3] + G1.tau_max[3] / G1.kp_stand[3])
    assert torque_estimate(out, G1.default_q, np.zeros(N))[3] == pytest.approx(G1.tau_max[3])


@pytest.mark.parametrize("field", ["q", "dq", "kp", "kd", "tau"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_command_becomes_damping(field, bad):
    cmd = stand_command(G1)
    getattr(cmd, field)[5] = bad
    out, clamps = clamp_command(G1, cmd, G1.default_q, np.zeros(N))
    assert clamps == N
    np.testing.assert_array_equal(out.kp, np.zeros(N))
    assert np.all(out.kd > 0)
    assert out.is_finite()


def check_clamped(out: JointCommand) -> None:
    assert out.is_finite()
    assert np.all(out.q >= G1.q_min) and np.all(out.q <= G1.q_max)
    assert np.all(np.abs(out.tau) <= G1.tau_max)
    assert np.all(out.kp >= 0) and np.all(out.kd >= 0)


finite_state = arrays(np.float64, N, elements=st.floats(-1e6, 1e6))


@OVERFLOW_OK
@PROPERTY
@given(any_array, any_array, any_array, any_array, any_array, finite_state, finite_state)
def test_clamp_output_always_within_limits_for_any_command(q_t, dq_t, kp, kd, tau, q, dq):
    cmd = JointCommand(q_t, dq_t, kp, kd, tau)
    out, clamps = clamp_command(G1, cmd, q, dq)
    check_clamped(out)
    assert clamps in range(3 * N + 1)  # each joint: q, tau_ff and the torque estimate
    if not cmd.is_finite():
        np.testing.assert_array_equal(out.kp, np.zeros(N))
        assert clamps == N


@OVERFLOW_OK
@PROPERTY
@given(any_array, any_array)
# q = -inf: the torque estimate is +inf, so the target is "fixed" to q + allowed/kp; allowed/kp overflows
# to +inf (tiny kp 5e-324 with dq = 0, or kp 0.5 with kd*(dq_t - dq) = -1e308) and -inf + inf is NaN.
@example(q=np.full(N, -np.inf), dq=np.zeros(N)).via("discovered failure")
@example(q=np.full(N, -np.inf), dq=np.full(N, 1e308)).via("discovered failure")
def test_clamp_output_always_finite_for_any_state(q, dq):
    # "A non-finite command becomes damping: never pass NaN to the motors." The state is not
    # checked by clamp_command; whatever it holds, the command out must stay finite and in limits.
    for kp in (G1.kp_stand, np.full(N, 5e-324), np.full(N, 0.5)):
        out, _ = clamp_command(G1, command(kp=kp, kd=np.ones(N)), q, dq)
        check_clamped(out)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_clamp_output_finite_for_one_bad_state_value_with_stand_gains(bad):
    # With ordinary gains and an otherwise normal state, a NaN/inf reading leaves the command finite.
    q, dq = G1.default_q.copy(), np.zeros(N)
    q[3] = bad
    dq[9] = bad
    out, _ = clamp_command(G1, stand_command(G1), q, dq)
    check_clamped(out)


realistic = {
    "q_t": arrays(np.float64, N, elements=st.floats(-5.0, 5.0)),
    "dq_t": arrays(np.float64, N, elements=st.floats(-50.0, 50.0)),
    "kp": arrays(np.float64, N, elements=st.floats(0.0, 1000.0)),
    "kd": arrays(np.float64, N, elements=st.floats(0.0, 100.0)),
    "tau": arrays(np.float64, N, elements=st.floats(-300.0, 300.0)),
    "u": arrays(np.float64, N, elements=st.floats(0.0, 1.0)),
    "dq": arrays(np.float64, N, elements=st.floats(-50.0, 50.0)),
}


@OVERFLOW_OK
@PROPERTY
@given(**realistic)
def test_clamp_keeps_pd_torque_estimate_within_limit(q_t, dq_t, kp, kd, tau, u, dq):
    """What clamp_command guarantees, per joint: if the current q is inside the joint limits and the
    part of the estimate that the position target cannot change, kd*(dq_t - dq) + tau_ff, is within
    tau_max, then kp*(q_t - q) + kd*(dq_t - dq) + tau_ff of the clamped command is within tau_max."""
    q = G1.q_min + u * (G1.q_max - G1.q_min)
    out, _ = clamp_command(G1, JointCommand(q_t, dq_t, kp, kd, tau), q, dq)
    check_clamped(out)
    fixed_part = out.kd * (out.dq - dq) + out.tau
    applies = np.abs(fixed_part) <= G1.tau_max
    est = torque_estimate(out, q, dq)
    assert np.all(np.abs(est[applies]) <= G1.tau_max[applies] + 1e-6)


def _counterexample(kind: str) -> dict:
    """Inputs with |kd*(dq_t - dq)| <= tau_max for which the estimate stays above tau_max after clamping."""
    q = G1.default_q.copy()
    kp, kd, tau = G1.kp_stand.copy(), G1.kd_stand.copy(), np.zeros(N)
    q_t, dq_t, dq = G1.default_q.copy(), np.zeros(N), np.zeros(N)
    j = 3  # left knee: tau_max 139, kd 10
    if kind == "kp zero":
        kp[j], tau[j], dq[j] = 0.0, 139.0, -10.0  # kd term 100 + tau_ff 139
    elif kind == "joint limit binds":
        q[j] = q_t[j] = G1.q_min[j]
        tau[j], dq[j] = 139.0, -10.0  # needs a target below q_min
    return {"q_t": q_t, "dq_t": dq_t, "kp": kp, "kd": kd, "tau": tau, "q": q, "dq": dq}


@pytest.mark.xfail(
    strict=True,
    reason="clamp_command moves only the position target: with kp = 0, or when the target needed lies beyond "
    "a joint limit, kd*(dq_t - dq) + tau_ff alone can exceed tau_max and is left as it is",
)
@pytest.mark.parametrize("kind", ["kp zero", "joint limit binds"])
def test_clamp_torque_estimate_within_limit_when_damping_term_is(kind):
    c = _counterexample(kind)
    out, _ = clamp_command(G1, JointCommand(c["q_t"], c["dq_t"], c["kp"], c["kd"], c["tau"]), c["q"], c["dq"])
    damping = np.abs(out.kd * (out.dq - c["dq"]))
    assert np.all(damping <= G1.tau_max)
    assert np.all(np.abs(torque_estimate(out, c["q"], c["dq"])) <= G1.tau_max + 1e-6)
