"""policy_node: runs the configured bundle at its rate on a drift-free timer.

Reads ``/robot/joint_states`` and ``/robot/imu`` (from the supervisor), ``/cmd_vel`` and
``/supervisor/state``; publishes ``/policy/joint_targets``. The policy's own state (previous
action, gait clock) is reset whenever the supervisor enters ACTIVE. The model is loaded in
the constructor and verified (hashes, contract, ONNX I/O) before the timer starts.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from parkour_core.bundle import load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.config import StackConfig
from parkour_core.nodeargs import mark_ready, parse_node_args
from parkour_core.robots import get_robot
from parkour_core.runner import PolicyRunner, RobotState
from parkour_core.stats import summary_ms, write_json


def _stamp_s(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


class PolicyNode:
    def __init__(self, cfg: StackConfig, run_dir: Path | None, ros_args: list[str]) -> None:
        import rclpy
        from geometry_msgs.msg import Twist
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from sensor_msgs.msg import Imu, JointState
        from std_msgs.msg import String

        self.cfg = cfg
        self.run_dir = run_dir
        self.spec = get_robot(cfg.robot)
        bundle = load_bundle(resolve_bundle(cfg.policy.bundle), robot=self.spec)
        self.runner = PolicyRunner(bundle, intra_op_threads=cfg.policy.intra_op_threads)
        self.period_s = 1.0 / bundle.manifest.policy_hz

        rclpy.init(args=["--ros-args", *ros_args] if ros_args else None)
        self.node = rclpy.create_node("policy_node")
        self.log = self.node.get_logger()
        self.targets_pub = self.node.create_publisher(JointState, "/policy/joint_targets", 10)
        self.node.create_subscription(JointState, "/robot/joint_states", self._on_joints, 10)
        self.node.create_subscription(Imu, "/robot/imu", self._on_imu, 10)
        self.node.create_subscription(Twist, "/cmd_vel", self._on_cmd_vel, 10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(String, "/supervisor/state", self._on_supervisor_state, latched)
        self._JointState = JointState

        self.q: np.ndarray | None = None
        self.dq: np.ndarray | None = None
        self.quat = np.array([1.0, 0.0, 0.0, 0.0])
        self.gyro = np.zeros(3)
        self.joint_stamp_s: float | None = None
        self.command = np.zeros(3)
        self.command_t: float | None = None
        self.supervisor_state = "UNKNOWN"

        self.periods: list[float] = []
        self.periods_wall: list[float] = []
        self.inference_s: list[float] = []
        self.state_ages: list[float] = []
        self.deadline_misses = 0
        self.ticks = 0
        self._last_tick: float | None = None
        self._last_tick_wall: float | None = None
        self.timer = self.node.create_timer(self.period_s, self.tick)

    def _now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    def _on_joints(self, msg) -> None:
        self.q = np.asarray(msg.position, dtype=np.float64)
        self.dq = np.asarray(msg.velocity, dtype=np.float64)
        self.joint_stamp_s = _stamp_s(msg.header.stamp)

    def _on_imu(self, msg) -> None:
        o = msg.orientation
        self.quat = np.array([o.w, o.x, o.y, o.z])
        w = msg.angular_velocity
        self.gyro = np.array([w.x, w.y, w.z])

    def _on_cmd_vel(self, msg) -> None:
        self.command = np.array([msg.linear.x, msg.linear.y, msg.angular.z])
        self.command_t = self._now()

    def _on_supervisor_state(self, msg) -> None:
        if msg.data == "ACTIVE" and self.supervisor_state != "ACTIVE":
            self.runner.reset()
        self.supervisor_state = msg.data

    def _command_now(self, now: float) -> np.ndarray:
        if self.command_t is None or now - self.command_t > self.cfg.policy.command_timeout_s:
            return np.zeros(3)
        return self.command

    def tick(self) -> None:
        now = self._now()
        wall = time.perf_counter()
        if self._last_tick is not None:
            period = now - self._last_tick
            self.periods.append(period)
            self.periods_wall.append(wall - self._last_tick_wall)  # type: ignore[operator]
            if period > 1.5 * self.period_s:
                self.deadline_misses += 1
        self._last_tick, self._last_tick_wall = now, wall
        if self.q is None or self.dq is None or self.joint_stamp_s is None:
            return
        self.state_ages.append(now - self.joint_stamp_s)
        state = RobotState(self.q, self.dq, self.quat, self.gyro)
        start = time.perf_counter()
        targets = self.runner.step(state, self._command_now(now))
        self.inference_s.append(time.perf_counter() - start)
        msg = self._JointState()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.name = list(self.spec.joint_names)
        msg.position = targets.tolist()
        self.targets_pub.publish(msg)
        self.ticks += 1

    def write_metrics(self) -> None:
        if self.run_dir is None:
            return
        write_json(
            self.run_dir / "policy.json",
            {
                "bundle": str(self.runner.bundle.path),
                "bundle_name": self.runner.manifest.name,
                "ticks": self.ticks,
                "policy_period_ms": summary_ms(self.periods),
                "policy_period_wall_ms": summary_ms(self.periods_wall),
                "periods_ms": [round(p * 1000, 3) for p in self.periods],
                "periods_wall_ms": [round(p * 1000, 3) for p in self.periods_wall],
                "inference_ms": summary_ms(self.inference_s),
                "state_age_ms": summary_ms(self.state_ages),
                "deadline_misses": self.deadline_misses,
            },
        )


def main(argv: list[str] | None = None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from parkour_core.bundle import BundleError

    args = parse_node_args(__doc__ or "", argv)
    try:
        node = PolicyNode(args.config, args.run_dir, args.ros_args)
    except BundleError as e:
        print(f"policy_node: cannot load the bundle: {e}", flush=True)
        return 2
    mark_ready(args.run_dir, "policy")
    try:
        rclpy.spin(node.node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.write_metrics()
        node.node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
