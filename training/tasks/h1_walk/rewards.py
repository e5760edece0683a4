"""The H1 velocity task's reward: small term functions over the batch, each [num_envs], weighted and summed.

unitree_rl_gym's H1 terms (tracking, vertical and roll/pitch motion, tilt, base height, action rate, joint
speed, joint-limit overrun, splayed hips, alive, each foot in contact when its phase says stance, a lifted
swing foot at ``SWING_HEIGHT_M``, no sliding in contact), MuJoCo Playground's dense foot-height tracking of
the gait clock (``feet_phase``) and its pose cost on the torso and arms (``upper_pose``), legged_gym's air
time and torque terms, and ``target_limits``: the slope towards targets the supervisor refuses. Contact is
MuJoCo's (a foot geom touching the floor). A foot swings while ``cos(phase) > SWING_COS`` (47 % of the
cycle), so a parked clock (both phases at pi) means both feet down. The sum is clipped at zero
(legged_gym's ``only_positive_rewards``): a step is never worth less than an ended episode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]
Ints = NDArray[np.int64]

TRACKING_SIGMA2 = 0.25  # legged_gym's tracking_sigma, on the squared error
SWING_COS = 0.1
SWING_HEIGHT_M = 0.08  # unitree_rl_gym's H1 swing height, the peak of feet_phase's curve
PHASE_SIGMA2 = 0.01  # MuJoCo Playground's feet_phase: exp(-sum of squared height errors / 0.01)
AIR_TIME_S = 0.25  # a touchdown after a shorter flight costs, after a longer one pays (up to the swing's length)
SOFT_LIMIT_FRACTION = 0.9


@dataclass(frozen=True)
class Weights:
    lin_vel: float = 1.5
    ang_vel: float = 0.75
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
    feet_phase: float = 2.0
    feet_slip: float = -0.2
    feet_air_time: float = 1.0
    upper_pose: float = -0.5
    torques: float = -1e-6
    progress: float = 0.0


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
    foot_contact: NDArray[np.bool_]  # (N, 2): a geom of that foot touches the floor
    foot_vel_xy: F  # (N, 2, 2): the sole's planar velocity (world frame)
    torque: F  # (N, joints): the PD torque the motors apply, after their limits


@dataclass
class Context:
    """What the policy was asked and did (the command and gait phase it saw, its action and the one before),
    and the per-foot flight bookkeeping of this step."""

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
    pose_weights: F  # (joints,): upper_pose's weight of each joint (torso and arms; 0 on the legs)
    air_time_s: F  # (N, 2): how long each foot had been in the air, this step included
    first_contact: NDArray[np.bool_]  # (N, 2): the foot touched down this step
    swing_s: float  # the clock's swing time: air time beyond it is not paid


def soft_limits(q_min: F, q_max: F, fraction: float = SOFT_LIMIT_FRACTION) -> tuple[F, F]:
    middle, half = (q_min + q_max) / 2.0, (q_max - q_min) / 2.0
    return middle - fraction * half, middle + fraction * half


def swinging(gait_phase: F) -> NDArray[np.bool_]:
    return np.cos(gait_phase) > SWING_COS


def swing_target(gait_phase: F, height_m: float = SWING_HEIGHT_M) -> F:
    """Each foot's target sole height: 0 in stance; in swing a smoothstep up to ``height_m`` at phase 0 and down."""
    edge = np.arccos(SWING_COS)
    s = np.clip(1.0 - np.abs(gait_phase) / edge, 0.0, 1.0)  # 0 at the swing's ends, 1 in its middle
    return height_m * s * s * (3.0 - 2.0 * s)


def walking(command: F, threshold: float = 0.01) -> NDArray[np.bool_]:
    """The clock runs (parkour_core.gait.GaitClock's rule): a planar or yaw command above ``threshold``."""
    return (np.linalg.norm(command[:, :2], axis=-1) >= threshold) | (np.abs(command[:, 2]) >= threshold)


# -- the terms ------------------------------------------------------------------------------------


def lin_vel(st: State, ctx: Context) -> F:
    return np.exp(-np.sum((ctx.command[:, :2] - st.base_lin_vel[:, :2]) ** 2, axis=-1) / TRACKING_SIGMA2)


def ang_vel(st: State, ctx: Context) -> F:
    return np.exp(-((ctx.command[:, 2] - st.base_ang_vel[:, 2]) ** 2) / TRACKING_SIGMA2)


