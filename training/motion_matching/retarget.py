"""Our own retargeter: human mocap joint positions -> G1 frames, by damped least-squares IK in MuJoCo.

holosoma-retargeting ships the human box-climbing mocap and an interaction-mesh retargeter, but that
retargeter needs cvxpy/trimesh/viser and numpy 2.3.5, which must not enter this environment. This
is a plain per-frame position IK instead: the human is scaled uniformly about the world origin by the
same factor holosoma uses (robot height 1.32 m / human 1.78 m), so the scaled box meshes stay in
contact with the scaled hands and feet; G1 keypoints chase the matching human joints, warm-started
from the previous frame, with joint limits enforced by projection after each step. Given the boxes, the
targets are first put on them (:func:`surface_targets`): the G1's soles and hands are not the human's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import mujoco
import numpy as np
from numpy.typing import NDArray

from training.motion_matching import quat
from training.motion_matching.kinematics import g1_model, joint_limits
from training.motion_matching.terrain import Boxes, ground_height

F = NDArray[np.float64]

# Indices into holosoma-retargeting's MOCAP_DEMO_JOINTS (53 joints, Hips first).
HIPS, SPINE1, HEAD = 0, 2, 4
L_ARM, L_FOREARM, L_HAND, L_MIDDLE3 = 6, 7, 8, 17
R_ARM, R_FOREARM, R_HAND, R_MIDDLE3 = 25, 26, 27, 36
L_UPLEG, L_LEG, L_FOOT, L_TOE = 43, 44, 45, 46
R_UPLEG, R_LEG, R_FOOT, R_TOE = 47, 48, 49, 50

# Human joint -> (G1 body, point in that body's frame, weight). Hip, knee, ankle and toe pin the legs;
# shoulder, elbow, wrist and fingertip pin the arms (the hands carry the climb); the head steers the torso.
KEYPOINTS: tuple[tuple[int, str, tuple[float, float, float], float], ...] = (
    (L_UPLEG, "left_hip_roll_link", (0.0, 0.0, 0.0), 1.0),
    (R_UPLEG, "right_hip_roll_link", (0.0, 0.0, 0.0), 1.0),
    (L_LEG, "left_knee_link", (0.0, 0.0, 0.0), 1.0),
    (R_LEG, "right_knee_link", (0.0, 0.0, 0.0), 1.0),
    (L_FOOT, "left_ankle_roll_link", (0.0, 0.0, 0.0), 2.0),
    (R_FOOT, "right_ankle_roll_link", (0.0, 0.0, 0.0), 2.0),
    (L_TOE, "left_ankle_roll_link", (0.12, 0.0, -0.02), 1.0),
    (R_TOE, "right_ankle_roll_link", (0.12, 0.0, -0.02), 1.0),
    (L_ARM, "left_shoulder_roll_link", (0.0, 0.0, 0.0), 0.7),
    (R_ARM, "right_shoulder_roll_link", (0.0, 0.0, 0.0), 0.7),
    (L_FOREARM, "left_elbow_link", (0.0, 0.0, 0.0), 0.7),
    (R_FOREARM, "right_elbow_link", (0.0, 0.0, 0.0), 0.7),
    (L_HAND, "left_wrist_roll_link", (0.0, 0.0, 0.0), 1.0),
    (R_HAND, "right_wrist_roll_link", (0.0, 0.0, 0.0), 1.0),
    (L_MIDDLE3, "left_wrist_yaw_link", (0.10, 0.0, 0.0), 0.5),
    (R_MIDDLE3, "right_wrist_yaw_link", (0.10, 0.0, 0.0), 0.5),
    (HEAD, "torso_link", (0.05, 0.0, 0.43), 0.5),
)
PELVIS_ORIENTATION_WEIGHT = 0.5  # metres of position error worth one radian of pelvis tilt

# Each keypoint's least height above the terrain under it (m): the G1's collision geom around that point
# (the ankle-roll origin sits 3.5 cm above the flat sole, the toe point 1.5 cm; knee, wrist and fingertip
# capsules). A target the scaled human puts lower is raised to it: the human's skin and the G1's geoms are
# not the same surfaces, and the G1 must not go into the box the human stood, knelt or leant on.
CLEARANCE_M = {L_FOOT: 0.035, R_FOOT: 0.035, L_TOE: 0.015, R_TOE: 0.015, L_LEG: 0.04, R_LEG: 0.04,
               L_HAND: 0.055, R_HAND: 0.055, L_MIDDLE3: 0.05, R_MIDDLE3: 0.05}  # fmt: skip
# A human foot that is still (slower than CONTACT_SPEED_MPS) with its ankle within CONTACT_HEIGHT_M of the
# surface under it stands: its ankle and toe targets go onto that surface at their clearance, the sole flat.
# Between two stances the lift is carried over smoothly (the swing keeps the human's own path, offset by
# the change it needs from one stance's to the next).
CONTACT_HEIGHT_M = 0.15
CONTACT_SPEED_MPS = 0.25
# The sole's sides, each foot: kept level across the foot (the ankle and toe points leave the roll free).
SOLE_SIDE_M = 0.035
SOLE_WEIGHT = 2.0


@dataclass(frozen=True)
class RetargetResult:
    fps: float
    root_pos: F  # (T, 3)
    root_quat: F  # (T, 4)
    joint_pos: F  # (T, 29)
    keypoint_error_m: F  # (T,) RMS keypoint error after IK


def resample(x: F, fps_in: float, fps_out: float) -> F:
    """Linear resampling along axis 0 (joint positions are smooth at mocap rates)."""
    t_in = np.arange(len(x)) / fps_in
    t_out = np.arange(int(np.floor(t_in[-1] * fps_out + 1e-9)) + 1) / fps_out
    flat = x.reshape(len(x), -1)
    out = np.stack([np.interp(t_out, t_in, flat[:, k]) for k in range(flat.shape[1])], axis=1)
    return out.reshape((len(t_out), *x.shape[1:]))


def pelvis_frame(human: F) -> F:
    """Pelvis orientation (quaternion) of one human frame: y from the right to the left hip, z up the spine."""
    y = human[L_UPLEG] - human[R_UPLEG]
    y /= np.linalg.norm(y)
    z = human[SPINE1] - human[HIPS]
    z -= np.dot(z, y) * y
    z /= np.linalg.norm(z)
    x = np.cross(y, z)
    return quat.from_matrix(np.stack([x, y, z], axis=1))


LEG_JOINTS = {1.0: (L_UPLEG, L_LEG, L_FOOT, L_TOE), -1.0: (R_UPLEG, R_LEG, R_FOOT, R_TOE)}


@cache
def hip_width_m() -> float:
    """The G1's distance between its hip joints (the hip-roll links' origins, zero pose)."""
    m = g1_model()
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    return float(np.linalg.norm(d.xpos[m.body("left_hip_roll_link").id] - d.xpos[m.body("right_hip_roll_link").id]))


def widen_stance(targets: F, hip_width: float) -> F:
    """Each leg's joints moved sideways (along the human's hip line) by what the G1's hips are wider than the
    scaled human's: the legs keep the human's lean, not a narrower stance the G1 would meet with its ankles
    rolled to their limits."""
    out = targets.copy()
    across = targets[:, L_UPLEG] - targets[:, R_UPLEG]
    half = np.linalg.norm(across, axis=-1, keepdims=True) / 2.0
    across[:, 2] = 0.0
    across /= np.maximum(np.linalg.norm(across, axis=-1, keepdims=True), 1e-9)
    for side, joints in LEG_JOINTS.items():
        out[:, list(joints)] += (side * (hip_width / 2.0 - half) * across)[:, None, :]
    return out


def surface_targets(targets: F, boxes: Boxes, fps: float) -> F:
    """The scaled human's joints (T, 53, 3) with each standing foot's ankle and toe put on the surface under
    it, the offset carried through the swings between, then each keypoint raised to its clearance over the
    terrain under it (see CLEARANCE_M, CONTACT_HEIGHT_M)."""
    out = targets.copy()
    frames = np.arange(len(targets))
    for ankle, toe in ((L_FOOT, L_TOE), (R_FOOT, R_TOE)):
        surface = ground_height(boxes, targets[:, ankle, :2])
        speed = np.linalg.norm(np.gradient(targets[:, ankle], axis=0), axis=-1) * fps
        down = (targets[:, ankle, 2] - surface < CONTACT_HEIGHT_M) & (speed < CONTACT_SPEED_MPS)
        if not down.any():
            continue
        lift = np.interp(frames, frames[down], (surface + CLEARANCE_M[ankle] - targets[:, ankle, 2])[down])
        out[:, ankle, 2] += lift
        out[:, toe, 2] += lift
        toe_surface = ground_height(boxes, targets[down, toe, :2])
        out[down, toe, 2] = np.maximum(toe_surface, surface[down]) + CLEARANCE_M[toe]
    for joint, clearance in CLEARANCE_M.items():
        out[:, joint, 2] = np.maximum(out[:, joint, 2], ground_height(boxes, out[:, joint, :2]) + clearance)
    return out


def retarget(
    human: F, fps_in: float, fps_out: float, scale: float, iters: int = 6, first_iters: int = 200,
    boxes: Boxes | None = None,
) -> RetargetResult:  # fmt: skip
    """G1 frames for human joint positions (T, 53, 3); the human is scaled by ``scale`` about the origin.
    ``boxes``: the (scaled) terrain the human moved on: keypoints keep their clearance over it
    (:func:`surface_targets`) and the soles are kept level across."""
    m = g1_model()
    d = mujoco.MjData(m)
    lo, hi = joint_limits()
    targets_all = resample(human, fps_in, fps_out) * scale
    if boxes is not None:
        targets_all = surface_targets(widen_stance(targets_all, hip_width_m()), boxes, fps_out)
    sole = boxes is not None
    keypoints = list(KEYPOINTS)
    if sole:  # each sole's two sides, targets set per frame below
        for foot, body in ((L_FOOT, "left_ankle_roll_link"), (R_FOOT, "right_ankle_roll_link")):
            keypoints += [(foot, body, (0.0, side, 0.0), SOLE_WEIGHT) for side in (SOLE_SIDE_M, -SOLE_SIDE_M)]
    bodies = [m.body(b).id for _, b, _, _ in keypoints]
    points = np.array([p for _, _, p, _ in keypoints])
    weights = np.repeat(np.sqrt([w for _, _, _, w in keypoints]), 3)
    idx = [h for h, _, _, _ in keypoints]
    pelvis = m.body("pelvis").id
    nv = m.nv
    jacp = np.zeros((3, nv))
    jacr = np.zeros((3, nv))
    n = len(targets_all)
    out_q = np.empty((n, m.nq))
    err_out = np.empty(n)
    # Start standing at the first frame's pelvis, facing the pelvis heading.
    d.qpos[:] = 0.0
    d.qpos[:3] = targets_all[0, HIPS]
    d.qpos[3:7] = quat.from_yaw(quat.yaw(pelvis_frame(targets_all[0])))
    rows = 3 * len(keypoints) + 3
    for t in range(n):
        target = targets_all[t, idx]
        if sole:  # the sole's sides level with the ankle target, across the foot's heading (ankle to toe)
            for k, (ankle, toe) in enumerate(((L_FOOT, L_TOE), (R_FOOT, R_TOE))):
                ahead = targets_all[t, toe, :2] - targets_all[t, ankle, :2]
                across = np.array([-ahead[1], ahead[0], 0.0]) / max(float(np.linalg.norm(ahead)), 1e-6)
                row = len(KEYPOINTS) + 2 * k
                target[row] = targets_all[t, ankle] + SOLE_SIDE_M * across
                target[row + 1] = targets_all[t, ankle] - SOLE_SIDE_M * across
        q_pelvis = pelvis_frame(targets_all[t])
        for _ in range(first_iters if t == 0 else iters):
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            J = np.empty((rows, nv))
            e = np.empty(rows)
            for k, (b, p) in enumerate(zip(bodies, points, strict=True)):
                world = d.xpos[b] + d.xmat[b].reshape(3, 3) @ p
                mujoco.mj_jac(m, d, jacp, None, world, b)
                J[3 * k : 3 * k + 3] = jacp
                e[3 * k : 3 * k + 3] = target[k] - world
            mujoco.mj_jacBody(m, d, None, jacr, pelvis)
            J[-3:] = jacr * PELVIS_ORIENTATION_WEIGHT
            e[-3:] = quat.to_rotvec(quat.mul(q_pelvis, quat.conj(d.xquat[pelvis]))) * PELVIS_ORIENTATION_WEIGHT
            w = np.concatenate([weights, np.ones(3)])
            Jw = J * w[:, None]
            dq = np.linalg.solve(Jw.T @ Jw + 1e-3 * np.eye(nv), Jw.T @ (e * w))
            mujoco.mj_integratePos(m, d.qpos, dq, 1.0)
            d.qpos[7:] = np.clip(d.qpos[7:], lo, hi)
        out_q[t] = d.qpos
        mujoco.mj_kinematics(m, d)
        world = d.xpos[bodies] + np.einsum("kij,kj->ki", d.xmat[bodies].reshape(-1, 3, 3), points)
        err = np.sum((world - target) ** 2, axis=1)[: len(KEYPOINTS)]
        err_out[t] = float(np.sqrt(np.mean(err)))
    root_quat = quat.normalize(out_q[:, 3:7])
    # Keep quaternions on one hemisphere so finite differences of the root stay smooth.
    for t in range(1, n):
        if np.dot(root_quat[t], root_quat[t - 1]) < 0.0:
            root_quat[t] = -root_quat[t]
    return RetargetResult(fps_out, out_q[:, :3].copy(), root_quat, out_q[:, 7:].copy(), err_out)
