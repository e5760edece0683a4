"""The terrain-aware teacher of stage 2: the walking policy plus a privileged step-up reflex.

The blind walking policy (``WalkTeacher``) clears 5 cm platforms and falls on 10 cm and higher: its
swing foot catches the platform's edge. This teacher knows the terrain (privileged: the boxes of its
environment) and the feet's positions and velocities. While a foot swings forward (its velocity
along the box's axis exceeds the base's by ``swing_margin_mps``) and is in the band
``approach_m`` before to ``past_m`` past a near face, below the platform's top plus ``clearance_m``,
it flexes that leg's hip, knee and ankle by ``(-L, 2 L, -L)`` rad: the foot rises with its sole
parallel to where it was (the three pitch angles add up to zero), and the policy keeps balancing
around it. ``L`` grows with the platform's height: ``lift_base_rad + lift_per_m * height``.

Why a scripted reflex and not a trained terrain-aware teacher: training a height-scan teacher by PPO
takes tens of millions of steps, days on a CPU; the reflex makes the blind policy clear 10 and 15 cm
platforms in MuJoCo with the walker's own gains (results/training/student_step/teacher_speed.json), so
DAgger labels are right on the step, and the student has to learn from depth where the steps are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from training.envs.mujoco_cpu import BatchedMujoco
from training.tasks.student_walk.teacher import WalkTeacher

F = NDArray[np.float64]

FEET = ("left_ankle_roll_link", "right_ankle_roll_link")
# (hip pitch, knee, ankle pitch) of each leg in the G1's joint order.
LEG_PITCH_JOINTS = ((0, 3, 4), (6, 9, 10))
LIFT_PATTERN = np.array([-1.0, 2.0, -1.0])


@dataclass(frozen=True)
class ReflexConfig:
    lift_base_rad: float = 0.1
    lift_per_m: float = 1.0
    approach_m: float = 0.35
    past_m: float = 0.05
    clearance_m: float = 0.06
    swing_margin_mps: float = 0.1


def box_frame(terrain_center: F, terrain_yaw: F) -> tuple[F, F]:
    """Unit axes (B, 2) of each box's x and the centres (B, 2)."""
    axis = np.stack([np.cos(terrain_yaw), np.sin(terrain_yaw)], axis=-1)
    return axis, terrain_center[:, :2]


def lift_angles(
    foot_pos: F, foot_vel: F, base_vel: F, center: F, half: F, yaw: F, cfg: ReflexConfig = ReflexConfig()
) -> F:
    """Lift angle L (rad) per foot of one robot: foot_pos/vel (2, 3), base_vel (3,), boxes (B, 3)/(B, 3)/(B,)."""
    out = np.zeros(len(foot_pos))
    if len(yaw) == 0:
        return out
    axis, c = box_frame(center, yaw)
    top = center[:, 2] + half[:, 2]
    for leg in range(len(foot_pos)):
        rel = foot_pos[leg, :2] - c
        past_face = np.einsum("bk,bk->b", rel, axis) + half[:, 0]  # past each near face, along the box's axis
        lateral = np.abs(np.einsum("bk,bk->b", rel, axis[:, ::-1] * [-1.0, 1.0]))
        swing = np.einsum("k,bk->b", foot_vel[leg, :2] - base_vel[:2], axis) > cfg.swing_margin_mps
        near = (past_face > -cfg.approach_m) & (past_face < cfg.past_m) & (lateral < half[:, 1])
        low = foot_pos[leg, 2] < top + cfg.clearance_m
        hit = swing & near & low
        if hit.any():
            height = float(np.max(np.where(hit, top, 0.0)))
            out[leg] = cfg.lift_base_rad + cfg.lift_per_m * height
    return out


def teacher_command(command: F, forward_gain: float) -> F:
    """The command the walking policy is given: ``command`` with its forward speed times ``forward_gain``.

    Stage 2's student is asked to walk at the eval's pace, and DAgger cannot make it faster than its
    teacher; on the course the walking policy moves at about half of 1 m/s (``teacher_speed.json``).
    """
    out = np.array(command, dtype=np.float64)
    out[:, 0] *= forward_gain
    return out


class StepTeacher:
    """``act(sim, command, last_action) -> actions (N, 29)``: the walking policy's plus the reflex.

    ``command_gain``: the walking policy is commanded ``teacher_command(command, command_gain)``.
    """

    def __init__(
        self, num_envs: int, sim: BatchedMujoco, reflex: ReflexConfig = ReflexConfig(), command_gain: float = 1.0
    ) -> None:
        self.walker = WalkTeacher(num_envs)
        self.command_gain = command_gain
        self.reflex = reflex
        self.sim = sim
        self.feet = np.array([sim.base_model.body(n).id for n in FEET])
        self.action_scale = float(self.walker.manifest.action_scale)
        self.kp, self.kd = self.walker.kp, self.walker.kd
        self.last_lift = np.zeros((num_envs, 2))

    def reset(self, env_ids: NDArray[np.int64] | None = None) -> None:
        self.walker.reset(env_ids)

    def act(self, command: F, last_action: F, phase: F | None = None) -> F:
        """``phase``: the environment's gait phase (see ``WalkTeacher.observe``)."""
        sim = self.sim
        command = teacher_command(command, self.command_gain)
        actions = self.walker.act(sim.q, sim.dq, sim.root_quat, sim.gyro, command, last_action, phase)
        pos, _, vel, _ = sim.bodies(self.feet)
        base_vel = sim.root_lin_vel_w
        for i, terrain in enumerate(sim.terrains):
            lift = lift_angles(pos[i], vel[i], base_vel[i], terrain.center, terrain.half_size, terrain.yaw, self.reflex)
            self.last_lift[i] = lift
            for leg, joints in enumerate(LEG_PITCH_JOINTS):
                if lift[leg]:
                    actions[i, list(joints)] += LIFT_PATTERN * lift[leg] / self.action_scale
        return actions
