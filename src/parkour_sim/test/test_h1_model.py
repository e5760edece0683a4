"""The simplified H1 MJCF (sim/robots/h1/h1.xml) through the sim's own model builder and PD physics."""

import mujoco
import numpy as np
import pytest

from parkour_core.config import load_config
from parkour_core.paths import config_dir
from parkour_core.robots import H1
from parkour_core.safety import damp_command, stand_command, stand_gains
from parkour_sim.depth_camera import DEPTH_CAMERA_NAME, TERRAIN_GEOM_GROUP
from parkour_sim.physics import RobotSim
from parkour_sim.scene import build_model

ALL = np.ones(H1.num_joints, dtype=bool)
DT = 0.002
PUBLISHED_MASS_KG = 51.65  # unitree_mujoco h1.xml, summed over its links


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


def test_the_model_loads_with_the_published_mass(model):
    body_mass = model.body_mass[1:].sum()  # body 0 is the world
    assert body_mass == pytest.approx(PUBLISHED_MASS_KG, abs=0.05)
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor") >= 0
    assert model.nq == 7 + H1.num_joints  # a floating base and the 19 hinges, nothing else


def test_joints_and_motors_match_the_spec(model):
    assert model.nu == H1.num_joints
    for j in H1.joints:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j.name)
        assert jid >= 0 and model.jnt_type[jid] == mujoco.mjtJoint.mjJNT_HINGE, j.name
        assert tuple(model.jnt_range[jid]) == pytest.approx((j.q_min, j.q_max)), j.name
        aid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, j.name)
        assert model.actuator_trnid[aid, 0] == jid, j.name
        assert tuple(model.actuator_ctrlrange[aid]) == pytest.approx((-j.tau_max, j.tau_max)), j.name
        assert model.actuator_gear[aid, 0] == 1.0, j.name


def test_bodies_sensors_and_camera_mount(model):
    for body in (H1.base_body, H1.torso_body, *H1.foot_bodies):
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body) >= 0, body
    for sensor in ("base_gyro", "base_accel"):
        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, sensor)
        assert sid >= 0, sensor
        site_body = model.site_bodyid[model.sensor_objid[sid]]
        assert mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, site_body) == H1.base_body
    cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, DEPTH_CAMERA_NAME)
    assert mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, model.cam_bodyid[cam]) == H1.camera.body
    # The depth camera sees terrain only: none of the robot's geoms are in the terrain group.
    robot_geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] != 0]
    assert robot_geoms and all(model.geom_group[g] != TERRAIN_GEOM_GROUP for g in robot_geoms)


def test_the_head_camera_looks_51_degrees_down_at_the_floor():
    sim = RobotSim(H1, "flat", DT)
    m, d = sim.model, sim.data
    cam = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, DEPTH_CAMERA_NAME)
    axis = -d.cam_xmat[cam].reshape(3, 3)[:, 2]  # a MuJoCo camera looks along its -z
    assert np.degrees(np.arcsin(-axis[2])) == pytest.approx(51.0, abs=0.5)
    assert d.cam_xpos[cam][2] == pytest.approx(sim.base_pos[2] + H1.camera.xyz[2], abs=1e-6)
    geom = np.zeros(1, dtype=np.int32)
    distance = mujoco.mj_ray(m, d, d.cam_xpos[cam], axis, np.array([1, 0, 1, 0, 0, 0], np.uint8), 1, -1, geom)
    assert mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, int(geom[0])) == "floor"
    assert distance == pytest.approx(d.cam_xpos[cam][2] / np.sin(np.radians(51.0)), rel=1e-3)


def sim_stand_gains():
    """The stand gains config/h1_sim.yaml gives the supervisor (stiffer than the robot's)."""
    cfg = load_config(config_dir() / "h1_sim.yaml")
    return stand_gains(H1, cfg.supervisor.stand_gains)


def test_pd_stand_holds_the_default_pose_after_the_band_is_released():
    sim = RobotSim(H1, "flat", DT)
    sim.hang()
    sim.set_command(stand_command(H1, sim_stand_gains()), ALL)
    _run(sim, 2.0)
    sim.hang(None)
    trace = np.array(_run(sim, 6.0))
    height, tilt = trace[:, 0], trace[:, 1]
    # The default pose puts the pelvis about 1.03 m above the soles; it sags a little under PD.
    assert height.min() > 0.98 and height.max() < 1.06, (height.min(), height.max())
    assert tilt.max() < 0.15, tilt.max()
    assert np.max(np.abs(sim.q - H1.default_q)) < 0.1
    assert np.linalg.norm(sim.base_pos[:2]) < 0.1  # it stood where it was put down
    feet = [mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_BODY, b) for b in H1.foot_bodies]
    assert all(sim.data.xpos[f][2] < 0.1 for f in feet)  # on the floor, not hanging


def test_the_deployers_soft_ankles_do_not_hold_a_pd_stand_in_our_model():
    """Why h1_sim.yaml stiffens the stand (the spec keeps unitree_rl_gym's ankle kp 40): PD alone falls."""
    sim = RobotSim(H1, "flat", DT)
    sim.hang()
    cmd = stand_command(H1)
    assert cmd.kp[H1.joint_names.index("left_ankle_joint")] == 40.0
    sim.set_command(cmd, ALL)
    _run(sim, 2.0)
    sim.hang(None)
    _run(sim, 6.0)
    assert sim.fallen()


def test_damping_without_support_lets_the_h1_fall():
    sim = RobotSim(H1, "flat", DT)
    sim.set_command(damp_command(H1, H1.kd_damp), ALL)
    _run(sim, 4.0)
    assert sim.base_pos[2] < 0.6
