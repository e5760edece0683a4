"""Command shaping: the mode commands and clamp_command, by example and as properties over any input."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from parkour_core.robots import G1
from parkour_core.safety import (
    ClampCounts,
    JointCommand,
    clamp_command,
    damp_command,
    pd_command,
    position_bounds,
    stand_command,
    stand_up_command,
    torque_estimate,
)

N = G1.num_joints
MARGIN = 0.02
LO, HI = position_bounds(G1, MARGIN)
PROPERTY = settings(max_examples=300, deadline=None, database=None)
# Rounding of the last product may put a joint's estimate one ulp past the limit; nothing more.
TAU_TOLERANCE = G1.tau_max * 1e-12

any_float = st.floats(allow_nan=True, allow_infinity=True)
any_array = arrays(np.float64, N, elements=any_float)
finite_array = arrays(np.float64, N, elements=st.floats(allow_nan=False, allow_infinity=False))


def command(q=None, dq=None, kp=None, kd=None, tau=None) -> JointCommand:
    base = stand_command(G1)
    return JointCommand(
        q=base.q if q is None else np.asarray(q, dtype=np.float64),
        dq=np.zeros(N) if dq is None else np.asarray(dq, dtype=np.float64),
        kp=base.kp if kp is None else np.asarray(kp, dtype=np.float64),
        kd=base.kd if kd is None else np.asarray(kd, dtype=np.float64),
        tau=np.zeros(N) if tau is None else np.asarray(tau, dtype=np.float64),
    )


def is_damping(out: JointCommand) -> bool:
    """kp 0, kd > 0 (velocity target and feed-forward may have moved to keep the braking torque in bounds)."""
    return bool(np.all(out.kp == 0) and np.all(out.kd > 0))


def check_within_limits(out: JointCommand, margin: float = MARGIN) -> None:
    lo, hi = position_bounds(G1, margin)
    assert out.is_finite()
    assert np.all(out.q >= lo) and np.all(out.q <= hi)
    assert np.all(np.abs(out.dq) <= G1.dq_max)
    assert np.all(np.abs(out.tau) <= G1.tau_max)
    assert np.all(out.kp >= 0) and np.all(out.kd >= 0)


def check_torque_within_limits(out: JointCommand, q, dq) -> None:
    est = torque_estimate(out, q, dq)
    assert np.all(np.abs(est) <= G1.tau_max + TAU_TOLERANCE), est


# ----------------------------------------------------------------------------- mode commands


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
    np.testing.assert_array_equal(c.kd, np.minimum(3.0, G1.kd_stand))
    np.testing.assert_array_equal(c.tau, np.zeros(N))
    np.testing.assert_array_equal(c.q, G1.default_q)  # unused with kp 0, but inside every limit
    assert c.is_finite()


def test_damping_is_at_most_each_joint_s_stand_damping():
    """kd 3 held for 10-15 ms between commands sets the G1's wrists and ankles swinging on a simulator
    that holds the torque; their stand kd (0.1, 0.5) is the bound that keeps them still."""
    c = damp_command(G1, 3.0)
    ankles = [i for i, name in enumerate(G1.joint_names) if "ankle" in name]
    wrists = [i for i, name in enumerate(G1.joint_names) if "wrist" in name]
    knees = [i for i, name in enumerate(G1.joint_names) if "knee" in name]
    assert set(c.kd[ankles]) == {0.5} and set(c.kd[wrists]) == {0.1} and set(c.kd[knees]) == {3.0}
    assert np.all(damp_command(G1, 0.1).kd == 0.1)  # a lower kd_damp stays as configured


def test_pd_command_copies_its_inputs():
    kp = np.full(N, 50.0)
    c = pd_command(G1, G1.default_q, kp, np.ones(N))
    c.kp[:] = 0.0
    assert np.all(kp == 50.0)
    np.testing.assert_array_equal(c.dq, np.zeros(N))


def test_position_bounds_shrink_by_the_margin_but_never_cross():
    lo, hi = position_bounds(G1, 0.02)
    np.testing.assert_allclose(lo, G1.q_min + 0.02)
    np.testing.assert_allclose(hi, G1.q_max - 0.02)
    lo, hi = position_bounds(G1, 10.0)
    np.testing.assert_allclose(lo, hi)
    np.testing.assert_allclose(lo, 0.5 * (G1.q_min + G1.q_max))


def test_mode_commands_are_float64_whatever_the_type_of_their_inputs():
    ints = np.ones(N, dtype=np.int64)  # integer gains, as a JSON or YAML list of whole numbers gives them
    for c in (
        stand_up_command(G1, np.zeros(N), 0.5, (ints, ints)),  # type: ignore[arg-type]
        pd_command(G1, np.zeros(N, dtype=np.int64), ints, ints),  # type: ignore[arg-type]
    ):
        for field in ("q", "dq", "kp", "kd", "tau"):
            assert getattr(c, field).dtype == np.float64, field


def test_torque_estimate_overflows_to_inf_and_nan_without_a_warning():
    cmd = command(kp=np.full(N, 1e308), kd=np.full(N, 1e308))
    dq = np.full(N, 10.0)  # kp term +inf (q_t - q = 10 at joint 0), kd term -inf
    q = G1.default_q.copy()
    q[0] -= 10.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = torque_estimate(cmd, q, dq)
    assert np.isnan(est[0]) and est[1] == -np.inf


# ----------------------------------------------------------------------------- clamp_command by example


def test_clamp_passes_a_safe_command_unchanged():
    cmd = stand_command(G1)
    out, counts = clamp_command(G1, cmd, G1.default_q, np.zeros(N), MARGIN)
    assert counts == ClampCounts()
    for field in ("q", "dq", "kp", "kd", "tau"):
        np.testing.assert_array_equal(getattr(out, field), getattr(cmd, field))


def test_clamp_position_target_to_joint_limits_less_the_margin():
    q = G1.default_q.copy()
    q[3] = G1.q_max[3] + 1.0
    q[4] = G1.q_min[4] - 1.0
    q[5] = G1.q_max[5]  # at the hard limit: inside the margin
    out, counts = clamp_command(G1, command(q=q, kp=np.zeros(N)), G1.default_q, np.zeros(N), MARGIN)
    assert out.q[3] == G1.q_max[3] - MARGIN
    assert out.q[4] == G1.q_min[4] + MARGIN
    assert out.q[5] == G1.q_max[5] - MARGIN
    assert counts.position == 3 and counts.total == 3


def test_clamp_velocity_target_to_velocity_limits():
    dq_t = np.zeros(N)
    dq_t[0] = 100.0
    dq_t[1] = -100.0
    out, counts = clamp_command(G1, command(dq=dq_t, kd=np.zeros(N)), G1.default_q, np.zeros(N))
    assert out.dq[0] == G1.dq_max[0] and out.dq[1] == -G1.dq_max[1]
    assert counts.velocity == 2 and counts.total == 2


def test_clamp_feed_forward_and_negative_gains():
    tau = np.zeros(N)
    tau[0] = 1e4
    tau[1] = -1e4
    kp = G1.kp_stand.copy()
    kp[2] = -5.0
    out, counts = clamp_command(G1, command(tau=tau, kp=kp, kd=-G1.kd_stand), G1.default_q, np.zeros(N))
    assert out.tau[0] == G1.tau_max[0] and out.tau[1] == -G1.tau_max[1]
    assert out.kp[2] == 0.0 and np.all(out.kd == 0.0)
    assert counts.feedforward == 2
    assert counts.gains == 1 + N


def test_clamp_pulls_target_in_to_keep_pd_torque_within_limit():
    q_target = G1.default_q.copy()
    q_target[3] += 1.0  # knee: kp 200 * 1 rad = 200 Nm > 139 Nm
    out, counts = clamp_command(G1, command(q=q_target), G1.default_q, np.zeros(N))
    assert counts.torque == 1 and counts.damped == 0 and counts.total == 1
    assert out.q[3] == pytest.approx(G1.default_q[3] + G1.tau_max[3] / G1.kp_stand[3])
    assert torque_estimate(out, G1.default_q, np.zeros(N))[3] == pytest.approx(G1.tau_max[3])
    np.testing.assert_array_equal(out.dq, np.zeros(N))  # the position target sufficed


def test_clamp_pulls_a_negative_estimate_in_to_the_negative_limit():
    q_target = G1.default_q.copy()
    q_target[2] -= 1.0  # hip yaw: kp 150 * -1 rad = -150 Nm < -88 Nm
    out, counts = clamp_command(G1, command(q=q_target), G1.default_q, np.zeros(N))
    assert counts.torque == 1 and counts.total == 1
    assert out.q[2] == pytest.approx(G1.default_q[2] - G1.tau_max[2] / G1.kp_stand[2])
    assert torque_estimate(out, G1.default_q, np.zeros(N))[2] == pytest.approx(-G1.tau_max[2])
    np.testing.assert_array_equal(np.delete(out.q, 2), np.delete(q_target, 2))  # only that joint moved


def test_clamp_pulls_an_estimate_past_a_limit_below_one_newton_metre_to_its_own_side():
    joints = tuple(dataclasses.replace(j, tau_max=0.5) if i == 3 else j for i, j in enumerate(G1.joints))
    spec = dataclasses.replace(G1, joints=joints)
    q_target = spec.default_q.copy()
    q_target[3] += 0.7 / spec.kp_stand[3]  # 0.7 Nm against a 0.5 Nm limit
    out, counts = clamp_command(spec, command(q=q_target), spec.default_q, np.zeros(N))
    assert counts.torque == 1
    assert torque_estimate(out, spec.default_q, np.zeros(N))[3] == pytest.approx(0.5)


def test_an_estimate_exactly_at_the_effort_limit_is_left_alone():
    cmd = command(kp=np.zeros(N), kd=np.zeros(N), tau=G1.tau_max.copy())
    out, counts = clamp_command(G1, cmd, G1.default_q, np.zeros(N))
    assert counts == ClampCounts()
    np.testing.assert_array_equal(out.tau, G1.tau_max)


def test_clamp_with_overflowing_gains_raises_no_warning_and_stays_within_limits():
    cmd = command(kp=np.full(N, 1e308), kd=np.full(N, 1e308))
    q = G1.default_q - 2.0  # kp term +inf, kd term -inf: the estimate is NaN
    dq = np.full(N, 10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, _ = clamp_command(G1, cmd, q, dq, MARGIN)
    check_within_limits(out)
    check_torque_within_limits(out, q, dq)


def test_clamp_reads_integer_speeds_as_numbers():
    # abs() of the most negative int64 is itself: the state must be converted before it is used.
    dq = np.full(N, np.iinfo(np.int64).min)
    out, counts = clamp_command(G1, stand_command(G1), G1.default_q, dq)
    assert counts.damped == N
    check_within_limits(out, margin=0.0)
    check_torque_within_limits(out, G1.default_q, dq.astype(np.float64))


def test_the_position_target_absorbs_the_excess_with_the_feed_forward_counted():
    q_target = G1.default_q.copy()
    q_target[2] += 1.0  # hip yaw: 150 Nm of PD plus 20 Nm of feed-forward against 88 Nm
    tau = np.zeros(N)
    tau[2] = 20.0
    out, counts = clamp_command(G1, command(q=q_target, tau=tau), G1.default_q, np.zeros(N))
    assert counts.torque == 1
    assert out.q[2] == pytest.approx(G1.default_q[2] + (G1.tau_max[2] - 20.0) / G1.kp_stand[2])
    np.testing.assert_array_equal(out.dq, np.zeros(N))  # the position target sufficed
    np.testing.assert_array_equal(out.tau, tau)


@pytest.mark.parametrize("gain", ["kp", "kd"])
def test_a_gain_below_one_moves_its_target_by_excess_over_gain(gain):
    """kp or kd of 0.5: the target moves twice as far as the excess in Nm."""
    j, q, dq = 2, G1.default_q.copy(), np.zeros(N)
    q[j] = -1.0
    kp, kd, tau, q_t, dq_t = np.zeros(N), np.zeros(N), np.zeros(N), q.copy(), np.zeros(N)
    tau[j] = 87.0
    if gain == "kp":
        kp[j], q_t[j] = 0.5, q[j] + 2.5  # 1.25 Nm + 87 Nm against 88 Nm: the target comes back to q + 2
    else:
        kd[j], dq_t[j] = 0.5, 2.5
    out, counts = clamp_command(G1, JointCommand(q_t, dq_t, kp, kd, tau), q, dq)
    assert counts.torque == 1 and counts.damped == 0
    assert torque_estimate(out, q, dq)[j] == pytest.approx(G1.tau_max[j])
    moved = (out.q[j] - q[j]) if gain == "kp" else out.dq[j]
    assert moved == pytest.approx(2.0)
    assert out.tau[j] == 87.0


def test_joints_exactly_at_the_effort_limit_are_left_alone_while_another_is_pulled_in():
    cmd = command(kp=np.zeros(N), tau=G1.tau_max.copy())  # every joint at its limit by feed-forward
    cmd.kp[2] = G1.kp_stand[2]
    cmd.tau[2] = 0.0
    cmd.q[2] += 1.0  # hip yaw: 150 Nm against 88 Nm
    out, counts = clamp_command(G1, cmd, G1.default_q, np.zeros(N))
    assert counts.torque == 1 and counts.total == 1
    others = np.arange(N) != 2
    for field in ("q", "dq", "kp", "kd", "tau"):
        np.testing.assert_array_equal(getattr(out, field)[others], getattr(cmd, field)[others], field)


def test_the_feed_forward_is_moved_last_when_both_targets_are_at_their_limits():
    j, q, dq = 2, G1.default_q.copy(), np.zeros(N)
    q[j] = G1.q_min[j] + 0.1  # the position target can come down to q_min: -15 Nm at most
    dq[j] = -1.4 * G1.dq_max[j]  # the velocity target can come down to -dq_max: kd 10 * 12.8 = 128 Nm at least
    kp, kd = np.zeros(N), np.zeros(N)
    kp[j], kd[j] = 150.0, 10.0
    q_t = q.copy()
    q_t[j] += 0.2
    out, counts = clamp_command(G1, JointCommand(q_t, np.zeros(N), kp, kd, np.zeros(N)), q, dq)
    assert counts.torque == 1 and counts.damped == 0
    assert out.q[j] == G1.q_min[j] and out.dq[j] == -G1.dq_max[j]
    assert out.tau[j] == pytest.approx(G1.tau_max[j] - 128.0 + 15.0)
    assert torque_estimate(out, q, dq)[j] == pytest.approx(G1.tau_max[j])
    assert (out.kp[j], out.kd[j]) == (150.0, 10.0)


@pytest.mark.parametrize("gain", ["kp", "kd"])
def test_a_joint_without_that_gain_keeps_its_target(gain):
    """kp 0: the position target has no effect and is not moved; kd 0: the same for the velocity target."""
    j, q, dq = 3, G1.default_q.copy(), np.zeros(N)
    kp, kd, tau = G1.kp_stand.copy(), G1.kd_stand.copy(), np.zeros(N)
    q_t, dq_t = G1.default_q.copy(), np.zeros(N)
    tau[j] = 139.0
    if gain == "kp":
        kp[j], dq[j] = 0.0, -10.0  # kd term 100 + tau_ff 139: the velocity target moves
    else:
        kd[j] = 0.0
        q[j], q_t[j] = G1.q_min[j] - 0.5, G1.q_min[j]  # kp term 100 at least + 139: the feed-forward moves
    out, counts = clamp_command(G1, JointCommand(q_t, dq_t, kp, kd, tau), q, dq)
    assert counts.torque == 1 and counts.damped == 0
    check_torque_within_limits(out, q, dq)
    if gain == "kp":
        assert out.q[j] == q_t[j] and out.dq[j] != 0.0
    else:
        assert out.dq[j] == dq_t[j] and out.q[j] == G1.q_min[j]
        assert out.tau[j] == pytest.approx(G1.tau_max[j] - 100.0)


@pytest.mark.parametrize("speed", [0.0, 0.5, 40.0])
def test_a_damped_joint_brakes_within_the_limit_at_any_speed(speed):
    """Far beyond its limit, a joint is damped alone; kd drops to tau_max / speed, and only where it brakes
    harder than that (at rest it brakes with no torque, whatever kd)."""
    j, q, dq = 3, G1.default_q.copy(), np.zeros(N)
    q[j] = G1.q_max[j] + 1e4
    dq[j] = speed
    kd = G1.kd_stand.copy()
    kd[j] = 400.0
    out, counts = clamp_command(G1, command(kd=kd), q, dq)
    assert counts.damped == 1
    assert out.kp[j] == 0.0 and out.dq[j] == 0.0 and out.tau[j] == 0.0
    expected_kd = 400.0 if speed == 0.0 else min(400.0, G1.tau_max[j] / speed)
    assert out.kd[j] == pytest.approx(expected_kd)
    check_torque_within_limits(out, q, dq)


def _damping_term_beyond_limit(kind: str) -> dict:
    """Inputs where moving the position target alone cannot bring the estimate inside the limit."""
    q = G1.default_q.copy()
    kp, kd, tau = G1.kp_stand.copy(), G1.kd_stand.copy(), np.zeros(N)
    q_t, dq_t, dq = G1.default_q.copy(), np.zeros(N), np.zeros(N)
    j = 3  # left knee: tau_max 139, kd 10
    if kind == "kp zero":
        kp[j], tau[j], dq[j] = 0.0, 139.0, -10.0  # kd term 100 + tau_ff 139
    elif kind == "joint limit binds":
        q[j] = q_t[j] = G1.q_min[j]
        tau[j], dq[j] = 139.0, -10.0  # needs a target below q_min
    return {"cmd": JointCommand(q_t, dq_t, kp, kd, tau), "q": q, "dq": dq}


@pytest.mark.parametrize("kind", ["kp zero", "joint limit binds"])
def test_clamp_moves_the_velocity_target_when_the_position_target_cannot_help(kind):
    c = _damping_term_beyond_limit(kind)
    assert np.abs(torque_estimate(c["cmd"], c["q"], c["dq"]))[3] > G1.tau_max[3]
    out, counts = clamp_command(G1, c["cmd"], c["q"], c["dq"])
    check_torque_within_limits(out, c["q"], c["dq"])
    assert counts.torque == 1 and counts.damped == 0
    assert out.dq[3] < 0.0  # the velocity target moved toward the measured velocity
    assert out.kp[3] == c["cmd"].kp[3]  # the joint is still position-controlled where it was
    assert np.abs(out.kd[3] * (out.dq[3] - c["dq"][3])) <= G1.tau_max[3]


def test_clamp_damps_alone_a_joint_far_beyond_its_limit():
    q = G1.default_q.copy()
    q[3] = G1.q_max[3] + 5.0  # knee 5 rad past its limit: kp 200 * 5 rad = 1000 Nm toward it
    dq = np.zeros(N)
    dq[3] = 40.0
    out, counts = clamp_command(G1, stand_command(G1), q, dq)
    assert counts.damped == 1
    assert out.kp[3] == 0.0 and out.tau[3] == 0.0 and out.dq[3] == 0.0
    assert out.kd[3] == pytest.approx(G1.tau_max[3] / 40.0)  # kd 10 * 40 rad/s would be 400 Nm
    check_torque_within_limits(out, q, dq)
    others = np.arange(N) != 3
    np.testing.assert_array_equal(out.kp[others], G1.kp_stand[others])


@pytest.mark.parametrize("field", ["q", "dq", "kp", "kd", "tau"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_command_becomes_damping(field, bad):
    cmd = stand_command(G1)
    getattr(cmd, field)[5] = bad
    out, counts = clamp_command(G1, cmd, G1.default_q, np.zeros(N), kd_damp=4.0)
    assert counts.nonfinite == N and counts.total == N
    assert is_damping(out)
    np.testing.assert_array_equal(out.kd, np.minimum(4.0, G1.kd_stand))
    assert out.is_finite()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_state_becomes_damping(bad):
    q, dq = G1.default_q.copy(), np.zeros(N)
    q[3] = bad
    dq[9] = bad
    out, counts = clamp_command(G1, stand_command(G1), q, dq)
    assert counts.nonfinite == N
    assert is_damping(out)
    check_within_limits(out)


def test_clamp_counts_add_up():
    total = ClampCounts()
    total.add(ClampCounts(position=1, torque=2, damped=1))
    total.add(ClampCounts(position=1, nonfinite=29))
    assert total.to_dict() == {
        "position": 2,
        "velocity": 0,
        "feedforward": 0,
        "gains": 0,
        "torque": 2,
        "damped": 1,
        "nonfinite": 29,
        "total": 33,
    }


# ----------------------------------------------------------------------------- properties


@PROPERTY
@given(any_array, any_array, any_array, any_array, any_array, finite_array, finite_array)
def test_any_command_at_any_finite_state_comes_out_within_every_limit(q_t, dq_t, kp, kd, tau, q, dq):
    cmd = JointCommand(q_t, dq_t, kp, kd, tau)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # clamp_command handles its own overflow: no warning escapes
        out, counts = clamp_command(G1, cmd, q, dq, MARGIN)
    check_within_limits(out)
    check_torque_within_limits(out, q, dq)
    if not cmd.is_finite():
        assert is_damping(out) and counts.nonfinite == N


@PROPERTY
@given(any_array, any_array, st.sampled_from(["stand", "damp", "huge gains", "tiny gains"]))
def test_any_state_gives_a_finite_command_within_limits_or_damping(q, dq, which):
    cmd = {
        "stand": stand_command(G1),
        "damp": damp_command(G1, 3.0),
        "huge gains": command(kp=np.full(N, 1e300), kd=np.full(N, 1e300)),
        "tiny gains": command(kp=np.full(N, 5e-324), kd=np.ones(N)),
    }[which]
    out, _ = clamp_command(G1, cmd, q, dq, MARGIN)
    check_within_limits(out)
    if np.all(np.isfinite(q)) and np.all(np.isfinite(dq)):
        check_torque_within_limits(out, q, dq)
    else:
        assert is_damping(out)


realistic = {
    "q_t": arrays(np.float64, N, elements=st.floats(-5.0, 5.0)),
    "dq_t": arrays(np.float64, N, elements=st.floats(-50.0, 50.0)),
    "kp": arrays(np.float64, N, elements=st.floats(0.0, 1000.0)),
    "kd": arrays(np.float64, N, elements=st.floats(0.0, 100.0)),
    "tau": arrays(np.float64, N, elements=st.floats(-300.0, 300.0)),
    "u": arrays(np.float64, N, elements=st.floats(0.0, 1.0)),
    "v": arrays(np.float64, N, elements=st.floats(-1.0, 1.0)),
}


@PROPERTY
@given(**realistic)
def test_inside_the_limits_no_joint_needs_to_be_damped(q_t, dq_t, kp, kd, tau, u, v):
    """With the state inside the position bounds and velocity limits, the targets alone always bring the
    estimate inside the effort limit: every joint stays position-controlled."""
    q = LO + u * (HI - LO)
    dq = v * G1.dq_max
    out, counts = clamp_command(G1, JointCommand(q_t, dq_t, kp, kd, tau), q, dq, MARGIN)
    check_within_limits(out)
    check_torque_within_limits(out, q, dq)
    assert counts.damped == 0
    np.testing.assert_array_equal(out.kp, kp)
    np.testing.assert_array_equal(out.kd, kd)


@PROPERTY
@given(**realistic)
def test_a_command_already_within_every_limit_is_left_alone(q_t, dq_t, kp, kd, tau, u, v):
    q = LO + u * (HI - LO)
    dq = v * G1.dq_max
    cmd = JointCommand(np.clip(q_t, LO, HI), np.clip(dq_t, -G1.dq_max, G1.dq_max), kp, kd, np.clip(tau, -1, 1))
    if not np.all(np.abs(torque_estimate(cmd, q, dq)) <= G1.tau_max):
        cmd = JointCommand(cmd.q, cmd.dq, np.zeros(N), np.zeros(N), cmd.tau)
    out, counts = clamp_command(G1, cmd, q, dq, MARGIN)
    assert counts.total == 0
    for field in ("q", "dq", "kp", "kd", "tau"):
        np.testing.assert_array_equal(getattr(out, field), getattr(cmd, field))
