from __future__ import annotations

import numpy as np
import pytest

from parkour_core.gait import GaitClock

WALK = np.array([0.5, 0.0, 0.0])
STILL = np.zeros(3)


def wrap(x):
    return np.fmod(np.fmod(x + np.pi, 2 * np.pi) + 2 * np.pi, 2 * np.pi) - np.pi


def test_step_size():
    assert GaitClock(period_s=1.0, dt_s=0.02).step_rad == pytest.approx(2 * np.pi * 0.02)
    assert GaitClock(period_s=0.8, dt_s=0.005).step_rad == pytest.approx(2 * np.pi * 0.005 / 0.8)


@pytest.mark.parametrize("period,dt", [(0.0, 0.02), (-1.0, 0.02), (1.0, 0.0), (1.0, -0.01)])
def test_rejects_nonpositive_period_or_dt(period, dt):
    with pytest.raises(ValueError, match="must be positive"):
        GaitClock(period, dt)


def test_first_advance_from_start():
    clock = GaitClock(1.0, 0.02)
    np.testing.assert_allclose(clock.phase, [0.0, np.pi])
    step = clock.step_rad
    phase = clock.advance(WALK)
    np.testing.assert_allclose(phase, [step, step - np.pi], atol=1e-12)


def test_advances_and_wraps_into_minus_pi_pi():
    clock = GaitClock(1.0, 0.02)
    step = clock.step_rad
    for k in range(1, 200):
        phase = clock.advance(WALK).copy()
        assert np.all(phase >= -np.pi) and np.all(phase < np.pi), (k, phase)
        np.testing.assert_allclose(phase, wrap(np.array([0.0, np.pi]) + k * step), atol=1e-9)
        # The feet stay half a cycle apart.
        assert abs(wrap(phase[1] - phase[0] + np.pi)) < 1e-9
    # After 50 ticks (one period of 1 s at 50 Hz) foot 0 is back at 0; 199 = 3 * 50 + 49.
    assert clock.phase[0] == pytest.approx(wrap(49 * step))


def test_one_period_returns_to_start():
    clock = GaitClock(0.5, 0.01)
    for _ in range(50):
        clock.advance(WALK)
    np.testing.assert_allclose(wrap(clock.phase - np.array([0.0, np.pi])), [0.0, 0.0], atol=1e-9)


@pytest.mark.parametrize("command", [[0.0, 0.0, 0.0], [0.005, -0.005, 0.0], [0.0, 0.0, -0.009]])
def test_zero_command_parks_both_phases_at_pi(command):
    clock = GaitClock(1.0, 0.02)
    for _ in range(7):
        clock.advance(WALK)
    for _ in range(3):
        phase = clock.advance(np.array(command))
        np.testing.assert_array_equal(phase, [np.pi, np.pi])
    assert clock.standing


@pytest.mark.parametrize("command", [[0.02, 0.0, 0.0], [0.0, -0.011, 0.0], [0.0, 0.0, 0.02], [0.008, 0.008, 0.0]])
def test_small_but_nonzero_command_walks(command):
    # [0.008, 0.008] has norm 0.0113 >= 0.01 though each component is below the threshold.
    clock = GaitClock(1.0, 0.02)
    phase = clock.advance(np.array(command))
    assert not clock.standing
    np.testing.assert_allclose(phase, [clock.step_rad, clock.step_rad - np.pi])


def test_restart_after_standing_is_start_phase_then_advances():
    clock = GaitClock(1.0, 0.02)
    step = clock.step_rad
    for _ in range(5):
        clock.advance(WALK)
    clock.advance(STILL)
    clock.advance(STILL)
    # The first tick with a nonzero command restarts at (0, pi) exactly, not advanced.
    np.testing.assert_array_equal(clock.advance(WALK), [0.0, np.pi])
    assert not clock.standing
    # Then it advances from there.
    np.testing.assert_allclose(clock.advance(WALK), [step, step - np.pi], atol=1e-12)
    np.testing.assert_allclose(clock.advance(WALK), [2 * step, 2 * step - np.pi], atol=1e-12)


def test_reset():
    clock = GaitClock(1.0, 0.02)
    clock.advance(STILL)
    assert clock.standing
    clock.reset()
    assert not clock.standing
    np.testing.assert_array_equal(clock.phase, [0.0, np.pi])
    np.testing.assert_allclose(clock.advance(WALK), [clock.step_rad, clock.step_rad - np.pi])
