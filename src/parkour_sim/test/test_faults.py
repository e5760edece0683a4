import numpy as np
import pytest

from parkour_core.config import ConfigError, FaultsConfig, load_config
from parkour_core.paths import config_dir
from parkour_core.robots import G1
from parkour_core.safety import JointCommand, stand_command
from parkour_sim.faults import BridgeFaults, Window, command_violations

ALL_ON = np.ones(G1.num_joints, dtype=bool)


def test_window():
    w = Window(2.0, 0.5)
    assert not w.active(1.99) and w.active(2.0) and w.active(2.49) and not w.active(2.5)
    assert not Window(duration_s=100.0).active(0.0)  # never triggered


def test_push_force_only_during_the_push():
    faults = BridgeFaults(FaultsConfig(enabled=True, push_for_s=0.2, push_force_n=[300.0, 0.0, 0.0]))
    np.testing.assert_array_equal(faults.push_force(1.1), [0, 0, 0])
    faults.trigger("push", 1.0)
    assert faults.triggered == [{"fault": "push", "t": 1.0}]
    np.testing.assert_array_equal(faults.push_force(0.9), [0, 0, 0])
    np.testing.assert_array_equal(faults.push_force(1.1), [300, 0, 0])
    np.testing.assert_array_equal(faults.push_force(1.2), [0, 0, 0])


def test_stand_command_at_the_default_pose_has_no_violation():
    cmd = stand_command(G1)
    assert command_violations(G1, cmd, ALL_ON, [(G1.default_q.copy(), np.zeros(G1.num_joints))]) == 0


def test_each_kind_of_violation_is_counted_per_joint():
    n = G1.num_joints
    q, dq = G1.default_q.copy(), np.zeros(n)
    cmd = stand_command(G1)
    cmd.q[0] = G1.q_max[0] + 0.1  # target beyond the joint range (and a torque beyond its limit)
    cmd.kd[1] = -1.0  # negative gain
    cmd.tau[2] = np.nan  # non-finite
    cmd.tau[3] = 10.0 * G1.tau_max[3]  # feed-forward beyond the effort limit
    assert command_violations(G1, cmd, ALL_ON, [(q, dq)]) == 4
    disabled = ALL_ON.copy()
    disabled[:4] = False  # disabled motors ignore commands
    assert command_violations(G1, cmd, disabled, [(q, dq)]) == 0


def test_damping_command_target_is_not_a_position_violation():
    n = G1.num_joints
    damp = JointCommand(np.zeros(n), np.zeros(n), np.zeros(n), np.full(n, 3.0), np.zeros(n))
    assert command_violations(G1, damp, ALL_ON, [(G1.default_q.copy(), np.zeros(n))]) == 0


def test_faults_are_refused_on_the_robot(tmp_path):
    import yaml

    data = yaml.safe_load((config_dir() / "g1_robot.yaml").read_text())
    data["faults"] = {"enabled": True}
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="simulation only"):
        load_config(path)


def test_unknown_fault_is_refused():
    with pytest.raises(ValueError, match="unknown bridge fault"):
        BridgeFaults(FaultsConfig()).trigger("meteor", 1.0)


def test_torque_is_judged_against_any_recent_state_the_supervisor_may_have_used():
    n = G1.num_joints
    cmd = stand_command(G1)
    far = G1.default_q.copy()
    far[0] += 1.0  # 1 rad from the target: kp * 1 rad is far beyond hip torque limits
    near = G1.default_q.copy()
    assert command_violations(G1, cmd, ALL_ON, [(far, np.zeros(n))]) == 1
    assert command_violations(G1, cmd, ALL_ON, [(far, np.zeros(n)), (near, np.zeros(n))]) == 0


def test_pure_damping_is_never_a_torque_violation_but_damping_with_a_push_is():
    n = G1.num_joints
    damp = JointCommand(np.zeros(n), np.zeros(n), np.zeros(n), np.full(n, 3.0), np.zeros(n))
    fast = [(G1.default_q.copy(), np.full(n, 100.0))]  # an impact: braking torque 300 Nm
    assert command_violations(G1, damp, ALL_ON, fast) == 0
    damp.dq[0] = 50.0  # a velocity target is not damping: it drives the joint
    assert command_violations(G1, damp, ALL_ON, fast) == 1
