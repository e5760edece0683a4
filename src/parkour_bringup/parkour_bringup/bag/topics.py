"""What a stack bag holds: the recorded topics, their types and QoS, and the policy's per-tick inputs.

``/policy/tick_inputs`` (std_msgs/Float64MultiArray) is published by the policy node right before
each ``/policy/joint_targets``; it holds exactly what the runner consumed on that tick, so a replay
through the same bundle reproduces the recorded targets bit for bit instead of guessing which
joint state, command and depth frame the tick saw.
"""

from __future__ import annotations

from dataclasses import dataclass

from parkour_core.tick_inputs import (  # noqa: F401 - re-exported: the bag's view of the policy's tick inputs
    FIXED_LEN,
    HEADER_LEN,
    TICK_INPUTS_LAYOUT,
    TICK_INPUTS_TOPIC,
    TickInputs,
    decode_tick_inputs,
    encode_tick_inputs,
)

TARGETS_TOPIC = "/policy/joint_targets"
BUNDLE_TOPIC = "/policy/bundle"
DEPTH_TOPIC = "/camera/depth/policy"
JOINT_STATES_TOPIC = "/robot/joint_states"
CMD_VEL_TOPIC = "/cmd_vel"
TELEOP_CMD_VEL_TOPIC = "/cmd_vel/teleop"
TRANSITION_TOPIC = "/supervisor/transition"
JOY_TOPIC = "/teleop/joy"
BASE_POSE_TOPIC = "/sim/base_pose"
BAND_TOPIC = "/sim/band"


@dataclass(frozen=True)
class RecordedTopic:
    topic: str
    msgtype: str  # ROS 2 type name, as rosbag2 writes it
    latched: bool = False  # transient-local publishers: subscribe the same way to get their last message


RECORDED_TOPICS: tuple[RecordedTopic, ...] = (
    RecordedTopic(JOINT_STATES_TOPIC, "sensor_msgs/msg/JointState"),
    RecordedTopic("/robot/imu", "sensor_msgs/msg/Imu"),
    RecordedTopic(TARGETS_TOPIC, "sensor_msgs/msg/JointState"),
    RecordedTopic(TICK_INPUTS_TOPIC, "std_msgs/msg/Float64MultiArray"),
    RecordedTopic(BUNDLE_TOPIC, "std_msgs/msg/String", latched=True),
    RecordedTopic(CMD_VEL_TOPIC, "geometry_msgs/msg/Twist"),
    RecordedTopic(TELEOP_CMD_VEL_TOPIC, "geometry_msgs/msg/Twist"),
    RecordedTopic("/supervisor/state", "std_msgs/msg/String", latched=True),
    RecordedTopic(TRANSITION_TOPIC, "std_msgs/msg/String", latched=True),
    RecordedTopic("/supervisor/lowcmd_dry_run", "sensor_msgs/msg/JointState"),
    RecordedTopic(DEPTH_TOPIC, "sensor_msgs/msg/Image"),
    RecordedTopic(JOY_TOPIC, "sensor_msgs/msg/Joy"),
    RecordedTopic("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray"),
    # Simulation ground truth (the bridge only): what a closed-loop replay compares against.
    RecordedTopic(BASE_POSE_TOPIC, "geometry_msgs/msg/PoseStamped"),
    RecordedTopic(BAND_TOPIC, "std_msgs/msg/String", latched=True),
    # Not /clock: at 500 Hz it would take the recorder more CPU than everything else recorded together,
    # and every recorded message already carries its sim-time stamp.
)


def stamp_s(sec: int, nanosec: int) -> float:
    """Seconds as the nodes compute them from a header stamp (the same float, so stamps match exactly)."""
    return sec + nanosec * 1e-9
