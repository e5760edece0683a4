"""The supervisor's messages (parkour_interfaces) to and from the safety core's types.

It publishes ``SupervisorState`` and ``SupervisorTransition`` from the core's modes and transition
records, and reads the policy's ``BundleInfo`` into :class:`BundleGains`. The readers take any object
with the message's fields: the same functions read rclpy's messages in the nodes and rosbags' in a
bag replay.
"""

from __future__ import annotations

from typing import Any

from parkour_core.robots import RobotSpec
from parkour_core.safety import Mode
from parkour_core.stamps import stamp_parts, stamp_seconds
from parkour_core.supervisor_core import BundleGains, TransitionRecord


def state_message(mode: Mode, reason: str, t_s: float):
    """``SupervisorState``: the mode entered at ``t_s`` (the supervisor's clock) and why."""
    from parkour_interfaces.msg import SupervisorState

    msg = SupervisorState(mode=mode.value, reason=reason)
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_parts(t_s)
    return msg


def transition_message(record: TransitionRecord):
    from parkour_interfaces.msg import SupervisorTransition

    msg = SupervisorTransition(from_mode=record.from_mode.value, to_mode=record.to_mode.value, reason=record.reason)
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_parts(record.t)
    return msg


def transition_from_message(msg: Any) -> dict[str, Any]:
    """A ``SupervisorTransition`` as the core reports transitions: {"t", "from", "to", "reason"}."""
    t = stamp_seconds(msg.header.stamp.sec, msg.header.stamp.nanosec)
    return {"t": round(t, 4), "from": str(msg.from_mode), "to": str(msg.to_mode), "reason": str(msg.reason)}


def bundle_gains_from_message(msg: Any, spec: RobotSpec) -> BundleGains:
    """The gains of a ``BundleInfo``; ValueError, saying what is wrong, for one the supervisor must not use."""
    name = str(msg.name)
    if not name:
        raise ValueError("the bundle's name is empty")
    names = tuple(msg.joint_names)
    if names != spec.joint_names:
        raise ValueError(f"bundle {name!r}: its gains name {len(names)} joints, not the {spec.name}'s joints in order")
    return BundleGains.make(name, msg.kp, msg.kd, bool(msg.uses_depth), spec.num_joints)
