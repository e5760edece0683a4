"""On sim time the supervisor acts on the targets of the last policy tick before its own tick, however
late they reach its process.

The simulator holds sim time at each policy tick until its own copy of that tick's targets has come;
the supervisor's copy travels separately, and on a busy host it can come several supervisor ticks
(tens of ms of sim time) late, so a NaN the policy published would be acted on late. Here that lag is
made on purpose:
the supervisor reads its targets through a relay that passes each message on ``RELAY_DELAY_S`` of wall
time late, while the bridge and the policy talk directly. The real graph walks the G1; the supervisor's
sim-time age of the targets it used in ACTIVE must never pass one policy period. Nothing is timed.
"""

import json
import subprocess
import sys

import pytest

from parkour_bringup.graph import SIM_NODES, GraphError, ros_env, start_node, stop_nodes, wait_ready

from .conftest import wait_for, write_config

pytestmark = pytest.mark.integration

RELAY_DELAY_S = 0.025  # wall time: longer than a 5 ms supervisor tick takes to come round here
RELAYED = "/relay/joint_targets"
RELAY = """
import collections, sys, time
import rclpy
from sensor_msgs.msg import JointState

delay_s = float(sys.argv[1])
rclpy.init()
node = rclpy.create_node("targets_relay")
pub = node.create_publisher(JointState, sys.argv[2], 10)
held = collections.deque()
def hold(m):
    held.append((time.monotonic() + delay_s, m))
node.create_subscription(JointState, "/policy/joint_targets", hold, 10)
print("relaying", flush=True)
while rclpy.ok():
    rclpy.spin_once(node, timeout_sec=0.0005)
    while held and held[0][0] <= time.monotonic():
        pub.publish(held.popleft()[1])
"""
SCRIPT = [
    {"at_s": 0.2, "request": "stand_up"},
    {"at_s": 2.5, "request": "release_band", "in_mode": "STAND"},
    {"at_s": 3.5, "request": "activate", "in_mode": "STAND"},
    {"at_s": 4.0, "cmd": [0.4, 0.0, 0.0]},
]


def test_late_targets_are_waited_for_on_sim_time(tmp_path, domains):
    dds_domain, ros_domain = domains
    config = write_config(
        tmp_path,
        "g1_sim.yaml",
        dds={"domain": dds_domain, "interface": "lo"},
        script={"steps": SCRIPT},
        sim_camera={"enabled": False},  # the walking bundle reads no depth
    )
    run_dir = tmp_path / "run"
    env = ros_env(ros_domain)
    relay = subprocess.Popen(
        [sys.executable, "-c", RELAY, str(RELAY_DELAY_S), RELAYED], env=env, stdout=subprocess.PIPE, text=True
    )
    sim_time = ["--ros-args", "-p", "use_sim_time:=true"]
    remapped = [*sim_time, "-r", f"/policy/joint_targets:={RELAYED}"]
    nodes = {name: start_node(name, config, run_dir, env, remapped if name == "supervisor" else sim_time)
             for name in SIM_NODES}  # fmt: skip
    try:
        assert relay.stdout is not None and relay.stdout.readline().strip() == "relaying"
        wait_ready(list(nodes.values()), run_dir, timeout_s=60.0)
        nodes["bridge"] = start_node("bridge", config, run_dir, env, ["--duration", "10"])
        wait_for(lambda: "-> ACTIVE" in nodes["supervisor"].log_path.read_text(), 120, "the supervisor to go ACTIVE")
        nodes["bridge"].proc.wait(timeout=300)
        if nodes["bridge"].proc.returncode != 0:
            raise GraphError(f"the bridge exited with {nodes['bridge'].proc.returncode}:\n{nodes['bridge'].tail()}")
    finally:
        stop_nodes(list(nodes.values()))
        relay.kill()
        relay.wait()
    logs = "\n".join(n.tail(20) for n in nodes.values())

    sup = json.loads((run_dir / "supervisor.json").read_text())
    reasons = [t["reason"] for t in sup["supervisor_transitions"]]
    assert reasons == ["stand up requested", "stand-up complete", "activate requested"], logs
    assert sup["final_mode"] == "ACTIVE"
    # Every tick in ACTIVE used the targets of the last policy tick before it: at most one period old.
    period_ms = 1000.0 / 50.0
    assert sup["target_age_ms"]["max"] <= period_ms + 0.01, sup["target_age_ms"]
    # ... because it waited for them: the relay's delay was there to wait out, and nothing was given up on.
    assert sup["target_waits_sim_time"] > 100 and sup["target_waits_gave_up_sim_time"] == 0, sup
    bridge = json.loads((run_dir / "bridge.json").read_text())
    assert not bridge["fell"], bridge["fell_at_s"]
