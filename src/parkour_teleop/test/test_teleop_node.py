"""teleop_node over real rclpy: a sensor_msgs/Joy in gives /cmd_vel/teleop, /teleop/joy and service calls out."""

from __future__ import annotations

import time

import pytest

from parkour_core.config import load_config
from parkour_core.domains import claim_domains
from parkour_core.paths import config_dir
from parkour_core.teleop import TeleopRequest

_DOMAINS = claim_domains()  # held while the tests run: no other graph or test run takes it
ROS_DOMAIN_ID = str(_DOMAINS.ros)


@pytest.fixture
def teleop(monkeypatch, tmp_path):
    monkeypatch.setenv("ROS_DOMAIN_ID", ROS_DOMAIN_ID)
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from parkour_teleop.teleop_node import TeleopNode

    cfg = load_config(config_dir() / "g1_robot.yaml", {"teleop.joy_topic": "/test_joy"})
    node = TeleopNode(cfg, tmp_path, [], "joy")
    peer = rclpy.create_node("teleop_test_peer")
    executor = SingleThreadedExecutor()
    executor.add_node(node.node)
    executor.add_node(peer)
    yield node, peer, executor
    executor.shutdown()
    peer.destroy_node()
    node.node.destroy_node()
    if rclpy.ok():
        rclpy.shutdown()


