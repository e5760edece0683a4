"""The climbing teacher's reward: small terms over the batch, each [num_envs], summed with weights.

Per second (times the 50 Hz tick): progress along the course at the commanded speed (the world +x
velocity over the command, clipped to [-0.5, 1]: paid linearly up to the command and no more, so
diving past it does not pay, and turning away from a box does not either), feet on a box top while
making progress, and penalties on sideways speed, on heading away from the course, on tilt, on the
residual's size and rate (stay near the walking policy, move smoothly), on the PD torques, and on
targets past the joint limits (the supervisor clamps them, and refuses targets past its tolerance;
the env may end the episode there too), and on feet and shins hitting a box's side face (legged_gym's
stumble term; off by default). Per event: each box passed, and a failure (a fall, refused targets, leaving
the lane). No reward for being alive: standing still earns nothing, so it cannot beat walking.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]

EVENTS = ("passed", "fall")  # paid once per event, not per second


@dataclass(frozen=True)
class Weights:
    progress: float = 2.0
    lateral: float = -1.0
    heading: float = -2.0
    feet_on_top: float = 0.2
    orientation: float = -2.0
    residual: float = -0.05
    residual_rate: float = -0.01
    torque: float = -1e-5
    target_limits: float = -20.0
    stumble: float = 0.0  # per foot or shin on a box's side face: tripping on the near edge is how it falls
    passed: float = 2.0
    fall: float = -5.0


@dataclass
class State:
    """What the terms read after a step (world frame unless named)."""

    root_pos: F
    yaw: F
    gravity: F  # gravity's direction in the base frame: (0, 0, -1) upright
    lin_vel_w: F
    ang_vel_b: F
    height_above_m: F  # base above the terrain under it
    feet_on_top: F  # feet standing on a box top, 0-2
    torque: F  # PD torque estimate at the step's end, (N, J)
    leg_face_contacts: F  # feet and shins touching a box's side face, 0-4


@dataclass
class Context:
    command: F  # (N, 3) vx along the course
    residual: F
    prev_residual: F
    target_excess: F
    first_step: NDArray[np.bool_]


def terms(st: State, ctx: Context, passed: F) -> dict[str, F]:
    """Every term's unweighted value; ``passed``: boxes passed in this step. ``fall`` is set by the env."""
    progress = np.clip(st.lin_vel_w[:, 0] / np.maximum(ctx.command[:, 0], 0.1), -0.5, 1.0)
    rate = np.sum((ctx.residual - ctx.prev_residual) ** 2, axis=1)
    return {
        "progress": progress,
        "lateral": st.lin_vel_w[:, 1] ** 2,
        "heading": st.yaw**2,
        "feet_on_top": st.feet_on_top * np.clip(progress, 0.0, 1.0),
        "orientation": np.sum(st.gravity[:, :2] ** 2, axis=1),
        "residual": np.sum(ctx.residual**2, axis=1),
        "residual_rate": np.where(ctx.first_step, 0.0, rate),  # the residual before a reset is 0, not a choice
        "torque": np.sum(st.torque**2, axis=1),
        "target_limits": np.sum(ctx.target_excess, axis=1),
        "stumble": st.leg_face_contacts,
        "passed": np.asarray(passed, dtype=np.float64),
        "fall": np.zeros(len(st.yaw)),
    }


def total(values: dict[str, F], weights: Weights, dt_s: float) -> F:
    """Sum of weight x term: per-second terms times ``dt_s``, events as they are."""
    w = asdict(weights)
    return sum(
        (w[k] * v * (1.0 if k in EVENTS else dt_s) for k, v in values.items()), start=np.zeros_like(values["fall"])
    )
