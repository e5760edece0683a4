"""HIL's discriminator features: one state vector per robot (or reference) state, a transition is two.

The same function (:func:`state_features`) reads a simulated robot (:func:`env_states`, from a
:class:`~training.envs.tracking.TrackingEnv`) and a reference motion (:func:`reference_states`), so
"real" (motion library) and "generated" (policy) transitions share one layout (:data:`BLOCKS`).
Everything is in the robot's heading frame (yaw-only), so the features do not depend on where on
the course it stands.

The scene samples use the analytic height of :func:`training.envs.privileged.terrain_height` (the
privileged height scan's), at ``x in SCENE_POINTS_M`` ahead of the pelvis on its heading line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from parkour_core.robots import G1, RobotSpec
from training.envs.privileged import NO_BOX, terrain_height
from training.envs.reference import Reference, Terrain
from training.motion_matching import quat

F = NDArray[np.float64]
Ints = NDArray[np.int64]

KEY_BODIES: tuple[str, ...] = (
    "left_ankle_roll_link",
    "right_ankle_roll_link",
    "left_wrist_yaw_link",
    "right_wrist_yaw_link",
)
SCENE_POINTS_M: tuple[float, ...] = (-0.2, 0.2, 0.4, 0.6, 0.9)  # along the heading from the pelvis
BLOCKS: tuple[tuple[str, int], ...] = (
    ("joint_pos", 29),  # joint positions minus the default pose
    ("joint_vel", 29),  # joint velocities
    ("root_height", 1),  # pelvis height above the terrain under it
    ("root_lin_vel_h", 3),  # pelvis linear velocity, heading frame
    ("root_ang_vel_h", 3),  # pelvis angular velocity, heading frame
    ("gravity_b", 3),  # the world's down direction in the pelvis frame (roll and pitch)
    ("key_bodies_h", 3 * len(KEY_BODIES)),  # ankles and wrists relative to the pelvis, heading frame
    ("scene", len(SCENE_POINTS_M)),  # terrain height ahead on the heading, relative to that under the pelvis
)
STATE_DIM = sum(d for _, d in BLOCKS)
BLOCK_SLICES: dict[str, slice] = {
    name: slice(sum(d for _, d in BLOCKS[:i]), sum(d for _, d in BLOCKS[: i + 1])) for i, (name, _) in enumerate(BLOCKS)
}
TRANSITION_DIM = 2 * STATE_DIM


@dataclass(frozen=True)
class StateInput:
    """What the features read, batched over N states (world frame)."""

    root_pos: F  # (N, 3)
    root_quat: F  # (N, 4) w first
    root_lin_vel_w: F  # (N, 3)
    root_ang_vel_w: F  # (N, 3)
    joint_pos: F  # (N, J)
    joint_vel: F  # (N, J)
    key_pos_w: F  # (N, K, 3)
    box_center: F  # (N, B, 3), padding slots have half size NO_BOX
    box_half: F  # (N, B, 3)
    box_yaw: F  # (N, B)


def padded_boxes(terrain: Terrain, slots: int) -> tuple[F, F, F]:
    """A terrain's boxes in ``slots`` slots (unused ones can never contain a point)."""
    if len(terrain) > slots:
        raise ValueError(f"terrain has {len(terrain)} boxes, more than {slots} slots")
    center, half, yaw = np.zeros((slots, 3)), np.full((slots, 3), NO_BOX), np.zeros(slots)
    b = len(terrain)
    center[:b], half[:b], yaw[:b] = terrain.center, terrain.half_size, terrain.yaw
    return center, half, yaw


def _to_heading(heading: F, v: F) -> F:
    """World vectors (N, ..., 3) into the yaw-only frame of ``heading`` (N,)."""
    c, s = np.cos(heading), np.sin(heading)
    c, s = c.reshape(c.shape + (1,) * (v.ndim - 2)), s.reshape(s.shape + (1,) * (v.ndim - 2))
    x, y = v[..., 0], v[..., 1]
    return np.stack([c * x + s * y, -s * x + c * y, v[..., 2]], axis=-1)