def spin_until(executor, done, timeout_s: float = 20.0) -> None:
    """Spin until ``done()``; the deadline only keeps a broken test from hanging."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.02)


def test_joy_in_gives_cmd_vel_normalised_joy_and_the_chords_service(teleop):
    from geometry_msgs.msg import Twist
    from sensor_msgs.msg import Joy
    from std_srvs.srv import Trigger

    node, peer, executor = teleop
    cmds: list[Twist] = []
    joys: list[Joy] = []
    called: list[str] = []
    peer.create_subscription(Twist, "/cmd_vel/teleop", cmds.append, 10)  # the operator's own topic (the mux's)
    peer.create_subscription(Joy, "/teleop/joy", joys.append, 10)

    def stand_up(_req, response):
        called.append("stand_up")
        response.success = True
        response.message = "ok"
        return response

    peer.create_service(Trigger, "/supervisor/stand_up", stand_up)
    joy_pub = peer.create_publisher(Joy, "/test_joy", 10)
    spin_until(
        executor,
        lambda: (
            node.clients[TeleopRequest.STAND_UP].service_is_ready()
            and joy_pub.get_subscription_count()
            and node.cmd_pub.get_subscription_count()  # the operator's topic is quiet until the stick moves
            and node.joy_pub.get_subscription_count()
        ),
    )

    # An Xbox pad as joy_linux reports it (layout xbox): left stick full forward, Start + A held.
    msg = Joy()
    msg.axes = [0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    msg.buttons = [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]

    def forward_seen() -> bool:
        joy_pub.publish(msg)  # like joy_linux's autorepeat
        held = any(j.buttons[7] and j.buttons[0] for j in joys)
        return bool(called) and held and any(c.linear.x > 0.05 for c in cmds)

    spin_until(executor, forward_seen)
    assert called == ["stand_up"]  # held over many messages: one request
    forward = [c for c in cmds if c.linear.x > 0.0]
    assert forward and all(c.linear.x <= node.cfg.teleop.max_vx_mps + 1e-9 for c in forward)
    assert all(c.linear.y == 0.0 and c.angular.z == 0.0 for c in cmds)
    held = [j for j in joys if j.buttons[7] and j.buttons[0]]
    assert held and held[-1].axes[1] == pytest.approx(1.0)  # normalised: ly is axis 1, Start 7, A 0

    # The stick released: the command ramps to zero, zeros for teleop.release_hold_s, then silence (the
    # autonomy topic drives again), while the pad itself stays connected on /teleop/joy.
    msg.axes = [0.0] * 8
    msg.buttons = [0] * 11

    def released() -> bool:
        joy_pub.publish(msg)
        return any(c.linear.x == 0.0 for c in cmds)

    spin_until(executor, released)
    quiet_from = len(cmds)
    hold_s = node.cfg.teleop.release_hold_s
    started = time.monotonic()
    spin_until(executor, lambda: joy_pub.publish(msg) or time.monotonic() - started > hold_s + 1.0, timeout_s=10.0)
    after = cmds[quiet_from:]
    assert all(c.linear.x == 0.0 for c in after)
    assert len(after) <= node.cfg.teleop.rate_hz * (hold_s + 0.2), len(after)  # it went quiet
    assert joys and not any(j.axes[1] for j in joys[-3:])  # the pad is still there, centred


def call(executor, future):
    spin_until(executor, future.done)
    assert future.done(), "no answer from teleop_node's parameter service"
    return future.result()


def test_parameter_services_list_describe_and_refuse(teleop):
    """Over rclpy's parameter services: every teleop setting is listed and described from the config's
    declaration; a live speed limit is range-checked and, in range, applied; a read-only key is refused."""
    from rcl_interfaces.msg import ParameterType
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from parkour_core import params

    node, peer, executor = teleop
    client = AsyncParameterClient(peer, "teleop_node")
    spin_until(executor, client.services_are_ready)
    expected = {s.name for s in params.specs("teleop")}
    assert {"teleop.max_vx_mps", "teleop.deadzone", "supervisor.gamepad_estop_buttons", "mode"} <= expected

    listed = set(call(executor, client.list_parameters()).result.names)
    assert expected <= listed

    described = call(executor, client.describe_parameters(["teleop.max_vx_mps", "supervisor.gamepad_estop_buttons"]))
    speed, estop = described.descriptors
    assert speed.type == ParameterType.PARAMETER_DOUBLE and not speed.read_only
    assert (speed.floating_point_range[0].from_value, speed.floating_point_range[0].to_value) == (0.0, 3.0)
    assert "full stick" in speed.description
    assert estop.type == ParameterType.PARAMETER_INTEGER_ARRAY and estop.read_only

    got = call(executor, client.get_parameters(["teleop.max_vx_mps"])).values[0]
    assert got.double_value == node.cfg.teleop.max_vx_mps

    too_fast = call(executor, client.set_parameters([Parameter("teleop.max_vx_mps", value=5.0)])).results[0]
    assert not too_fast.successful and "out of range" in too_fast.reason
    read_only = call(executor, client.set_parameters([Parameter("supervisor.gamepad_estop_buttons", value=[1, 2])]))
    assert not read_only.results[0].successful and "read-only" in read_only.results[0].reason
    assert node.cfg.supervisor.gamepad_estop_buttons == [4, 5]

    slower = call(executor, client.set_parameters([Parameter("teleop.max_vx_mps", value=0.4)])).results[0]
    assert slower.successful, slower.reason
    assert node.mapper.settings.max_vx_mps == 0.4 and node.cfg.teleop.max_vx_mps == 0.4


def test_the_speed_ramps_are_live_within_their_range(teleop):
    """The ramps limit how fast the commanded speed changes: settable while running, range-checked, applied."""
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    node, peer, executor = teleop
    client = AsyncParameterClient(peer, "teleop_node")
    spin_until(executor, client.services_are_ready)
    (ramp,) = call(executor, client.describe_parameters(["teleop.accel_vx_mps2"])).descriptors
    assert not ramp.read_only and ramp.floating_point_range[0].to_value == 20.0
    too_steep = call(executor, client.set_parameters([Parameter("teleop.accel_vx_mps2", value=25.0)])).results[0]
    assert not too_steep.successful and "out of range" in too_steep.reason
    assert node.mapper.settings.accel_vx_mps2 == node.cfg.teleop.accel_vx_mps2 == 1.0
    gentler = call(executor, client.set_parameters([Parameter("teleop.accel_vx_mps2", value=0.5)])).results[0]
    assert gentler.successful, gentler.reason
    assert node.mapper.settings.accel_vx_mps2 == 0.5 and node.cfg.teleop.accel_vx_mps2 == 0.5
