"""mujoco_bridge: the simulated robot, speaking the robot's own Unitree DDS interface.

Publishes ``rt/lowstate`` (IMU, motor states, tick, CRC) at ``bridge.lowstate_hz``, applies the
newest ``rt/lowcmd`` with the motor PD law at every physics step, and publishes ``/clock`` so the
graph runs on simulated time: a busy machine slows the whole graph instead of starving a node.
The robot starts hanging on an elastic band (like Unitree's simulators); ``/sim/release_band``
drops it and ``/sim/hang_band`` hooks it back on where it stands (``band.BandControl``).

With ``sim_camera.enabled`` it is also the head's D435i (``depth_camera.SimDepthSensor``):
``/camera/depth/policy`` (32FC1, the policy image) and optionally ``/camera/depth/image_raw``
(16UC1 millimetres), each frame as late as the policy is trained for
(:meth:`MujocoBridge._publish_frames`). It also publishes ground truth for bags and reports, on
topics the robot does not have (:class:`MujocoBridge`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np

from parkour_core import interfaces as topics
from parkour_core.bundles import policy_period_s
from parkour_core.config import BRIDGE_FAULTS, ConfigError, StackConfig
from parkour_core.dds import DdsLink
from parkour_core.depth import DepthSpec
from parkour_core.nodeargs import parse_node_args
from parkour_core.realtime import apply_realtime
from parkour_core.robots import get_robot
from parkour_core.ros_process import create_publisher, create_subscription, declare_from_config, init_rclpy
from parkour_core.stamps import stamp_parts
from parkour_core.stats import summary_ms, write_json
from parkour_core.teleop import remote_from_snapshot, snapshot_from_normalised_joy
from parkour_core.tick_grid import TickGrid
from parkour_core.unitree import encode_wireless_remote, message_types
from parkour_core.unitree_wire import LowCmdWire, LowStateWire
from parkour_sim.band import BandControl
from parkour_sim.bridge_record import BridgeMeters, RunRecord, bridge_report
from parkour_sim.depth_camera import DepthFrame, ScheduledFrame, SimDepthSensor, depth_to_z16
from parkour_sim.faults import AUDIT_STATES, BridgeFaults, CommandGaps, command_violations
from parkour_sim.lockstep import PeerSilence, WallPacer
from parkour_sim.physics import RobotSim
from parkour_sim.render import STATE_HZ, TRAJECTORY_FILE, save_trajectory
from parkour_sim.scene import load_scene_file

TRAJECTORY_HZ = 50.0
DEPTH_FRAME_ID = "camera_depth_optical_frame"
DEPTH_FRAMES_FILE = "depth_frames.npz"
REMOTE_RELEASED = encode_wireless_remote()  # no key held, sticks centred
POLICY_MATCH_TIMEOUT_WALL_S = 20.0  # DDS discovery of the policy's publisher, on a busy machine
CLOCK_RESEND_WALL_S = 0.05
LOCKSTEP_CATCH_UP_S = 0.05  # how far behind wall time a lockstep run steps back to back to catch up


def fill_image(msg, image: np.ndarray, stamp_s: float, frame_id: str = DEPTH_FRAME_ID):
    """Fill a sensor_msgs/Image from a 2D float32 (32FC1) or uint16 (16UC1) array."""
    encodings = {np.dtype(np.float32): "32FC1", np.dtype(np.uint16): "16UC1"}
    image = np.ascontiguousarray(image)
    if image.ndim != 2 or image.dtype not in encodings:
        raise ValueError(f"expected a 2D float32 or uint16 image, got {image.dtype} {image.shape}")
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_parts(stamp_s)
    msg.header.frame_id = frame_id
    msg.height, msg.width = image.shape
    msg.encoding = encodings[image.dtype]
    msg.is_bigendian = 0
    msg.step = image.shape[1] * image.itemsize
    msg.data = image.astype(image.dtype.newbyteorder("<"), copy=False).tobytes()
    return msg


def save_depth_frames(path: Path, frames: list[DepthFrame], spec: DepthSpec) -> None:
    """The kept frames, for the run report's picture strip."""
    np.savez_compressed(
        path,
        exposure_s=np.array([f.exposure_s for f in frames], dtype=np.float64),
        metres=np.array([f.metres for f in frames], dtype=np.float32),
        policy=np.array([f.policy for f in frames], dtype=np.float32),
        near_m=spec.near_m,
        far_m=spec.far_m,
    )


