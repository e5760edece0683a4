"""What a stack bag holds: the recorded topics, their types and QoS, and the policy's per-tick inputs.

The topics are those of :mod:`parkour_core.interfaces`. A bag names them as the graph that recorded
them did: under its namespace (``/robot1/policy/joint_targets``), which the bag's ``custom_data``
keeps as ``namespace``; the readers see every bag's topics by their root names
(``/policy/joint_targets``, the constants here), so bags from any namespace, and bags from before
namespaces, read alike. ``/policy/tick_inputs`` holds exactly what the runner consumed on each tick,
so a replay through the same bundle reproduces the recorded targets bit for bit. Bags recorded
before the stack had its own types hold std_msgs on five topics (:mod:`.legacy`).
"""

from __future__ import annotations

from dataclasses import dataclass

from parkour_core import interfaces

# Seconds as the nodes compute them from a header stamp (the same float, so stamps match exactly).
from parkour_core.stamps import stamp_seconds as stamp_s  # noqa: F401 - re-exported for the bag readers
from parkour_core.tick_inputs import TickInputs  # noqa: F401 - re-exported: the bag's view of the policy's tick inputs

TICK_INPUTS_TOPIC = interfaces.TICK_INPUTS.root_name
TARGETS_TOPIC = interfaces.JOINT_TARGETS.root_name
BUNDLE_TOPIC = interfaces.BUNDLE.root_name
DEPTH_TOPIC = interfaces.DEPTH.root_name
JOINT_STATES_TOPIC = interfaces.JOINT_STATES.root_name
CMD_VEL_TOPIC = interfaces.CMD_VEL.root_name
TELEOP_CMD_VEL_TOPIC = interfaces.TELEOP_CMD_VEL.root_name
STATE_TOPIC = interfaces.SUPERVISOR_STATE.root_name
TRANSITION_TOPIC = interfaces.TRANSITION.root_name
JOY_TOPIC = interfaces.TELEOP_JOY.root_name
BASE_POSE_TOPIC = interfaces.BASE_POSE.root_name
BAND_TOPIC = interfaces.BAND.root_name


@dataclass(frozen=True)
class RecordedTopic:
    topic: str  # the root name
    msgtype: str  # ROS 2 type name, as rosbag2 writes it
    latched: bool = False  # transient-local publishers: subscribe the same way to get their last message

    @property
    def name(self) -> str:
        """The relative name the recorder subscribes to, in its namespace."""
        return self.topic.lstrip("/")


def _recorded(topic: interfaces.Topic) -> RecordedTopic:
    return RecordedTopic(topic.root_name, topic.msgtype, topic.qos.latched)


def in_namespace(root_name: str, namespace: str) -> str:
    """``/policy/bundle`` as a graph under ``namespace`` names it (``/robot1/policy/bundle``)."""
    return root_name if namespace in ("", "/") else namespace.rstrip("/") + root_name


def root_name(topic: str, namespace: str) -> str:
    """The inverse of :func:`in_namespace`; a topic outside the namespace keeps its name."""
    prefix = namespace.rstrip("/")
    return topic[len(prefix) :] if prefix and topic.startswith(prefix + "/") else topic


RECORDED_TOPICS: tuple[RecordedTopic, ...] = tuple(
    _recorded(t)
    for t in (
        interfaces.JOINT_STATES,
        interfaces.IMU,
        interfaces.JOINT_TARGETS,
        interfaces.TICK_INPUTS,
        interfaces.BUNDLE,
        interfaces.CMD_VEL,
        interfaces.TELEOP_CMD_VEL,
        interfaces.SUPERVISOR_STATE,
        interfaces.TRANSITION,
        interfaces.LOWCMD_DRY_RUN,
        interfaces.DEPTH,
        interfaces.TELEOP_JOY,
        interfaces.DIAGNOSTICS,
        # Simulation ground truth (the bridge only): what a closed-loop replay compares against.
        interfaces.BASE_POSE,
        interfaces.BAND,
        # Not the clock: at 500 Hz it would take the recorder more CPU than everything else recorded
        # together, and every recorded message already carries its sim-time stamp.
    )
)
