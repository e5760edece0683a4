"""Kinematic references for motion tracking, with everything the rewards need precomputed.

A reference is a `parkour mm synth` motion (``motion_*.npz``: root pose, 29 joint positions, the
box terrain and the per-frame command) run once through MuJoCo forward kinematics on the G1 model,
so an environment step only indexes arrays: the tracked bodies' world positions and orientations,
their linear and angular velocities (central differences), the joint velocities and the root
velocity a start state needs.

Two tiny synthetic references serve tests and toy runs without data: :func:`standing_reference`
(the default pose, feet on the floor) and :func:`squat_reference` (a slow knee bend with both feet
fixed on the floor, so a PD controller can replay it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from numpy.typing import NDArray

from parkour_core.robots import G1, RobotSpec
from parkour_sim.scene import build_model
from training.motion_matching import quat

F = NDArray[np.float64]

# BeyondMimic's G1 tracking set: pelvis, legs, torso, arms. The anchor is the pelvis, whose pose
# the privileged observation reports ("pelvis pose error").
TRACKED_BODIES: tuple[str, ...] = (
    "pelvis",
    "left_hip_roll_link",
    "left_knee_link",
    "left_ankle_roll_link",
    "right_hip_roll_link",
    "right_knee_link",
    "right_ankle_roll_link",
    "torso_link",
    "left_shoulder_roll_link",
    "left_elbow_link",
    "left_wrist_yaw_link",
    "right_shoulder_roll_link",
    "right_elbow_link",
    "right_wrist_yaw_link",
)
ANCHOR_BODY = "pelvis"
FK_DT_S = 0.002  # only the kinematic tree matters for FK; the time step is never used


@dataclass(frozen=True)
class Terrain:
    """Yaw-only boxes in the reference's world frame (the synth npz's ``terrain_box_*``)."""

    center: F = field(default_factory=lambda: np.zeros((0, 3)))  # (B, 3)
    half_size: F = field(default_factory=lambda: np.zeros((0, 3)))  # (B, 3)
    yaw: F = field(default_factory=lambda: np.zeros(0))  # (B,) rad

    def __len__(self) -> int:
        return len(self.yaw)

    def scene(self) -> dict[str, Any]:
        """The dict ``parkour_sim.scene.build_model`` reads."""
        return {
            "boxes": [
                {"pos": [float(x) for x in c], "half_size": [float(x) for x in h], "yaw_deg": float(np.rad2deg(y))}
                for c, h, y in zip(self.center, self.half_size, self.yaw, strict=True)
            ]
        }


@dataclass(frozen=True)
class Reference:
    """One motion and its terrain, sampled at ``fps``; arrays are (T, ...) and world-frame."""

    name: str
    fps: float
    root_pos: F  # (T, 3)
    root_quat: F  # (T, 4) w first
    joint_pos: F  # (T, J) robot joint order
    joint_vel: F  # (T, J)
    root_lin_vel_w: F  # (T, 3)
    root_ang_vel_w: F  # (T, 3)
    body_names: tuple[str, ...]
    body_pos_w: F  # (T, B, 3)
    body_quat_w: F  # (T, B, 4)
    body_lin_vel_w: F  # (T, B, 3) velocity of each body frame's origin
    body_ang_vel_w: F  # (T, B, 3)
    command_vel_world: F  # (T, 2) commanded planar velocity
    command_heading: F  # (T,) commanded heading (rad)
    terrain: Terrain

    @property
    def num_frames(self) -> int:
        return len(self.root_pos)

    @property
    def duration_s(self) -> float:
        return (self.num_frames - 1) / self.fps

    @property
    def anchor_index(self) -> int:
        return self.body_names.index(ANCHOR_BODY)


@cache
def _fk_model(robot: RobotSpec) -> mujoco.MjModel:
    return build_model(robot, {"boxes": []}, FK_DT_S)


def _angular_velocity(q: F, fps: float) -> F:
    """World angular velocity (..., T, 3) of a quaternion track (T on axis 0), central differences."""
    n = len(q)
    if n < 2:
        return np.zeros((*q.shape[:-1], 3))
    nxt = np.concatenate([q[1:], q[-1:]])
    prv = np.concatenate([q[:1], q[:-1]])
    steps = np.full(n, 2.0)
    steps[0] = steps[-1] = 1.0
    shape = (n,) + (1,) * (q.ndim - 1)
    return quat.to_rotvec(quat.mul(nxt, quat.conj(prv))) * (fps / steps.reshape(shape))


def _velocity(x: F, fps: float) -> F:
    if len(x) < 2:
        return np.zeros_like(x)
    return np.gradient(x, 1.0 / fps, axis=0)


def from_motion(
    name: str,
    fps: float,
    root_pos: F,
    root_quat: F,
    joint_pos: F,
    terrain: Terrain | None = None,
    command_vel_world: F | None = None,
    command_heading: F | None = None,
    robot: RobotSpec = G1,
    bodies: Sequence[str] = TRACKED_BODIES,
) -> Reference:
    """Run forward kinematics over a motion and difference it into velocities."""
    root_pos = np.asarray(root_pos, dtype=np.float64)
    root_quat = quat.normalize(np.asarray(root_quat, dtype=np.float64))
    joint_pos = np.asarray(joint_pos, dtype=np.float64)
    n = len(root_pos)
    if root_quat.shape != (n, 4) or joint_pos.shape != (n, robot.num_joints) or root_pos.shape != (n, 3):
        raise ValueError(
            f"reference {name!r}: root_pos {root_pos.shape}, root_quat {root_quat.shape} and joint_pos "
            f"{joint_pos.shape} must be (T, 3), (T, 4), (T, {robot.num_joints})"
        )
    if n < 2:
        raise ValueError(f"reference {name!r} needs at least 2 frames, got {n}")
    # Quaternion sign continuity, so differences take the short way round.
    root_quat = root_quat.copy()
    for t in range(1, n):
        if np.dot(root_quat[t], root_quat[t - 1]) < 0.0:
            root_quat[t] = -root_quat[t]
    m = _fk_model(robot)
    d = mujoco.MjData(m)
    qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in robot.joint_names])
    body_ids = [m.body(b).id for b in bodies]
    body_pos = np.empty((n, len(body_ids), 3))
    body_quat = np.empty((n, len(body_ids), 4))
    for t in range(n):
        d.qpos[0:3] = root_pos[t]
        d.qpos[3:7] = root_quat[t]
        d.qpos[qadr] = joint_pos[t]
        mujoco.mj_kinematics(m, d)
        body_pos[t] = d.xpos[body_ids]
        body_quat[t] = d.xquat[body_ids]
    for t in range(1, n):
        flip = np.sum(body_quat[t] * body_quat[t - 1], axis=-1) < 0.0
        body_quat[t, flip] = -body_quat[t, flip]
    if command_vel_world is None:
        command_vel_world = np.zeros((n, 2))
    if command_heading is None:
        command_heading = quat.yaw(root_quat)
    return Reference(
        name=name,
        fps=float(fps),
        root_pos=root_pos,
        root_quat=root_quat,
        joint_pos=joint_pos,
        joint_vel=_velocity(joint_pos, fps),
        root_lin_vel_w=_velocity(root_pos, fps),
        root_ang_vel_w=_angular_velocity(root_quat, fps),
        body_names=tuple(bodies),
        body_pos_w=body_pos,
        body_quat_w=body_quat,
        body_lin_vel_w=_velocity(body_pos, fps),
        body_ang_vel_w=_angular_velocity(body_quat, fps),
        command_vel_world=np.asarray(command_vel_world, dtype=np.float64),
        command_heading=np.asarray(command_heading, dtype=np.float64),
        terrain=terrain if terrain is not None else Terrain(),
    )


def load_reference(path: Path | str, robot: RobotSpec = G1) -> Reference:
    """A ``parkour mm synth`` motion file (see training/motion_matching/README.md for its keys)."""
    path = Path(path)
    with np.load(path) as z:
        names = tuple(str(n) for n in z["joint_names"])
        if names != robot.joint_names:
            raise ValueError(f"{path}: joint_names differ from the {robot.name}'s joint order")
        terrain = Terrain(
            np.asarray(z["terrain_box_center"], dtype=np.float64).reshape(-1, 3),
            np.asarray(z["terrain_box_half_size"], dtype=np.float64).reshape(-1, 3),
            np.asarray(z["terrain_box_yaw"], dtype=np.float64).reshape(-1),
        )
        return from_motion(
            path.stem,
            float(z["fps"]),
            z["root_pos"],
            z["root_quat"],
            z["joint_pos"],
            terrain,
            z["command_vel_world"],
            z["command_heading"],
            robot,
        )


# ---------------------------------------------------------------------------------------------
# Synthetic references


def _feet_on_floor_height(robot: RobotSpec, joints: F) -> float:
    """Pelvis height (upright, at the origin) at which the lowest foot geom touches z = 0."""
    m = _fk_model(robot)
    d = mujoco.MjData(m)
    qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in robot.joint_names])
    lifted = 1.5  # well clear of the floor: a penetration depth is not a distance
    d.qpos[2] = lifted
    d.qpos[3] = 1.0
    d.qpos[qadr] = joints
    mujoco.mj_kinematics(m, d)
    floor = m.geom("floor").id
    feet = {m.body(b).id for b in robot.foot_bodies}
    fromto = np.zeros(6)
    lowest = min(
        mujoco.mj_geomDistance(m, d, floor, g, 10.0, fromto)
        for g in range(m.ngeom)
        if m.geom_bodyid[g] in feet and m.geom_contype[g]
    )
    return lifted - float(lowest)


def standing_reference(seconds: float = 2.0, fps: float = 50.0, robot: RobotSpec = G1) -> Reference:
    """The default pose, standing still at the origin with the feet on the floor."""
    n = round(seconds * fps) + 1
    joints = np.tile(robot.default_q, (n, 1))
    root = np.tile([0.0, 0.0, _feet_on_floor_height(robot, robot.default_q)], (n, 1))
    return from_motion("standing", fps, root, np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)), joints, robot=robot)


# Bending hip pitch, knee and ankle pitch by (-1, 2, -1) x delta keeps each foot parallel to the pelvis.
_SQUAT_DIRECTION = {"hip_pitch_joint": -1.0, "knee_joint": 2.0, "ankle_pitch_joint": -1.0}


def squat_reference(
    seconds: float = 2.0, depth_rad: float = 0.8, period_s: float = 2.0, fps: float = 50.0, robot: RobotSpec = G1
) -> Reference:
    """A slow squat from the default pose: knee bend ``depth_rad`` at mid-period, feet fixed on the floor.

    The pelvis stays upright and is placed by forward kinematics so that both ankles stay where they
    were at frame 0 (the pelvis moves down and slightly back): a motion a PD controller can roughly
    replay (the robot sags and leans back a few degrees behind the reference).
    """
    n = round(seconds * fps) + 1
    t = np.arange(n) / fps
    bend = 0.5 * depth_rad * (1.0 - np.cos(2.0 * np.pi * t / period_s))
    direction = np.zeros(robot.num_joints)
    for i, name in enumerate(robot.joint_names):
        for suffix, sign in _SQUAT_DIRECTION.items():
            if name.endswith(suffix):
                direction[i] = 0.5 * sign  # knee = 2 x 0.5 x depth
    joints = robot.default_q[None, :] + bend[:, None] * direction[None, :]
    ankles = from_motion(
        "squat_fk", fps, np.zeros((n, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)), joints, robot=robot,
        bodies=robot.foot_bodies,
    ).body_pos_w  # fmt: skip
    height = _feet_on_floor_height(robot, robot.default_q)
    target = ankles[0] + np.array([0.0, 0.0, height])
    root = np.mean(target[None] - ankles, axis=1)
    return from_motion("squat", fps, root, np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)), joints, robot=robot)


def with_terrain(reference: Reference, terrain: Terrain, name: str | None = None) -> Reference:
    """The same motion on other boxes (tests: a standing robot in front of a box)."""
    return replace(reference, terrain=terrain, name=name or reference.name)
