"""Critically damped springs in closed form (PHP Eqs. 2-3; D. Holden, "Spring-It-On").

A critically damped spring with half-life h has damping 2y and stiffness y^2 with y = 2 ln2 / h: the
distance to the goal halves about every h seconds and never overshoots. Closed forms (rather than
stepping an ODE) let us evaluate the future at 0.33/0.67/1.0 s directly, exactly and cheaply.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]


def halflife_to_y(halflife_s: float) -> float:
    """The spring's decay rate y (1/s): exp(-y h) (1 + y h) ~ 1/2 over one half-life."""
    return 2.0 * math.log(2.0) / max(halflife_s, 1e-6)


def velocity_spring(x0: F, v0: F, a0: F, v_goal: F, halflife_s: float, t: F | float) -> tuple[F, F, F]:
    """Position, velocity and acceleration at times t of a point whose velocity springs to v_goal.

    v(t) = v_goal + (j0 + j1 t) e^{-y t}, j0 = v0 - v_goal, j1 = a0 + j0 y; x(t) is its integral.
    Broadcasts: x0, v0, a0, v_goal share a shape (..., D); t may be a scalar or (K, 1, ...) to get K times.
    """
    y = halflife_to_y(halflife_s)
    j0 = v0 - v_goal
    j1 = a0 + j0 * y
    tt = np.asarray(t, dtype=np.float64)
    e = np.exp(-y * tt)
    x = x0 + v_goal * tt + j0 / y * (1.0 - e) + j1 / (y * y) * (1.0 - e * (1.0 + y * tt))
    v = v_goal + (j0 + j1 * tt) * e
    a = (j1 - (j0 + j1 * tt) * y) * e
    return x, v, a


def position_spring(x0: F, v0: F, goal: F, halflife_s: float, t: F | float) -> tuple[F, F]:
    """A value springing to a fixed goal (the heading: yaw toward the commanded heading)."""
    y = halflife_to_y(halflife_s)
    j0 = x0 - goal
    j1 = v0 + j0 * y
    tt = np.asarray(t, dtype=np.float64)
    e = np.exp(-y * tt)
    return goal + (j0 + j1 * tt) * e, (v0 - j1 * y * tt) * e


def decay_spring(x0: F, v0: F, halflife_s: float, t: F | float) -> tuple[F, F]:
    """An offset decaying to zero: the inertialization spring (goal 0)."""
    return position_spring(x0, v0, np.zeros_like(np.asarray(x0, dtype=np.float64)), halflife_s, t)
