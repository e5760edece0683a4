import numpy as np

from training.motion_matching.spring import decay_spring, halflife_to_y, position_spring, velocity_spring


def _rk4(f, state, dt, steps):
    for _ in range(steps):
        k1 = f(state)
        k2 = f(state + dt / 2 * k1)
        k3 = f(state + dt / 2 * k2)
        k4 = f(state + dt * k3)
        state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return state


def test_velocity_spring_matches_numerical_integration():
    x0, v0, a0, goal, h = 0.3, -0.5, 2.0, 1.5, 0.3
    y = halflife_to_y(h)

    # state (x, v, a): v'' = -2y v' - y^2 (v - goal), x' = v
    def f(s):
        _x, v, a = s
        return np.array([v, a, -2 * y * a - y * y * (v - goal)])

    for t in (0.33, 0.67, 1.0):
        num = _rk4(f, np.array([x0, v0, a0]), 1e-4, round(t / 1e-4))
        x, v, a = velocity_spring(np.array(x0), np.array(v0), np.array(a0), np.array(goal), h, t)
        np.testing.assert_allclose([x, v, a], num, atol=1e-7)


def test_position_spring_matches_numerical_integration_and_halves():
    x0, v0, goal, h = 1.0, 0.0, 0.0, 0.25
    y = halflife_to_y(h)
    num = _rk4(lambda s: np.array([s[1], -2 * y * s[1] - y * y * (s[0] - goal)]), np.array([x0, v0]), 1e-4, 5000)
    x, v = position_spring(np.array(x0), np.array(v0), np.array(goal), h, 0.5)
    np.testing.assert_allclose([x, v], num, atol=1e-8)
    # critically damped: no overshoot, and about half the way after one half-life
    ts = np.linspace(0, 3, 300)
    xs, _ = position_spring(np.full_like(ts, x0), np.zeros_like(ts), np.zeros_like(ts), h, ts)
    assert np.all(xs >= -1e-12)
    xh, _ = position_spring(np.array(x0), np.array(v0), np.array(goal), h, h)
    assert 0.4 < float(xh) < 0.6


def test_spring_broadcasts_over_horizons():
    t = np.array([0.33, 0.67, 1.0])[:, None]
    x, _, _ = velocity_spring(np.zeros(2), np.array([0.0, 0.0]), np.zeros(2), np.array([1.0, 0.0]), 0.3, t)
    assert x.shape == (3, 2)
    assert np.all(np.diff(x[:, 0]) > 0) and np.allclose(x[:, 1], 0)
    assert x[-1, 0] < 1.0  # it starts at rest, so it lags the goal velocity


def test_decay_spring_goes_to_zero():
    x, v = decay_spring(np.array([0.5, -0.2]), np.array([3.0, 1.0]), 0.1, 2.0)
    assert np.all(np.abs(x) < 1e-5) and np.all(np.abs(v) < 1e-4)
