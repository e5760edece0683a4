"""The stack's configuration: declared once with types and bounds, validated at load.

Every YAML file under config/ is read through :func:`load_config`; nodes get typed objects,
never raw dicts. A bad file fails with a message naming the key, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from parkour_core import interfaces
from parkour_core.depth import D435_CROP, DepthSpec


class ConfigError(ValueError):
    pass


def yaml_error_line(path: Path | str, error: yaml.YAMLError) -> str:
    """A YAML file that does not parse, as one line: ``FILE:LINE:COL: not valid YAML: <problem>``.

    PyYAML's own text spans several lines and names ``<unicode string>`` (the text it was given),
    not the file; this keeps the position of the problem and what the parser was in the middle of.
    """
    problem = getattr(error, "problem", None) or str(error)
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    context, context_mark = getattr(error, "context", None), getattr(error, "context_mark", None)
    if context:
        started = f" at {context_mark.line + 1}:{context_mark.column + 1}" if context_mark is not None else ""
        problem = f"{problem} ({context}{started})"
    return f"{where}: not valid YAML: {' '.join(problem.split())}"


def _bounded(
    default: Any,
    lo: float | None = None,
    hi: float | None = None,
    choices: tuple = (),
    doc: str = "",
    live: bool = False,
) -> Any:
    """A config field with its bounds and doc. ``live``: its node applies a new value while running (a ROS
    parameter one may set); any other field is read-only once the node runs (``parkour_core.params``)."""
    meta = {"lo": lo, "hi": hi, "choices": choices, "doc": doc, "live": live}
    if isinstance(default, list | dict):
        return field(default_factory=lambda: default.copy(), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class DdsConfig:
    domain: int = _bounded(1, 0, 232, doc="DDS domain of rt/lowstate and rt/lowcmd (the robot uses 0)")
    interface: str = _bounded("lo", doc="network interface Cyclone DDS binds to")


@dataclass(frozen=True)
class BridgeConfig:
    scene: str = _bounded("flat", doc="scene file sim/scenes/<scene>.yaml")
    robot_model: str = _bounded(
        "", choices=("", "holosoma", "mjlab", "unitree", "simplified"),
        doc="the robot's MuJoCo model (parkour_sim.models): '' its default (G1: holosoma's, H1: unitree, Unitree's "
        "own); G1 mjlab: mjlab's; H1 simplified: ours, primitive shapes",
    )  # fmt: skip
    peer: str = _bounded(
        "stack",
        choices=("stack", "unitree_sim"),
        doc="stack: PD every physics step, lowstate with tick and CRC; unitree_sim: as Unitree's own simulators, PD "
        "once per arriving lowcmd and the torque held, lowstate without tick or CRC (for parkour robot: parkour sim's "
        "nodes age lowstate by its tick)",
    )
    command_gap_s: float = _bounded(
        0.0, 0.0, 1.0, doc="drop arriving rt/lowcmd for this long every command_gap_every_s (0: never): a stalling host"
    )
    command_gap_every_s: float = _bounded(0.5, 0.05, 60.0, doc="how often a command gap starts")
    clock: str = _bounded(
        "sim",
        choices=("sim", "wall"),
        doc="sim: publish /clock and hold sim time for the graph (parkour sim, or parkour robot --sim-clock against "
        "it); wall: a stand-in robot, paced to wall time, no /clock and no lockstep, stamps on the wall clock "
        "(parkour robot --iface lo against it)",
    )
    physics_dt_s: float = _bounded(0.002, 0.0005, 0.01)
    lock_memory: bool = _bounded(
        False, doc="mlockall the bridge process (a stand-in robot: a robot's own state is never stuck on a disk)"
    )
    lowstate_hz: float = _bounded(500.0, 50.0, 2000.0)
    real_time_factor: float = _bounded(1.0, 0.05, 100.0, doc="target sim/wall speed; the sim never runs faster")
    initial_base_height_m: float = _bounded(0.0, 0.0, 2.0, doc="0: the robot's standing height")
    lockstep_policy: bool = _bounded(True, doc="hold sim time at each policy tick until its targets for it arrive")
    lockstep_supervisor: bool = _bounded(
        True, doc="hold sim time at each supervisor tick until its rt/lowcmd for it arrives (once it writes)"
    )
    lockstep_pipeline: bool = _bounded(
        True,
        doc="await a tick's answers at the next supervisor tick, not at once, so the peers compute while physics "
        "steps on: a lowcmd then acts one supervisor period of sim time after the lowstate it answers, and "
        "lowstate and depth frames go out at supervisor ticks only",
    )
    lockstep_timeout_wall_s: float = _bounded(
        2.0, 0.05, 10.0, doc="a peer silent this long (wall time in which sim time could move): stop waiting for it"
    )


@dataclass(frozen=True)
class SupervisorConfig:
    rate_hz: float = _bounded(200.0, 50.0, 1000.0)
    robot_state_hz: float = _bounded(
        50.0, 1.0, 1000.0, doc="/robot/joint_states and /robot/imu for tools and bags (the policy reads rt/lowstate)"
    )
    cpu_affinity: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [], doc="CPUs the supervisor process runs on ([]: any)"
    )
    realtime_priority: int = _bounded(0, 0, 99, doc="SCHED_FIFO priority of the supervisor process (0: off)")
    lock_memory: bool = _bounded(False, doc="mlockall the supervisor process: the kernel may not evict its pages")
    lowstate_timeout_s: float = _bounded(0.1, 0.005, 2.0)
    target_timeout_s: float = _bounded(0.1, 0.02, 2.0)
    max_tilt_rad: float = _bounded(0.8, 0.1, 1.5, doc="base tilt beyond which the robot is falling -> DAMP")
    stand_up_duration_s: float = _bounded(2.0, 0.2, 10.0)
    kd_damp: float = _bounded(3.0, 0.5, 20.0)
    stand_gains: dict = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        {}, doc="joint name -> [kp, kd] for STAND_UP and STAND in place of the robot spec's stand gains"
    )
    dry_run: bool = _bounded(False, doc="publish commands on /supervisor/lowcmd_dry_run instead of rt/lowcmd")
    single_writer_wait_s: float = _bounded(0.5, 0.0, 5.0, doc="time to look for another rt/lowcmd writer")
    # Fallback gait and the ACTIVE <-> BLIND rule (depth age uses depth.stale_after_s, the /cmd_vel
    # timeout of the fallback gait uses policy.command_timeout_s).
    fallback: str = _bounded(
        "blind",
        choices=("blind", "stand"),
        doc="ACTIVE with stale/NaN targets or stale depth -> BLIND (the supervisor walks fallback_bundle) or STAND",
    )
    fallback_bundle: str = _bounded("g1_walk", doc="blind walking bundle the supervisor runs itself in BLIND")
    blind_resume_after_s: float = _bounded(
        0.5, 0.0, 10.0, doc="BLIND -> ACTIVE once the policy's targets (and depth, if it reads it) are fresh this long"
    )
    # Joint limits (position, velocity and effort limits come from the robot spec).
    joint_margin_rad: float = _bounded(0.02, 0.0, 0.2, doc="position targets stay this far inside the joint limits")
    target_limit_tolerance_rad: float = _bounded(
        0.5, 0.0, 3.0, doc="policy targets beyond a joint limit by more than this: a broken policy -> fallback"
    )
    joint_limit_tolerance_rad: float = _bounded(
        0.1, 0.0, 1.0, doc="a measured position beyond a joint limit by more than this -> DAMP"
    )
    velocity_limit_factor: float = _bounded(
        1.5, 1.0, 10.0, doc="a measured joint speed above this times the joint's velocity limit -> DAMP"
    )
    # Operator inputs. Requests fire when a combo becomes fully held; an e-stop combo acts while held.
    remote_estop_keys: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        ["L2", "B"], doc="Unitree remote keys that e-stop (-> DAMP) while held together (Unitree's own damping combo)"
    )
    remote_stand_up_keys: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        ["L1", "Up"], doc="Unitree remote combo: stand up (DAMP -> STAND_UP); [] disables"
    )
    remote_activate_keys: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        ["R1", "A"], doc="Unitree remote combo: activate (STAND -> ACTIVE); [] disables"
    )
    remote_stand_keys: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        ["R1", "X"], doc="Unitree remote combo: stand (ACTIVE/BLIND -> STAND); [] disables"
    )
    gamepad_estop_buttons: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [4, 5], doc="/teleop/joy button indices that e-stop while held together (4, 5: LB + RB, Xbox layout)"
    )
    gamepad_stand_up_buttons: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [7, 0], doc="/teleop/joy combo: stand up (7, 0: Start + A); [] disables"
    )
    gamepad_activate_buttons: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [7, 3], doc="/teleop/joy combo: activate (7, 3: Start + Y); [] disables"
    )
    gamepad_stand_buttons: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [7, 2], doc="/teleop/joy combo: stand (7, 2: Start + X); [] disables"
    )
    gamepad_timeout_s: float = _bounded(
        0.5,
        0.05,
        5.0,
        doc="joy messages arrived, then none for this long: gamepad lost, ACTIVE -> the fallback gait at zero velocity",
    )


@dataclass(frozen=True)
class PolicyConfig:
    bundle: str = _bounded(
        "g1_walk",
        doc="registered bundle name or bundle folder; '' = none (a robot without a trained policy: "
        "stand up, stand and damp only, no policy node)",
    )
    intra_op_threads: int = _bounded(1, 1, 16)
    cpu_affinity: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [], doc="CPUs the policy process runs on ([]: any)"
    )
    realtime_priority: int = _bounded(0, 0, 99, doc="SCHED_FIFO priority of the policy process (0: off)")
    lock_memory: bool = _bounded(False, doc="mlockall the policy process: the kernel may not evict its pages")
    command_timeout_s: float = _bounded(0.5, 0.05, 10.0, doc="no /cmd_vel for this long -> zero velocity")
    providers: str = _bounded("auto", choices=("auto", "cpu", "cuda"), doc="auto: CUDA where onnxruntime-gpu has it")
    emulate_depth_latency: bool = _bounded(
        False, doc="hold each depth frame until its age reaches a latency drawn from the bundle's trained range"
    )
    shadow_ticks: int = _bounded(25, 1, 5000, doc="ticks a new model runs beside the old one before a swap")
    swap_allowed_states: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        ["DAMP", "STAND", "ACTIVE", "BLIND"], doc="supervisor states in which a model swap is allowed"
    )
    swap_timeout_s: float = _bounded(10.0, 0.5, 120.0, doc="give up a swap whose shadow run has not finished")


@dataclass(frozen=True)
class CmdVelConfig:
    """Where the policy's (and the fallback gait's) velocity command comes from: the operator over autonomy."""

    teleop_topic: str = _bounded(
        interfaces.TELEOP_CMD_VEL.name,
        doc="the operator's commands (teleop_node publishes here only while the stick is used)",
    )
    teleop_timeout_s: float = _bounded(
        0.3, 0.05, 5.0, doc="no operator command for this long: the autonomy topic drives again"
    )
    autonomy_topic: str = _bounded(
        interfaces.CMD_VEL.name,
        doc="a navigation stack, `ros2 topic pub`, the demo script (timeout: policy.command_timeout_s)",
    )


@dataclass(frozen=True)
class DepthConfig:
    """The policy image both cameras publish, and when consumers call a frame stale."""

    height: int = _bounded(58, 8, 480)
    width: int = _bounded(87, 8, 848)
    near_m: float = _bounded(0.0, 0.0, 5.0, doc="trained depth range: closer is clipped")
    far_m: float = _bounded(2.0, 0.1, 10.0, doc="trained depth range: farther and holes read as far")
    crop: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        list(D435_CROP), doc="[top, bottom, left, right] fractions removed before resizing (D435 border)"
    )
    stale_after_s: float = _bounded(0.25, 0.02, 5.0, doc="depth older than this (now - stamp) is stale")

    def spec(self) -> DepthSpec:
        top, bottom, left, right = (float(x) for x in self.crop)
        return DepthSpec(self.height, self.width, self.near_m, self.far_m, (top, bottom, left, right))


@dataclass(frozen=True)
class CameraConfig:
    """The RealSense D435/D435i on the robot (depth_node)."""

    enabled: bool = _bounded(True, doc="run depth_node in robot mode")
    serial: str = _bounded("", doc="camera serial number; empty: the first RealSense found")
    width: int = _bounded(480, 256, 1280, doc="z16 stream width (the camera must support width x height @ fps)")
    height: int = _bounded(270, 144, 720)
    fps: int = _bounded(60, 6, 90)
    publish_raw: bool = _bounded(False, doc="also publish /camera/depth/image_raw (16UC1)")
    frame_timeout_s: float = _bounded(0.5, 0.05, 5.0, doc="no frame for this long: report a gap, reconnect")
    reconnect_period_s: float = _bounded(1.0, 0.1, 30.0, doc="time between attempts to open the camera")


@dataclass(frozen=True)
class SimCameraConfig:
    """The simulated D435i in the MuJoCo bridge, with the training noise model."""

    enabled: bool = _bounded(True)
    method: str = _bounded("raycast", choices=("raycast", "render"), doc="mj_multiRay or offscreen OpenGL")
    width: int = _bounded(87, 8, 848, doc="rendered pixels over the 87x58 deg field of view")
    height: int = _bounded(58, 8, 480)
    hz: float = _bounded(30.0, 1.0, 90.0)
    latency_min_s: float = _bounded(0.06, 0.0, 0.5, doc="exposure-to-publish latency, uniform in [min, max]")
    latency_max_s: float = _bounded(0.08, 0.0, 0.5)
    offset_max_m: float = _bounded(0.03, 0.0, 0.2, doc="per-frame depth offset, uniform in [-max, max]")
    noise_sigma_m: float = _bounded(0.03, 0.0, 0.2, doc="per-pixel Gaussian noise")
    hole_fraction: float = _bounded(0.01, 0.0, 0.5, doc="pixels dropped to 0 (no stereo match)")
    seed: int = _bounded(0, 0, 2**31 - 1)
    publish_raw: bool = _bounded(False, doc="also publish /camera/depth/image_raw (16UC1)")


@dataclass(frozen=True)
class FaultsConfig:
    """Fault injection for `parkour faults` (simulation only). With ``enabled``, the bridge and the
    policy node offer one std_srvs/Trigger service per fault (BRIDGE_FAULTS, POLICY_FAULTS); a script
    step ``{request: fault, fault: <name>}`` fires it on the script's clock."""

    enabled: bool = _bounded(False, doc="offer the fault-injection services (refused in robot mode)")
    camera_stall_for_s: float = _bounded(1.5, 0.0, 3600.0, doc="camera_stall: the sim camera delivers nothing")
    lowstate_stall_for_s: float = _bounded(1.0, 0.0, 3600.0, doc="lowstate_stall: no rt/lowstate is published")
    push_force_n: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [0.0, 400.0, 0.0], doc="push: world-frame force (N) on the base"
    )
    push_for_s: float = _bounded(0.3, 0.0, 10.0)
    policy_offset_rad: float = _bounded(1.5, -100.0, 100.0, doc="policy_offset: added to every published target")


