"""The H1's models through the sim's own model builder and PD physics: Unitree's MJCF (mujoco_menagerie
unitree_h1, the default) checked against the robot spec, and our simplified one (``simplified``)."""

import mujoco
import numpy as np
import pytest

from parkour_core.config import load_config
from parkour_core.paths import config_dir
from parkour_core.robots import H1
from parkour_core.safety import damp_command, stand_command
from parkour_sim.depth_camera import DEPTH_CAMERA_NAME, TERRAIN_GEOM_GROUP
from parkour_sim.physics import RobotSim
from parkour_sim.scene import build_model
from parkour_sim.standup import Peer, stand_up_trial

ALL = np.ones(H1.num_joints, dtype=bool)
DT = 0.002
UNITREE_MASS_KG = 51.437  # Unitree's MJCF, summed over its links' <inertial>
SIMPLIFIED_MASS_KG = 51.65  # unitree_mujoco h1.xml's links, which sim/robots/h1/h1.xml took
# Each joint's hinge axis in its parent's frame, by the kind of joint its name says.
AXES = {"hip_yaw": 2, "hip_roll": 0, "hip_pitch": 1, "knee": 1, "ankle": 1, "torso": 2,
        "shoulder_pitch": 1, "shoulder_roll": 0, "shoulder_yaw": 2, "elbow": 1}  # fmt: skip
# Where Unitree's MJCF (as mujoco_menagerie ships it) differs from the spec, which follows Unitree's h1.urdf and
# Unitree's own MJCF (unitree_ros: hip pitch -3.14..2.53): mujoco_menagerie narrowed the hip pitch to +-1.57.
NARROWER_IN_MENAGERIE = {"left_hip_pitch_joint": (-1.57, 1.57), "right_hip_pitch_joint": (-1.57, 1.57)}


def _run(sim: RobotSim, seconds: float) -> list[tuple[float, float]]:
    """Step for ``seconds``; the (pelvis height, tilt) after every step."""
    trace = []
    for _ in range(round(seconds / DT)):
        sim.step()
        trace.append((float(sim.base_pos[2]), sim.tilt))
    return trace


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return build_model(H1, "flat", DT)


@pytest.fixture(scope="module")
def simplified() -> mujoco.MjModel:
    return build_model(H1, "flat", DT, "simplified")


def test_unitree_s_model_loads_with_its_mass_and_nothing_else(model):
    assert model.body_mass[1:].sum() == pytest.approx(UNITREE_MASS_KG, abs=1e-3)  # body 0 is the world
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor") >= 0
    assert model.nq == 7 + H1.num_joints  # a floating base and the 19 hinges, nothing else
    assert model.nmesh > 0  # Unitree's meshes, as visuals


@pytest.mark.parametrize("which", ["model", "simplified"])
def test_every_spec_joint_is_a_hinge_about_the_axis_its_name_says_with_unitree_s_motor(which, request):
    m = request.getfixturevalue(which)
    assert m.nu == H1.num_joints
    for j in H1.joints:
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j.name)
        assert jid >= 0 and m.jnt_type[jid] == mujoco.mjtJoint.mjJNT_HINGE, j.name
        kind = j.name.removesuffix("_joint").removeprefix("left_").removeprefix("right_")
        assert np.argmax(np.abs(m.jnt_axis[jid])) == AXES[kind] and np.abs(m.jnt_axis[jid]).max() == 1.0, j.name
        side = j.name.split("_")[0]
        if side in ("left", "right"):  # the joint hangs on its own side of the body
            y = m.body_pos[m.jnt_bodyid[jid]][1] if kind in ("hip_yaw", "shoulder_pitch") else None
            assert y is None or (y > 0) == (side == "left"), j.name
        aid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, j.name)
        assert m.actuator_trnid[aid, 0] == jid, j.name
        assert tuple(m.actuator_ctrlrange[aid]) == pytest.approx((-j.tau_max, j.tau_max)), j.name
        assert m.actuator_gear[aid, 0] == 1.0, j.name


def test_joint_limits_are_the_spec_s_but_the_hip_pitch_menagerie_narrowed(model, simplified):
    for j in H1.joints:
        ours = tuple(simplified.jnt_range[simplified.joint(j.name).id])
        assert ours == pytest.approx((j.q_min, j.q_max)), j.name
        theirs = tuple(model.jnt_range[model.joint(j.name).id])
        assert theirs == pytest.approx(NARROWER_IN_MENAGERIE.get(j.name, (j.q_min, j.q_max))), j.name
        # the spec's range holds the model's, and the model's the default pose and the stand-up's path
        assert j.q_min <= theirs[0] < j.default_q < theirs[1] <= j.q_max, j.name


def test_the_spec_s_standing_height_stands_the_default_pose_on_its_soles(model):
    data = mujoco.MjData(model)
    data.qpos[0:7] = [0, 0, 0, 1, 0, 0, 0]  # the pelvis at the origin, upright
    for j, q in zip(H1.joints, H1.default_q, strict=True):
        data.qpos[model.jnt_qposadr[model.joint(j.name).id]] = q
    mujoco.mj_kinematics(model, data)
    soles = [data.site(s).xpos[2] for s in ("left_foot", "right_foot")]
    assert soles[0] == pytest.approx(soles[1]) and -soles[0] == pytest.approx(H1.standing_base_height_m, abs=0.01)
    for foot in H1.foot_bodies:  # the sole site lies on the lowest points of the foot's collision capsules
        body = model.body(foot).id
        capsules = [g for g in range(model.ngeom) if model.geom_bodyid[g] == body and model.geom_contype[g]]
        lowest = min(data.geom_xpos[g][2] - model.geom_size[g][0] - model.geom_size[g][1]
                     * abs(data.geom_xmat[g].reshape(3, 3)[2, 2]) for g in capsules)  # fmt: skip
        assert lowest == pytest.approx(soles[0], abs=2e-3), foot


