"""The step-up course's reward, platform passes and the teacher's step-up reflex, restated in torch.

Imports torch and our numpy config dataclasses only (no mjlab), so the runtime ``.venv`` tests them
against the CPU originals (``test_step_terms.py``: ``StepEnv.step_course`` and ``lift_angles`` from the
same state). The mjlab task (``step_task.py``) runs thousands of environments on one device, and the
originals loop over environments in numpy; these are the same formulas batched:

- :func:`lift_angles`: ``training.tasks.student_step.teacher.lift_angles`` for every environment at once,
  over its tile's boxes (padded slots carry ``NO_BOX`` half sizes, which no foot is ever within).
- :func:`platforms_passed`: ``StepEnv.platforms_passed`` (the base beyond a platform's far face, along
  the platform's own axis; course episodes only).
- :func:`step_reward`: ``StepEnv.step_course``'s reward, the platforms newly passed, the lane exit, the
  height each fall is charged to, from the state the step reached.
- :func:`supervised_actions` and :func:`refused`: ``StepEnv``'s of the same names (``course.supervisor_limits``):
  actions with their targets clamped as the motors get them, and targets the supervisor would refuse.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from training.tasks.student_step.env import CourseConfig, StepReward
from training.tasks.student_step.teacher import LEG_PITCH_JOINTS, LIFT_PATTERN, ReflexConfig

REFLEX, COURSE, REWARD = ReflexConfig(), CourseConfig(), StepReward()


def _axes(yaw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each box's x axis and its left normal in the plane, (..., 2) each."""
    c, s = torch.cos(yaw), torch.sin(yaw)
    return torch.stack([c, s], -1), torch.stack([-s, c], -1)


def lift_angles(
    foot_pos: torch.Tensor,
    foot_vel: torch.Tensor,
    base_vel: torch.Tensor,
    center: torch.Tensor,
    half: torch.Tensor,
    yaw: torch.Tensor,
    cfg: ReflexConfig = REFLEX,
) -> torch.Tensor:
    """Lift angle L (rad), (N, 2): feet (N, 2, 3) in the boxes' frame, base velocity (N, 3), boxes (N, B, .)."""
    axis, normal = _axes(yaw)  # (N, B, 2)
    rel = foot_pos[:, :, None, :2] - center[:, None, :, :2]  # (N, 2, B, 2)
    past_face = (rel * axis[:, None]).sum(-1) + half[:, None, :, 0]
    lateral = (rel * normal[:, None]).sum(-1).abs()
    swing = ((foot_vel[:, :, None, :2] - base_vel[:, None, None, :2]) * axis[:, None]).sum(-1) > cfg.swing_margin_mps
    near = (past_face > -cfg.approach_m) & (past_face < cfg.past_m) & (lateral < half[:, None, :, 1])
    top = (center[..., 2] + half[..., 2])[:, None, :]  # (N, 1, B)
    low = foot_pos[:, :, None, 2] < top + cfg.clearance_m
    hit = swing & near & low
    height = torch.where(hit, top, torch.zeros_like(top)).amax(-1)
    return torch.where(hit.any(-1), cfg.lift_base_rad + cfg.lift_per_m * height, torch.zeros_like(height))


def reflex_offsets(lift: torch.Tensor, action_scale: float) -> torch.Tensor:
    """(N, 29) action offsets of the lift (N, 2): ``(-L, 2L, -L)`` on each leg's hip, knee and ankle pitch."""
    out = torch.zeros((lift.shape[0], 29), dtype=lift.dtype, device=lift.device)
    pattern = torch.as_tensor(LIFT_PATTERN, dtype=lift.dtype, device=lift.device)
    for leg, joints in enumerate(LEG_PITCH_JOINTS):
        out[:, list(joints)] = pattern * lift[:, leg : leg + 1] / action_scale
    return out


def supervised_actions(
    actions: torch.Tensor, default_q: torch.Tensor, action_scale: float, low: torch.Tensor, high: torch.Tensor
) -> torch.Tensor:
    """The actions whose targets ``default_q + action_scale * a`` are clamped into [low, high]."""
    targets = default_q + action_scale * actions
    return (torch.clamp(targets, low, high) - default_q) / action_scale


def refused(
    actions: torch.Tensor,
    default_q: torch.Tensor,
    action_scale: float,
    q_min: torch.Tensor,
    q_max: torch.Tensor,
    tolerance_rad: float,
) -> torch.Tensor:
    """(N,) some target is past its joint limit by more than ``tolerance_rad``."""
    targets = default_q + action_scale * actions
    return torch.maximum(q_min - targets, targets - q_max).max(dim=-1).values > tolerance_rad