BRIDGE_FAULTS = ("camera_stall", "lowstate_stall", "push")
POLICY_FAULTS = ("policy_nan", "policy_offset", "policy_exit")


@dataclass(frozen=True)
class ScriptStep:
    at_s: float = _bounded(0.0, 0.0, 3600.0, doc="sim time after the graph is up")
    request: str = _bounded(
        "",
        choices=("", *interfaces.SUPERVISOR_REQUESTS, "release_band", "hang_band", "swap", "gamepad_lost", "fault"),
    )
    fault: str = _bounded("", choices=("", *BRIDGE_FAULTS, *POLICY_FAULTS), doc="request fault: which one")
    bundle: str = _bounded("", doc="request swap: the bundle (name or folder) to swap to")
    in_mode: str = _bounded(
        "",
        choices=("", "DAMP", "STAND_UP", "STAND", "ACTIVE", "BLIND"),
        doc="wait until the supervisor is in this mode; the script's clock holds meanwhile",
    )
    cmd: list = _bounded([], doc="[vx m/s, vy m/s, yaw rate rad/s]")  # noqa: RUF009 - returns a field(default_factory=...)
    hold_heading: bool = _bounded(
        False, doc="with cmd: steer the yaw rate back to the heading the robot had when the script started (IMU)"
    )


