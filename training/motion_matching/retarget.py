"""Our own retargeter: human mocap joint positions -> G1 frames, by damped least-squares IK in MuJoCo.

holosoma-retargeting ships the human box-climbing mocap and an interaction-mesh retargeter, but that
retargeter needs cvxpy/trimesh/viser and numpy 2.3.5, which must not enter this environment. This
is a plain per-frame position IK instead: the human is scaled uniformly about the world origin by the
same factor holosoma uses (robot height 1.32 m / human 1.78 m), so the scaled box meshes stay in
contact with the scaled hands and feet; G1 keypoints chase the matching human joints, warm-started
from the previous frame, with joint limits enforced by projection after each step.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import NDArray

from training.motion_matching import quat
from training.motion_matching.kinematics import g1_model, joint_limits

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


def retarget(
    human: F, fps_in: float, fps_out: float, scale: float, iters: int = 6, first_iters: int = 200
) -> RetargetResult:
    """G1 frames for human joint positions (T, 53, 3); the human is scaled by ``scale`` about the origin."""
    m = g1_model()
    d = mujoco.MjData(m)
    lo, hi = joint_limits()
    targets_all = resample(human, fps_in, fps_out) * scale
    bodies = [m.body(b).id for _, b, _, _ in KEYPOINTS]
    points = np.array([p for _, _, p, _ in KEYPOINTS])
    weights = np.repeat(np.sqrt([w for _, _, _, w in KEYPOINTS]), 3)
    idx = [h for h, _, _, _ in KEYPOINTS]
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
    rows = 3 * len(KEYPOINTS) + 3
    for t in range(n):
        target = targets_all[t, idx]
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
        err_out[t] = float(np.sqrt(np.mean(np.sum((world - target) ** 2, axis=1))))
    root_quat = quat.normalize(out_q[:, 3:7])
    # Keep quaternions on one hemisphere so finite differences of the root stay smooth.
    for t in range(1, n):
        if np.dot(root_quat[t], root_quat[t - 1]) < 0.0:
            root_quat[t] = -root_quat[t]
    return RetargetResult(fps_out, out_q[:, :3].copy(), root_quat, out_q[:, 7:].copy(), err_out)
