"""An operator drives the simulated G1 with a gamepad through a joy node (`parkour sim --teleop joy`).

The real graph with teleop_node in place of the script; this test is the joy node, publishing
sensor_msgs/Joy on /joy (Xbox layout) keyed on the supervisor's state:
  DAMP     LB + D-pad up: the Unitree remote's stand-up combo (supervisor.remote_stand_up_keys L1 + Up),
           which only the remote path knows: the bridge encodes /teleop/joy into wireless_remote and
           the supervisor reads it from rt/lowstate
  STAND    (band released by teleop_node) Start + Y: the gamepad's activate chord (service + /teleop/joy)
  ACTIVE   left stick full forward
"""

import json
import threading
import time

import numpy as np
import pytest

from parkour_bringup.graph import ros_env, run_sim_graph

from .conftest import write_config

pytestmark = pytest.mark.integration

START, Y, LB = 7, 3, 4  # Xbox joy_linux button indices
LY, DPAD_Y = 1, 7  # axes


def test_an_operator_stands_activates_and_walks_the_g1_with_a_joy_node(tmp_path, domains, monkeypatch):
    dds_domain, ros_domain = domains
    config = write_config(
        tmp_path,
        "g1_sim.yaml",
        dds={"domain": dds_domain, "interface": "lo"},
        sim_camera={"enabled": False},
        teleop={"joy_topic": "/joy", "layout": "xbox", "max_vx_mps": 0.5},
    )
    run_dir = tmp_path / "run"
    for key, value in ros_env(ros_domain).items():
        monkeypatch.setenv(key, value)
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from sensor_msgs.msg import Joy

    from parkour_interfaces.msg import SupervisorState

    rclpy.init()
    node = rclpy.create_node("test_joy_operator")
    joy_pub = node.create_publisher(Joy, "/joy", 10)
    mode = {"now": "", "stand_since": None}
    remote_buttons: list[tuple[str, tuple[int, ...]]] = []

    def on_state(msg) -> None:
        mode["now"] = msg.mode
        if msg.mode == SupervisorState.STAND and mode["stand_since"] is None:
            mode["stand_since"] = time.monotonic()

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(SupervisorState, "/supervisor/state", on_state, latched)
    node.create_subscription(
        Joy, "/teleop/remote", lambda m: remote_buttons.append((mode["now"], tuple(m.buttons))), 10
    )

    def publish() -> None:
        msg = Joy()
        msg.axes, msg.buttons = [0.0] * 8, [0] * 11
        if mode["now"] == "DAMP":
            msg.buttons[LB], msg.axes[DPAD_Y] = 1, 1.0
        elif mode["now"] == "STAND" and time.monotonic() - (mode["stand_since"] or 0.0) > 2.0:
            msg.buttons[START], msg.buttons[Y] = 1, 1  # after the drop onto the feet settles
        elif mode["now"] == "ACTIVE":
            msg.axes[LY] = 1.0
        msg.header.stamp = node.get_clock().now().to_msg()
        joy_pub.publish(msg)

    node.create_timer(0.05, publish)  # joy_linux's default autorepeat: 20 Hz
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinning = threading.Thread(target=executor.spin, daemon=True)
    spinning.start()
    try:
        run_sim_graph(config, run_dir, 16.0, ros_domain, teleop="joy")
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown()
        spinning.join(timeout=5)

    sup = json.loads((run_dir / "supervisor.json").read_text())
    moves = [(t["from"], t["to"]) for t in sup["supervisor_transitions"]]
    assert moves[:3] == [("DAMP", "STAND_UP"), ("STAND_UP", "STAND"), ("STAND", "ACTIVE")], moves
    teleop = json.loads((run_dir / "teleop.json").read_text())
    requests = [r["request"] for r in teleop["requests"]]
    assert requests == ["activate"], requests  # stand-up came by the remote path alone
    # The remote as the supervisor read it from rt/lowstate: L1 (bit 1) and Up (bit 12), which only the
    # operator's stand-up held (the supervisor's state can reach this node after the remote it acted on).
    assert any(b[1] and b[12] for _, b in remote_buttons), remote_buttons[:5]

    bridge = json.loads((run_dir / "bridge.json").read_text())
    assert bridge["fell_at_s"] is None
    traj = bridge["trajectory"]
    active_at = next(t["t"] for t in sup["supervisor_transitions"] if t["to"] == "ACTIVE")
    t = np.array(traj["t"])
    x = np.array(traj["x"])[t >= active_at]
    assert len(x) and x[-1] - x[0] > 0.5, (x[:1], x[-1:])  # walked forward under the operator's stick