@dataclass(frozen=True)
class ScriptConfig:
    steps: list = _bounded([], doc="list of ScriptStep")  # noqa: RUF009 - returns a field(default_factory=...)
    publish_joy: bool = _bounded(False, doc="act as a connected gamepad on /teleop/joy (no buttons held)")


@dataclass(frozen=True)
class TeleopConfig:
    """The operator's inputs (parkour_teleop/teleop_node); the mapping is parkour_core/teleop.py.

    Mode chords come from the supervisor's ``gamepad_*_buttons`` (indices on the normalised
    /teleop/joy, Xbox order: 0 A, 1 B, 2 X, 3 Y, 4 LB, 5 RB, 6 Back, 7 Start, 8 Guide, 9 L3, 10 R3);
    only damp, which the supervisor has no gamepad chord for, is here.
    """

    source: str = _bounded(
        "joy", choices=("joy", "gamepad", "keyboard", "remote"), doc="what teleop_node reads (parkour sim --teleop)"
    )
    layout: str = _bounded(
        "xbox", choices=("xbox", "f710", "playstation"), doc="button/axis indices of the pad (joy and gamepad)"
    )
    joy_topic: str = _bounded(interfaces.JOY.name, doc="source joy: the sensor_msgs/Joy topic of the joy node")
    device: str = _bounded("", doc="source gamepad: evdev device path; '' = the first gamepad found")
    rate_hz: float = _bounded(50.0, 10.0, 200.0, doc="/cmd_vel and /teleop/joy publishing rate")
    deadzone: float = _bounded(0.1, 0.0, 0.5, doc="stick travel (fraction) that reads as centred")
    expo: float = _bounded(0.3, 0.0, 1.0, doc="stick curve: (1-expo) x + expo x^3 after the deadzone")
    max_vx_mps: float = _bounded(1.0, 0.0, 3.0, doc="forward/backward speed at full stick", live=True)
    max_vy_mps: float = _bounded(0.5, 0.0, 2.0, doc="sideways speed at full stick", live=True)
    max_yaw_rate_rps: float = _bounded(1.0, 0.0, 3.0, doc="turn rate at full stick", live=True)
    accel_vx_mps2: float = _bounded(1.0, 0.05, 20.0, doc="ramp: the most vx changes per second", live=True)
    accel_vy_mps2: float = _bounded(1.0, 0.05, 20.0, doc="ramp: the most vy changes per second", live=True)
    accel_yaw_rps2: float = _bounded(2.0, 0.05, 40.0, doc="ramp: the most the yaw rate changes per second", live=True)
    command_timeout_s: float = _bounded(
        0.5, 0.05, 5.0, doc="no input for this long: zero velocity, input lost (/teleop/joy stops)"
    )
    command_mode: str = _bounded(
        "continuous",
        choices=("continuous", "discrete"),
        doc="discrete: publish PHP's discrete command (nearest speed level along the 360/N deg sector)",
    )
    discrete_speed_levels_mps: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [0.0, 0.5, 1.0, 1.5], doc="discrete command speed levels (match the bundle's command.speed_levels_mps)"
    )
    discrete_heading_sectors: int = _bounded(8, 1, 64, doc="discrete command heading sectors (8: 45 deg)")
    damp_buttons: list = _bounded(  # noqa: RUF009 - returns a field(default_factory=...)
        [6, 1], doc="/teleop/joy combo: damp (6, 1: Back + B); [] disables"
    )
    release_hold_s: float = _bounded(
        0.5, 0.0, 5.0, doc="zeros published this long after the operator's command reached zero, then silence"
    )
    keyboard_hold_s: float = _bounded(
        0.6, 0.1, 2.0, doc="a key counts as held this long after its last press (terminals send no releases)"
    )