def lin_vel_z(st: State, ctx: Context) -> F:
    return st.base_lin_vel[:, 2] ** 2


def ang_vel_xy(st: State, ctx: Context) -> F:
    return np.sum(st.base_ang_vel[:, :2] ** 2, axis=-1)


def orientation(st: State, ctx: Context) -> F:
    return np.sum(st.gravity[:, :2] ** 2, axis=-1)


def base_height(st: State, ctx: Context) -> F:
    return (st.base_height_m - ctx.base_height_target_m) ** 2


def action_rate(st: State, ctx: Context) -> F:
    return np.sum((ctx.action - ctx.prev_action) ** 2, axis=-1)


def dof_vel(st: State, ctx: Context) -> F:
    return np.sum(st.dq**2, axis=-1)


def dof_pos_limits(st: State, ctx: Context) -> F:
    return np.sum(np.maximum(st.q - ctx.soft_max, 0.0) + np.maximum(ctx.soft_min - st.q, 0.0), axis=-1)


def target_limits(st: State, ctx: Context) -> F:
    return np.sum(ctx.target_excess, axis=-1)


def hip_pos(st: State, ctx: Context) -> F:
    return np.sum((st.q - ctx.default_q)[:, ctx.hip_joints] ** 2, axis=-1)


def alive(st: State, ctx: Context) -> F:
    return np.ones(len(st.q))


def contact(st: State, ctx: Context) -> F:
    return np.sum(st.foot_contact == ~swinging(ctx.gait_phase), axis=-1).astype(np.float64)


def swing_height(st: State, ctx: Context) -> F:
    lifted = swinging(ctx.gait_phase) & ~st.foot_contact
    return np.sum((st.foot_height_m - SWING_HEIGHT_M) ** 2 * lifted, axis=-1)


def feet_phase(st: State, ctx: Context) -> F:
    error = np.sum((st.foot_height_m - swing_target(ctx.gait_phase)) ** 2, axis=-1)
    return np.exp(-error / PHASE_SIGMA2)


def feet_slip(st: State, ctx: Context) -> F:
    return np.sum(np.sum(st.foot_vel_xy**2, axis=-1) * st.foot_contact, axis=-1)


def feet_air_time(st: State, ctx: Context) -> F:
    flight = np.minimum(ctx.air_time_s, ctx.swing_s) - AIR_TIME_S
    return np.sum(flight * ctx.first_contact, axis=-1) * walking(ctx.command)


def upper_pose(st: State, ctx: Context) -> F:
    return np.sum(ctx.pose_weights * (st.q - ctx.default_q) ** 2, axis=-1)


def torques(st: State, ctx: Context) -> F:
    return np.sum(st.torque**2, axis=-1)


def progress(st: State, ctx: Context) -> F:
    """Speed along the commanded planar direction (m/s), capped at the commanded speed; 0 at a planar command
    under 0.01 m/s. Unlike the tracking kernel it keeps paying each cm/s up to the command, where
    exp(-e^2/sigma^2) is already near its top."""
    speed = np.linalg.norm(ctx.command[:, :2], axis=-1)
    moving = speed >= 0.01
    direction = ctx.command[:, :2] / np.where(moving, speed, 1.0)[:, None]
    along = np.sum(st.base_lin_vel[:, :2] * direction, axis=-1)
    return np.where(moving, np.minimum(along, speed), 0.0)


TERMS: dict[str, Callable[[State, Context], F]] = {
    f.__name__: f
    for f in (
        lin_vel, ang_vel, lin_vel_z, ang_vel_xy, orientation, base_height, action_rate, dof_vel, dof_pos_limits,
        target_limits, hip_pos, alive, contact, swing_height, feet_phase, feet_slip, feet_air_time, upper_pose,
        torques, progress,
    )
}  # fmt: skip


def terms(st: State, ctx: Context) -> dict[str, F]:
    return {name: f(st, ctx) for name, f in TERMS.items()}


def total(values: dict[str, F], weights: Weights, only_positive: bool = True) -> F:
    w = asdict(weights)
    unknown = set(values) ^ set(w)
    if unknown:
        raise ValueError(f"reward terms and weights differ: {sorted(unknown)}")
    summed = sum(w[name] * v for name, v in values.items())
    return np.maximum(summed, 0.0) if only_positive else summed