def test_bodies_sensors_and_the_head_camera_mount(model):
    for body in (H1.base_body, H1.torso_body, *H1.foot_bodies):
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body) >= 0, body
    for sensor in ("base_gyro", "base_accel"):  # the pelvis's, as the bridge reports the pelvis's orientation
        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, sensor)
        assert sid >= 0, sensor
        assert model.body(model.site_bodyid[model.sensor_objid[sid]]).name == H1.base_body
    # Unitree's IMU site is on the torso (as the real H1's IMU): lowstate's IMU is the torso's on a robot.
    assert model.body(int(model.site("imu").bodyid[0])).name == H1.torso_body
    cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, DEPTH_CAMERA_NAME)
    assert mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, model.cam_bodyid[cam]) == H1.camera.body
    # The mount (Unitree's h1.urdf d435 joint) sits inside the head, just behind the front of Unitree's head mesh.
    torso = model.body(H1.torso_body).id
    mesh = next(g for g in range(model.ngeom) if model.geom_bodyid[g] == torso and model.geom_type[g] == 7)
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, model.geom_quat[mesh])
    adr, n = model.mesh_vertadr[model.geom_dataid[mesh]], model.mesh_vertnum[model.geom_dataid[mesh]]
    verts = model.mesh_vert[adr : adr + n] @ rot.reshape(3, 3).T + model.geom_pos[mesh]
    mount = np.array(H1.camera.xyz)
    level = verts[(np.abs(verts[:, 1] - mount[1]) < 0.01) & (np.abs(verts[:, 2] - mount[2]) < 0.01)]
    assert 0.0 < level[:, 0].max() - mount[0] < 0.03  # the head's front is 0-3 cm ahead of the camera
    assert np.linalg.norm(verts - mount, axis=1).min() < 0.02
    # The depth camera sees terrain only: none of the robot's geoms (meshes included) are in the terrain group.
    robot_geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] != 0]
    assert robot_geoms and all(model.geom_group[g] != TERRAIN_GEOM_GROUP for g in robot_geoms)


@pytest.mark.parametrize("robot_model", ["", "simplified"])
def test_the_head_camera_looks_51_degrees_down_at_the_floor(robot_model):
    sim = RobotSim(H1, "flat", DT, robot_model=robot_model)
    m, d = sim.model, sim.data
    cam = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, DEPTH_CAMERA_NAME)
    axis = -d.cam_xmat[cam].reshape(3, 3)[:, 2]  # a MuJoCo camera looks along its -z
    assert np.degrees(np.arcsin(-axis[2])) == pytest.approx(51.0, abs=0.5)
    assert d.cam_xpos[cam][2] == pytest.approx(sim.base_pos[2] + H1.camera.xyz[2], abs=1e-6)
    geom = np.zeros(1, dtype=np.int32)
    distance = mujoco.mj_ray(m, d, d.cam_xpos[cam], axis, np.array([1, 0, 1, 0, 0, 0], np.uint8), 1, -1, geom)
    assert mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, int(geom[0])) == "floor"
    assert distance == pytest.approx(d.cam_xpos[cam][2] / np.sin(np.radians(51.0)), rel=1e-3)


def test_the_simplified_model_is_the_second_one(simplified):
    assert simplified.body_mass[1:].sum() == pytest.approx(SIMPLIFIED_MASS_KG, abs=0.05)
    assert simplified.nmesh == 0


@pytest.fixture(scope="module")
def robot_cfg():
    cfg = load_config(config_dir() / "h1_robot.yaml")
    assert cfg.supervisor.stand_gains == {}  # the deployers' gains, the spec's
    return cfg


@pytest.mark.parametrize(
    "peer",
    [Peer(0.002, "every_step"), Peer(0.005, "on_command"), Peer(0.002, "every_step", "simplified")],
    ids=lambda p: p.label(),
)
def test_the_supervisor_stands_it_up_on_the_band_on_the_deployers_gains(robot_cfg, peer):
    """As a real H1 on its gantry: on Unitree's model at the bridge's 2 ms and with the torque held over
    5 ms steps (Unitree's simulators), and on the simplified model."""
    result = stand_up_trial(robot_cfg, peer, seed=0, release=False)
    assert result["stood_on_band"] and result["damped"] is None, result
    assert result["max_speed_ratio"] < 0.5, result


@pytest.mark.parametrize("kp", [None, 1000.0])
def test_no_pd_stand_holds_it_free_on_unitree_s_model(kp):
    """Why the H1 is never released in STAND (parkour_core/robots/h1.py): on the deployers' gains the
    ankles (kp 40) cannot hold the inverted pendulum and it falls forwards; with kp 1000 on every joint
    the knees still sag the centre of mass behind the heel, and it falls backwards."""
    sim = RobotSim(H1, "flat", DT)
    gains = None if kp is None else (np.full(H1.num_joints, kp), np.full(H1.num_joints, kp / 50))
    sim.hang()
    sim.set_command(stand_command(H1, gains), ALL)
    _run(sim, 2.0)
    sim.hang(None)
    _run(sim, 4.0)
    assert sim.fallen()
    assert (sim.base_pos[0] > 0.0) == (kp is None)  # forwards on soft ankles, backwards over the heels


def test_damping_without_support_lets_the_h1_fall():
    sim = RobotSim(H1, "flat", DT)
    sim.set_command(damp_command(H1, H1.kd_damp), ALL)
    _run(sim, 4.0)
    assert sim.base_pos[2] < 0.6
