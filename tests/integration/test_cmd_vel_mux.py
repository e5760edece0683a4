"""Two velocity sources at once: an autonomy stack on /cmd_vel and the operator on /cmd_vel/teleop.

The demo script plays the autonomy stack (0.5 m/s forward on /cmd_vel, 50 Hz, all run long). This test
is an operator who turns on the spot for two seconds once the robot walks, then lets go. The policy
node's per-tick inputs (in the run's bag) must show the operator's command while it was given, and
autonomy's before and after: the operator over autonomy, autonomy again once the operator is silent.
"""

import threading
import time

import numpy as np
import pytest

from parkour_bringup.bag.reader import open_bag
from parkour_bringup.bag.topics import TICK_INPUTS_TOPIC
from parkour_bringup.graph import ros_env, run_sim_graph

from .conftest import write_config

pytestmark = pytest.mark.integration

AUTONOMY = (0.5, 0.0, 0.0)
OPERATOR = (0.0, 0.0, 0.6)


def test_the_operator_overrides_autonomy_while_commanding_and_autonomy_drives_again(tmp_path, domains, monkeypatch):
    dds_domain, ros_domain = domains
    config = write_config(
        tmp_path, "g1_sim.yaml", dds={"domain": dds_domain, "interface": "lo"}, sim_camera={"enabled": False},
        script={"steps": [{"at_s": 0.2, "request": "stand_up"},
                          {"at_s": 2.5, "request": "release_band", "in_mode": "STAND"},
                          {"at_s": 3.5, "request": "activate", "in_mode": "STAND"},
                          {"at_s": 4.0, "cmd": list(AUTONOMY)}]},
    )  # fmt: skip
    for key, value in ros_env(ros_domain).items():
        monkeypatch.setenv(key, value)
    import rclpy
    from geometry_msgs.msg import Twist
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile

    from parkour_interfaces.msg import SupervisorState

    rclpy.init()
    node = rclpy.create_node("test_operator")
    pub = node.create_publisher(Twist, "/cmd_vel/teleop", 10)
    state = {"mode": "", "active_at": None, "sent": 0}
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)

    def on_mode(msg) -> None:
        state["mode"] = msg.mode
        if msg.mode == SupervisorState.ACTIVE and state["active_at"] is None:
            state["active_at"] = time.monotonic()

    node.create_subscription(SupervisorState, "/supervisor/state", on_mode, latched)

    def operate() -> None:  # 20 Hz for 2 s of wall time, 3 s after activation; then nothing
        since = None if state["active_at"] is None else time.monotonic() - state["active_at"]
        if since is not None and 3.0 <= since < 5.0:
            msg = Twist()
            msg.linear.x, msg.linear.y, msg.angular.z = OPERATOR
            pub.publish(msg)
            state["sent"] += 1

    node.create_timer(0.05, operate)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinning = threading.Thread(target=executor.spin, daemon=True)
    spinning.start()
    run_dir = tmp_path / "run"
    try:
        run_sim_graph(config, run_dir, 14.0, ros_domain, record=True)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown()
        spinning.join(timeout=5)
    assert state["sent"] > 10, state
    with open_bag(run_dir / "bag") as bag:
        ticks = [m.msg for m in bag.messages([TICK_INPUTS_TOPIC])]
    # The command each tick ran on, read from the typed message's fields.
    commands = [(t.command.linear.x, t.command.linear.y, t.command.angular.z) for t in ticks]
    kinds = []
    for c in commands:
        kind = "operator" if np.allclose(c, OPERATOR) else "autonomy" if np.allclose(c, AUTONOMY) else "other"
        if not kinds or kinds[-1][0] != kind:
            kinds.append([kind, 0])
        kinds[-1][1] += 1
    sequence = [k for k, n in kinds if k != "other" and n >= 5]
    # autonomy, then the operator for its two seconds (about 100 ticks at 50 Hz of sim time), then autonomy
    assert sequence == ["autonomy", "operator", "autonomy"], kinds
    assert max(n for k, n in kinds if k == "operator") >= 25, kinds
