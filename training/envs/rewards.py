"""PHP's motion-tracking reward (Eq. 5, DeepMimic-style), its regularizers and the termination. Pure numpy.

Every tracking term is ``exp(-err / sigma^2)`` with ``err`` a squared error, so a term is 1 at zero
error and ``exp(-1)`` when the error is one sigma. PHP's sigmas: body position 0.3 m, orientation
0.4 rad, linear velocity 1.0 m/s, angular velocity 3.14 rad/s, anchor position 0.3 m and anchor
orientation 0.4 rad, all with weight 1. Regularizers: action rate -0.1, joint limits -10,
self-contact -0.5. The reward is not scaled by the control period.

Our reading where the text leaves room is one function each below: :func:`reanchor` (the body
terms), :func:`tracking_error`, :func:`joint_limit_violation` and the self-contact count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from training.configs.fields import param
from training.motion_matching import quat

F = NDArray[np.float64]

TRACKING_TERMS = ("body_pos", "body_ori", "body_lin_vel", "body_ang_vel", "anchor_pos", "anchor_ori")
PENALTY_TERMS = ("action_rate", "joint_limit", "self_contact")
TERMS = TRACKING_TERMS + PENALTY_TERMS

TERMINATION_M = 0.5
"""PHP's teacher termination: tracking error above this ends the episode (distillation relaxes it)."""


@dataclass(frozen=True)
class RewardConfig:
    """PHP's DeepMimic terms ``exp(-err / sigma^2)`` and regularizers: the sigma of every tracking kernel and
    the weight of every term (PHP's values); a training config's ``reward`` section."""

    sigma_body_pos: float = param(0.3, 1e-3, 10.0, doc="m")
    sigma_body_ori: float = param(0.4, 1e-3, 10.0, doc="rad")
    sigma_body_lin_vel: float = param(1.0, 1e-3, 100.0, doc="m/s")
    sigma_body_ang_vel: float = param(3.14, 1e-3, 100.0, doc="rad/s")
    sigma_anchor_pos: float = param(0.3, 1e-3, 10.0, doc="m")
    sigma_anchor_ori: float = param(0.4, 1e-3, 10.0, doc="rad")
    weight_body_pos: float = param(1.0, 0.0, 100.0)
    weight_body_ori: float = param(1.0, 0.0, 100.0)
    weight_body_lin_vel: float = param(1.0, 0.0, 100.0)
    weight_body_ang_vel: float = param(1.0, 0.0, 100.0)
    weight_anchor_pos: float = param(1.0, 0.0, 100.0)
    weight_anchor_ori: float = param(1.0, 0.0, 100.0)
    weight_action_rate: float = param(-0.1, -100.0, 0.0, doc="penalty: <= 0")
    weight_joint_limit: float = param(-10.0, -1000.0, 0.0, doc="penalty: <= 0")
    weight_self_contact: float = param(-0.5, -100.0, 0.0, doc="penalty: <= 0 (undesired contacts)")
    soft_limit_factor: float = param(0.9, 0.1, 1.0, doc="joint-limit penalty starts at this fraction of the range")

    def sigma(self, term: str) -> float:
        return float(getattr(self, f"sigma_{term}"))

    def weight(self, term: str) -> float:
        return float(getattr(self, f"weight_{term}"))


@dataclass(frozen=True)
class BodyState:
    """Tracked bodies, batched: (N, B, 3) positions, (N, B, 4) w-first quaternions, world velocities."""

    pos: F
    quat: F
    lin_vel: F
    ang_vel: F


@dataclass(frozen=True)
class RewardInput:
    robot: BodyState
    reference: BodyState  # the reference at the same time, world frame (not re-anchored)
    anchor: int  # index of the anchor body among the tracked bodies
    joint_pos: F  # (N, J)
    joint_min: F  # (J,)
    joint_max: F  # (J,)
    action: F  # (N, J)
    prev_action: F  # (N, J)
    self_contacts: F  # (N,) the number of contacts between two of the robot's own geoms


def gaussian(err: F, sigma: float) -> F:
    """DeepMimic kernel of a squared error: 1 at zero, exp(-1) at one sigma."""
    return np.exp(-np.asarray(err) / sigma**2)


def quat_angle(a: F, b: F) -> F:
    """Rotation angle (rad, in [0, pi]) between unit quaternions a and b (..., 4)."""
    rel = quat.mul(a, quat.conj(b))
    return 2.0 * np.arctan2(np.linalg.norm(rel[..., 1:], axis=-1), np.abs(rel[..., 0]))


