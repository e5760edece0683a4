"""The supervisor's messages: its mode and transitions out, a bundle's gains in, refused with the reason."""

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message

from parkour_core.robots import G1
from parkour_core.safety import Mode
from parkour_core.supervisor_core import TransitionRecord
from parkour_interfaces.msg import BundleInfo, SupervisorState, SupervisorTransition
from parkour_safety.messages import (
    bundle_gains_from_message,
    state_message,
    transition_from_message,
    transition_message,
)

N = G1.num_joints


def test_the_state_names_the_mode_when_and_why():
    msg = deserialize_message(serialize_message(state_message(Mode.ACTIVE, "activate requested", 6.5)), SupervisorState)
    assert (msg.mode, msg.reason) == (SupervisorState.ACTIVE, "activate requested")
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (6, 500_000_000)


def test_a_transition_reads_back_as_the_core_reports_it():
    record = TransitionRecord(12.34567, Mode.STAND, Mode.ACTIVE, "activate requested")
    msg = deserialize_message(serialize_message(transition_message(record)), SupervisorTransition)
    assert (msg.from_mode, msg.to_mode, msg.reason) == ("STAND", "ACTIVE", "activate requested")
    assert transition_from_message(msg) == record.to_dict()


def announcement(**changes) -> BundleInfo:
    fields = {"name": "student", "path": "/models/student", "joint_names": list(G1.joint_names),
              "kp": [60.0] * N, "kd": [2.0] * N, "uses_depth": True} | changes  # fmt: skip
    return BundleInfo(**fields)


def test_an_announcement_gives_read_only_gains():
    gains = bundle_gains_from_message(announcement(), G1)
    assert gains.name == "student" and gains.uses_depth is True
    np.testing.assert_array_equal(gains.kp, np.full(N, 60.0))
    with pytest.raises(ValueError):
        gains.kp[0] = 1.0  # read-only, like the robot spec's arrays


@pytest.mark.parametrize(
    "changes,match",
    [
        ({"name": ""}, "^the bundle's name is empty$"),
        ({"joint_names": list(G1.joint_names)[::-1]}, "not the g1's joints in order"),
        ({"joint_names": list(G1.joint_names)[:-1]}, "its gains name 28 joints"),
        ({"kp": [60.0] * (N - 1)}, "kp has 28 values for 29 joints"),
        ({"kd": [-1.0] * N}, "kd must be finite and >= 0"),
        ({"kp": [float("nan")] + [60.0] * (N - 1)}, "kp must be finite"),
    ],
)
def test_an_announcement_the_supervisor_must_not_use_is_refused_with_the_reason(changes, match):
    with pytest.raises(ValueError, match=match):
        bundle_gains_from_message(announcement(**changes), G1)
