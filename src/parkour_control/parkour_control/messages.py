"""The policy node's own messages (parkour_interfaces) to and from the stack's types.

``PolicyTickInputs`` carries a :class:`parkour_core.tick_inputs.TickInputs`, ``BundleInfo`` what the
supervisor needs to run a bundle's targets, and whether the bundle's manifest is sealed. The readers take
any object with the message's fields: the same functions read rclpy's messages in the nodes and rosbags'
in a bag replay.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from parkour_core.bundle import Bundle
from parkour_core.interfaces import TICK_INPUTS
from parkour_core.stamps import stamp_parts, stamp_seconds
from parkour_core.tick_inputs import TickInputs


def _float64s(values: Any) -> array:
    """An rclpy ``float64[]`` field's value: array('d') is taken as it is, without a check per element."""
    return array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def tick_inputs_message(inputs: TickInputs, bundle_name: str, depth_stamp: tuple[int, int] | None = None):
    """The ``PolicyTickInputs`` of one tick. ``depth_stamp``: the (sec, nanosec) of the frame behind the
    tick as its header had them (else they are recovered from ``inputs.depth_stamp_s``)."""
    from parkour_interfaces.msg import PolicyTickInputs

    msg = PolicyTickInputs()
    msg.header.stamp.sec, msg.header.stamp.nanosec = inputs.stamp_sec, inputs.stamp_nanosec
    msg.header.frame_id = bundle_name
    msg.reset = bool(inputs.reset)
    if inputs.depth_stamp_s is not None:
        msg.has_depth_frame = True
        sec, nanosec = depth_stamp if depth_stamp is not None else stamp_parts(inputs.depth_stamp_s)
        msg.depth_frame_stamp.sec, msg.depth_frame_stamp.nanosec = sec, nanosec
    vx, vy, yaw_rate = (float(v) for v in inputs.command)
    msg.command.linear.x, msg.command.linear.y, msg.command.angular.z = vx, vy, yaw_rate
    w, x, y, z = (float(v) for v in inputs.quat_wxyz)
    msg.orientation.w, msg.orientation.x, msg.orientation.y, msg.orientation.z = w, x, y, z
    gx, gy, gz = (float(v) for v in inputs.gyro)
    msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = gx, gy, gz
    msg.position = _float64s(inputs.q)
    msg.velocity = _float64s(inputs.dq)
    return msg


def tick_inputs_from_message(msg: Any) -> TickInputs:
    """A ``PolicyTickInputs`` (rclpy's or rosbags') as the replay's :class:`TickInputs`; ValueError if its
    joint positions and velocities do not pair up."""
    q = np.array(msg.position, dtype=np.float64)
    dq = np.array(msg.velocity, dtype=np.float64)
    if q.size == 0 or q.shape != dq.shape:
        raise ValueError(f"a {TICK_INPUTS.name} message has {q.size} joint positions and {dq.size} velocities")
    frame = msg.depth_frame_stamp
    c, o, g = msg.command, msg.orientation, msg.angular_velocity
    return TickInputs(
        stamp_sec=int(msg.header.stamp.sec),
        stamp_nanosec=int(msg.header.stamp.nanosec),
        reset=bool(msg.reset),
        depth_stamp_s=stamp_seconds(frame.sec, frame.nanosec) if msg.has_depth_frame else None,
        command=np.array([c.linear.x, c.linear.y, c.angular.z], dtype=np.float64),
        quat_wxyz=np.array([o.w, o.x, o.y, o.z], dtype=np.float64),
        gyro=np.array([g.x, g.y, g.z], dtype=np.float64),
        q=q,
        dq=dq,
    )


def bundle_info_message(bundle: Bundle, stamp: Any = None):
    """The ``BundleInfo`` that announces ``bundle`` on /policy/bundle; ``stamp``: a builtin_interfaces Time."""
    from parkour_interfaces.msg import BundleInfo

    m = bundle.manifest
    msg = BundleInfo()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.name = m.name
    msg.path = str(bundle.path)
    msg.joint_names = list(m.joint_names)
    msg.kp = _float64s(m.kp)
    msg.kd = _float64s(m.kd)
    msg.uses_depth = bool(m.uses_depth)
    msg.manifest_verified = bool(bundle.manifest_verified)
    return msg
