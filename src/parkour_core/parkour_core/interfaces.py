"""The stack's ROS interface, defined once: every topic's name, message type and QoS, the services, the nodes.

Names are relative, so a node resolves them in its namespace: ``--ros-args -r __ns:=/robot1`` moves a
graph under ``/robot1`` and ``-r policy/joint_targets:=other`` remaps one topic. Plain data, free of
ROS: nodes turn a :class:`Qos` into rclpy's profile (``parkour_core.ros_process.qos_profile``), and the
bringup, the launch files, the bag recorder and readers and the docs read the same tables.
The Unitree DDS topics (``rt/lowstate``, ``rt/lowcmd``) are not ROS topics and are not here: two robots
keep theirs apart by DDS domain (``dds.domain``), whatever their ROS namespaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Qos:
    """A keep-last profile: ``depth`` messages, reliable or best effort, volatile or latched."""

    depth: int
    reliable: bool = True
    latched: bool = False  # transient local: a subscriber that comes late gets the last ``depth`` messages


@dataclass(frozen=True)
class Topic:
    name: str  # relative: resolved in the node's namespace
    msgtype: str  # ROS 2 type name, as bags write it
    qos: Qos  # the publishers' profile, and the subscribers' unless a profile below says otherwise

    @property
    def root_name(self) -> str:
        """The name in the root namespace (``/policy/joint_targets``): as bags and the docs write it."""
        return "/" + self.name


JOINT_TARGETS = Topic("policy/joint_targets", "sensor_msgs/msg/JointState", Qos(10))
# 2 s of ticks at 50 Hz: a reliable keep-last writer overwrites what a stalled reader has not acknowledged,
# and a recorder starved on a busy machine must still get every tick (a replay's recurrent state drifts).
TICK_INPUTS = Topic("policy/tick_inputs", "parkour_interfaces/msg/PolicyTickInputs", Qos(100))
BUNDLE = Topic("policy/bundle", "parkour_interfaces/msg/BundleInfo", Qos(10, latched=True))
DEPTH = Topic("camera/depth/policy", "sensor_msgs/msg/Image", Qos(1))  # a consumer only wants the newest
DEPTH_RAW = Topic("camera/depth/image_raw", "sensor_msgs/msg/Image", Qos(1))
SUPERVISOR_STATE = Topic("supervisor/state", "parkour_interfaces/msg/SupervisorState", Qos(1, latched=True))
TRANSITION = Topic("supervisor/transition", "parkour_interfaces/msg/SupervisorTransition", Qos(100, latched=True))
LOWCMD_DRY_RUN = Topic("supervisor/lowcmd_dry_run", "sensor_msgs/msg/JointState", Qos(10))
JOINT_STATES = Topic("robot/joint_states", "sensor_msgs/msg/JointState", Qos(10))
IMU = Topic("robot/imu", "sensor_msgs/msg/Imu", Qos(10))
REMOTE = Topic("teleop/remote", "sensor_msgs/msg/Joy", Qos(10))
TELEOP_JOY = Topic("teleop/joy", "sensor_msgs/msg/Joy", Qos(10))
# The velocity commands and the joy node's topic are the config's defaults (cmd_vel.*_topic, teleop.joy_topic).
CMD_VEL = Topic("cmd_vel", "geometry_msgs/msg/Twist", Qos(10))
TELEOP_CMD_VEL = Topic("cmd_vel/teleop", "geometry_msgs/msg/Twist", Qos(10))
JOY = Topic("joy", "sensor_msgs/msg/Joy", Qos(10))
DIAGNOSTICS = Topic("diagnostics", "diagnostic_msgs/msg/DiagnosticArray", Qos(10))
# Relative too: each simulated robot has a clock of its own. Its nodes read it through the remap
# CLOCK_REMAP (rclpy's time source subscribes to the absolute /clock).
CLOCK = Topic("clock", "rosgraph_msgs/msg/Clock", Qos(10))
BASE_POSE = Topic("sim/base_pose", "geometry_msgs/msg/PoseStamped", Qos(10))  # simulation ground truth
BAND = Topic("sim/band", "parkour_interfaces/msg/BandState", Qos(1, latched=True))

TOPICS: tuple[Topic, ...] = (JOINT_TARGETS, TICK_INPUTS, BUNDLE, DEPTH, DEPTH_RAW, SUPERVISOR_STATE, TRANSITION,
                             LOWCMD_DRY_RUN, JOINT_STATES, IMU, REMOTE, TELEOP_JOY, CMD_VEL, TELEOP_CMD_VEL, JOY,
                             DIAGNOSTICS, CLOCK, BASE_POSE, BAND)  # fmt: skip

# Profiles of particular ends of a topic.
SIM_CAMERA_QOS = Qos(30)  # the simulated camera keeps 1 s of 20 KB frames: a recorder starved a moment gets each
POLICY_DEPTH_QOS = Qos(10)  # the policy queues frames for its latency gate
STAMP_ONLY_QOS = Qos(1, reliable=False)  # the supervisor reads depth stamps: matches reliable and best-effort cameras

# Services (std_srvs/srv/Trigger), relative like the topics.
SUPERVISOR_REQUESTS = ("stand_up", "activate", "stand", "damp", "estop")


def supervisor_service(request: str) -> str:
    return f"supervisor/{request}"


RELEASE_BAND = "sim/release_band"
HANG_BAND = "sim/hang_band"


def sim_fault_service(fault: str) -> str:
    return f"sim/fault/{fault}"


def policy_fault_service(fault: str) -> str:
    return f"policy/fault/{fault}"


# rclpy's time source subscribes to /clock, absolute: this remap (from, to) makes it the namespace's clock.
CLOCK_REMAP = ("/clock", CLOCK.name)


@dataclass(frozen=True)
class NodeSpec:
    key: str  # the bringup's name for it: its log file, its ready mark, its metrics
    package: str
    executable: str  # the ROS node's name, and the console script of the nodes a graph starts
    module: str  # what the bringup runs with ``python -m``
    modes: tuple[str, ...]  # the graphs that start it: "sim" (parkour sim, sim.launch.py), "robot"


# In start order: the bringup waits for each sim node before it starts the bridge, and on the robot the
# supervisor comes first.
NODES: tuple[NodeSpec, ...] = (
    NodeSpec("supervisor", "parkour_safety", "supervisor_node", "parkour_safety.supervisor_node", ("sim", "robot")),
    NodeSpec("policy", "parkour_control", "policy_node", "parkour_control.policy_node", ("sim", "robot")),
    NodeSpec("script", "parkour_teleop", "script_node", "parkour_teleop.script_node", ("sim",)),
    NodeSpec("depth", "parkour_perception", "depth_node", "parkour_perception.depth_node", ("robot",)),
    NodeSpec("teleop", "parkour_teleop", "teleop_node", "parkour_teleop.teleop_node", ("robot",)),
    NodeSpec("bridge", "parkour_sim", "mujoco_bridge", "parkour_sim.bridge_node", ("sim",)),
    # Tools the bringup adds on request: the bag recorder, a closed-loop replay's depth frames.
    NodeSpec("recorder", "parkour_bringup", "bag_recorder", "parkour_bringup.bag.recorder", ()),
    NodeSpec("depth_player", "parkour_bringup", "depth_player", "parkour_bringup.bag.depth_player", ()),
)


def nodes(mode: str) -> tuple[NodeSpec, ...]:
    """The nodes a ``sim`` or ``robot`` graph starts, in start order."""
    return tuple(n for n in NODES if mode in n.modes)


def node(key: str) -> NodeSpec:
    return next(n for n in NODES if n.key == key)


_NAMESPACE = re.compile(r"^(/[A-Za-z_][A-Za-z0-9_]*)+$")


def namespace(value: str) -> str:
    """A ROS namespace as ``--ros-args -r __ns:=`` takes it: absolute, ``/`` for the root. Raises ValueError."""
    ns = value if value.startswith("/") else "/" + value
    if ns == "/":
        return ns
    if not _NAMESPACE.match(ns.rstrip("/")):
        raise ValueError(f"--namespace {value}: expected names of letters, digits and _ separated by /, e.g. robot1")
    return ns.rstrip("/")


def namespace_args(ns: str) -> list[str]:
    """ROS arguments (after ``--ros-args``) that run a node under namespace ``ns``, on the namespace's clock."""
    if ns == "/":
        return []
    return ["-r", f"__ns:={ns}", "-r", f"{CLOCK_REMAP[0]}:={CLOCK_REMAP[1]}"]
