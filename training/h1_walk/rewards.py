"""The H1 velocity task's reward: small terms over the batch, each [num_envs], summed with weights.

Terms and weights are unitree_rl_gym's H1 task (legged_gym's velocity tracking with a gait-phase
contact reward): exponential tracking of the commanded planar velocity and yaw rate, penalties on
vertical and roll/pitch motion, tilt, base height, action rate, joint speed, joint-limit overrun and
splayed hips, a bonus for being alive, for each foot in contact exactly when its phase says stance,
and a penalty on a swing foot that is not lifted to ``SWING_HEIGHT_M``. A foot swings while
``cos(phase) > SWING_COS``: 47 % of the cycle, so each stride has two short double supports and a
standing clock (both phases parked at pi) means both feet down.

One term is ours: ``target_limits`` penalises the policy's targets past the hard joint limits. The
supervisor clamps such targets and takes a policy whose targets pass a limit by more than its tolerance
out of ACTIVE; the env ends that episode (:mod:`training.h1_walk.env`), and this term is the slope
towards that cliff.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]
Ints = NDArray[np.int64]

TRACKING_SIGMA2 = 0.25  # legged_gym's tracking_sigma
SWING_COS = 0.1
SWING_HEIGHT_M = 0.08
SOFT_LIMIT_FRACTION = 0.9


@dataclass(frozen=True)
class Weights:
    lin_vel: float = 1.0
    ang_vel: float = 0.5
    lin_vel_z: float = -2.0
    ang_vel_xy: float = -0.05
    orientation: float = -1.0
    base_height: float = -10.0
    action_rate: float = -0.01
    dof_vel: float = -1e-3
    dof_pos_limits: float = -5.0
    target_limits: float = -2.0
    hip_pos: float = -1.0
    alive: float = 0.15
    contact: float = 0.18
    swing_height: float = -20.0


@dataclass
class State:
    """What the terms read, after a policy step (base frame unless named)."""

    q: F
    dq: F
    root_quat: F
    gravity: F  # gravity's direction in the base frame (parkour_core.math3d.projected_gravity): (0, 0, -1) upright
    base_lin_vel: F
    base_ang_vel: F
    base_height_m: F
    foot_height_m: F  # sole height above the floor, (N, 2): left, right
    foot_contact: NDArray[np.bool_]  # (N, 2)


@dataclass
class Context:
    """What the policy was asked and did: the command and gait phase it saw, its action and the one before."""

    command: F
    gait_phase: F
    action: F
    prev_action: F
    target_excess: F  # (N, joints): how far each policy target lies past its hard joint limit (0 inside)
    default_q: F
    soft_min: F
    soft_max: F
    hip_joints: Ints
    base_height_target_m: float


def soft_limits(q_min: F, q_max: F, fraction: float = SOFT_LIMIT_FRACTION) -> tuple[F, F]:
    middle, half = (q_min + q_max) / 2.0, (q_max - q_min) / 2.0
    return middle - fraction * half, middle + fraction * half


def swinging(gait_phase: F) -> NDArray[np.bool_]:
    return np.cos(gait_phase) > SWING_COS


def terms(st: State, ctx: Context) -> dict[str, F]:
    swing = swinging(ctx.gait_phase)
    lifted_error = (st.foot_height_m - SWING_HEIGHT_M) ** 2 * (swing & ~st.foot_contact)
    over = np.maximum(st.q - ctx.soft_max, 0.0) + np.maximum(ctx.soft_min - st.q, 0.0)
    return {
        "lin_vel": np.exp(-np.sum((ctx.command[:, :2] - st.base_lin_vel[:, :2]) ** 2, axis=-1) / TRACKING_SIGMA2),
        "ang_vel": np.exp(-((ctx.command[:, 2] - st.base_ang_vel[:, 2]) ** 2) / TRACKING_SIGMA2),
        "lin_vel_z": st.base_lin_vel[:, 2] ** 2,
        "ang_vel_xy": np.sum(st.base_ang_vel[:, :2] ** 2, axis=-1),
        "orientation": np.sum(st.gravity[:, :2] ** 2, axis=-1),
        "base_height": (st.base_height_m - ctx.base_height_target_m) ** 2,
        "action_rate": np.sum((ctx.action - ctx.prev_action) ** 2, axis=-1),
        "dof_vel": np.sum(st.dq**2, axis=-1),
        "dof_pos_limits": np.sum(over, axis=-1),
        "target_limits": np.sum(ctx.target_excess, axis=-1),
        "hip_pos": np.sum((st.q - ctx.default_q)[:, ctx.hip_joints] ** 2, axis=-1),
        "alive": np.ones(len(st.q)),
        "contact": np.sum(st.foot_contact == ~swing, axis=-1).astype(np.float64),
        "swing_height": np.sum(lifted_error, axis=-1),
    }


def total(values: dict[str, F], weights: Weights) -> F:
    w = asdict(weights)
    unknown = set(values) ^ set(w)
    if unknown:
        raise ValueError(f"reward terms and weights differ: {sorted(unknown)}")
    return sum(w[name] * v for name, v in values.items())
