"""The Unitree H1 contract: joints in SDK motor order, limits, unitree_go messages, and bundles for another robot."""

from __future__ import annotations

import numpy as np
import pytest

from parkour_core.assets import AssetError, resolve
from parkour_core.bundle import BundleError, load_bundle
from parkour_core.math3d import yaw_joint_imu_to_base
from parkour_core.robots import G1, H1, get_robot
from parkour_core.safety import JointCommand, damp_command, stand_command
from parkour_core.unitree import (
    POS_STOP_F,
    VEL_STOP_F,
    Crc,
    fill_lowcmd,
    fill_lowstate,
    message_types,
    new_lowcmd,
    new_lowstate,
    read_lowcmd,
    read_lowstate,
)

N = H1.num_joints

# Unitree's H1 (unitree_go) slot map, written out independently of the spec's table.
SLOTS = {
    "right_hip_roll_joint": 0, "right_hip_pitch_joint": 1, "right_knee_joint": 2,
    "left_hip_roll_joint": 3, "left_hip_pitch_joint": 4, "left_knee_joint": 5,
    "torso_joint": 6, "left_hip_yaw_joint": 7, "right_hip_yaw_joint": 8,
    "left_ankle_joint": 10, "right_ankle_joint": 11,
    "right_shoulder_pitch_joint": 12, "right_shoulder_roll_joint": 13, "right_shoulder_yaw_joint": 14,
    "right_elbow_joint": 15,
    "left_shoulder_pitch_joint": 16, "left_shoulder_roll_joint": 17, "left_shoulder_yaw_joint": 18,
    "left_elbow_joint": 19,
}  # fmt: skip


def over_the_wire(msg):
    """Serialize to CDR and back, as a DDS reader receives it."""
    return type(msg).deserialize(msg.serialize())


def random_command(seed: int = 0) -> JointCommand:
    rng = np.random.default_rng(seed)
    return JointCommand(
        q=rng.uniform(H1.q_min, H1.q_max),
        dq=rng.normal(0, 2.0, N),
        kp=rng.uniform(0, 300, N),
        kd=rng.uniform(0, 10, N),
        tau=rng.uniform(-H1.tau_max, H1.tau_max),
    )


def test_h1_has_19_joints_in_20_go_slots():
    assert get_robot("h1") is H1
    assert H1.num_joints == 19 and len(set(H1.joint_names)) == 19
    assert H1.dds_family == "unitree_go" and H1.num_motor_slots == 20
    assert dict(zip(H1.joint_names, H1.motor_slots, strict=True)) == SLOTS
    assert list(H1.motor_slots) == sorted(H1.motor_slots)  # SDK motor order
    assert 9 not in H1.motor_slots
    for column in (H1.q_min, H1.q_max, H1.dq_max, H1.tau_max, H1.default_q, H1.kp_stand, H1.kd_stand):
        assert column.shape == (19,) and column.dtype == np.float64


def test_h1_joint_groups():
    names = H1.joint_names
    legs = [n for n in names if any(k in n for k in ("hip", "knee", "ankle"))]
    arms = [n for n in names if any(k in n for k in ("shoulder", "elbow"))]
    assert (len(legs), len(arms)) == (10, 8)
    assert [n for n in names if n not in legs + arms] == ["torso_joint"]