def platforms_passed(
    root_xy: torch.Tensor, center: torch.Tensor, half: torch.Tensor, yaw: torch.Tensor, on_course: torch.Tensor
) -> torch.Tensor:
    """(N, P) the base (N, 2, in the course's frame) beyond each platform's far face; False off a course."""
    axis, _ = _axes(yaw)
    along = ((root_xy[:, None, :] - center[..., :2]) * axis).sum(-1)
    return (along > half[..., 0]) & on_course[:, None]


def left_lane(root_y: torch.Tensor, on_course: torch.Tensor, done: torch.Tensor, course: CourseConfig) -> torch.Tensor:
    """(N,) a course episode's base beyond its lane (``root_y`` in the course's frame), unless it ended otherwise."""
    if not course.progress_reward:
        return torch.zeros_like(done)
    return on_course & ~done & (root_y.abs() > course.lane_half_width_m)


def yaw_of(quat_wxyz: torch.Tensor) -> torch.Tensor:
    """``training.motion_matching.quat.yaw``: the heading of the body's x axis."""
    w, x, y, z = quat_wxyz.unbind(-1)
    return torch.atan2(2.0 * (x * y + w * z), 1.0 - 2.0 * (y * y + z * z))


@dataclass
class StepOutcome:
    """What ``StepEnv.step_course`` returns and records, per environment."""

    reward: torch.Tensor  # (N,)
    track: torch.Tensor  # (N,)
    newly: torch.Tensor  # (N, P) platforms passed for the first time this step
    cleared: torch.Tensor  # (N, P) passed so far, this step included
    left_lane: torch.Tensor  # (N,)
    fell: torch.Tensor  # (N,)
    fell_pending: torch.Tensor  # (N,) a fall on a course with a platform still ahead
    attempted_height: torch.Tensor  # (N,) the first platform not yet passed: the one a fall is charged to


def step_reward(
    root_pos: torch.Tensor,
    root_quat: torch.Tensor,
    lin_vel_w: torch.Tensor,
    yaw_rate: torch.Tensor,
    command: torch.Tensor,
    on_course: torch.Tensor,
    cleared_before: torch.Tensor,
    heights: torch.Tensor,
    center: torch.Tensor,
    half: torch.Tensor,
    yaw: torch.Tensor,
    fell: torch.Tensor,
    done: torch.Tensor,
    dt_s: float,
    course: CourseConfig = COURSE,
    r: StepReward = REWARD,
) -> StepOutcome:
    """``StepEnv.step_course`` on the state the step reached: ``root_pos`` in the course's frame, ``command``,
    ``on_course``, ``cleared_before`` and ``heights`` as they were during the step, ``fell`` this step's falls,
    ``done`` every episode that ended in the step other than by leaving the lane (falls and time-outs)."""
    heading = yaw_of(root_quat)
    c, s = torch.cos(heading), torch.sin(heading)
    v = lin_vel_w
    v_heading = torch.stack([c * v[:, 0] + s * v[:, 1], -s * v[:, 0] + c * v[:, 1]], -1)
    velocity = v_heading
    if course.progress_reward:
        velocity = torch.where(on_course[:, None], v[:, :2], v_heading)
    lane = left_lane(root_pos[:, 1], on_course, done, course)
    track = torch.exp(-((velocity - command[:, :2]) ** 2).sum(-1) / r.sigma_sq)
    turn = torch.exp(-((yaw_rate - command[:, 2]) ** 2) / r.sigma_sq)
    passed = platforms_passed(root_pos[:, :2], center, half, yaw, on_course) & ~done[:, None]
    newly = passed & ~cleared_before
    reward = (r.track * track + r.yaw * turn) * dt_s + r.clear * newly.sum(-1)
    reward = torch.where(fell, torch.full_like(reward, r.fall), reward)
    attempting = torch.argmax((~cleared_before).to(torch.int8), dim=-1)  # numpy's argmax: the first maximum
    attempted = heights.gather(1, attempting[:, None])[:, 0]
    pending = ~cleared_before.all(-1) & on_course
    return StepOutcome(
        reward=reward, track=track, newly=newly, cleared=cleared_before | passed, left_lane=lane, fell=fell,
        fell_pending=fell & pending, attempted_height=attempted,
    )  # fmt: skip
