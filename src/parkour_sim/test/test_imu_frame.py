"""The H1's IMU in simulation, where the real one is: on the torso. MuJoCo's own frames and sensors check the
turn the stack applies as it decodes rt/lowstate (parkour_core.math3d.yaw_joint_imu_to_base), and the sim
reports the torso's reading, which the stack's decoder turns back into the pelvis's. The G1's IMU is the
pelvis's, unchanged."""

import mujoco
import numpy as np
import pytest

from parkour_core.math3d import yaw_joint_imu_to_base
from parkour_core.robots import G1, H1
from parkour_core.unitree import fill_lowstate, new_lowstate, read_lowstate
from parkour_core.unitree_wire import LowStateWire
from parkour_sim.models import IMU_ACCEL, IMU_GYRO
from parkour_sim.physics import RobotSim

DT = 0.002
H1_MODELS = pytest.mark.parametrize("robot_model", ["", "simplified"], ids=["unitree", "simplified"])


@pytest.fixture(scope="module")
def h1_sims():
    return {name: RobotSim(H1, "flat", DT, robot_model=name) for name in ("", "simplified")}


def _sensor(m: mujoco.MjModel, d: mujoco.MjData, name: str) -> np.ndarray:
    s = m.sensor(name)
    return d.sensordata[s.adr[0] : s.adr[0] + 3].copy()


def _site_quat(m: mujoco.MjModel, d: mujoco.MjData, sensor: str) -> np.ndarray:
    """The orientation of the site ``sensor`` sits on, as MuJoCo's kinematics left it."""
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, d.site_xmat[m.sensor_objid[m.sensor(sensor).id]])
    return quat


def _same_rotation(a, b, atol: float) -> None:
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(a * np.sign(np.dot(a, b)), b, atol=atol)


def _pose(sim: RobotSim, rng: np.random.Generator, waist: float) -> None:
    """A random state: the base turned and moving anyhow, every joint moving, the waist at ``waist``."""
    m, d = sim.model, sim.data
    quat = rng.normal(size=4)
    d.qpos[3:7] = quat / np.linalg.norm(quat)
    d.qpos[sim.qpos_adr] = rng.uniform(sim.spec.q_min, sim.spec.q_max)
    d.qvel[:] = rng.normal(0.0, 2.0, m.nv)
    if waist:
        d.qpos[sim.qpos_adr[sim.spec.imu_joint_index]] = waist
    mujoco.mj_forward(m, d)


@H1_MODELS
@pytest.mark.parametrize("seed", range(4))
def test_the_turn_maps_mujoco_s_torso_imu_onto_its_pelvis(h1_sims, robot_model, seed):
    sim = h1_sims[robot_model]
    m, d = sim.model, sim.data
    rng = np.random.default_rng(seed)
    _pose(sim, rng, waist=(-1.9, -0.6, 0.7, 2.2)[seed])
    waist = H1.imu_joint_index
    yaw, yaw_rate = float(d.qpos[sim.qpos_adr[waist]]), float(d.qvel[sim.qvel_adr[waist]])
    assert abs(yaw_rate) > 1e-3

    torso = _site_quat(m, d, IMU_GYRO), _sensor(m, d, IMU_GYRO), _sensor(m, d, IMU_ACCEL)
    assert m.body(m.site_bodyid[m.sensor_objid[m.sensor(IMU_GYRO).id]]).name == "torso_link"
    quat, gyro, accel = yaw_joint_imu_to_base(*torso, yaw, yaw_rate)

    pelvis = m.body("pelvis").id
    _same_rotation(quat, d.xquat[pelvis], 1e-9)
    _same_rotation(quat, _site_quat(m, d, "base_gyro"), 1e-9)
    np.testing.assert_allclose(gyro, _sensor(m, d, "base_gyro"), atol=1e-9)  # the pelvis's gyro
    np.testing.assert_allclose(gyro, d.qvel[3:6], atol=1e-9)  # the free joint's: the base's, in its frame
    # The accelerometer: the torso point's specific force, in the pelvis's axes.
    in_world = d.site_xmat[m.sensor_objid[m.sensor(IMU_ACCEL).id]].reshape(3, 3) @ torso[2]
    np.testing.assert_allclose(accel, d.xmat[pelvis].reshape(3, 3).T @ in_world, atol=1e-9)
    # Not a turn that would pass anything: the torso's own reading is far from the pelvis's.
    assert np.linalg.norm(torso[1] - gyro) > 0.5