def state_features(x: StateInput, default_q: F = G1.default_q) -> NDArray[np.float32]:
    """(N, STATE_DIM) float32, the blocks of :data:`BLOCKS` in order."""
    n = len(x.root_pos)
    heading = quat.yaw(x.root_quat)
    ground = terrain_height(x.box_center, x.box_half, x.box_yaw, x.root_pos[:, None, :2])[:, 0]
    ahead = np.asarray(SCENE_POINTS_M)
    points = x.root_pos[:, None, :2] + ahead[None, :, None] * np.stack([np.cos(heading), np.sin(heading)], -1)[:, None]
    scene = terrain_height(x.box_center, x.box_half, x.box_yaw, points) - ground[:, None]
    down = np.broadcast_to(np.array([0.0, 0.0, -1.0]), (n, 3))
    key = _to_heading(heading, x.key_pos_w - x.root_pos[:, None, :]).reshape(n, -1)
    parts = (
        x.joint_pos - default_q,
        x.joint_vel,
        (x.root_pos[:, 2] - ground)[:, None],
        _to_heading(heading, x.root_lin_vel_w),
        _to_heading(heading, x.root_ang_vel_w),
        quat.rotate(quat.conj(x.root_quat), down),
        key,
        scene,
    )
    out = np.concatenate(parts, axis=-1).astype(np.float32)
    if out.shape != (n, STATE_DIM):
        raise ValueError(f"state features have shape {out.shape}, expected ({n}, {STATE_DIM})")
    return out


def reference_states(reference: Reference, frames: Ints, slots: int) -> StateInput:
    """A reference's states at ``frames`` (its own forward kinematics and differenced velocities)."""
    f = np.asarray(frames, dtype=np.int64)
    key = [reference.body_names.index(b) for b in KEY_BODIES]
    center, half, yaw = padded_boxes(reference.terrain, slots)
    n = len(f)
    return StateInput(
        root_pos=reference.root_pos[f],
        root_quat=reference.root_quat[f],
        root_lin_vel_w=reference.root_lin_vel_w[f],
        root_ang_vel_w=reference.root_ang_vel_w[f],
        joint_pos=reference.joint_pos[f],
        joint_vel=reference.joint_vel[f],
        key_pos_w=reference.body_pos_w[f][:, key],
        box_center=np.broadcast_to(center, (n, *center.shape)),
        box_half=np.broadcast_to(half, (n, *half.shape)),
        box_yaw=np.broadcast_to(yaw, (n, *yaw.shape)),
    )


def env_states(env) -> StateInput:  # env: training.envs.tracking.TrackingEnv
    """Every environment's simulated state (after its last physics step) on its own terrain."""
    bodies = env.robot_bodies()
    names = env.references[0].body_names
    key = [names.index(b) for b in KEY_BODIES]
    anchor = env.anchor
    slots = env.cfg.max_boxes
    boxes = [padded_boxes(env.references[r].terrain, slots) for r in env.ref_id]
    return StateInput(
        root_pos=env.sim.root_pos,
        root_quat=env.sim.root_quat,
        root_lin_vel_w=env.sim.root_lin_vel_w,
        root_ang_vel_w=bodies.ang_vel[:, anchor],
        joint_pos=env.sim.q,
        joint_vel=env.sim.dq,
        key_pos_w=bodies.pos[:, key],
        box_center=np.stack([b[0] for b in boxes]),
        box_half=np.stack([b[1] for b in boxes]),
        box_yaw=np.stack([b[2] for b in boxes]),
    )


class MotionLibrary:
    """The "real" transitions: every reference's consecutive state pairs ``policy_dt_s`` apart.

    Features of every frame are computed once; :meth:`sample` draws (s, s') pairs uniformly over all
    references' frames, which is AMP's motion dataset.
    """

    def __init__(
        self, references: Sequence[Reference], policy_dt_s: float, slots: int | None = None, robot: RobotSpec = G1
    ) -> None:
        if not references:
            raise ValueError("MotionLibrary needs at least one reference")
        slots = slots if slots is not None else max(1, max(len(r.terrain) for r in references))
        firsts, seconds = [], []
        for r in references:
            step = max(1, round(policy_dt_s * r.fps))
            if r.num_frames <= step:
                raise ValueError(f"reference {r.name!r} is shorter than one policy step")
            feats = state_features(reference_states(r, np.arange(r.num_frames), slots), robot.default_q)
            firsts.append(feats[:-step])
            seconds.append(feats[step:])
        self.transitions = np.concatenate(
            [np.concatenate(firsts), np.concatenate(seconds)], axis=-1
        )  # (M, TRANSITION_DIM)

    def __len__(self) -> int:
        return len(self.transitions)

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.float32]:
        return self.transitions[rng.integers(0, len(self.transitions), size=n)]