@dataclass(frozen=True)
class RunConfig:
    duration_s: float = _bounded(20.0, 0.5, 36000.0, doc="sim time the bringup runs")


@dataclass(frozen=True)
class StackConfig:
    robot: str = _bounded("g1", choices=("g1", "h1"))
    mode: str = _bounded("sim", choices=("sim", "robot"))
    dds: DdsConfig = field(default_factory=DdsConfig)
    bridge: BridgeConfig = field(default_factory=BridgeConfig)
    supervisor: SupervisorConfig = field(default_factory=SupervisorConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    cmd_vel: CmdVelConfig = field(default_factory=CmdVelConfig)
    depth: DepthConfig = field(default_factory=DepthConfig)
    camera: CameraConfig = field(default_factory=CameraConfig)
    sim_camera: SimCameraConfig = field(default_factory=SimCameraConfig)
    faults: FaultsConfig = field(default_factory=FaultsConfig)
    script: ScriptConfig = field(default_factory=ScriptConfig)
    teleop: TeleopConfig = field(default_factory=TeleopConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def script_steps(self) -> list[ScriptStep]:
        return list(self.script.steps)

    def command_mux(self) -> Any:
        """The velocity-command mux of the policy node and the supervisor (parkour_core.command_mux)."""
        from parkour_core.command_mux import stack_command_mux

        return stack_command_mux(self.cmd_vel.teleop_timeout_s, self.policy.command_timeout_s)


_ITEM_TYPES: dict[tuple[type, str], type] = {(ScriptConfig, "steps"): ScriptStep}


def _check_scalar(key: str, value: Any, typ: Any, meta: typing.Mapping[str, Any]) -> Any:
    if typ is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true/false, got {value!r}")
        return value
    if typ in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        if typ is int and not float(value).is_integer():
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        value = typ(value)
        lo, hi = meta.get("lo"), meta.get("hi")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ConfigError(f"{key}: {value} is outside the allowed range [{lo}, {hi}]")
        return value
    if typ is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        choices = meta.get("choices") or ()
        if choices and value not in choices:
            raise ConfigError(f"{key}: {value!r} is not one of {list(choices)}")
        return value
    if typ is list:
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        return value
    if typ is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        return value
    raise ConfigError(f"{key}: unsupported type {typ}")


def parse(cls: type, data: Any, prefix: str = "") -> Any:
    """Build dataclass ``cls`` from a mapping, checking keys, types and bounds."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise ConfigError(f"{prefix or 'config'}: unknown keys {sorted(unknown)}; allowed: {sorted(fields)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}.{name}" if prefix else name
        typ = hints[name]
        if isinstance(typ, types.UnionType):
            typ = next(t for t in typing.get_args(typ) if t is not type(None))
        if dataclasses.is_dataclass(typ):
            kwargs[name] = parse(typ, value, key)  # type: ignore[arg-type]
            continue
        value = _check_scalar(key, value, typ, fields[name].metadata)
        item_type = _ITEM_TYPES.get((cls, name))
        if item_type is not None:
            value = [parse(item_type, item, f"{key}[{i}]") for i, item in enumerate(value)]
        kwargs[name] = value
    obj = cls(**kwargs)
    _validate(obj, prefix)
    return obj


def _validate(obj: Any, prefix: str) -> None:
    if isinstance(obj, BridgeConfig) and obj.clock == "wall" and obj.real_time_factor != 1.0:
        raise ConfigError(
            f"{prefix}.real_time_factor: a stand-in robot (clock: wall) runs at 1.0, got {obj.real_time_factor}"
        )
    if isinstance(obj, SupervisorConfig | PolicyConfig):
        cpus = obj.cpu_affinity
        if not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 1024 for c in cpus):
            raise ConfigError(f"{prefix}.cpu_affinity: expected CPU numbers (0, 1, ...), got {cpus!r}")
    if isinstance(obj, SupervisorConfig):
        _validate_supervisor(obj, prefix)
    if isinstance(obj, DepthConfig):
        if len(obj.crop) != 4 or not all(isinstance(x, int | float) for x in obj.crop):
            raise ConfigError(f"{prefix}.crop: expected [top, bottom, left, right] fractions, got {obj.crop!r}")
        try:
            obj.spec()
        except ValueError as e:
            raise ConfigError(f"{prefix}: {e}") from None
    if isinstance(obj, PolicyConfig):
        modes = ("DAMP", "STAND_UP", "STAND", "ACTIVE", "BLIND")
        bad = [x for x in obj.swap_allowed_states if x not in modes]
        if bad:
            raise ConfigError(f"{prefix}.swap_allowed_states: {bad} are not supervisor states {list(modes)}")
    if isinstance(obj, TeleopConfig):
        _validate_teleop(obj, prefix)
    if isinstance(obj, StackConfig):
        _validate_teleop_chords(obj)
        _validate_stand_gains(obj)
    if isinstance(obj, StackConfig) and obj.mode == "robot" and obj.faults.enabled:
        raise ConfigError("faults: fault injection is for simulation only; remove the faults section on the robot")
    if isinstance(obj, FaultsConfig) and (
        len(obj.push_force_n) != 3 or not all(isinstance(x, int | float) for x in obj.push_force_n)
    ):
        raise ConfigError(f"{prefix}.push_force_n: expected [fx, fy, fz] newtons, got {obj.push_force_n!r}")
    if isinstance(obj, SimCameraConfig) and obj.latency_min_s > obj.latency_max_s:
        raise ConfigError(f"{prefix}: latency_min_s {obj.latency_min_s} exceeds latency_max_s {obj.latency_max_s}")
    if isinstance(obj, ScriptStep):
        if bool(obj.request) == bool(obj.cmd):
            raise ConfigError(f"{prefix}: a script step has either 'request' or 'cmd', not both or neither")
        if (obj.request == "fault") != bool(obj.fault):
            raise ConfigError(f"{prefix}: 'fault' goes with request: fault, and a fault request needs a fault")
        if (obj.request == "swap") != bool(obj.bundle):
            raise ConfigError(f"{prefix}: 'bundle' goes with request: swap, and a swap needs a bundle")
        if obj.cmd and (len(obj.cmd) != 3 or not all(isinstance(x, int | float) for x in obj.cmd)):
            raise ConfigError(f"{prefix}.cmd: expected [vx, vy, yaw_rate], got {obj.cmd!r}")


def _validate_supervisor(obj: SupervisorConfig, prefix: str) -> None:
    from parkour_core.unitree import REMOTE_KEYS

    remote = {
        k: getattr(obj, k)
        for k in ("remote_estop_keys", "remote_stand_up_keys", "remote_activate_keys", "remote_stand_keys")
    }
    gamepad = {
        k: getattr(obj, k)
        for k in (
            "gamepad_estop_buttons",
            "gamepad_stand_up_buttons",
            "gamepad_activate_buttons",
            "gamepad_stand_buttons",
        )
    }
    for key, combo in remote.items():
        bad = [k for k in combo if k not in REMOTE_KEYS]
        if bad:
            raise ConfigError(f"{prefix}.{key}: {bad} are not Unitree remote keys {list(REMOTE_KEYS)}")
    for key, combo in gamepad.items():
        if not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 64 for b in combo):
            raise ConfigError(f"{prefix}.{key}: expected button indices 0..63, got {combo!r}")
    for group in (remote, gamepad):
        seen: dict[frozenset, str] = {}
        for key, combo in group.items():
            if len(set(combo)) != len(combo):
                raise ConfigError(f"{prefix}.{key}: {combo!r} names a button twice")
            if key.endswith(("estop_keys", "estop_buttons")) and not combo:
                raise ConfigError(f"{prefix}.{key}: the e-stop combo cannot be empty")
            if combo and frozenset(combo) in seen:
                raise ConfigError(f"{prefix}.{key}: {combo!r} is also {prefix}.{seen[frozenset(combo)]}")
            if combo:
                seen[frozenset(combo)] = key


def _validate_teleop(obj: TeleopConfig, prefix: str) -> None:
    from parkour_core.command import speed_levels_problem

    levels = obj.discrete_speed_levels_mps
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in levels):
        raise ConfigError(f"{prefix}.discrete_speed_levels_mps: expected numbers, got {levels!r}")
    problem = speed_levels_problem([float(x) for x in levels])
    if problem:
        raise ConfigError(f"{prefix}.discrete_speed_levels_mps: {problem}")


def _validate_stand_gains(cfg: StackConfig) -> None:
    from parkour_core.robots import get_robot

    names = set(get_robot(cfg.robot).joint_names)
    for joint, gains in cfg.supervisor.stand_gains.items():
        key = f"supervisor.stand_gains.{joint}"
        if joint not in names:
            raise ConfigError(f"{key}: the {cfg.robot} has no joint {joint!r}")
        ok = isinstance(gains, list) and len(gains) == 2
        ok = ok and all(isinstance(g, int | float) and not isinstance(g, bool) and 0.0 <= g <= 5000.0 for g in gains)
        if not ok:
            raise ConfigError(f"{key}: expected [kp, kd] with 0 <= each <= 5000, got {gains!r}")


def _validate_teleop_chords(cfg: StackConfig) -> None:
    """The teleop node maps the supervisor's gamepad chords onto the normalised pad: each index
    must name one of its buttons, and the damp chord must not be another request's chord."""
    from parkour_core.teleop import PAD_BUTTONS

    s = cfg.supervisor
    chords = {
        "supervisor.gamepad_estop_buttons": s.gamepad_estop_buttons,
        "supervisor.gamepad_stand_up_buttons": s.gamepad_stand_up_buttons,
        "supervisor.gamepad_activate_buttons": s.gamepad_activate_buttons,
        "supervisor.gamepad_stand_buttons": s.gamepad_stand_buttons,
        "teleop.damp_buttons": cfg.teleop.damp_buttons,
    }
    for key, combo in chords.items():
        if not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < len(PAD_BUTTONS) for b in combo):
            raise ConfigError(
                f"{key}: {combo!r}: the normalised pad has buttons 0..{len(PAD_BUTTONS) - 1} {list(PAD_BUTTONS)}"
            )
    damp = frozenset(cfg.teleop.damp_buttons)
    if len(damp) != len(cfg.teleop.damp_buttons):
        raise ConfigError(f"teleop.damp_buttons: {cfg.teleop.damp_buttons!r} names a button twice")
    for key, combo in chords.items():
        if damp and key != "teleop.damp_buttons" and frozenset(combo) == damp:
            raise ConfigError(f"teleop.damp_buttons: {cfg.teleop.damp_buttons!r} is also {key}")


def load_config(path: Path | str, overrides: dict[str, Any] | None = None) -> StackConfig:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except yaml.YAMLError as e:
        raise ConfigError(yaml_error_line(path, e)) from None
    data = data or {}
    for dotted, value in (overrides or {}).items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    try:
        return parse(StackConfig, data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def describe(cls: type = StackConfig, prefix: str = "") -> list[str]:
    """One line per parameter: key, type, default, range and doc (for README and --help)."""
    lines = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}.{f.name}" if prefix else f.name
        if dataclasses.is_dataclass(hints[f.name]):
            lines += describe(hints[f.name], key)
            continue
        m = f.metadata
        rng = f" [{m['lo']}, {m['hi']}]" if m.get("lo") is not None else ""
        ch = f" one of {list(m['choices'])}" if m.get("choices") else ""
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        lines.append(
            f"{key}: {getattr(hints[f.name], '__name__', hints[f.name])} = {default!r}{rng}{ch}  {m.get('doc', '')}"
        )
    return lines