class MujocoBridge:
    """The bridge node: the simulated robot on the robot's DDS interface, its clock and camera.

    Ground truth for bags and reports (not for the stack: the robot has no such topics):
    ``/sim/base_pose`` (geometry_msgs/PoseStamped, world frame, 50 Hz) and ``/sim/band`` (latched
    parkour_interfaces/BandState: released or not, stamped with the sim time of the change), which a
    closed-loop replay of the bag re-creates (``parkour bag replay --sim``); ``trajectory.npz``, the
    qpos parkour_sim.render draws.
    """

    def __init__(self, cfg: StackConfig, run_dir: Path | None, ros_args: list[str]) -> None:
        import rclpy

        init_rclpy(ros_args)
        self.node = rclpy.create_node("mujoco_bridge")
        self.params = declare_from_config(self.node, cfg, "bridge")  # the config it runs on is its parameters'
        self.cfg = cfg = self.params.cfg
        self.run_dir = run_dir
        self.spec = get_robot(cfg.robot)
        self._build_sim()
        self.meters = BridgeMeters()
        self.record = RunRecord(cos_max_tilt=float(np.cos(cfg.supervisor.max_tilt_rad)))
        self._create_outputs()
        self._subscribe_inputs()
        self._prepare_lockstep()
        self._create_camera()
        self._offer_faults()
        self._open_robot_link()

    # ------------------------------------------------------------------ setup
    def _build_sim(self) -> None:
        """The robot, hanging on its elastic band until ``/sim/release_band``."""
        b = self.cfg.bridge
        pd_law = "on_command" if b.peer == "unitree_sim" else "every_step"
        self.sim = RobotSim(self.spec, b.scene, b.physics_dt_s, b.initial_base_height_m, b.robot_model, pd_law)
        self.gaps = CommandGaps(b.command_gap_s, b.command_gap_every_s)
        self.band = BandControl(self.sim, self._publish_band)
        # A stand-in robot (bridge.clock: wall) runs on wall time like a real one: no /clock, no lockstep.
        self.on_sim_time = b.clock == "sim"

    def _create_outputs(self) -> None:
        from geometry_msgs.msg import PoseStamped
        from rosgraph_msgs.msg import Clock
        from std_srvs.srv import Trigger

        from parkour_interfaces.msg import BandState

        node = self.node
        self._clock_pub = create_publisher(node, topics.CLOCK)  # in the namespace: each robot's own sim time
        self._clock_msg = Clock()
        self.node.create_service(Trigger, topics.RELEASE_BAND, self._on_release_band)
        self.node.create_service(Trigger, topics.HANG_BAND, self._on_hang_band)
        self._pose_pub = create_publisher(node, topics.BASE_POSE)
        self._pose_msg = PoseStamped()
        self._pose_msg.header.frame_id = "world"
        self._band_pub = create_publisher(node, topics.BAND)
        self._BandState = BandState
        self._publish_band(released=False)

    def _subscribe_inputs(self) -> None:
        node = self.node
        # Lockstep: the bridge watches the policy's progress so a starved policy slows the sim
        # instead of missing its ticks (the robot cannot wait; the simulator can).
        create_subscription(node, topics.JOINT_TARGETS, self._on_targets)
        self.last_target_sim_s: float | None = None
        # The robot's remote is whatever input is active (teleop_node's /teleop/joy): encoded into
        # rt/lowstate's wireless_remote, so the supervisor's remote code runs in simulation too.
        create_subscription(node, topics.TELEOP_JOY, self._on_joy)
        self.remote_timeout_s = self.cfg.teleop.command_timeout_s
        self.remote_bytes = REMOTE_RELEASED
        self.remote_sim_s: float | None = None
        self.remote_written: bytes | None = None
        # Single-threaded: rclpy's EventsExecutor spinning in a second thread starved this loop of the GIL
        # and deadlocked the node's teardown.
        from rclpy.executors import SingleThreadedExecutor

        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self.node)
        self._spin_thread = threading.Thread(target=self._spin, daemon=True)

    def _prepare_lockstep(self) -> None:
        """The peers' tick grids (the ones their PeriodicTick runs on): sim time is held at each of their ticks
        until they have answered, unless one is silent for ``bridge.lockstep_timeout_wall_s``."""
        cfg = self.cfg
        self.policy_silence = PeerSilence(cfg.bridge.lockstep_timeout_wall_s)
        self.supervisor_silence = PeerSilence(cfg.bridge.lockstep_timeout_wall_s)
        # The nominal period, not one estimated from stamps: stamp jitter would shrink an estimate
        # below the real period and hold the clock short of the policy's next tick (a deadlock).
        # No policy.bundle (a robot without a trained policy): no policy to wait for, no lockstep.
        bundle = cfg.policy.bundle
        self.policy_period_s = policy_period_s(bundle) if bundle else float("inf")
        self.supervisor_ticks = TickGrid.on_sim_time(1.0 / cfg.supervisor.rate_hz)
        self.policy_ticks = TickGrid.on_sim_time(self.policy_period_s) if np.isfinite(self.policy_period_s) else None
        self.expect_policy = False  # set in run(): hold for the policy from its first tick

    def _create_camera(self) -> None:
        """The simulated D435i. The policy's gate keeps only the newest released frame; the queue is for a recorder."""
        from sensor_msgs.msg import Image

        cam = self.cfg.sim_camera
        self.depth: SimDepthSensor | None = None
        self.depth_spec = self.cfg.depth.spec()
        self.frames_held: list[ScheduledFrame[DepthFrame]] = []
        if cam.enabled:
            self.depth = SimDepthSensor(self.sim.model, cam, self.depth_spec, start_s=self.sim.time)
            self._Image = Image
            self._depth_pub = create_publisher(self.node, topics.DEPTH, topics.SIM_CAMERA_QOS)
            raw = cam.publish_raw
            self._raw_pub = create_publisher(self.node, topics.DEPTH_RAW, topics.SIM_CAMERA_QOS) if raw else None

    def _offer_faults(self) -> None:
        self.faults = BridgeFaults(self.cfg.faults)
        if self.cfg.faults.enabled:
            from std_srvs.srv import Trigger

            for name in BRIDGE_FAULTS:
                self.node.create_service(Trigger, topics.sim_fault_service(name), self._fault_handler(name))

    def _open_robot_link(self) -> None:
        """rt/lowstate out, rt/lowcmd in, as the robot's own interface."""
        state_type, cmd_type = message_types(self.spec)
        self.link = DdsLink(self.cfg.dds.domain, self.cfg.dds.interface)
        self.lowstate_writer = self.link.writer("rt/lowstate", state_type)
        self.lowcmd_reader = self.link.reader("rt/lowcmd", cmd_type)
        self.state_wire = LowStateWire(self.spec)
        self.cmd_wire = LowCmdWire(self.spec)
        # Joint states in the newest rt/lowstate samples sent, newest last: the supervisor may act on any of
        # them (lockstep holds sim time at each of its ticks, so it is at most a tick behind).
        self.published_states: deque[tuple[np.ndarray, np.ndarray]] = deque(
            [(self.sim.q, self.sim.dq)], maxlen=AUDIT_STATES
        )

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException

        # rclpy goes down at the end of the run under this thread: its job is done then.
        with contextlib.suppress(ExternalShutdownException):
            self._executor.spin()

    def _fault_handler(self, name: str):
        def handle(_request, response):
            self.faults.trigger(name, self.sim.time)
            response.success = True
            response.message = f"{name} injected at sim time {self.sim.time:.3f} s"
            return response

        return handle

    def _publish_band(self, released: bool) -> None:
        msg = self._BandState(released=released)
        msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_parts(self.sim.time)
        self._band_pub.publish(msg)

    def _on_release_band(self, request, response):
        response.success, response.message = self.band.request_release()
        return response

    def _on_hang_band(self, request, response):
        response.success, response.message = self.band.request_hang()
        return response

    def _on_targets(self, msg) -> None:
        self.last_target_sim_s = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self.policy_silence.heard(time.perf_counter())

    def _receive_lowcmd(self) -> bool:
        started = time.perf_counter()
        data = self.lowcmd_reader.take_latest_bytes()
        if data is None:
            return False
        if self.gaps.dropping(self.sim.time):
            self.meters.lowcmd_dropped += 1
            return False
        cmd, enabled = self.cmd_wire.decode(data)
        self.meters.lowcmd_decode_wall.append(time.perf_counter() - started)
        # Judged against the states the supervisor was sent: it cannot know any newer one
        # (during a lowstate stall, none at all).
        self.meters.violations(command_violations(self.spec, cmd, enabled, self.published_states), self.sim.time)
        self.sim.set_command(cmd, enabled)
        self.meters.lowcmd_taken(started, self.sim.time)
        self.supervisor_silence.heard(time.perf_counter())
        return True

    def _hold_for_peers(
        self, supervisor_due: float | None, policy_due: float | None, take_lowcmd: bool = False
    ) -> None:
        """Hold sim time at a tick of the supervisor or the policy until it has answered for it.

        The supervisor answers with a rt/lowcmd written after this step's /clock (computed from this
        step's rt/lowstate), the policy with targets stamped at its tick. The robot cannot wait for a
        starved process; the simulator can, so a busy machine slows sim time and nothing else: every
        supervisor tick sees a lowstate of its own time and the robot gets the policy's target every
        period. A peer that has not written yet is not waited for, nor one silent for
        ``bridge.lockstep_timeout_wall_s`` (a dead policy: the supervisor handles that, on sim time).
        """
        b = self.cfg.bridge
        started = time.perf_counter()
        need_command = (
            b.lockstep_supervisor and supervisor_due is not None and self.meters.last_lowcmd_sim_s is not None
        )
        need_targets = (
            b.lockstep_policy and policy_due is not None and (self.last_target_sim_s is not None or self.expect_policy)
        )
        if take_lowcmd and not need_command:
            self._receive_lowcmd()  # pipelined: commands are taken only here, so take one that came
        command_at = None if need_command else started
        targets_at = None if need_targets else started
        clock_sent = started
        policy_gave_up = False
        while command_at is None or targets_at is None:
            now = time.perf_counter()
            if self.on_sim_time and now - clock_sent > CLOCK_RESEND_WALL_S:
                # The /clock a peer waits to answer may have gone out before its subscription matched
                # (discovery on a busy machine): send the same time again; a peer that had it sees no change.
                self._clock_pub.publish(self._clock_msg)
                clock_sent = now
            if command_at is None and (self._receive_lowcmd() or self.supervisor_silence.gone(now)):
                command_at = now
            if targets_at is None and policy_due is not None and self._targets_reached(policy_due):
                targets_at = now
            elif targets_at is None and self.policy_silence.gone(now):
                targets_at = now
                policy_gave_up = True
            if command_at is None or targets_at is None:
                time.sleep(0.0002)
        ended = time.perf_counter()
        # A peer that has answered cannot tick again while sim time stands: that wall time is not its silence.
        self.supervisor_silence.sim_held(ended - command_at)
        self.policy_silence.sim_held(ended - targets_at)
        if need_command:
            self.meters.held_for_supervisor(command_at - started)
        if need_targets:
            self.meters.held_for_policy(targets_at - started, self.sim.time, policy_gave_up)

    def _policy_matched(self) -> bool:
        """Wait (wall time) until the policy can answer its first tick: this node's /policy/joint_targets
        subscription has matched its publisher, and this node's rt/lowstate writer has matched the
        policy's reader (and the supervisor's, when the lockstep holds for it). The policy publishes
        targets only from a tick at which it has a lowstate: one whose reader matched after the first
        samples went out missed them, did not answer its first tick, and sim time stood 2 s for it."""
        b = self.cfg.bridge
        readers = 1 + int(b.lockstep_supervisor)
        deadline = time.perf_counter() + POLICY_MATCH_TIMEOUT_WALL_S
        targets = topics.JOINT_TARGETS.name
        while time.perf_counter() < deadline:
            if self.node.count_publishers(targets) > 0 and self.lowstate_writer.matched_readers() >= readers:
                return True
            time.sleep(0.01)
        self.node.get_logger().warning(
            f"after {POLICY_MATCH_TIMEOUT_WALL_S:g} s: {self.node.count_publishers(targets)} publisher(s) of "
            f"{targets}, {self.lowstate_writer.matched_readers()} of {readers} rt/lowstate reader(s): "
            "sim time is held for the policy only once its first targets arrive"
        )
        return False

    def _targets_reached(self, due_s: float) -> bool:
        last = self.last_target_sim_s
        return last is not None and last >= due_s - 0.5 * self.cfg.bridge.physics_dt_s

    def _stamp(self, sim_s: float) -> float:
        """The ROS time of a sim time: itself on sim time; as a stand-in robot on wall time, now less its age."""
        if self.on_sim_time:
            return sim_s
        return self.node.get_clock().now().nanoseconds * 1e-9 - (self.sim.time - sim_s)

    def _publish_clock(self) -> None:
        started = time.perf_counter()
        self._clock_msg.clock.sec, self._clock_msg.clock.nanosec = stamp_parts(self.sim.time)
        self._clock_pub.publish(self._clock_msg)
        self.meters.clock_publish_wall.append(time.perf_counter() - started)

    def _on_joy(self, msg) -> None:
        snapshot = snapshot_from_normalised_joy(self.sim.time, msg.axes, msg.buttons)
        keys, sticks = remote_from_snapshot(snapshot)
        self.remote_bytes = encode_wireless_remote(keys, **sticks)
        self.remote_sim_s = self.sim.time

    def _remote(self) -> bytes:
        """The remote's bytes; released and centred once the input is older than the timeout."""
        if self.remote_sim_s is None or self.sim.time - self.remote_sim_s > self.remote_timeout_s:
            return REMOTE_RELEASED
        return self.remote_bytes

    def _publish_lowstate(self) -> None:
        s = self.sim
        remote = self._remote()
        changed = remote if remote != self.remote_written else None  # the message keeps the field
        self.remote_written = remote
        started = time.perf_counter()
        # Unitree's simulators send neither tick nor CRC.
        unitree_sim = self.cfg.bridge.peer == "unitree_sim"
        tick = 0 if unitree_sim else int(s.time * 1000)
        data = self.state_wire.encode(
            s.q, s.dq, s.tau, s.imu_quat_wxyz, s.imu_gyro, s.imu_accel, tick, changed, not unitree_sim
        )
        self.lowstate_writer.write_bytes(data)
        self.meters.lowstate_encode_wall.append(time.perf_counter() - started)
        self.published_states.append((self.sim.q, self.sim.dq))
        self.meters.lowstate_sent += 1
        self.record.lowstate_sent(s, self.band.released)

    def _camera_tick(self) -> None:
        """Expose a frame if one is due; the frames due for publication wait in ``frames_held``."""
        assert self.depth is not None
        self.frames_held.extend(self.depth.tick(self.sim.data, published=False))

    def _publish_frames(self) -> None:
        """Publish the frames now due, each stamped, like the real camera node's, with the time it was sensed.

        The stamp is sim time here; a frame is published ``sim_camera.latency_min_s``..``latency_max_s``
        of sim time after it (60-80 ms by default), the latency the policy is trained with.
        """
        assert self.depth is not None
        held, self.frames_held = self.frames_held, []
        self.depth.mark_published(held, self.sim.time)
        for scheduled in held:
            started = time.perf_counter()
            frame = scheduled.frame
            self._depth_pub.publish(fill_image(self._Image(), frame.policy, self._stamp(frame.exposure_s)))
            self.record.frame_published(frame.exposure_s, self.sim.time, self.faults)
            if self._raw_pub is not None:
                self._raw_pub.publish(
                    fill_image(self._Image(), depth_to_z16(frame.metres), self._stamp(frame.exposure_s))
                )
            self.meters.depth_publish_s.append(time.perf_counter() - started)

    def _publish_base_pose(self) -> None:
        msg = self._pose_msg
        msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_parts(self._stamp(self.sim.time))
        x, y, z = (float(v) for v in self.sim.base_pos)
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = x, y, z
        w, qx, qy, qz = (float(v) for v in self.sim.quat_wxyz)
        msg.pose.orientation.w, msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z = w, qx, qy, qz
        self._pose_pub.publish(msg)

    def _record(self) -> None:
        self._publish_base_pose()
        self.record.sample(self.sim, self.band.released)

    def run(self, duration_s: float, viewer: bool = False) -> None:
        b = self.cfg.bridge
        handle = None
        if viewer:
            import mujoco.viewer

            handle = mujoco.viewer.launch_passive(self.sim.model, self.sim.data)
        viewer_every = max(1, round(1.0 / (60.0 * b.physics_dt_s)))
        dt = b.physics_dt_s
        lowstate_every = max(1, round(1.0 / (b.lowstate_hz * dt)))
        record_every = max(1, round(1.0 / (TRAJECTORY_HZ * dt)))
        state_every = max(1, round(1.0 / (STATE_HZ * dt)))
        # Pipelined lockstep: sim time is held at each supervisor tick for the answers to the one before,
        # so the peers compute tick k while physics steps to k+1. What they may read is sent at ticks only,
        # and commands are taken only there: what a peer reads at a tick and when its command acts do
        # not depend on how far physics ran on meanwhile.
        pipelined = self.on_sim_time and b.lockstep_pipeline and b.lockstep_supervisor
        # Held for from its first tick, not from its first target heard: until discovery matches the bridge
        # to the policy's targets none is heard, and sim time would run on past the policy's ticks unanswered.
        self.expect_policy = (
            self.on_sim_time and b.lockstep_policy and self.policy_ticks is not None and self._policy_matched()
        )
        if self.expect_policy:
            self.policy_silence.heard(time.perf_counter())  # silent from the start counts, so a dead one is left
        awaiting: tuple[float | None, float | None] = (None, None)
        self._spin_thread.start()
        wall_start = time.perf_counter()
        # On wall time a starved stand-in runs on late, as Unitree's simulators do (WallPacer).
        catch_up_s = LOCKSTEP_CATCH_UP_S if self.on_sim_time else dt
        pacer = WallPacer(wall_start, self.sim.time, b.real_time_factor, catch_up_s)
        last_step_wall: float | None = None
        step = 0
        try:
            while self.sim.time < duration_s:
                if not pipelined:
                    self._receive_lowcmd()
                self.sim.external_force_n = self.faults.push_force(self.sim.time)
                self.band.apply()
                started = time.perf_counter()
                self.sim.step()
                self.meters.physics_step_wall.append(time.perf_counter() - started)
                step += 1
                t = self.sim.time
                supervisor_due = self.supervisor_ticks.reached(t)
                policy_due = self.policy_ticks.reached(t) if self.policy_ticks is not None else None
                peer_ticks = self.on_sim_time and (supervisor_due is not None or policy_due is not None)
                if pipelined and peer_ticks:
                    self._hold_for_peers(*awaiting, take_lowcmd=True)
                    awaiting = (supervisor_due, policy_due)
                if (pipelined and peer_ticks) or (not pipelined and step % lowstate_every == 0):
                    if self.faults.lowstate_stall.active(t):
                        self.meters.lowstate_suppressed += 1
                    else:
                        self._publish_lowstate()
                if pipelined and peer_ticks and self.frames_held:
                    self._publish_frames()  # before /clock: a peer ticking now sees exactly the frames due before
                # /clock only where a peer ticks: every node runs a Python callback per /clock message.
                if peer_ticks:
                    self._publish_clock()
                if self.depth is not None and self.faults.camera_stall.active(t):
                    self.meters.camera_ticks_suppressed += 1
                elif self.depth is not None:
                    self._camera_tick()  # while the peers compute their ticks
                    if not pipelined and self.frames_held:
                        self._publish_frames()
                if step % record_every == 0:
                    self._record()
                if step % state_every == 0:
                    self.record.keep_state(self.sim)
                if handle is not None and step % viewer_every == 0:
                    handle.sync()
                if peer_ticks and not pipelined:
                    self._hold_for_peers(supervisor_due, policy_due)
                sleep_s = pacer.sleep_s(time.perf_counter(), t)
                if sleep_s > 0.0005:
                    time.sleep(sleep_s)
                now = time.perf_counter()
                if last_step_wall is not None:
                    self.meters.step_period_wall.append(now - last_step_wall)
                last_step_wall = now
        except KeyboardInterrupt:
            pass
        self.wall_time_s = time.perf_counter() - wall_start

    def write_metrics(self) -> None:
        if self.run_dir is None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)  # a run folder that does not exist yet (the stand-in's)
        b, record = self.cfg.bridge, self.record
        camera = camera_frame_ms = None
        if self.depth is not None:
            camera = {"enabled": True, **self.depth.stats(), "publish_ms": summary_ms(self.meters.depth_publish_s)}
            camera_frame_ms = summary_ms(self.depth.frame_s)
            if self.depth.strip:
                camera["strip_file"] = DEPTH_FRAMES_FILE
                save_depth_frames(self.run_dir / DEPTH_FRAMES_FILE, self.depth.strip, self.depth_spec)
        run = {"sim_time_s": self.sim.time, "wall_time_s": self.wall_time_s, "peer": b.peer,
               "robot_model": b.robot_model or "default", "band_released_at_s": self.band.released_at_s,
               "band_hung_at_s": self.band.hung_at_s, "scene": b.scene}  # fmt: skip
        states = {"file": TRAJECTORY_FILE, "hz": STATE_HZ, "samples": len(record.state_t)}
        report = bridge_report(self.meters, record, run, camera, camera_frame_ms, self.faults, self.last_target_sim_s,
                               states)  # fmt: skip
        write_json(self.run_dir / "bridge.json", report)
        try:  # pictures only: their loss must not cost the run its metrics or its shutdown
            save_trajectory(self.run_dir / TRAJECTORY_FILE, record.state_t, record.state_qpos, self.cfg.robot,
                            load_scene_file(b.scene), b.robot_model, b.physics_dt_s)  # fmt: skip
        except Exception as e:
            print(f"mujoco_bridge: {TRAJECTORY_FILE} not written: {e}", flush=True)

    def shutdown(self) -> None:
        import rclpy

        # Stop the spin thread before tearing rclpy down under it (that aborts the process).
        if rclpy.ok():
            rclpy.shutdown()
        if self._spin_thread.is_alive():
            self._spin_thread.join(timeout=5.0)
        self._executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        if self.depth is not None:
            self.depth.close()


def main(argv: list[str] | None = None) -> int:
    import argparse

    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--duration", type=float, default=None, help="sim seconds to run (default: run.duration_s)")
    extra.add_argument("--viewer", action="store_true", help="show the MuJoCo viewer (needs a display)")
    known, rest = extra.parse_known_args(argv)
    args = parse_node_args(__doc__ or "", rest, "bridge")
    for line in apply_realtime([], 0, "mujoco_bridge", args.config.bridge.lock_memory):
        print(line, flush=True)
    try:
        bridge = MujocoBridge(args.config, args.run_dir, args.ros_args)
    except ConfigError as e:
        raise SystemExit(f"mujoco_bridge: bad parameter: {e}") from None
    try:
        bridge.run(known.duration if known.duration is not None else args.config.run.duration_s, known.viewer)
    finally:
        bridge.write_metrics()
        bridge.shutdown()
    print(f"mujoco_bridge: {bridge.sim.time:.2f} s simulated, fell={bridge.record.fell}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
