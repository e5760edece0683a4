"""The policy node dies mid-walk: the supervisor alone keeps the G1 walking (BLIND) until the e-stop.

The real graph (MuJoCo bridge, supervisor, policy, script over rclpy and Cyclone DDS), with the policy
node killed (SIGKILL) once the supervisor is ACTIVE. Everything is judged from what the nodes wrote:
the supervisor's transitions and counters, and the bridge's ground-truth trajectory.
"""

import json

import numpy as np
import pytest

from parkour_bringup.graph import SIM_NODES, GraphError, ros_env, start_node, stop_nodes, wait_ready

from .conftest import wait_for, write_config

pytestmark = pytest.mark.integration

ESTOP_AT_S = 11.0  # script time, which starts when the robot state first appears (about 2 s of sim time)
SCRIPT = [
    {"at_s": 0.2, "request": "stand_up"},
    {"at_s": 2.5, "request": "release_band", "in_mode": "STAND"},
    {"at_s": 3.5, "request": "activate", "in_mode": "STAND"},
    {"at_s": 4.0, "cmd": [0.4, 0.0, 0.0]},
    {"at_s": ESTOP_AT_S, "request": "estop"},
]


def test_a_dead_policy_hands_the_robot_to_the_supervisors_fallback_gait(tmp_path, domains):
    dds_domain, ros_domain = domains
    config = write_config(
        tmp_path,
        "g1_sim.yaml",
        dds={"domain": dds_domain, "interface": "lo"},
        script={"steps": SCRIPT},
        sim_camera={"enabled": False},  # the walking bundle reads no depth; spare the two cores
    )
    run_dir = tmp_path / "run"
    env = ros_env(ros_domain)
    sim_time = ["--ros-args", "-p", "use_sim_time:=true"]
    nodes = {name: start_node(name, config, run_dir, env, sim_time) for name in SIM_NODES}
    try:
        wait_ready(list(nodes.values()), run_dir, timeout_s=60.0)
        nodes["bridge"] = start_node("bridge", config, run_dir, env, ["--duration", "15"])
        supervisor_log = nodes["supervisor"].log_path
        wait_for(lambda: "-> ACTIVE" in supervisor_log.read_text(), 120, "the supervisor to go ACTIVE")
        nodes["policy"].proc.kill()
        nodes["bridge"].proc.wait(timeout=300)
        if nodes["bridge"].proc.returncode != 0:
            raise GraphError(f"the bridge exited with {nodes['bridge'].proc.returncode}:\n{nodes['bridge'].tail()}")
    finally:
        stop_nodes(list(nodes.values()))
    logs = "\n".join(n.tail(30) for n in nodes.values())

    sup = json.loads((run_dir / "supervisor.json").read_text())
    moves = [(t["from"], t["to"], t["reason"]) for t in sup["supervisor_transitions"]]
    assert moves == [
        ("DAMP", "STAND_UP", "stand up requested"),
        ("STAND_UP", "STAND", "stand-up complete"),
        ("STAND", "ACTIVE", "activate requested"),
        ("ACTIVE", "BLIND", "policy targets stale or not finite"),
        ("BLIND", "DAMP", "e-stop from the ROS service"),
    ], logs
    assert sup["faults"]["targets_stale"]["onsets"] == 1
    assert sup["faults"]["estop_service"]["onsets"] == 1
    assert sup["fallback"]["gait"] == "g1_walk" and sup["fallback"]["errors"] == []
    assert sup["fallback"]["steps"] > 0
    assert sup["time_in_mode_s"]["BLIND"] > 3.0
    assert sup["commands_written"] == sup["ticks"]  # the supervisor kept writing at its own rate

    bridge = json.loads((run_dir / "bridge.json").read_text())
    blind_from = next(t["t"] for t in sup["supervisor_transitions"] if t["to"] == "BLIND")
    damp_at = next(t["t"] for t in sup["supervisor_transitions"] if t["to"] == "DAMP")
    assert bridge["fell_at_s"] is None or bridge["fell_at_s"] >= damp_at, bridge["fell_at_s"]
    traj = bridge["trajectory"]
    t = np.array(traj["t"])
    xy = np.stack([traj["x"], traj["y"]], axis=1)
    during_blind = (t >= blind_from) & (t <= damp_at)
    walked = np.linalg.norm(xy[during_blind][-1] - xy[during_blind][0])
    assert walked > 0.5, f"the fallback gait moved the robot {walked:.2f} m in BLIND"
