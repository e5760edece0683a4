"""script_node: plays the config's scripted sequence (``script.steps``) on the graph.

Starts its clock when the robot state first appears on ``/robot/joint_states`` and the clock runs;
fires mode requests through the supervisor's services (and, in simulation, ``/sim/release_band`` and
``/sim/hang_band``: the gantry let go and re-attached), model swaps through the policy node's ``bundle``
parameter, and publishes ``/cmd_vel`` at 50 Hz so the policy's command timeout never trips mid-run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from parkour_control.swap_client import make_swap_request, swap_client, swap_result
from parkour_core import interfaces as topics
from parkour_core.config import BRIDGE_FAULTS, POLICY_FAULTS, ConfigError, ScriptStep, StackConfig
from parkour_core.math3d import yaw_of
from parkour_core.nodeargs import mark_ready, parse_node_args
from parkour_core.ros_process import create_publisher, create_subscription, declare_from_config, init_rclpy, spin_node
from parkour_core.script import Script
from parkour_core.stats import write_json

SERVICES = {request: topics.supervisor_service(request) for request in topics.SUPERVISOR_REQUESTS}
SERVICES["release_band"] = topics.RELEASE_BAND
SERVICES["hang_band"] = topics.HANG_BAND
# Requests the script handles itself rather than through a Trigger service.
OWN_REQUESTS = ("swap", "fault", "gamepad_lost")
CMD_HZ = 50.0


class ScriptNode:
    def __init__(self, cfg: StackConfig, run_dir: Path | None, ros_args: list[str]) -> None:
        import rclpy
        from geometry_msgs.msg import Twist
        from sensor_msgs.msg import Joy
        from std_srvs.srv import Trigger

        init_rclpy(ros_args)
        self.node = rclpy.create_node("script_node")
        self.log = self.node.get_logger()
        self.params = declare_from_config(self.node, cfg, "script")  # the config it runs on is its parameters'
        cfg = self.params.cfg
        self.run_dir = run_dir
        self.script = Script(cfg.script_steps())
        self.cmd_pub = create_publisher(self.node, topics.CMD_VEL)
        self.clients = {name: self.node.create_client(Trigger, srv) for name, srv in SERVICES.items()}
        self.swap_client = swap_client(self.node)
        self.fault_clients = {}
        if cfg.faults.enabled:
            services = {f: topics.sim_fault_service(f) for f in BRIDGE_FAULTS}
            services |= {f: topics.policy_fault_service(f) for f in POLICY_FAULTS}
            self.fault_clients = {f: self.node.create_client(Trigger, srv) for f, srv in services.items()}
        # A connected gamepad with nothing held: the supervisor notices when it goes away.
        self.joy_pub = create_publisher(self.node, topics.TELEOP_JOY) if cfg.script.publish_joy else None
        self._Joy = Joy
        create_subscription(self.node, topics.JOINT_STATES, self._on_joints)
        self.yaw_rad: float | None = None  # from /robot/imu, for steps that hold the heading
        create_subscription(self.node, topics.IMU, self._on_imu)
        self.supervisor_mode = ""
        create_subscription(self.node, topics.SUPERVISOR_STATE, self._on_mode)
        self._Twist, self._Trigger = Twist, Trigger
        self.start_s: float | None = None
        self.last_joy_t: float | None = None  # when the last /teleop/joy went out (this node's clock)
        self.log_rows: list[dict] = []
        self.timer = self.node.create_timer(1.0 / CMD_HZ, self.tick)

    def _now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    def _on_mode(self, msg) -> None:
        self.supervisor_mode = msg.mode

    def _on_joints(self, _msg) -> None:
        # Under sim time the clock reads 0 until the first /clock arrives: starting then would make the
        # whole script's first seconds due at once when the clock jumps to the bridge's time.
        if self.start_s is None and self._now() > 0.0:
            self.start_s = self._now()
            self.log.info("robot state is up; script starts")

    def _on_imu(self, msg) -> None:
        q = msg.orientation
        self.yaw_rad = yaw_of(np.array([q.w, q.x, q.y, q.z]))

    def _swap(self, bundle: str) -> None:
        row = {"t": self._now(), "request": "swap", "bundle": bundle, "sent": self.swap_client.service_is_ready()}
        self.log_rows.append(row)
        if not row["sent"]:
            self.log.warning("the policy node's parameter service is not available; swap dropped")
            return

        def done(future) -> None:
            ok, reason = swap_result(future.result())
            row.update({"ok": ok, "reason": reason, "answered_t": self._now()})
            # rclpy binds one severity to each logging call site: two calls, not one with a variable level
            if ok:
                self.log.info(f"swap to {bundle!r}: {reason}")
            else:
                self.log.error(f"swap to {bundle!r}: {reason}")

        self.swap_client.call_async(make_swap_request(bundle)).add_done_callback(done)

    def _fault(self, name: str) -> None:
        client = self.fault_clients.get(name)
        sent = client is not None and client.service_is_ready()
        self.log_rows.append({"t": self._now(), "request": "fault", "fault": name, "sent": sent})
        if not sent:
            self.log.warning(f"fault service for {name!r} is not available (faults.enabled?); dropped")
            return
        assert client is not None
        client.call_async(self._Trigger.Request())

    def _call(self, step: ScriptStep) -> None:
        request = step.request
        if request == "swap":
            self._swap(step.bundle)
            return
        if request == "fault":
            self._fault(step.fault)
            return
        if request == "gamepad_lost":
            self.joy_pub = None
            self.log_rows.append({"t": self._now(), "request": request, "sent": True, "last_joy_t": self.last_joy_t})
            return
        client = self.clients[request]
        # The time is taken before the call: the supervisor may act on it (an e-stop) before the call returns.
        now = self._now()
        if not client.service_is_ready():
            self.log.warning(f"service for {request!r} is not available; request dropped")
            self.log_rows.append({"t": now, "request": request, "sent": False})
            return
        client.call_async(self._Trigger.Request())
        self.log_rows.append({"t": now, "request": request, "sent": True})

    def tick(self) -> None:
        if self.start_s is None:
            return
        now = self._now()
        for step in self.script.advance(now - self.start_s, self.supervisor_mode):
            self.log.info(f"script: {step.request} {step.bundle}".rstrip())
            self._call(step)
        command = self.script.velocity(self.yaw_rad)
        msg = self._Twist()
        msg.linear.x, msg.linear.y, msg.angular.z = (float(v) for v in command)
        self.cmd_pub.publish(msg)
        if self.joy_pub is not None:
            joy = self._Joy()
            joy.header.stamp = self.node.get_clock().now().to_msg()
            joy.axes = [0.0] * 8
            joy.buttons = [0] * 12
            self.joy_pub.publish(joy)
            self.last_joy_t = now
        self.log_rows.append({"t": round(now, 4), "cmd": [round(float(v), 4) for v in command]})

    def write_metrics(self) -> None:
        if self.run_dir is None:
            return
        write_json(
            self.run_dir / "script.json",
            {"start_s": self.start_s, "held_for_modes_s": round(self.script.held_s, 4), "log": self.log_rows},
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_node_args(__doc__ or "", argv, "script")
    try:
        node = ScriptNode(args.config, args.run_dir, args.ros_args)
    except ConfigError as e:
        raise SystemExit(f"script_node: bad parameter: {e}") from None
    mark_ready(args.run_dir, "script")
    spin_node(node.node, node.write_metrics)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