@H1_MODELS
def test_the_simulated_h1_reports_the_torso_s_imu(h1_sims, robot_model):
    sim = h1_sims[robot_model]
    m, d = sim.model, sim.data
    _pose(sim, np.random.default_rng(11), waist=1.3)
    _same_rotation(sim.imu_quat_wxyz, _site_quat(m, d, IMU_GYRO), 1e-12)
    np.testing.assert_allclose(sim.imu_gyro, _sensor(m, d, IMU_GYRO), atol=1e-12)
    np.testing.assert_array_equal(sim.imu_accel, _sensor(m, d, IMU_ACCEL))
    # The state the stack reads is still the pelvis's.
    np.testing.assert_array_equal(sim.quat_wxyz, d.qpos[3:7])
    np.testing.assert_array_equal(sim.gyro, _sensor(m, d, "base_gyro"))


@H1_MODELS
@pytest.mark.parametrize("wire", [False, True])
def test_the_h1_s_lowstate_from_the_sim_decodes_to_the_pelvis(h1_sims, robot_model, wire):
    sim = h1_sims[robot_model]
    _pose(sim, np.random.default_rng(12), waist=-1.2)
    sent = (sim.q, sim.dq, sim.tau, sim.imu_quat_wxyz, sim.imu_gyro, sim.imu_accel)
    if wire:  # the bridge's encoder and the nodes' decoder
        view = LowStateWire(H1).decode(LowStateWire(H1).encode(*sent, tick=1))
    else:
        msg = new_lowstate(H1)
        fill_lowstate(msg, H1, *sent, tick=1)
        view = read_lowstate(type(msg).deserialize(msg.serialize()), H1)
    # float32 on the wire: the joint angle and rate and the reading each to a few 1e-7
    _same_rotation(view.quat_wxyz, sim.quat_wxyz, 2e-6)
    np.testing.assert_allclose(view.gyro, sim.gyro, atol=1e-5)
    assert np.linalg.norm(sim.imu_gyro - sim.gyro) > 0.5


def test_a_stepped_h1_decodes_to_its_pelvis_as_the_waist_swings(h1_sims):
    """Through physics steps, the waist driven back and forth: the reading the sim sends and the joints beside
    it are of one instant, so the decoded IMU is the pelvis's orientation and angular velocity (qpos, qvel)."""
    from parkour_core.safety import JointCommand

    sim = h1_sims[""]
    sim.reset()
    sim.hang()
    wire, waist, n = LowStateWire(H1), H1.imu_joint_index, H1.num_joints
    worst_quat = worst_gyro = fastest = 0.0
    for k in range(300):
        target = H1.default_q.copy()
        target[waist] = 0.8 * np.sin(2 * np.pi * 1.5 * k * DT)
        sim.set_command(JointCommand(target, np.zeros(n), H1.kp_stand, H1.kd_stand, np.zeros(n)), np.ones(n, bool))
        sim.step()
        view = wire.decode(wire.encode(sim.q, sim.dq, sim.tau, sim.imu_quat_wxyz, sim.imu_gyro, sim.imu_accel, k))
        pelvis_quat, pelvis_gyro = sim.data.qpos[3:7], sim.data.qvel[3:6]
        worst_quat = max(worst_quat, min(float(np.abs(view.quat_wxyz - s * pelvis_quat).max()) for s in (1, -1)))
        worst_gyro = max(worst_gyro, float(np.abs(view.gyro - pelvis_gyro).max()))
        fastest = max(fastest, abs(float(sim.dq[waist])))
    assert fastest > 2.0  # the waist swings
    assert worst_quat < 2e-6 and worst_gyro < 1e-5  # float32 on the wire


def test_the_g1_reports_its_pelvis_imu_unchanged():
    sim = RobotSim(G1, "flat", DT)
    _pose(sim, np.random.default_rng(3), waist=0.0)
    assert sim.imu_on_base
    np.testing.assert_array_equal(sim.imu_quat_wxyz, sim.quat_wxyz)
    np.testing.assert_array_equal(sim.imu_gyro, sim.gyro)
    np.testing.assert_array_equal(sim.imu_accel, sim.accel)
