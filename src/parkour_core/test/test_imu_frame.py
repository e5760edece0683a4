"""Where rt/lowstate's IMU is, and the stack reading the base (pelvis) whichever body it is on.

The G1's IMU is on the pelvis: decoding leaves its reading as it is, bit for bit. The H1's is on the torso,
which turns on the pelvis about z (torso_joint): decoding turns it into the pelvis's. Here against rotation
matrices built forward (pelvis -> torso); parkour_sim's test_imu_frame checks the same against MuJoCo.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parkour_core.math3d import yaw_joint_imu_to_base
from parkour_core.robots import G1, H1
from parkour_core.unitree import fill_lowstate, imu_in_base_frame, new_lowstate, read_lowstate
from parkour_core.unitree_wire import LowStateWire


def matrix(quat_wxyz) -> np.ndarray:
    w, x, y, z = quat_wxyz
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])  # fmt: skip


def quat_of(r: np.ndarray) -> np.ndarray:
    """A unit quaternion (w >= 0) of rotation matrix ``r`` (Shepperd's method)."""
    k = int(np.argmax([np.trace(r), r[0, 0], r[1, 1], r[2, 2]]))
    if k == 0:
        w = 0.5 * np.sqrt(1 + np.trace(r))
        parts = [w, (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w), (r[1, 0] - r[0, 1]) / (4 * w)]
    elif k == 1:
        x = 0.5 * np.sqrt(1 + r[0, 0] - r[1, 1] - r[2, 2])
        parts = [(r[2, 1] - r[1, 2]) / (4 * x), x, (r[0, 1] + r[1, 0]) / (4 * x), (r[0, 2] + r[2, 0]) / (4 * x)]
    elif k == 2:
        y = 0.5 * np.sqrt(1 - r[0, 0] + r[1, 1] - r[2, 2])
        parts = [(r[0, 2] - r[2, 0]) / (4 * y), (r[0, 1] + r[1, 0]) / (4 * y), y, (r[1, 2] + r[2, 1]) / (4 * y)]
    else:
        z = 0.5 * np.sqrt(1 - r[0, 0] - r[1, 1] + r[2, 2])
        parts = [(r[1, 0] - r[0, 1]) / (4 * z), (r[0, 2] + r[2, 0]) / (4 * z), (r[1, 2] + r[2, 1]) / (4 * z), z]
    q = np.array(parts)
    return q if q[0] >= 0 else -q


def rz(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def same_rotation(a, b, atol: float) -> None:
    """Quaternions ``a`` and ``b`` are one rotation (q and -q are)."""
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(a * np.sign(np.dot(a, b)), b, atol=atol)


def torso_reading(
    pelvis_quat: np.ndarray, pelvis_gyro: np.ndarray, pelvis_accel: np.ndarray, yaw: float, yaw_rate: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What an IMU on the torso reads, built forward from the pelvis: R_t = R_p Rz(yaw), and the torso's
    world angular velocity the pelvis's plus the joint's (R_p z yaw_rate), in the torso's frame."""
    r_p = matrix(pelvis_quat)
    r_t = r_p @ rz(yaw)
    omega_world = r_p @ pelvis_gyro + r_p @ np.array([0.0, 0.0, yaw_rate])
    return quat_of(r_t), r_t.T @ omega_world, rz(yaw).T @ pelvis_accel


def random_quat(rng) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def test_the_specs_say_where_the_imu_is():
    assert (G1.imu_body, G1.imu_joint, G1.imu_joint_index) == ("pelvis", "", None)
    assert (H1.imu_body, H1.imu_joint) == ("torso_link", "torso_joint")
    waist = H1.imu_joint_index
    assert waist is not None and H1.joint_names[waist] == "torso_joint" and H1.motor_slots[waist] == 6


def test_an_imu_off_the_base_needs_its_joint_and_one_on_it_none():
    with pytest.raises(ValueError, match="needs the joint"):
        dataclasses.replace(H1, imu_joint="")
    with pytest.raises(ValueError, match="needs the joint"):
        dataclasses.replace(G1, imu_joint="waist_yaw_joint")
    with pytest.raises(ValueError, match="not one of the robot's joints"):
        dataclasses.replace(H1, imu_joint="waist_yaw_joint")


@pytest.mark.parametrize("seed", range(5))
def test_the_turn_undoes_the_torso_s_reading_built_forward_from_the_pelvis(seed):
    rng = np.random.default_rng(seed)
    pelvis_quat, pelvis_gyro, pelvis_accel = random_quat(rng), rng.normal(0, 2, 3), rng.normal(0, 5, 3)
    yaw, yaw_rate = rng.uniform(-2.35, 2.35), rng.normal(0, 3)
    torso = torso_reading(pelvis_quat, pelvis_gyro, pelvis_accel, yaw, yaw_rate)
    quat, gyro, accel = yaw_joint_imu_to_base(torso[0], torso[1], torso[2], yaw, yaw_rate)
    same_rotation(quat, pelvis_quat, 1e-12)
    np.testing.assert_allclose(gyro, pelvis_gyro, atol=1e-12)
    np.testing.assert_allclose(accel, pelvis_accel, atol=1e-12)
    assert abs(np.linalg.norm(quat) - 1.0) < 1e-12


def test_a_straight_waist_leaves_the_reading_as_it_is():
    rng = np.random.default_rng(9)
    quat, gyro, accel = random_quat(rng), rng.normal(size=3), rng.normal(size=3)
    out = yaw_joint_imu_to_base(quat, gyro, accel, 0.0, 0.0)
    for a, b in zip(out, (quat, gyro, accel), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("wire", [False, True])
def test_the_g1_s_reading_is_decoded_as_it_is_bit_for_bit(wire):
    rng = np.random.default_rng(4)
    n = G1.num_joints
    q, dq = rng.uniform(G1.q_min, G1.q_max), rng.normal(0, 3, n)
    quat, gyro, accel = random_quat(rng), rng.normal(size=3), rng.normal(size=3)
    returned = imu_in_base_frame(G1, q, dq, quat, gyro, accel)
    assert all(a is b for a, b in zip(returned, (quat, gyro, accel), strict=True))  # the very arrays
    if wire:
        view = LowStateWire(G1).decode(LowStateWire(G1).encode(q, dq, dq, quat, gyro, accel, tick=1))
    else:
        msg = new_lowstate(G1)
        fill_lowstate(msg, G1, q, dq, dq, quat, gyro, accel, tick=1)
        view = read_lowstate(type(msg).deserialize(msg.serialize()), G1)
    for got, sent in ((view.quat_wxyz, quat), (view.gyro, gyro), (view.accel, accel)):
        np.testing.assert_array_equal(got, np.float32(sent))  # what went on the wire, untouched


@pytest.mark.parametrize("wire", [False, True])
def test_the_h1_s_lowstate_decodes_to_the_pelvis(wire):
    rng = np.random.default_rng(5)
    n, waist = H1.num_joints, H1.imu_joint_index
    assert waist is not None
    q, dq = rng.uniform(H1.q_min, H1.q_max), rng.normal(0, 3, n)
    q[waist], dq[waist] = 1.1, -2.5
    pelvis_quat, pelvis_gyro, pelvis_accel = random_quat(rng), rng.normal(0, 2, 3), np.array([0.3, -0.2, 9.8])
    torso = torso_reading(pelvis_quat, pelvis_gyro, pelvis_accel, q[waist], dq[waist])
    if wire:
        view = LowStateWire(H1).decode(LowStateWire(H1).encode(q, dq, dq, torso[0], torso[1], torso[2], tick=1))
    else:
        msg = new_lowstate(H1)
        fill_lowstate(msg, H1, q, dq, dq, torso[0], torso[1], torso[2], tick=1)
        view = read_lowstate(type(msg).deserialize(msg.serialize()), H1)
    # float32 on the wire (the joint angle and rate too): agreement to a few 1e-7
    same_rotation(view.quat_wxyz, pelvis_quat, 1e-6)
    np.testing.assert_allclose(view.gyro, pelvis_gyro, atol=2e-6)
    np.testing.assert_allclose(view.accel, pelvis_accel, atol=1e-5)
    # and the torso's reading, taken as the pelvis's, would be far off
    assert np.linalg.norm(torso[1] - pelvis_gyro) > 1.0