def yaw_quat(q: F) -> F:
    return quat.from_yaw(quat.yaw(q))


def reanchor(reference: BodyState, robot: BodyState, anchor: int) -> BodyState:
    """The reference moved onto the robot: anchor planar position and heading matched, height kept.

    The body terms compare the robot's bodies with the reference's bodies re-anchored on the robot
    (BeyondMimic), so a pelvis drift is paid once, by the anchor terms, and not again by every body. Body
    errors are means over the tracked bodies; velocities are world-frame.
    """
    ref_anchor_pos = reference.pos[:, anchor]
    delta_pos = robot.pos[:, anchor].copy()
    delta_pos[:, 2] = ref_anchor_pos[:, 2]
    delta = yaw_quat(quat.mul(robot.quat[:, anchor], quat.conj(reference.quat[:, anchor])))  # (N, 4)
    d = np.broadcast_to(delta[:, None, :], reference.quat.shape)  # (N, B, 4)
    return BodyState(
        pos=delta_pos[:, None, :] + quat.rotate(d, reference.pos - ref_anchor_pos[:, None, :]),
        quat=quat.mul(d, reference.quat),
        lin_vel=quat.rotate(d, reference.lin_vel),
        ang_vel=quat.rotate(d, reference.ang_vel),
    )


def squared_errors(inp: RewardInput) -> dict[str, F]:
    """The squared error behind each tracking term, (N,) each."""
    rel = reanchor(inp.reference, inp.robot, inp.anchor)
    robot, ref, a = inp.robot, inp.reference, inp.anchor
    return {
        "body_pos": np.mean(np.sum((rel.pos - robot.pos) ** 2, axis=-1), axis=-1),
        "body_ori": np.mean(quat_angle(rel.quat, robot.quat) ** 2, axis=-1),
        "body_lin_vel": np.mean(np.sum((ref.lin_vel - robot.lin_vel) ** 2, axis=-1), axis=-1),
        "body_ang_vel": np.mean(np.sum((ref.ang_vel - robot.ang_vel) ** 2, axis=-1), axis=-1),
        "anchor_pos": np.sum((ref.pos[:, a] - robot.pos[:, a]) ** 2, axis=-1),
        "anchor_ori": quat_angle(ref.quat[:, a], robot.quat[:, a]) ** 2,
    }


def joint_limit_violation(q: F, q_min: F, q_max: F, soft_factor: float) -> F:
    """Sum over joints of the distance outside the soft range (``soft_factor`` of the range, centred).

    PHP's joint-limit term, read as the distance outside 90 % of each joint's range.
    """
    centre = 0.5 * (q_min + q_max)
    half = 0.5 * (q_max - q_min) * soft_factor
    return np.sum(np.maximum(q - (centre + half), 0.0) + np.maximum((centre - half) - q, 0.0), axis=-1)


def action_rate(action: F, prev_action: F) -> F:
    return np.sum((action - prev_action) ** 2, axis=-1)


def reward_terms(inp: RewardInput, cfg: RewardConfig = RewardConfig()) -> dict[str, F]:
    """Unweighted term values, (N,) each: kernels in [0, 1], penalties >= 0."""
    errors = squared_errors(inp)
    terms = {name: gaussian(errors[name], cfg.sigma(name)) for name in TRACKING_TERMS}
    terms["action_rate"] = action_rate(inp.action, inp.prev_action)
    terms["joint_limit"] = joint_limit_violation(inp.joint_pos, inp.joint_min, inp.joint_max, cfg.soft_limit_factor)
    terms["self_contact"] = np.asarray(inp.self_contacts, dtype=np.float64)
    return terms


def weighted(terms: dict[str, F], cfg: RewardConfig = RewardConfig()) -> dict[str, F]:
    """Each term times its weight: what it adds to the reward."""
    return {name: cfg.weight(name) * value for name, value in terms.items()}


def total_reward(terms: dict[str, F], cfg: RewardConfig = RewardConfig()) -> F:
    return np.sum([cfg.weight(name) * value for name, value in terms.items()], axis=0)


def tracking_error(robot_body_pos: F, reference_body_pos: F) -> F:
    """Mean world distance (m) between the robot's and the reference's tracked bodies, (N,).

    What the 0.5 m termination checks, and the DAgger mask: drift included.
    """
    return np.mean(np.linalg.norm(robot_body_pos - reference_body_pos, axis=-1), axis=-1)


def terminated(error: F, threshold_m: float = TERMINATION_M) -> NDArray[np.bool_]:
    """True where the tracking error exceeds the threshold (an error equal to it is still tracking)."""
    return np.asarray(error) > threshold_m
