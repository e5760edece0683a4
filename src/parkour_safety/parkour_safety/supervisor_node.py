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
from parkour_core.stats import write_json
from parkour_core.supervisor_core import GamepadReading, PolicyTargets, VelocityCommand
from parkour_core.supervisor_setup import StartupError, build_core
from parkour_core.teleop import remote_joy
from parkour_core.tick_grid import sim_tick_before
from parkour_core.unitree import LowStateView, lowstate_capture_time, message_types, parse_wireless_remote
from parkour_core.unitree_wire import LowCmdWire, LowStateWire
from parkour_safety.latest_inputs import LatestInputs
from parkour_safety.messages import bundle_gains_from_message, state_message, transition_message
from parkour_safety.supervisor_meters import SupervisorMeters

DIAGNOSTICS_PERIOD_S = 1.0
NO_LOWSTATE_SAY_S = 5.0  # no rt/lowstate this long after start: say so (and again every as long)
REMOTE_HZ = 50.0  # /teleop/remote
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
# The mode request services (std_srvs/Trigger) and what each asks of the core (None: the e-stop).
REQUEST_SERVICES = (
    ("stand_up", Request.STAND_UP),
    ("activate", Request.ACTIVATE),
    ("stand", Request.STAND),
    ("damp", Request.DAMP),
    ("estop", None),
)


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
      /policy/bundle             BundleInfo (latched): name, path, joint names, kp, kd, uses_depth and
                                 manifest_verified (logged) per bundle;
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

        init_rclpy(ros_args)
        self.node = rclpy.create_node("supervisor_node")
        self.log = self.node.get_logger()
        # The config it runs on is its parameters' (a params file or -p may override the file's values).
        self.params = declare_from_config(self.node, cfg, "supervisor")
        self.cfg = cfg = self.params.cfg
        self.run_dir = run_dir
        self.spec = get_robot(cfg.robot)
        # On the robot nothing reaches rt/lowcmd without --live; the simulator is always live.
        self.writes_lowcmd = (cfg.mode == "sim" or live) and not cfg.supervisor.dry_run
        self.core = build_core(cfg)
        self._open_robot_link()
        self._create_outputs()
        self.latest = LatestInputs()
        self.meters = SupervisorMeters()
        self._subscribe_inputs()
        self._offer_requests()
        self._start_ticking()

    # ------------------------------------------------------------------ setup
    def _open_robot_link(self) -> None:
        """rt/lowstate in; rt/lowcmd out once no other writer is on the domain (a dry run writes none)."""
        from parkour_core.dds import DdsLink

        s, dds = self.cfg.supervisor, self.cfg.dds
        state_type, cmd_type = message_types(self.spec)
        self.link = DdsLink(dds.domain, dds.interface)
        if self.writes_lowcmd and s.single_writer_wait_s > 0:
            others = self.link.count_writers("rt/lowcmd", s.single_writer_wait_s)
            if others:
                raise SingleWriterError(
                    f"{others} other rt/lowcmd writer(s) on DDS domain {dds.domain}: the supervisor must be the "
                    "only writer. Stop the other controller (or the robot's sport mode) and start again."
                )
        self.lowstate_reader = self.link.reader("rt/lowstate", state_type)
        self.lowcmd_writer = self.link.writer("rt/lowcmd", cmd_type) if self.writes_lowcmd else None
        self.state_wire = LowStateWire(self.spec)
        self.cmd_wire = LowCmdWire(self.spec)

    def _create_outputs(self) -> None:
        from sensor_msgs.msg import Imu, JointState, Joy

        node = self.node
        self.joint_pub = create_publisher(node, topics.JOINT_STATES)
        self.imu_pub = create_publisher(node, topics.IMU)
        self.state_pub = create_publisher(node, topics.SUPERVISOR_STATE)
        self.transition_pub = create_publisher(node, topics.TRANSITION)
        self.dry_run_pub = create_publisher(node, topics.LOWCMD_DRY_RUN)
        # The Unitree remote for teleop_node's sticks (its chords are read here, from rt/lowstate).
        self.remote_pub = create_publisher(node, topics.REMOTE)
        self.diag_pub = create_publisher(node, topics.DIAGNOSTICS)
        self._JointState, self._Imu, self._Joy = JointState, Imu, Joy
        self._remote_published_t: float | None = None
        self._robot_state_published_t: float | None = None
        self._robot_state_period_s = 1.0 / self.cfg.supervisor.robot_state_hz

    def _subscribe_inputs(self) -> None:
        node = self.node
        self.targets_sub = create_subscription(node, topics.JOINT_TARGETS, self._on_targets)
        # The policy's per-tick inputs name the depth frame behind each tick's targets: with them the
        # supervisor measures depth exposure -> lowcmd write per command (the stack's end-to-end latency).
        create_subscription(node, topics.TICK_INPUTS, self._on_tick_inputs)
        # Latched: every announcement the policy node kept.
        create_subscription(node, topics.BUNDLE, self._on_bundle)
        # Only the stamp of each depth frame is read, from the serialized message.
        create_subscription(node, topics.DEPTH, self._on_depth, topics.STAMP_ONLY_QOS, raw=True)
        self.mux = self.cfg.command_mux()
        for source, topic in ((TELEOP, self.cfg.cmd_vel.teleop_topic), (AUTONOMY, self.cfg.cmd_vel.autonomy_topic)):
            create_subscription(node, topics.CMD_VEL, self._on_cmd_vel(source), name=topic)
        create_subscription(node, topics.TELEOP_JOY, self._on_joy)

    def _offer_requests(self) -> None:
        from std_srvs.srv import Trigger

        for name, request in REQUEST_SERVICES:
            self.node.create_service(Trigger, topics.supervisor_service(name), self._request_handler(request, name))

    def _start_ticking(self) -> None:
        """Announce the first mode, then tick at ``supervisor.rate_hz`` (on sim time, on the simulator's grid)."""
        cfg = self.cfg
        self._started_wall = time.perf_counter()
        self._no_lowstate_said = 0
        self._publish_state("start", self._now())
        self.on_sim_time = bool(self.node.get_parameter("use_sim_time").value)
        self.policy_period_s = policy_period_s(cfg.policy.bundle) if cfg.policy.bundle else None
        self.policy_answers = False  # targets came since the last wait that gave up
        self.ticker = PeriodicTick(self.node, 1.0 / cfg.supervisor.rate_hz, self.tick, self.on_sim_time)
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
                self.latest.estop_pending = True
            elif self.latest.view is None:
                response.success = False
                response.message = f"{name} refused: no rt/lowstate yet"
                return response
            else:
                self.latest.pending.append((request, "service"))
            if request in (None, Request.DAMP):
                self.tick(await_inputs=False)  # e-stop and damp act now, not at the next timer tick
            response.success = True
            response.message = f"{name} requested in {before.value}; now {self.core.mode.value}"
            return response

        return handle

    def _on_targets(self, msg) -> None:
        if tuple(msg.name) != self.spec.joint_names:
            self.meters.targets_rejected += 1
            self.log.error("policy targets name other joints than the robot spec; ignored", throttle_duration_sec=5.0)
            return
        bundle = msg.header.frame_id
        if self.core.gains_for(bundle) is None:
            # At start-up the first targets can beat the latched announcement by a few ms: a warning.
            self.log.warning(
                f"targets from bundle {bundle!r}, whose gains were never announced on /policy/bundle: not used",
                throttle_duration_sec=5.0,
            )
        stamp = msg.header.stamp
        self.latest.targets = PolicyTargets(np.asarray(msg.position, dtype=np.float64), _stamp_s(stamp), bundle)
        self.policy_answers = True
        self.latest.targets_stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec

    def _on_tick_inputs(self, msg) -> None:
        if not msg.has_depth_frame:
            return
        tick_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.meters.depth_behind_tick.remember(tick_ns, _stamp_s(msg.depth_frame_stamp))

    def _on_bundle(self, msg) -> None:
        try:
            gains = bundle_gains_from_message(msg, self.spec)
        except ValueError as e:
            self.meters.announcements_rejected += 1
            self.log.error(f"/policy/bundle announcement refused: {e}")
            return
        self.core.register_bundle(gains)
        # An unsealed bundle runs (parkour_core.bundle.load_bundle); the operator reads it here too.
        sealed = "" if msg.manifest_verified else ", manifest unsealed"
        self.log.info(f"gains for bundle {gains.name!r} (reads depth: {gains.uses_depth}{sealed})")

    def _on_depth(self, data: bytes) -> None:
        # Deserializing a 20 KB image 30 times a second only to read its stamp cost more than the whole tick.
        self.latest.depth_stamp_s = serialized_header_stamp_s(data)

    def _on_cmd_vel(self, source: str):
        def on_command(msg) -> None:
            self.mux.put(source, (msg.linear.x, msg.linear.y, msg.angular.z), self._now())

        return on_command

    def _on_joy(self, msg) -> None:
        buttons = frozenset(i for i, b in enumerate(msg.buttons) if b)
        self.latest.gamepad = GamepadReading(buttons, self._now())
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
                self.meters.lowstate_waits += 1
                return data
        return None

    def _await_targets(self, now: float) -> None:
        """On sim time: until the targets of the last policy tick before ``now`` are here (SIM_TARGETS_WAIT_S)."""
        targets = self.latest.targets
        if self.policy_period_s is None or targets is None or not self.policy_answers:
            return
        due = sim_tick_before(now, self.policy_period_s, TARGET_STAMP_TOLERANCE_S)
        if due is None or targets.stamp_s >= due - TARGET_STAMP_TOLERANCE_S:
            return
        deadline = time.perf_counter() + SIM_TARGETS_WAIT_S
        while time.perf_counter() < deadline:
            msg = take_now(self.targets_sub)
            if msg is None:
                time.sleep(0.0002)
                continue
            self._on_targets(msg)
            targets = self.latest.targets
            if targets is not None and targets.stamp_s >= due - TARGET_STAMP_TOLERANCE_S:
                self.meters.target_waits += 1
                return
        self.meters.target_waits_gave_up += 1
        self.policy_answers = False

    def tick(self, await_inputs: bool = True) -> None:
        """``await_inputs``: on sim time, wait for this tick's lowstate and policy targets (timer ticks; an
        e-stop acts at once)."""
        now = self._now()
        wall = time.perf_counter()
        self.meters.tick_started(wall)
        taken = self._read_lowstate(now, wall, await_inputs)
        latest = self.latest
        if not latest.has_lowstate:
            latest.drop_requests()
            self._say_if_no_lowstate(wall)
            return
        inputs = latest.take(now, self._command(now))
        started = time.perf_counter()
        cmd, records = self.core.tick(inputs)
        written = time.perf_counter()
        self.meters.core_tick.append(written - started)
        assert latest.view is not None and latest.lowstate_t is not None
        self._write(cmd, latest.view.mode_machine)
        self.meters.lowcmd_encode.append(time.perf_counter() - written)
        self.meters.tick_compute.append(time.perf_counter() - taken)
        for record in records:
            self.log.info(f"{record.from_mode.value} -> {record.to_mode.value}: {record.reason}")
            self._publish_state(record.reason, record.t)
            self.transition_pub.publish(transition_message(record))
        if self._robot_state_published_t is None or now - self._robot_state_published_t >= self._robot_state_period_s:
            self._robot_state_published_t = now
            self._publish_robot_state(latest.view)
        targets_stamp_s = latest.targets.stamp_s if latest.targets is not None else None
        self.meters.tick_done(
            self.core.mode, now, latest.lowstate_t, targets_stamp_s, latest.targets_stamp_ns, latest.depth_stamp_s
        )

    def _read_lowstate(self, now: float, wall: float, await_inputs: bool) -> float:
        """Take the newest rt/lowstate into ``latest`` (on sim time, after this tick's targets, waiting for it);
        returns when the tick's own work began (the waits are left out: sim time stands through them)."""
        taken = wall
        if await_inputs and self.on_sim_time:
            self._await_targets(now)
            taken = time.perf_counter()
        data = self.lowstate_reader.take_latest_bytes()
        if data is None and await_inputs and self.on_sim_time and self.latest.view is not None:
            data = self._await_lowstate(time.perf_counter() + SIM_LOWSTATE_WAIT_S)
            taken = time.perf_counter()
        if data is not None:
            view = self.latest.view = self.state_wire.decode(data)
            self.meters.lowstate_decode.append(time.perf_counter() - taken)
            self.latest.lowstate_t = lowstate_capture_time(view, now, self.cfg.mode == "sim")
            remote = parse_wireless_remote(view.wireless_remote)
            self.latest.remote_keys = remote.keys
            self._publish_remote(remote, now)
        return taken

    def _write(self, cmd: JointCommand, mode_machine: int) -> None:
        if self.lowcmd_writer is None:
            js = self._JointState()
            js.header.stamp = self.node.get_clock().now().to_msg()
            js.name = list(self.spec.joint_names)
            js.position = cmd.q.tolist()
            js.velocity = cmd.dq.tolist()
            js.effort = cmd.tau.tolist()
            self.dry_run_pub.publish(js)
            self.meters.commands_dry_run += 1
            return
        self.lowcmd_writer.write_bytes(self.cmd_wire.encode(cmd, mode_machine))
        self.meters.commands_written += 1

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
        values |= {"commands_written": self.meters.commands_written, "commands_dry_run": self.meters.commands_dry_run}
        values |= {f"fault_{name}": c.onsets for name, c in core.faults.items() if c.onsets}
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray()
        array.header.stamp = self.node.get_clock().now().to_msg()
        array.status = [status]
        self.diag_pub.publish(array)

    def write_metrics(self) -> None:
        if self.run_dir is None:
            return
        sim_now = self._now() if self.cfg.mode == "sim" else None
        node = self.meters.report(self.writes_lowcmd, self.ticker.dropped, self.core.fallback_step_s, sim_now)
        write_json(self.run_dir / "supervisor.json", {**self.core.report(), **node})


def main(argv: list[str] | None = None) -> int:
    args = parse_node_args(__doc__ or "", argv, "supervisor")
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
