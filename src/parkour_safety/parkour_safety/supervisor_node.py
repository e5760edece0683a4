"""supervisor_node: the only writer of ``rt/lowcmd``.

Every tick it reads the newest ``rt/lowstate``, republishes it as ``/robot/joint_states`` and
``/robot/imu``, runs the state machine of :mod:`parkour_core.safety` (DAMP -> STAND_UP -> STAND ->
ACTIVE, DAMP on stale lowstate, tilt or request), shapes the command for the mode (clamped to
joint and effort limits) and writes it. The policy only proposes targets on
``/policy/joint_targets``. Requests: ``/supervisor/{stand_up,activate,damp,estop}`` (Trigger).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from parkour_core.bundle import read_manifest
from parkour_core.bundles import resolve_bundle
from parkour_core.config import StackConfig
from parkour_core.math3d import tilt_rad
from parkour_core.nodeargs import mark_ready, parse_node_args
from parkour_core.robots import get_robot
from parkour_core.safety import (
    JointCommand,
    Mode,
    Request,
    SafetyLimits,
    TickInputs,
    clamp_command,
    damp_command,
    next_mode,
    stand_command,
    stand_up_command,
)
from parkour_core.stats import summary_ms, write_json
from parkour_core.unitree import Crc, LowStateView, fill_lowcmd, message_types, new_lowcmd, read_lowstate


class SingleWriterError(RuntimeError):
    pass


class Supervisor:
    def __init__(self, cfg: StackConfig, run_dir: Path | None, live: bool, ros_args: list[str]) -> None:
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from sensor_msgs.msg import Imu, JointState
        from std_msgs.msg import String
        from std_srvs.srv import Trigger

        self.cfg = cfg
        self.run_dir = run_dir
        self.spec = get_robot(cfg.robot)
        s = cfg.supervisor
        self.limits = SafetyLimits(s.lowstate_timeout_s, s.target_timeout_s, s.max_tilt_rad)
        # On the robot nothing reaches rt/lowcmd without --live; the simulator is always live.
        self.writes_lowcmd = (cfg.mode == "sim" or live) and not s.dry_run
        manifest = read_manifest(resolve_bundle(cfg.policy.bundle))
        self.policy_kp = np.asarray(manifest.kp)
        self.policy_kd = np.asarray(manifest.kd)

        state_type, cmd_type = message_types(self.spec)
        from parkour_core.dds import DdsLink

        self.link = DdsLink(cfg.dds.domain, cfg.dds.interface)
        if self.writes_lowcmd and s.single_writer_wait_s > 0:
            others = self.link.count_writers("rt/lowcmd", s.single_writer_wait_s)
            if others:
                raise SingleWriterError(
                    f"{others} other rt/lowcmd writer(s) on DDS domain {cfg.dds.domain}: the supervisor must be the "
                    "only writer. Stop the other controller (or the robot's sport mode) and start again."
                )
        self.lowstate_reader = self.link.reader("rt/lowstate", state_type)
        self.lowcmd_writer = self.link.writer("rt/lowcmd", cmd_type) if self.writes_lowcmd else None
        self.lowcmd = new_lowcmd(self.spec)
        self.crc = Crc()

        rclpy.init(args=["--ros-args", *ros_args] if ros_args else None)
        self.node = rclpy.create_node("supervisor_node")
        self.log = self.node.get_logger()
        self.joint_pub = self.node.create_publisher(JointState, "/robot/joint_states", 10)
        self.imu_pub = self.node.create_publisher(Imu, "/robot/imu", 10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.state_pub = self.node.create_publisher(String, "/supervisor/state", latched)
        self.dry_run_pub = self.node.create_publisher(JointState, "/supervisor/lowcmd_dry_run", 10)
        self.node.create_subscription(JointState, "/policy/joint_targets", self._on_targets, 10)
        for name, request in (
            ("stand_up", Request.STAND_UP),
            ("activate", Request.ACTIVATE),
            ("damp", Request.DAMP),
            ("estop", Request.DAMP),
        ):
            self.node.create_service(Trigger, f"/supervisor/{name}", self._request_handler(request, name))
        self._JointState, self._Imu, self._String = JointState, Imu, String

        self.mode = Mode.DAMP
        self.pending = Request.NONE
        self.view: LowStateView | None = None
        self.last_lowstate_t: float | None = None
        self.targets: np.ndarray | None = None
        self.targets_t: float | None = None
        self.stand_up_start_t = 0.0
        self.stand_up_from = self.spec.default_q.copy()
        self.transitions: list[dict] = []
        self.limit_clamps = 0
        self.commands_written = 0
        self.tick_wall: list[float] = []
        self.lowstate_ages: list[float] = []
        self.target_ages: list[float] = []
        self._last_tick_wall: float | None = None
        self._publish_state()
        self.timer = self.node.create_timer(1.0 / s.rate_hz, self.tick)

    def _now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    def _request_handler(self, request: Request, name: str):
        def handle(_req, response):
            self.pending = request
            if request is Request.DAMP:
                self.tick()  # e-stop and damp act now, not at the next timer tick
            response.success = True
            response.message = f"{name} requested in {self.mode.value}"
            return response

        return handle

    def _on_targets(self, msg) -> None:
        if tuple(msg.name) != self.spec.joint_names:
            self.log.error("policy targets name other joints than the robot spec; ignored", throttle_duration_sec=5.0)
            return
        self.targets = np.asarray(msg.position, dtype=np.float64)
        self.targets_t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9

    def _publish_state(self) -> None:
        self.state_pub.publish(self._String(data=self.mode.value))

    def _publish_robot_state(self, view: LowStateView) -> None:
        stamp = self.node.get_clock().now().to_msg()
        js = self._JointState()
        js.header.stamp = stamp
        js.name = list(self.spec.joint_names)
        js.position = view.q.tolist()
        js.velocity = view.dq.tolist()
        js.effort = view.tau.tolist()
        self.joint_pub.publish(js)
        imu = self._Imu()
        imu.header.stamp = stamp
        imu.header.frame_id = self.spec.base_body
        w, x, y, z = view.quat_wxyz
        imu.orientation.w, imu.orientation.x, imu.orientation.y, imu.orientation.z = (
            float(w),
            float(x),
            float(y),
            float(z),
        )
        imu.angular_velocity.x, imu.angular_velocity.y, imu.angular_velocity.z = (float(v) for v in view.gyro)
        ax, ay, az = (float(v) for v in view.accel)
        imu.linear_acceleration.x, imu.linear_acceleration.y, imu.linear_acceleration.z = ax, ay, az
        self.imu_pub.publish(imu)

    def _command_for_mode(self, now: float) -> JointCommand:
        if self.mode is Mode.STAND_UP:
            return stand_up_command(self.spec, self.stand_up_from, self._stand_up_progress(now))
        if self.mode is Mode.STAND:
            return stand_command(self.spec)
        if self.mode is Mode.ACTIVE and self.targets is not None:
            n = self.spec.num_joints
            return JointCommand(self.targets.copy(), np.zeros(n), self.policy_kp, self.policy_kd, np.zeros(n))
        return damp_command(self.spec, self.cfg.supervisor.kd_damp)

    def _capture_time(self, view: LowStateView, now: float) -> float:
        """When the newest lowstate was sampled, on this node's clock.

        The simulator stamps ``tick`` with sim-time milliseconds, the clock this node runs on, so
        the age is the sample's true age. The robot's tick counts from its own boot: there the age
        is the time since the sample reached us (at most one tick late).
        """
        if self.cfg.mode == "sim":
            return min(now, view.tick * 1e-3)
        return now

    def _stand_up_progress(self, now: float) -> float:
        return (now - self.stand_up_start_t) / self.cfg.supervisor.stand_up_duration_s

    def tick(self) -> None:
        now = self._now()
        wall = time.perf_counter()
        if self._last_tick_wall is not None:
            self.tick_wall.append(wall - self._last_tick_wall)
        self._last_tick_wall = wall

        msg = self.lowstate_reader.take_latest()
        if msg is not None:
            self.view = read_lowstate(msg, self.spec)
            self.last_lowstate_t = self._capture_time(self.view, now)
            self._publish_robot_state(self.view)
        if self.view is None:
            return  # nothing is sent before the first LowState_ (its mode_machine must be echoed)
        lowstate_age = now - self.last_lowstate_t if self.last_lowstate_t is not None else float("inf")
        target_age = now - self.targets_t if self.targets_t is not None else float("inf")
        self.lowstate_ages.append(lowstate_age)
        if self.mode is Mode.ACTIVE:
            self.target_ages.append(target_age)
        view = self.view
        inputs = TickInputs(
            lowstate_age_s=lowstate_age,
            target_age_s=target_age,
            tilt_rad=tilt_rad(view.quat_wxyz),
            state_finite=bool(np.all(np.isfinite(view.q)) and np.all(np.isfinite(view.quat_wxyz))),
            targets_finite=self.targets is not None and bool(np.all(np.isfinite(self.targets))),
            stand_up_progress=self._stand_up_progress(now) if self.mode is Mode.STAND_UP else 0.0,
            request=self.pending,
        )
        self.pending = Request.NONE
        new_mode, reason = next_mode(self.mode, inputs, self.limits)
        if new_mode is not self.mode:
            self.log.info(f"{self.mode.value} -> {new_mode.value}: {reason}")
            self.transitions.append(
                {"t": round(now, 4), "from": self.mode.value, "to": new_mode.value, "reason": reason}
            )
            if new_mode is Mode.STAND_UP:
                self.stand_up_start_t = now
                self.stand_up_from = view.q.copy()
            self.mode = new_mode
            self._publish_state()

        cmd, clamps = clamp_command(self.spec, self._command_for_mode(now), view.q, view.dq)
        self.limit_clamps += clamps
        self._write(cmd, view.mode_machine)

    def _write(self, cmd: JointCommand, mode_machine: int) -> None:
        if self.lowcmd_writer is None:
            js = self._JointState()
            js.header.stamp = self.node.get_clock().now().to_msg()
            js.name = list(self.spec.joint_names)
            js.position = cmd.q.tolist()
            js.velocity = cmd.dq.tolist()
            js.effort = cmd.tau.tolist()
            self.dry_run_pub.publish(js)
            return
        fill_lowcmd(self.lowcmd, self.spec, cmd, mode_machine)
        self.lowcmd.crc = self.crc(self.lowcmd)
        self.lowcmd_writer.write(self.lowcmd)
        self.commands_written += 1

    def write_metrics(self) -> None:
        if self.run_dir is None:
            return
        write_json(
            self.run_dir / "supervisor.json",
            {
                "final_mode": self.mode.value,
                "supervisor_transitions": self.transitions,
                "limit_clamps": self.limit_clamps,
                "commands_written": self.commands_written,
                "writes_lowcmd": self.writes_lowcmd,
                "tick_period_wall_ms": summary_ms(self.tick_wall),
                "lowstate_age_ms": summary_ms(self.lowstate_ages),
                "target_age_ms": summary_ms(self.target_ages),
            },
        )


def main(argv: list[str] | None = None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    args = parse_node_args(__doc__ or "", argv)
    try:
        sup = Supervisor(args.config, args.run_dir, args.live, args.ros_args)
    except SingleWriterError as e:
        print(f"supervisor_node: refusing to start: {e}", flush=True)
        return 2
    mark_ready(args.run_dir, "supervisor")
    try:
        rclpy.spin(sup.node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        sup.write_metrics()
        sup.node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
