"""policy_node: runs the configured bundle at its rate on a drift-free timer; swaps models live.

Reads the newest ``rt/lowstate`` itself at each tick, the velocity command, ``/supervisor/state`` and
``/camera/depth/policy``; publishes ``/policy/joint_targets``, ``/policy/tick_inputs``, the latched
``/policy/bundle`` and ``/diagnostics`` (what each carries and why: :class:`PolicyNode`).

A depth student runs its backbone when a new frame is released (optionally held back to the
trained latency) and its GRU every tick; the recurrent state is reset whenever the supervisor
enters ACTIVE. Setting the ``bundle`` parameter (``parkour model swap``) loads, verifies, warms
up and shadow-runs the new model on live observations, then switches at a tick boundary; a bad
bundle is refused with the reason while the old model keeps running.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import numpy as np

from parkour_control.depth_input import DepthLatencyGate
from parkour_control.messages import bundle_info_message, tick_inputs_message
from parkour_control.policy_inputs import PolicyInputs
from parkour_control.policy_meters import PolicyMeters
from parkour_control.swap import ShadowRun, SwapError, SwapOutcome, load_candidate
from parkour_core import interfaces as topics
from parkour_core.bundle import MANIFEST_SEAL, Bundle, load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.command_mux import AUTONOMY, TELEOP
from parkour_core.config import POLICY_FAULTS, ConfigError, StackConfig
from parkour_core.inference import ProviderError, choose_providers
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
)
from parkour_core.runner import PolicyRunner, RobotState
from parkour_core.stats import write_json
from parkour_core.tick_inputs import TickInputs
from parkour_core.unitree import lowstate_capture_time, message_types
from parkour_core.unitree_wire import LowStateWire

DIAGNOSTICS_PERIOD_S = 1.0
# What a swap's answer and /diagnostics add for a bundle without manifest.sha256 (it runs: see load_bundle).
UNSEALED = f"manifest unsealed: no {MANIFEST_SEAL}"


def _stamp_s(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def _wall_clock_node(name: str):
    """A node on wall time whatever ``use_sim_time`` the process was started with: no /clock for it."""
    import rclpy
    from rclpy.parameter import Parameter

    return rclpy.create_node(name, parameter_overrides=[Parameter("use_sim_time", value=False)])


class PolicyNode:
    """The node's topics.

    Reads ``rt/lowstate`` (Unitree DDS, as bytes: the freshest state, without a hop through the
    supervisor and 400 callbacks a second), the velocity command (the operator's
    ``cmd_vel.teleop_topic`` over ``/cmd_vel``, parkour_core.command_mux), ``/supervisor/state`` and
    ``/camera/depth/policy``. Publishes ``/policy/joint_targets`` (its ``header.frame_id`` names the
    bundle that produced them), ``/policy/tick_inputs`` (PolicyTickInputs: what the runner consumed on that
    tick, published just before its targets, so a bag replays the tick exactly: ``parkour bag replay
    --bundle``), the latched ``/policy/bundle`` (BundleInfo: name, path and PD gains of every bundle before
    it drives the robot, so the supervisor applies the right gains, and whether its manifest is sealed) and
    ``/diagnostics``. An unsealed bundle (no manifest.sha256) runs, and says so wherever the running bundle
    is reported: ``manifest_verified`` false in BundleInfo, /diagnostics and policy.json, and in a swap's answer.
    """

    def __init__(self, cfg: StackConfig, run_dir: Path | None, ros_args: list[str]) -> None:
        import rclpy

        init_rclpy(ros_args)
        # Two nodes, each on its own executor. ``policy_node`` owns the parameters: the stack config's
        # keys, and ``bundle``, whose swap blocks in its callback (load, verify, shadow-run) on a thread of
        # its own, on wall time. ``policy_loop`` runs the tick and the inputs on the main thread's events
        # executor, so a swap never delays a tick, and no Python executor wakes for every /clock message.
        self.param_node = _wall_clock_node("policy_node")
        self.params = declare_from_config(self.param_node, cfg, "policy")  # the config it runs on is its parameters'
        self.cfg = cfg = self._declare_bundle(self.params.cfg)
        self.run_dir = run_dir
        self.spec = get_robot(cfg.robot)
        self.depth_spec = cfg.depth.spec()
        self.providers = choose_providers(cfg.policy.providers)
        bundle = load_bundle(resolve_bundle(cfg.policy.bundle), robot=self.spec)
        self._open_robot_link()
        self.runner = self._make_runner(bundle)
        self.period_s = 1.0 / bundle.manifest.policy_hz
        self.node = rclpy.create_node("policy_loop")
        self.log = self.param_node.get_logger()
        self._create_outputs()
        self._subscribe_inputs()
        self.inputs = PolicyInputs()
        self.depth_gate = self._make_gate(bundle)
        self.meters = PolicyMeters()
        self._prepare_swaps()
        self._announce(bundle)
        self.param_node.add_on_set_parameters_callback(self._on_set_parameters)
        self._offer_faults()
        sim_time = bool(self.node.get_parameter("use_sim_time").value)
        self.ticker = PeriodicTick(self.node, self.period_s, self.tick, sim_time)
        self.node.create_timer(DIAGNOSTICS_PERIOD_S, self._publish_diagnostics)

    # ------------------------------------------------------------------ setup
    def _declare_bundle(self, cfg: StackConfig) -> StackConfig:
        """``bundle``, the running bundle: a params file or ``-p`` may give it; setting it while the node runs
        swaps the model (:meth:`_on_set_parameters`, added once a model runs). ``cfg`` with its value."""
        from rcl_interfaces.msg import ParameterDescriptor

        description = "running bundle (name or folder); set it to swap models live"
        self.param_node.declare_parameter("bundle", cfg.policy.bundle, ParameterDescriptor(description=description))
        bundle = str(self.param_node.get_parameter("bundle").value)
        return dataclasses.replace(cfg, policy=dataclasses.replace(cfg.policy, bundle=bundle))

    def _open_robot_link(self) -> None:
        from parkour_core.dds import DdsLink

        state_type, _ = message_types(self.spec)
        self.link = DdsLink(self.cfg.dds.domain, self.cfg.dds.interface)
        self.lowstate_reader = self.link.reader("rt/lowstate", state_type)
        self.state_wire = LowStateWire(self.spec)

    def _create_outputs(self) -> None:
        from sensor_msgs.msg import JointState

        node = self.node
        self.targets_pub = create_publisher(node, topics.JOINT_TARGETS)
        self.bundle_pub = create_publisher(node, topics.BUNDLE)  # latched: every bundle that drove, for late joiners
        self.diag_pub = create_publisher(node, topics.DIAGNOSTICS)
        self.tick_inputs_pub = create_publisher(node, topics.TICK_INPUTS)
        self._JointState = JointState

    def _subscribe_inputs(self) -> None:
        node, cmd_vel = self.node, self.cfg.cmd_vel
        self.mux = self.cfg.command_mux()
        for source, topic in ((TELEOP, cmd_vel.teleop_topic), (AUTONOMY, cmd_vel.autonomy_topic)):
            create_subscription(node, topics.CMD_VEL, self._on_cmd_vel(source), name=topic)
        create_subscription(node, topics.DEPTH, self._on_depth, topics.POLICY_DEPTH_QOS)
        create_subscription(node, topics.SUPERVISOR_STATE, self._on_supervisor_state)

    def _prepare_swaps(self) -> None:
        from rcl_interfaces.msg import SetParametersResult

        self._SetParametersResult = SetParametersResult
        self._swap_lock = threading.Lock()  # one swap at a time
        self._shadow: ShadowRun | None = None
        self._switch_to: ShadowRun | None = None
        self._switched = threading.Event()
        self._last_targets: np.ndarray | None = None  # what the old model drove last: a switch adopts it
        self.swaps: list[dict] = []

    def _offer_faults(self) -> None:
        """``parkour faults`` only: one Trigger service per policy fault (the config refuses them on the robot)."""
        self.injected_fault: str | None = None
        self.faults_injected: list[dict] = []  # when each took effect, on this node's clock (parkour faults)
        if self.cfg.faults.enabled:
            from std_srvs.srv import Trigger

            for name in POLICY_FAULTS:
                self.node.create_service(Trigger, topics.policy_fault_service(name), self._fault_handler(name))

    def _make_runner(self, bundle: Bundle) -> PolicyRunner:
        return PolicyRunner(bundle, intra_op_threads=self.cfg.policy.intra_op_threads, providers=self.providers)

    def _make_gate(self, bundle: Bundle) -> DepthLatencyGate:
        depth = bundle.manifest.depth
        latency = depth.latency_s if (depth is not None and self.cfg.policy.emulate_depth_latency) else None
        return DepthLatencyGate(latency)

    def _announce(self, bundle: Bundle) -> None:
        self.bundle_pub.publish(bundle_info_message(bundle, self.node.get_clock().now().to_msg()))

    def _now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    # ------------------------------------------------------------------ inputs
    def _read_state(self, now: float) -> None:
        """The newest rt/lowstate since the last tick, if one came (else the last one ages)."""
        started = time.perf_counter()
        data = self.lowstate_reader.take_latest_bytes()
        if data is None:
            return
        view = self.state_wire.decode(data)
        inputs = self.inputs
        inputs.q, inputs.dq, inputs.quat, inputs.gyro = view.q, view.dq, view.quat_wxyz, view.gyro
        inputs.joint_stamp_s = lowstate_capture_time(view, now, self.cfg.mode == "sim")
        self.meters.state_decode_s.append(time.perf_counter() - started)

    def _on_cmd_vel(self, source: str):
        def on_command(msg) -> None:
            self.mux.put(source, (msg.linear.x, msg.linear.y, msg.angular.z), self._now())

        return on_command

    def _on_depth(self, msg) -> None:
        spec = self.depth_spec
        if msg.encoding != "32FC1" or (msg.height, msg.width) != (spec.height, spec.width):
            self.meters.depth_rejected += 1
            self.log.error(
                f"depth frame {msg.width}x{msg.height} {msg.encoding} ignored: expected "
                f"{spec.width}x{spec.height} 32FC1 (config depth section)",
                throttle_duration_sec=5.0,
            )
            return
        stamp = _stamp_s(msg.header.stamp)
        image = np.frombuffer(bytes(msg.data), dtype=np.float32).reshape(spec.height, spec.width)
        self.meters.depth_rate.add(stamp)
        self.inputs.frame(stamp, msg.header.stamp.sec, msg.header.stamp.nanosec, image)
        self.depth_gate.push(image, stamp)

    def _on_supervisor_state(self, msg) -> None:
        if msg.mode == msg.ACTIVE and self.inputs.supervisor_state not in (msg.ACTIVE, msg.BLIND):
            self.inputs.reset_requested = True  # done in the tick: the runner is the tick's alone
        self.inputs.supervisor_state = msg.mode

    def _command_now(self, now: float) -> np.ndarray:
        """The operator's command over autonomy's, each within its timeout; zero when neither commands."""
        return self.mux.select(now).velocity

    # ------------------------------------------------------------------ the control tick
    def _switch_if_ready(self) -> None:
        shadow = self._switch_to
        if shadow is None:
            return
        if self._last_targets is not None:
            shadow.adopt_executed(self._last_targets)
        self.runner = shadow.runner
        self._switch_to = None
        self._shadow = None
        self._switched.set()

    def tick(self) -> None:
        now = self._now()
        tick_started = time.perf_counter()
        meters, inputs = self.meters, self.inputs
        meters.account_period(now, tick_started, self.period_s)
        self._switch_if_ready()
        runner = self.runner
        if inputs.reset_requested:
            inputs.reset_requested = False
            runner.reset()
            inputs.reset_since_published = True
            if self._shadow is not None:
                self._shadow.runner.reset()
        self._read_state(now)
        frame = self.depth_gate.pop_ready(now)
        if frame is not None:
            inputs.released_depth_stamp_s = frame.stamp_s
        start = time.perf_counter()
        if frame is not None and runner.backbone is not None:
            runner.set_depth(frame.image, frame.stamp_s)
            meters.backbone_s.append(time.perf_counter() - start)
        depth_stamp = runner.latent_stamp_s if runner.backbone is not None else inputs.last_depth_stamp_s
        if depth_stamp is not None:
            meters.depth_ages.append(now - depth_stamp)
        state = inputs.robot_state()
        if state is None or inputs.joint_stamp_s is None:
            return
        meters.state_ages.append(now - inputs.joint_stamp_s)
        command = self._command_now(now)
        targets = runner.step(state, command)
        meters.inference_s.append(time.perf_counter() - start)
        if self.injected_fault is not None:
            targets = self._corrupt(targets)
        if not np.all(np.isfinite(targets)):
            # Published as they are: the supervisor is the one place that decides what reaches the motors.
            meters.nonfinite_ticks += 1
            self.log.error(f"bundle {runner.manifest.name!r} output NaN/inf", throttle_duration_sec=1.0)
        msg = self._JointState()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self._publish_tick_inputs(msg.header.stamp, state, command, runner.manifest.name)
        msg.header.frame_id = runner.manifest.name
        msg.name = list(self.spec.joint_names)
        msg.position = targets.tolist()
        self.targets_pub.publish(msg)
        self._last_targets = targets
        meters.ticks += 1
        meters.tick_s.append(time.perf_counter() - tick_started)
        shadow = self._shadow
        if shadow is not None and not shadow.done.is_set():
            if frame is not None and shadow.runner.backbone is not None:
                shadow.runner.set_depth(frame.image, frame.stamp_s)
            shadow.step(state, command, targets)

    def _publish_tick_inputs(self, stamp, state: RobotState, command: np.ndarray, bundle_name: str) -> None:
        inputs = TickInputs(
            stamp_sec=stamp.sec,
            stamp_nanosec=stamp.nanosec,
            reset=self.inputs.reset_since_published,
            depth_stamp_s=self.inputs.released_depth_stamp_s,
            command=command,
            quat_wxyz=state.quat_wxyz,
            gyro=state.gyro,
            q=state.q,
            dq=state.dq,
        )
        self.inputs.reset_since_published = False
        frame_stamp = self.inputs.released_frame_stamp()
        self.tick_inputs_pub.publish(tick_inputs_message(inputs, bundle_name, frame_stamp))

    def _fault_handler(self, name: str):
        """`parkour faults` only (the config refuses fault injection in robot mode)."""

        def handle(_request, response):
            self.log.warning(f"fault injection: {name}")
            self.faults_injected.append({"fault": name, "t": round(self._now(), 4)})
            if name == "policy_exit":
                import os

                self.write_metrics()
                os._exit(3)  # a crash: no cleanup, no goodbye to the graph
            self.injected_fault = name
            response.success = True
            response.message = f"{name} injected"
            return response

        return handle

    def _corrupt(self, targets: np.ndarray) -> np.ndarray:
        if self.injected_fault == "policy_nan":
            return np.full_like(targets, np.nan)
        if self.injected_fault == "policy_offset":
            return targets + self.cfg.faults.policy_offset_rad
        return targets

    # ------------------------------------------------------------------ model swap
    def _on_set_parameters(self, params):
        for p in params:
            if p.name != "bundle":
                continue
            requested_at_tick = self.meters.ticks
            outcome = self.swap(str(p.value))
            outcome.requested_at_tick = requested_at_tick
            self.swaps.append({**outcome.__dict__, "bundle": str(outcome.bundle), "requested": str(p.value)})
            return self._SetParametersResult(successful=outcome.ok, reason=outcome.message)
        return self._SetParametersResult(successful=True)

    def swap(self, name_or_path: str) -> SwapOutcome:
        """Blocking (runs beside the tick): load, verify, shadow-run, switch at a tick boundary."""
        if not self._swap_lock.acquire(blocking=False):
            return SwapOutcome(False, "refused: another swap is in progress; try again when it has finished")
        try:
            return self._swap_locked(name_or_path)
        finally:
            self._shadow = None
            self._swap_lock.release()

    def _swap_locked(self, name_or_path: str) -> SwapOutcome:
        allowed = self.cfg.policy.swap_allowed_states
        state = self.inputs.supervisor_state
        if state not in allowed:
            return SwapOutcome(
                False, f"refused: swaps are allowed in {allowed} (policy.swap_allowed_states), not {state}"
            )
        active = self.runner.bundle
        try:
            candidate = load_candidate(name_or_path, self.spec, active, self.depth_spec, self._make_runner)
        except SwapError as e:
            self.log.error(f"swap to {name_or_path!r} refused: {e}; {active.manifest.name!r} keeps running")
            return SwapOutcome(False, f"refused: {e}")
        latest = self.inputs
        if candidate.backbone is not None and latest.last_depth_image is not None and latest.last_depth_stamp_s:
            candidate.set_depth(latest.last_depth_image, latest.last_depth_stamp_s)
        shadow = ShadowRun(candidate, self.cfg.policy.shadow_ticks)
        self._shadow = shadow
        if not shadow.done.wait(self.cfg.policy.swap_timeout_s):
            return SwapOutcome(
                False,
                f"refused: the shadow run made {shadow.ticks}/{shadow.ticks_needed} ticks in "
                f"{self.cfg.policy.swap_timeout_s} s (are robot states arriving?)",
            )
        if shadow.error is not None:
            self.log.error(f"swap refused: {shadow.error}; {active.manifest.name!r} keeps running")
            return SwapOutcome(False, f"refused: {shadow.error}", shadow_ticks=shadow.ticks)
        # Gains first: the supervisor must know the new bundle before its targets arrive.
        self._announce(candidate.bundle)
        self._switched.clear()
        self._switch_to = shadow
        if not self._switched.wait(self.cfg.policy.swap_timeout_s):
            self._switch_to = None
            return SwapOutcome(False, "refused: the control loop did not reach a tick boundary in time")
        name, ticks = candidate.manifest.name, self.meters.ticks
        unsealed = "" if candidate.bundle.manifest_verified else f" ({UNSEALED})"
        self.log.info(
            f"swapped to {name!r}{unsealed} at tick {ticks} after {shadow.ticks} shadow ticks "
            f"(max target gap to the old model {shadow.max_target_gap_rad:.3f} rad)"
        )
        return SwapOutcome(
            True,
            f"switched to {name!r}{unsealed} at tick {ticks}",
            bundle=candidate.bundle.path,
            switched_at_tick=ticks,
            shadow_ticks=shadow.ticks,
            max_target_gap_rad=shadow.max_target_gap_rad,
            manifest_verified=candidate.bundle.manifest_verified,
        )

    # ------------------------------------------------------------------ reporting
    def _publish_diagnostics(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        bundle = self.runner.bundle
        stale, values = self.meters.diagnostics(
            bundle.manifest.name, self.cfg.depth.stale_after_s, bundle.manifest_verified
        )
        message = "depth stale" if stale else "running"
        status = DiagnosticStatus(
            name="policy_node: control loop",
            hardware_id=bundle.manifest.name,
            level=DiagnosticStatus.WARN if (stale or self.meters.nonfinite_ticks) else DiagnosticStatus.OK,
            message=message if bundle.manifest_verified else f"{message}; {UNSEALED}",
        )
        status.values = [
            KeyValue(key=k, value=f"{v:.3f}" if isinstance(v, float) else str(v)) for k, v in values.items()
        ]
        array = DiagnosticArray()
        array.header.stamp = self.node.get_clock().now().to_msg()
        array.status = [status]
        self.diag_pub.publish(array)

    def write_metrics(self) -> None:
        if self.run_dir is None:
            return
        running = self.runner.bundle
        bundle = {
            "bundle": str(running.path),
            "bundle_name": running.manifest.name,
            "manifest_verified": running.manifest_verified,
        }
        sim_now = self._now() if self.cfg.mode == "sim" else None
        report = self.meters.report(
            bundle, self.ticker.dropped, sim_now, self.depth_gate, self.swaps, self.faults_injected
        )
        write_json(self.run_dir / "policy.json", report)


def main(argv: list[str] | None = None) -> int:
    from rclpy.executors import SingleThreadedExecutor

    from parkour_core.bundle import BundleError

    args = parse_node_args(__doc__ or "", argv, "policy")
    section = args.config.policy
    for line in apply_realtime(section.cpu_affinity, section.realtime_priority, "policy_node", section.lock_memory):
        print(line, flush=True)
    try:
        node = PolicyNode(args.config, args.run_dir, args.ros_args)
    except BundleError as e:
        print(f"policy_node: cannot load the bundle: {e}", flush=True)
        shutdown_rclpy()
        return 2
    except ConfigError as e:
        print(f"policy_node: bad parameter: {e}", flush=True)
        shutdown_rclpy()
        return 2
    except ProviderError as e:
        print(f"policy_node: refusing to start: {e}", flush=True)
        shutdown_rclpy()
        return 2
    params = SingleThreadedExecutor()
    params.add_node(node.param_node)
    spinning = threading.Thread(target=params.spin, name="policy_node parameters", daemon=True)
    spinning.start()

    def on_exit() -> None:
        node.write_metrics()
        # The parameter thread stops before rclpy goes down under it (that aborted the process).
        params.shutdown(timeout_sec=1.0)
        spinning.join(timeout=5.0)
        node.param_node.destroy_node()

    mark_ready(args.run_dir, "policy")
    spin_node(node.node, on_exit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
