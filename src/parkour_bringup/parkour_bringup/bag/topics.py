"""What a stack bag holds: the recorded topics, their types and QoS, and the policy's per-tick inputs.

``/policy/tick_inputs`` (parkour_interfaces/PolicyTickInputs) is published by the policy node right
before each ``/policy/joint_targets``; it holds exactly what the runner consumed on that tick, so a
replay through the same bundle reproduces the recorded targets bit for bit instead of guessing which
joint state, command and depth frame the tick saw. The types here are what a bag records today; bags
recorded before the stack had its own types hold std_msgs on five topics (:mod:`.legacy`).
"""

from __future__ import annotations

from dataclasses import dataclass

# Seconds as the nodes compute them from a header stamp (the same float, so stamps match exactly).
from parkour_core.stamps import stamp_seconds as stamp_s  # noqa: F401 - re-exported for the bag readers
from parkour_core.tick_inputs import (  # noqa: F401 - re-exported: the bag's view of the policy's tick inputs
    TICK_INPUTS_TOPIC,
    TickInputs,
)

TARGETS_TOPIC = "/policy/joint_targets"
BUNDLE_TOPIC = "/policy/bundle"
DEPTH_TOPIC = "/camera/depth/policy"
JOINT_STATES_TOPIC = "/robot/joint_states"
CMD_VEL_TOPIC = "/cmd_vel"
TELEOP_CMD_VEL_TOPIC = "/cmd_vel/teleop"
STATE_TOPIC = "/supervisor/state"
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
    RecordedTopic(TICK_INPUTS_TOPIC, "parkour_interfaces/msg/PolicyTickInputs"),
    RecordedTopic(BUNDLE_TOPIC, "parkour_interfaces/msg/BundleInfo", latched=True),
    RecordedTopic(CMD_VEL_TOPIC, "geometry_msgs/msg/Twist"),
    RecordedTopic(TELEOP_CMD_VEL_TOPIC, "geometry_msgs/msg/Twist"),
    RecordedTopic(STATE_TOPIC, "parkour_interfaces/msg/SupervisorState", latched=True),
    RecordedTopic(TRANSITION_TOPIC, "parkour_interfaces/msg/SupervisorTransition", latched=True),
    RecordedTopic("/supervisor/lowcmd_dry_run", "sensor_msgs/msg/JointState"),
    RecordedTopic(DEPTH_TOPIC, "sensor_msgs/msg/Image"),
    RecordedTopic(JOY_TOPIC, "sensor_msgs/msg/Joy"),
    RecordedTopic("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray"),
    # Simulation ground truth (the bridge only): what a closed-loop replay compares against.
    RecordedTopic(BASE_POSE_TOPIC, "geometry_msgs/msg/PoseStamped"),
    RecordedTopic(BAND_TOPIC, "parkour_interfaces/msg/BandState", latched=True),
    # Not /clock: at 500 Hz it would take the recorder more CPU than everything else recorded together,
    # and every recorded message already carries its sim-time stamp.
)