def test_h1_limits_contain_the_default_pose():
    assert np.all(H1.q_min < H1.default_q) and np.all(H1.default_q < H1.q_max)
    assert np.all(H1.tau_max > 0) and np.all(H1.dq_max > 0)
    assert np.all(H1.kp_stand > 0) and np.all(H1.kd_stand > 0)
    by_name = dict(zip(H1.joint_names, H1.default_q, strict=True))
    for side in ("left", "right"):
        legs = [by_name[f"{side}_{j}_joint"] for j in ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle")]
        assert legs == [0.0, 0.0, -0.1, 0.3, -0.2]  # unitree_rl_gym's H1 default pose


def test_h1_torque_and_velocity_limits():
    tau = dict(zip(H1.joint_names, H1.tau_max, strict=True))
    dq = dict(zip(H1.joint_names, H1.dq_max, strict=True))
    for side in ("left", "right"):
        assert [tau[f"{side}_{j}_joint"] for j in ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle")] == [
            200, 200, 200, 300, 40,
        ]  # fmt: skip
        assert [tau[f"{side}_{j}_joint"] for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow")] == [
            40, 40, 18, 18,
        ]  # fmt: skip
        assert [dq[f"{side}_{j}_joint"] for j in ("hip_pitch", "knee", "ankle", "shoulder_roll", "elbow")] == [
            23, 14, 9, 9, 20,
        ]  # fmt: skip
    assert tau["torso_joint"] == 200


def test_h1_sides_mirror():
    idx = {n: i for i, n in enumerate(H1.joint_names)}
    for name in H1.joint_names:
        if not name.startswith("left_"):
            continue
        left, right = idx[name], idx["right_" + name[len("left_") :]]
        if "roll" in name or "yaw" in name:
            assert (H1.q_min[left], H1.q_max[left]) == (-H1.q_max[right], -H1.q_min[right]), name
        else:
            assert (H1.q_min[left], H1.q_max[left]) == (H1.q_min[right], H1.q_max[right]), name
        assert H1.default_q[left] == H1.default_q[right] and H1.tau_max[left] == H1.tau_max[right], name
        assert (H1.kp_stand[left], H1.kd_stand[left]) == (H1.kp_stand[right], H1.kd_stand[right]), name


def test_h1_motor_modes_camera_and_bodies():
    assert H1.motor_modes == (0x0A,) * 10 + (0x01,) * 10
    assert G1.motor_modes == ()  # the G1 keeps mode 1 on its slots
    assert H1.camera.body == "torso_link"
    assert H1.camera.xyz == (0.10848, 0.0175, 0.69317)
    assert np.degrees(H1.camera.rpy[1]) == pytest.approx(51.0)
    assert H1.foot_bodies == ("left_ankle_link", "right_ankle_link")
    path = resolve(H1.mjcf_asset)  # Unitree's MJCF, extracted by `make setup`, its SHA-256 checked
    assert path.name == "h1.xml" and path.parent.name == "unitree_h1" and (path.parent / "LICENSE").is_file()


def test_repo_asset_reference_names_a_missing_file():
    with pytest.raises(AssetError, match="repository lacks it"):
        resolve("repo:sim/robots/h1/missing.xml")


def test_message_types_for_h1():
    lowstate, lowcmd = message_types(H1)
    assert "unitree_go" in lowstate.__module__ and "unitree_go" in lowcmd.__module__
    assert isinstance(new_lowcmd(H1), lowcmd) and isinstance(new_lowstate(H1), lowstate)
    cmd, state = new_lowcmd(H1), new_lowstate(H1)
    assert len(cmd.motor_cmd) == len(state.motor_state) == 20
    for msg in (cmd, state):
        assert (list(msg.head), msg.level_flag) == ([0xFE, 0xEF], 0xFF)


def test_fresh_h1_lowcmd_is_stopped_and_disabled():
    msg = new_lowcmd(H1)
    for m in msg.motor_cmd:
        assert (m.mode, m.q, m.dq, m.kp, m.kd, m.tau) == (0, POS_STOP_F, VEL_STOP_F, 0.0, 0.0, 0.0)
    _, enabled = read_lowcmd(msg, H1)
    assert not enabled.any()


@pytest.mark.parametrize("wire", [False, True])
def test_h1_lowcmd_round_trip_with_crc(wire):
    cmd = random_command()
    msg = new_lowcmd(H1)
    fill_lowcmd(msg, H1, cmd, mode_machine=0)
    crc = Crc()
    msg.crc = crc(msg)
    if wire:
        msg = over_the_wire(msg)
    assert crc(msg) == msg.crc  # the robot's check passes after float32 rounding on the wire
    back, enabled = read_lowcmd(msg, H1)
    for field in ("q", "dq", "kp", "kd", "tau"):
        np.testing.assert_allclose(getattr(back, field), getattr(cmd, field), atol=1e-4, rtol=1e-6, err_msg=field)
    assert enabled.all()
    assert [m.mode for m in msg.motor_cmd] == [0x0A] * 10 + [0x01] * 10
    unused = msg.motor_cmd[9]  # no motor: stopped, no gains
    assert (unused.q, unused.dq, unused.kp, unused.kd, unused.tau) == (POS_STOP_F, VEL_STOP_F, 0.0, 0.0, 0.0)
    for name, slot in SLOTS.items():  # each joint's command lands in Unitree's slot for it
        assert msg.motor_cmd[slot].q == pytest.approx(cmd.q[H1.joint_names.index(name)], abs=1e-5), name


def test_h1_crc_covers_every_motor():
    crc = Crc()
    msg = new_lowcmd(H1)
    fill_lowcmd(msg, H1, stand_command(H1), mode_machine=0)
    before = crc(msg)
    msg.motor_cmd[19].kp += 1.0
    assert crc(msg) != before
    msg.motor_cmd[19].kp -= 1.0
    assert crc(msg) == before


def test_h1_motor_with_a_wrong_mode_reads_disabled():
    msg = new_lowcmd(H1)
    fill_lowcmd(msg, H1, damp_command(H1, 8.0), mode_machine=0)
    msg.motor_cmd[10].mode = 0x0A  # left ankle: a small motor must be driven in mode 0x01
    msg.motor_cmd[2].mode = 0x01  # right knee: a large motor must be driven in mode 0x0A
    _, enabled = read_lowcmd(msg, H1)
    assert sorted(H1.joint_names[i] for i in np.flatnonzero(~enabled)) == ["left_ankle_joint", "right_knee_joint"]


@pytest.mark.parametrize("wire", [False, True])
def test_h1_lowstate_round_trip_with_crc(wire):
    rng = np.random.default_rng(3)
    q = rng.uniform(H1.q_min, H1.q_max)
    dq, tau = rng.normal(0, 3, N), rng.normal(0, 20, N)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    gyro, accel = rng.normal(size=3), np.array([0.1, -0.2, 9.81])
    remote = bytes(range(40))
    msg = new_lowstate(H1)
    fill_lowstate(msg, H1, q, dq, tau, quat, gyro, accel, tick=77, wireless_remote=remote)
    crc = Crc()
    msg.crc = crc(msg)
    if wire:
        msg = over_the_wire(msg)
    assert crc(msg) == msg.crc
    view = read_lowstate(msg, H1)
    np.testing.assert_allclose(view.q, q, atol=1e-5)
    np.testing.assert_allclose(view.dq, dq, atol=1e-5)
    np.testing.assert_allclose(view.tau, tau, atol=1e-4)
    # The H1's IMU is the torso's; the decoded reading is the pelvis's (test_imu_frame checks the turn).
    waist = H1.joint_names.index("torso_joint")
    pelvis = yaw_joint_imu_to_base(quat, gyro, accel, q[waist], dq[waist])
    np.testing.assert_allclose(view.quat_wxyz, pelvis[0], atol=1e-6)
    np.testing.assert_allclose(view.gyro, pelvis[1], atol=1e-6)
    np.testing.assert_allclose(view.accel, pelvis[2], atol=1e-5)
    assert (view.tick, view.mode_machine, view.wireless_remote) == (77, 0, remote)
    assert msg.motor_state[9].q == 0.0  # the unused slot
    assert msg.motor_state[SLOTS["left_ankle_joint"]].q == pytest.approx(q[H1.joint_names.index("left_ankle_joint")])


def test_a_g1_bundle_is_refused_for_the_h1(g1_walk_dir):
    with pytest.raises(BundleError, match=r"bundle 'g1_walk' was trained for robot 'g1', but this is a 'h1'"):
        load_bundle(g1_walk_dir, robot=H1)
    assert load_bundle(g1_walk_dir).robot is G1  # on its own robot it loads


def test_sim_and_robot_stand_the_h1_on_the_deployers_gains():
    from parkour_core.config import load_config
    from parkour_core.paths import config_dir

    ankle = H1.joint_names.index("left_ankle_joint")
    assert (H1.kp_stand[ankle], H1.kd_stand[ankle]) == (40.0, 2.0)  # unitree_rl_gym
    for name in ("h1_robot.yaml", "h1_sim.yaml"):  # no stiffening in simulation only
        assert load_config(config_dir() / name).supervisor.stand_gains == {}, name
    sim = load_config(config_dir() / "h1_sim.yaml")
    requests = [step.request for step in sim.script.steps]
    assert "stand_up" in requests and "release_band" not in requests  # it stands on the band, as on its gantry
