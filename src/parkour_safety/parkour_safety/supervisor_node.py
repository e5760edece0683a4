"""supervisor_node: the only writer of ``rt/lowcmd``.

A thin shell around :class:`parkour_core.supervisor_core.SupervisorCore`, which holds every rule
(modes, transitions, fallback gait, clamping, fault counters). Every tick (``supervisor.rate_hz``)
the node reads the newest ``rt/lowstate`` (as bytes, :mod:`parkour_core.unitree_wire`), hands the
core what arrived since the last tick and writes the command it returns; it republishes the state
as ``/robot/joint_states`` and ``/robot/imu`` at ``supervisor.robot_state_hz`` for tools and bags
(the policy reads rt/lowstate itself).
If the policy node dies the supervisor keeps writing at its own rate: its own fallback gait
(BLIND, ``supervisor.fallback_bundle`` run in-process), the stand pose, or damping.
E-stop (service, remote combo ``supervisor.remote_estop_keys``, gamepad combo
``supervisor.gamepad_estop_buttons``) reaches DAMP in the tick that sees it. Its topics and
services: :class:`Supervisor`.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np

from parkour_core import interfaces as topics
from parkour_core.bundles import policy_period_s
from parkour_core.command_mux import AUTONOMY, TELEOP
from parkour_core.config import ConfigError, StackConfig
from parkour_core.nodeargs import mark_ready, parse_node_args
from parkour_core.realtime import apply_realtime
from parkour_core.robots import get_robot
from parkour_core.ros_process import (
    PeriodicTick,
    create_publisher,
    create_subscription,
    declare_from_config,
    init_rclpy,
    shutdown_rclpy,
    spin_node,
    take_now,
)
from parkour_core.safety import JointCommand, Mode, Request
from parkour_core.stats import CpuMeter, Samples, histogram_ms, summary_ms, write_json
from parkour_core.supervisor_core import (
    GamepadReading,
    PolicyTargets,
    RobotReading,
    SupervisorInputs,
    VelocityCommand,
)
from parkour_core.supervisor_setup import StartupError, build_core
from parkour_core.teleop import remote_joy
from parkour_core.tick_grid import sim_tick_before
from parkour_core.unitree import LowStateView, lowstate_capture_time, message_types, parse_wireless_remote
from parkour_core.unitree_wire import LowCmdWire, LowStateWire
from parkour_safety.messages import bundle_gains_from_message, state_message, transition_message

DIAGNOSTICS_PERIOD_S = 1.0
NO_LOWSTATE_SAY_S = 5.0  # no rt/lowstate this long after start: say so (and again every as long)
REMOTE_HZ = 50.0  # /teleop/remote
TICKS_REMEMBERED = 50  # policy ticks whose depth frame is remembered (1 s at 50 Hz)
# On a simulator's clock the simulator holds sim time at each tick and sends that tick's lowstate
# before its /clock, so a tick that finds none waits this long (wall time, sim time stands) for it.
# The /clock and the lowstate come on different transports: on a busy host this process's lowstate
# reader can fall 10 ticks behind its /clock, and 10 ticks without a sample is 50 ms of sim time,
# the robot config's lowstate timeout. A lowstate that does not come (a stalled simulator, the fault
# suite's lowstate stall) still ages in sim time as on the robot, one wait per tick.
SIM_LOWSTATE_WAIT_S = 0.05
# The same for the policy: the simulator holds sim time at each policy tick until it has that tick's
# targets, but its copy, not this process's. On a busy host this process can read a tick's targets several
# of its ticks late (four: 20 ms of sim time the robot would not lose), so on sim time a tick takes the
# targets of the last policy tick before it, waiting this long (wall) for them. A policy that does not
# answer (a dead one) is waited for once; after that its targets age in sim time, as on the robot,
# until it publishes again. As long as a starved delivery may take on a busy host (the bridge gives a
# silent policy 2 s): a dead policy costs it once.
SIM_TARGETS_WAIT_S = 1.0
TARGET_STAMP_TOLERANCE_S = 1e-4  # a policy tick's stamp is the /clock it ticked on: its due time


class SingleWriterError(StartupError):
    pass


def _stamp_s(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def serialized_header_stamp_s(data: bytes) -> float:
    """``header.stamp`` of a serialized message that starts with a std_msgs/Header (sensor_msgs/Image):
    after the 4-byte encapsulation header (byte 1 says the byte order), int32 sec and uint32 nanosec."""
    sec, nanosec = struct.unpack_from("<iI" if data[1] & 1 else ">iI", data, 4)
    return sec + nanosec * 1e-9


class Supervisor:
    """The node: its inputs, outputs and tick.

    Inputs:
      rt/lowstate                Unitree DDS: joints, IMU, and the Unitree remote's keys
      /policy/joint_targets      JointState; ``header.frame_id`` names the bundle that made them
      /policy/bundle             BundleInfo (latched): name, path, joint names, kp, kd, uses_depth per bundle;
                                 targets of a bundle never announced are not used (frame_id "" runs with the
                                 gains in the manifest of ``policy.bundle``)
      /policy/tick_inputs        PolicyTickInputs: the depth frame behind each tick's targets (for latency)
      /camera/depth/policy       Image, taken serialized: only ``header.stamp`` is read (depth age = now - stamp)
      /cmd_vel, /cmd_vel/teleop  Twist: the fallback gait's velocity command, the operator's over autonomy's
                                 (parkour_core.command_mux; zero once neither is fresh)
      /teleop/joy                Joy: gamepad e-stop and request combos; lost after ``supervisor.gamepad_timeout_s``
      /supervisor/{stand_up,activate,stand,damp,estop}   std_srvs/Trigger
    An e-stop reaches DAMP in the tick that sees it: the service and the gamepad callback tick at once; the
    remote is read from the lowstate of every tick.

    Outputs: rt/lowcmd (or ``/supervisor/lowcmd_dry_run`` in a dry run); ``/supervisor/state`` (latched
    SupervisorState: the mode, when and why it was entered); ``/supervisor/transition`` (latched, last 100:
    SupervisorTransition: stamp, from, to, reason per transition); ``/teleop/remote`` (Joy, 50 Hz: the
    Unitree remote from rt/lowstate, axes lx, ly, rx, ry, l2 as the remote reports them, buttons in
    REMOTE_KEYS order; teleop_node's remote source); ``/diagnostics`` once a second; ``supervisor.json``
    in the run folder (transitions, fault counters, clamp counters, time in each mode, commands written,
    timing).
    """

    def __init__(self, cfg: StackConfig, run_dir: Path | None, live: bool, ros_args: list[str]) -> None:
        import rclpy
        from sensor_msgs.msg import Imu, JointState, Joy
        from std_srvs.srv import Trigger

        init_rclpy(ros_args)
        self.node = rclpy.create_node("supervisor_node")
        self.log = self.node.get_logger()
        # The config it runs on is its parameters' (a params file or -p may override the file's values).
        self.params = declare_from_config(self.node, cfg, "supervisor")
        cfg = self.params.cfg
        self.cfg = cfg
        self.run_dir = run_dir
        self.spec = get_robot(cfg.robot)
        s = cfg.supervisor
        # On the robot nothing reaches rt/lowcmd without --live; the simulator is always live.
        self.writes_lowcmd = (cfg.mode == "sim" or live) and not s.dry_run
        self.core = build_core(cfg)

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
        self.state_wire = LowStateWire(self.spec)
        self.cmd_wire = LowCmdWire(self.spec)

        node = self.node
        self.joint_pub = create_publisher(node, topics.JOINT_STATES)
        self.imu_pub = create_publisher(node, topics.IMU)
        self.state_pub = create_publisher(node, topics.SUPERVISOR_STATE)
        self.transition_pub = create_publisher(node, topics.TRANSITION)
        self.dry_run_pub = create_publisher(node, topics.LOWCMD_DRY_RUN)
        # The Unitree remote for teleop_node's sticks (its chords are read here, from rt/lowstate).
        self.remote_pub = create_publisher(node, topics.REMOTE)
        self._remote_published_t: float | None = None
        self._Joy = Joy
        self.diag_pub = create_publisher(node, topics.DIAGNOSTICS)

        self.targets_sub = create_subscription(node, topics.JOINT_TARGETS, self._on_targets)
        # The policy's per-tick inputs name the depth frame behind each tick's targets: with them the
        # supervisor measures depth exposure -> lowcmd write per command (the stack's end-to-end latency).
        create_subscription(node, topics.TICK_INPUTS, self._on_tick_inputs)
        self.depth_behind_tick: dict[int, float] = {}  # tick stamp (ns) -> exposure stamp of its depth frame
        self.targets_stamp_ns = 0
        # Latched: every announcement the policy node kept.
        create_subscription(node, topics.BUNDLE, self._on_bundle)
        # Only the stamp of each depth frame is read, from the serialized message.
        create_subscription(node, topics.DEPTH, self._on_depth, topics.STAMP_ONLY_QOS, raw=True)
        self.mux = cfg.command_mux()
        for source, topic in ((TELEOP, cfg.cmd_vel.teleop_topic), (AUTONOMY, cfg.cmd_vel.autonomy_topic)):
            create_subscription(node, topics.CMD_VEL, self._on_cmd_vel(source), name=topic)
        create_subscription(node, topics.TELEOP_JOY, self._on_joy)
        for name, request in (
            ("stand_up", Request.STAND_UP),
            ("activate", Request.ACTIVATE),
            ("stand", Request.STAND),
            ("damp", Request.DAMP),
            ("estop", None),
        ):
            self.node.create_service(Trigger, topics.supervisor_service(name), self._request_handler(request, name))
        self._JointState, self._Imu = JointState, Imu

        self.pending: list[tuple[Request, str]] = []
        self.estop_pending = False
        self.view: LowStateView | None = None
        self.remote_keys: frozenset[str] = frozenset()
        self.last_lowstate_t: float | None = None
        self.targets: PolicyTargets | None = None
        self.depth_stamp_s: float | None = None
        self.gamepad: GamepadReading | None = None
        self.commands_written = 0
        self.commands_dry_run = 0
        self.targets_rejected = 0
        self.announcements_rejected = 0
        self.tick_wall = Samples()
        self.tick_compute = Samples()  # the whole tick: read, decide, write
        self.lowstate_decode = Samples()  # take + decode of the newest rt/lowstate
        self.core_tick = Samples()  # SupervisorCore.tick: rules, fallback gait, clamp
        self.lowcmd_encode = Samples()  # encode + CRC + write of rt/lowcmd
        self.lowstate_ages = Samples()
        self.target_ages = Samples()
        self.depth_ages = Samples()
        self.exposure_to_lowcmd = Samples()  # ACTIVE: now - exposure of the frame behind the written targets
        # The same at the first write whose targets used a new frame: the stack's own latency. Per write it
        # also counts how long a frame stays the newest (33 ms at 30 Hz) and the policy period (20 ms).
        self.exposure_to_first_lowcmd = Samples()
        self._last_written_exposure: float | None = None
        self._last_tick_wall: float | None = None
        self._started_wall = time.perf_counter()
        self._no_lowstate_said = 0
        self.cpu = CpuMeter()
        self._robot_state_period_s = 1.0 / s.robot_state_hz
        self._robot_state_published_t: float | None = None
        self._publish_state("start", self._now())
        sim_time = bool(self.node.get_parameter("use_sim_time").value)
        self.on_sim_time = sim_time
        self.lowstate_waits = 0  # sim-time ticks that waited for their lowstate (and found it)
        self.policy_period_s = policy_period_s(cfg.policy.bundle) if cfg.policy.bundle else None
        self.policy_answers = False  # targets came since the last wait that gave up
        self.target_waits = 0  # sim-time ticks that waited for their policy tick's targets (and had them)
        self.target_waits_gave_up = 0
        self.ticker = PeriodicTick(self.node, 1.0 / s.rate_hz, self.tick, sim_time)
        self.node.create_timer(DIAGNOSTICS_PERIOD_S, self._publish_diagnostics)
        fallback = self.core.fallback
        self.log.info(
            f"degrades ACTIVE to {self.core.limits.fallback.value}"
            + (f" (fallback gait {fallback.name!r} at {1.0 / fallback.period_s:.0f} Hz)" if fallback else "")
        )

    def _now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    # ------------------------------------------------------------------ inputs
    def _request_handler(self, request: Request | None, name: str):
        def handle(_req, response):
            before = self.core.mode
            if request is None:
                self.estop_pending = True
            elif self.view is None:
                response.success = False
                response.message = f"{name} refused: no rt/lowstate yet"
                return response
            else:
                self.pending.append((request, "service"))
            if request in (None, Request.DAMP):
                self.tick(await_inputs=False)  # e-stop and damp act now, not at the next timer tick
            response.success = True
            response.message = f"{name} requested in {before.value}; now {self.core.mode.value}"
            return response

        return handle

    def _on_targets(self, msg) -> None:
        if tuple(msg.name) != self.spec.joint_names:
            self.targets_rejected += 1
            self.log.error("policy targets name other joints than the robot spec; ignored", throttle_duration_sec=5.0)
            return
        bundle = msg.header.frame_id
        if self.core.gains_for(bundle) is None:
            # At start-up the first targets can beat the latched announcement by a few ms: a warning.
            self.log.warning(
                f"targets from bundle {bundle!r}, whose gains were never announced on /policy/bundle: not used",
                throttle_duration_sec=5.0,
            )
        self.targets = PolicyTargets(np.asarray(msg.position, dtype=np.float64), _stamp_s(msg.header.stamp), bundle)
        self.policy_answers = True
        self.targets_stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec

    def _on_tick_inputs(self, msg) -> None:
        if not msg.has_depth_frame:
            return
        tick_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.depth_behind_tick[tick_ns] = _stamp_s(msg.depth_frame_stamp)
        while len(self.depth_behind_tick) > TICKS_REMEMBERED:
            del self.depth_behind_tick[next(iter(self.depth_behind_tick))]

    def _on_bundle(self, msg) -> None:
        try:
            gains = bundle_gains_from_message(msg, self.spec)
        except ValueError as e:
            self.announcements_rejected += 1
            self.log.error(f"/policy/bundle announcement refused: {e}")
            return
        self.core.register_bundle(gains)
        self.log.info(f"gains for bundle {gains.name!r} (reads depth: {gains.uses_depth})")

    def _on_depth(self, data: bytes) -> None:
        # Deserializing a 20 KB image 30 times a second only to read its stamp cost more than the whole tick.
        self.depth_stamp_s = serialized_header_stamp_s(data)

    def _on_cmd_vel(self, source: str):
        def on_command(msg) -> None:
            self.mux.put(source, (msg.linear.x, msg.linear.y, msg.angular.z), self._now())

        return on_command

    def _on_joy(self, msg) -> None:
        buttons = frozenset(i for i, b in enumerate(msg.buttons) if b)
        self.gamepad = GamepadReading(buttons, self._now())
        if self.core.settings.gamepad.estop_held(buttons) and self.core.mode is not Mode.DAMP:
            self.tick(await_inputs=False)  # the e-stop acts now, not at the next timer tick

    def _publish_remote(self, remote, now: float) -> None:
        """At most REMOTE_HZ: lowstate arrives at 500 Hz, the sticks are wanted at the command rate."""
        if self._remote_published_t is not None and now - self._remote_published_t < 1.0 / REMOTE_HZ:
            return
        self._remote_published_t = now
        msg = self._Joy()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.axes, msg.buttons = remote_joy(remote.keys, vars(remote))
        self.remote_pub.publish(msg)

    # ------------------------------------------------------------------ the tick
    def _command(self, now: float) -> VelocityCommand | None:
        """The fallback gait's velocity: the same mux as the policy node's (operator over autonomy)."""
        chosen = self.mux.select(now)
        if chosen.source is None or chosen.stamp_s is None:
            return None
        return VelocityCommand(chosen.velocity, chosen.stamp_s)

    def _say_if_no_lowstate(self, wall: float) -> None:
        """Once every NO_LOWSTATE_SAY_S while no rt/lowstate has come: the operator's first question."""
        waited = wall - self._started_wall
        if waited >= NO_LOWSTATE_SAY_S * (self._no_lowstate_said + 1):
            self._no_lowstate_said += 1
            d = self.cfg.dds
            self.log.error(
                f"no rt/lowstate on DDS domain {d.domain} via {d.interface} after {waited:.0f} s: is the robot on, "
                "is this the right interface and domain (parkour robot --iface IF --domain N)?"
            )

    def _await_lowstate(self, deadline_wall: float) -> bytes | None:
        while time.perf_counter() < deadline_wall:
            time.sleep(0.0002)
            data = self.lowstate_reader.take_latest_bytes()
            if data is not None:
                self.lowstate_waits += 1
                return data
        return None

    def _await_targets(self, now: float) -> None:
        """On sim time: until the targets of the last policy tick before ``now`` are here (SIM_TARGETS_WAIT_S)."""
        if self.policy_period_s is None or self.targets is None or not self.policy_answers:
            return
        due = sim_tick_before(now, self.policy_period_s, TARGET_STAMP_TOLERANCE_S)
        if due is None or self.targets.stamp_s >= due - TARGET_STAMP_TOLERANCE_S:
            return
        deadline = time.perf_counter() + SIM_TARGETS_WAIT_S
        while time.perf_counter() < deadline:
            msg = take_now(self.targets_sub)
            if msg is None:
                time.sleep(0.0002)
                continue
            self._on_targets(msg)
            if self.targets.stamp_s >= due - TARGET_STAMP_TOLERANCE_S:
                self.target_waits += 1
                return
        self.target_waits_gave_up += 1
        self.policy_answers = False

    def tick(self, await_inputs: bool = True) -> None:
        """``await_inputs``: on sim time, wait for this tick's lowstate and policy targets (timer ticks; an
        e-stop acts at once)."""
        now = self._now()
        wall = time.perf_counter()
        if self._last_tick_wall is not None:
            self.tick_wall.append(wall - self._last_tick_wall)
        self._last_tick_wall = wall

        taken = wall  # the callback's costs leave the waits out: sim time stands through them
        if await_inputs and self.on_sim_time:
            self._await_targets(now)
            taken = time.perf_counter()
        data = self.lowstate_reader.take_latest_bytes()
        if data is None and await_inputs and self.on_sim_time and self.view is not None:
            data = self._await_lowstate(time.perf_counter() + SIM_LOWSTATE_WAIT_S)
            taken = time.perf_counter()
        if data is not None:
            self.view = self.state_wire.decode(data)
            self.lowstate_decode.append(time.perf_counter() - taken)
            self.last_lowstate_t = lowstate_capture_time(self.view, now, self.cfg.mode == "sim")
            remote = parse_wireless_remote(self.view.wireless_remote)
            self.remote_keys = remote.keys
            self._publish_remote(remote, now)
        view = self.view
        if view is None or self.last_lowstate_t is None:
            # Nothing is sent before the first LowState_ (its mode_machine must be echoed); the robot is
            # in DAMP, so an e-stop has nothing to do, and no request may wait to act later.
            self.pending.clear()
            self.estop_pending = False
            self._say_if_no_lowstate(wall)
            return
        inputs = SupervisorInputs(
            now_s=now,
            robot=RobotReading(view.q, view.dq, view.quat_wxyz, view.gyro, self.last_lowstate_t, self.remote_keys),
            targets=self.targets,
            depth_stamp_s=self.depth_stamp_s,
            command=self._command(now),
            gamepad=self.gamepad,
            requests=tuple(self.pending),
            estop_service=self.estop_pending,
        )
        self.pending.clear()
        self.estop_pending = False
        started = time.perf_counter()
        cmd, records = self.core.tick(inputs)
        written = time.perf_counter()
        self.core_tick.append(written - started)
        self._write(cmd, view.mode_machine)
        self.lowcmd_encode.append(time.perf_counter() - written)
        self.tick_compute.append(time.perf_counter() - taken)
        for record in records:
            self.log.info(f"{record.from_mode.value} -> {record.to_mode.value}: {record.reason}")
            self._publish_state(record.reason, record.t)
            self.transition_pub.publish(transition_message(record))
        if self._robot_state_published_t is None or now - self._robot_state_published_t >= self._robot_state_period_s:
            self._robot_state_published_t = now
            self._publish_robot_state(view)

        if self.core.mode is not Mode.DAMP:  # while it commands the robot: not before, nor once its peer has gone
            self.lowstate_ages.append(now - self.last_lowstate_t)
        if self.core.mode is Mode.ACTIVE and self.targets is not None:
            self.target_ages.append(now - self.targets.stamp_s)
            exposure = self.depth_behind_tick.get(self.targets_stamp_ns)
            if exposure is not None:
                self.exposure_to_lowcmd.append(now - exposure)
                if exposure != self._last_written_exposure:
                    self._last_written_exposure = exposure
                    self.exposure_to_first_lowcmd.append(now - exposure)
        if self.depth_stamp_s is not None:
            self.depth_ages.append(now - self.depth_stamp_s)

    def _write(self, cmd: JointCommand, mode_machine: int) -> None:
        if self.lowcmd_writer is None:
            js = self._JointState()
            js.header.stamp = self.node.get_clock().now().to_msg()
            js.name = list(self.spec.joint_names)
            js.position = cmd.q.tolist()
            js.velocity = cmd.dq.tolist()
            js.effort = cmd.tau.tolist()
            self.dry_run_pub.publish(js)
            self.commands_dry_run += 1
            return
        self.lowcmd_writer.write_bytes(self.cmd_wire.encode(cmd, mode_machine))
        self.commands_written += 1

    # ------------------------------------------------------------------ outputs
    def _publish_state(self, reason: str, t_s: float) -> None:
        self.state_pub.publish(state_message(self.core.mode, reason, t_s))

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

    def _publish_diagnostics(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        core = self.core
        mode = core.mode
        last = core.transitions[-1].reason if core.transitions else "start"
        degraded = mode in (Mode.BLIND,) or (mode is Mode.DAMP and bool(core.transitions))
        status = DiagnosticStatus(
            name="supervisor_node: safety",
            hardware_id=self.spec.name,
            level=DiagnosticStatus.WARN if degraded else DiagnosticStatus.OK,
            message=f"{mode.value} ({last})",
        )
        values = {"mode": mode.value, "ticks": core.ticks, "limit_clamps": core.clamps.total}
        values |= {"commands_written": self.commands_written, "commands_dry_run": self.commands_dry_run}
        values |= {f"fault_{name}": c.onsets for name, c in core.faults.items() if c.onsets}
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray()
        array.header.stamp = self.node.get_clock().now().to_msg()
        array.status = [status]
        self.diag_pub.publish(array)

    def write_metrics(self) -> None:
        if self.run_dir is None:
            return
        write_json(
            self.run_dir / "supervisor.json",
            {
                **self.core.report(),
                "commands_written": self.commands_written,
                "commands_dry_run": self.commands_dry_run,
                "writes_lowcmd": self.writes_lowcmd,
                "targets_rejected": self.targets_rejected,
                "announcements_rejected": self.announcements_rejected,
                "tick_period_wall_ms": summary_ms(self.tick_wall),
                "timer_fires_dropped": self.ticker.dropped,
                "lowstate_waits_sim_time": self.lowstate_waits,
                "target_waits_sim_time": self.target_waits,
                "target_waits_gave_up_sim_time": self.target_waits_gave_up,
                "tick_period_wall_hist": histogram_ms(self.tick_wall),
                "tick_compute_wall_ms": summary_ms(self.tick_compute),
                "callbacks_ms": {
                    "lowstate_take_decode": summary_ms(self.lowstate_decode),
                    "core_tick": summary_ms(self.core_tick),
                    "lowcmd_encode_crc_write": summary_ms(self.lowcmd_encode),
                    "tick": summary_ms(self.tick_compute),
                },
                "cpu": self.cpu.report(self._now() if self.cfg.mode == "sim" else None),
                "fallback_step_wall_ms": summary_ms(self.core.fallback_step_s),
                "lowstate_age_ms": summary_ms(self.lowstate_ages),
                "target_age_ms": summary_ms(self.target_ages),
                "depth_age_ms": summary_ms(self.depth_ages),
                "depth_exposure_to_lowcmd_ms": summary_ms(self.exposure_to_lowcmd),
                "depth_exposure_to_first_lowcmd_ms": summary_ms(self.exposure_to_first_lowcmd),
            },
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_node_args(__doc__ or "", argv)
    section = args.config.supervisor
    for line in apply_realtime(section.cpu_affinity, section.realtime_priority, "supervisor_node", section.lock_memory):
        print(line, flush=True)
    try:
        sup = Supervisor(args.config, args.run_dir, args.live, args.ros_args)
    except (StartupError, ConfigError) as e:
        print(f"supervisor_node: refusing to start: {e}", flush=True)
        shutdown_rclpy()
        return 2
    mark_ready(args.run_dir, "supervisor")
    spin_node(sup.node, sup.write_metrics)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
