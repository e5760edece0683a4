import numpy as np

from parkour_core.robots import G1
from parkour_core.safety import damp_command, stand_command
from parkour_sim.physics import RobotSim

ALL = np.ones(G1.num_joints, dtype=bool)


def _run(sim: RobotSim, seconds: float) -> None:
    for _ in range(int(seconds / 0.002)):
        sim.step()


def test_stand_gains_hold_the_default_pose_without_support():
    sim = RobotSim(G1, "flat", 0.002)
    sim.set_command(stand_command(G1), ALL)
    _run(sim, 4.0)
    assert sim.tilt < 0.15
    assert sim.base_pos[2] > 0.7
    assert np.max(np.abs(sim.q - G1.default_q)) < 0.1


def test_damping_without_support_lets_the_robot_fall():
    sim = RobotSim(G1, "flat", 0.002)
    sim.set_command(damp_command(G1, 3.0), ALL)
    _run(sim, 3.0)
    assert sim.base_pos[2] < 0.5


def test_elastic_band_holds_a_limp_robot_until_released():
    sim = RobotSim(G1, "flat", 0.002)
    sim.hang()
    sim.set_command(damp_command(G1, 3.0), ALL)
    _run(sim, 2.0)
    assert sim.tilt < 0.3 and sim.base_pos[2] > 0.6
    sim.hang(None)
    _run(sim, 3.0)
    assert sim.base_pos[2] < 0.5


def test_pd_torque_is_clamped_to_the_actuator_range():
    sim = RobotSim(G1, "flat", 0.002)
    cmd = stand_command(G1)
    cmd.q = G1.q_max.copy()
    cmd.kp = np.full(G1.num_joints, 1e5)
    sim.set_command(cmd, ALL)
    sim.step()
    assert np.all(np.abs(sim.tau) <= sim.tau_limit + 1e-9)
    assert np.any(np.isclose(np.abs(sim.tau), sim.tau_limit))


def test_disabled_motors_apply_no_torque():
    sim = RobotSim(G1, "flat", 0.002)
    sim.set_command(stand_command(G1), np.zeros(G1.num_joints, dtype=bool))
    sim.step()
    assert np.all(sim.tau == 0.0)
