"""The G1's second MuJoCo model (mjlab's) as the bridge and evaluation load it."""

import mujoco
import numpy as np
import pytest

from parkour_core.robots import G1, H1
from parkour_core.safety import stand_command
from parkour_sim.depth_camera import TERRAIN_GEOM_GROUP
from parkour_sim.models import robot_model
from parkour_sim.physics import RobotSim


@pytest.fixture(scope="module")
def sims():
    return {name: RobotSim(G1, "flat", 0.002, robot_model=name) for name in ("", "mjlab")}


def test_mjlab_s_g1_gets_a_torque_motor_per_joint_with_the_spec_s_effort_limit(sims):
    sim = sims["mjlab"]
    m = sim.model
    assert m.nu == G1.num_joints
    np.testing.assert_allclose(m.actuator_ctrlrange[sim.actuator, 1], G1.tau_max)


def test_its_armature_from_unitree_s_motor_data_matches_holosoma_s_file(sims):
    # Two models written apart: our reflected inertias (rotor inertias and gear ratios) against the
    # armature holosoma wrote into its MJCF, joint by joint.
    ours = sims["mjlab"].model.dof_armature[sims["mjlab"].qvel_adr]
    theirs = sims[""].model.dof_armature[sims[""].qvel_adr]
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_the_depth_camera_sees_none_of_its_robot_geoms(sims):
    m = sims["mjlab"].model
    robot = m.geom_bodyid != 0
    assert robot.any() and not np.any(m.geom_group[robot] == TERRAIN_GEOM_GROUP)
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, "base_gyro") >= 0


@pytest.mark.parametrize("name", ["", "mjlab"])
def test_both_models_stand_by_pd_on_the_default_pose(sims, name):
    sim = sims[name]
    sim.reset()
    sim.hang()
    for _ in range(500):
        sim.set_command(stand_command(G1), np.ones(G1.num_joints, dtype=bool))
        sim.step()
    sim.hang(None)
    for _ in range(1500):
        sim.set_command(stand_command(G1), np.ones(G1.num_joints, dtype=bool))
        sim.step()
    assert not sim.fallen() and sim.tilt < 0.2, (name, sim.base_pos, sim.tilt)


def test_an_unknown_model_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="known"):
        robot_model(G1, "isaac")
    with pytest.raises(ValueError, match="no model 'mjlab'"):
        robot_model(H1, "mjlab")
    assert robot_model(G1, "holosoma").asset == G1.mjcf_asset


def test_on_command_pd_holds_the_torque_of_the_last_command(sims):
    sim = RobotSim(G1, "flat", 0.005, robot_model="mjlab", pd_law="on_command")
    sim.hang()
    sim.set_command(stand_command(G1), np.ones(G1.num_joints, dtype=bool))
    held = sim.tau.copy()
    for _ in range(5):
        sim.step()
    np.testing.assert_array_equal(sim.tau, held)  # no new command: the same torque, however the joints moved
    sim.set_command(stand_command(G1), np.ones(G1.num_joints, dtype=bool))
    assert not np.array_equal(sim.tau, held)
