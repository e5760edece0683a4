"""The policy node's messages carry a tick's inputs and a bundle's gains exactly, to rclpy and to bags alike."""

import shutil

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message

from parkour_control.messages import bundle_info_message, tick_inputs_from_message, tick_inputs_message
from parkour_core.bundle import MANIFEST_SEAL, load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.tick_inputs import TickInputs
from parkour_interfaces.msg import BundleInfo, PolicyTickInputs

TYPE = "parkour_interfaces/msg/PolicyTickInputs"


def _inputs(depth_stamp_s=11.96, joints=29, seed=1) -> TickInputs:
    rng = np.random.default_rng(seed)
    return TickInputs(12, 345, True, depth_stamp_s, rng.normal(size=3), rng.normal(size=4), rng.normal(size=3),
                      rng.normal(size=joints), rng.normal(size=joints))  # fmt: skip


def _assert_same(back: TickInputs, inputs: TickInputs) -> None:
    assert (back.stamp_sec, back.stamp_nanosec, back.reset) == (inputs.stamp_sec, inputs.stamp_nanosec, inputs.reset)
    assert back.depth_stamp_s == inputs.depth_stamp_s  # the same float: a replay finds the frame by it
    for name in ("command", "quat_wxyz", "gyro", "q", "dq"):
        np.testing.assert_array_equal(getattr(back, name), getattr(inputs, name))


def test_tick_inputs_round_trip_exactly_through_the_wire_and_a_bag_reader():
    from parkour_bringup.bag.typestore import stack_typestore

    inputs = _inputs()
    raw = serialize_message(tick_inputs_message(inputs, "student"))
    live = deserialize_message(raw, PolicyTickInputs)
    assert live.header.frame_id == "student" and live.has_depth_frame and live.reset
    assert (live.command.linear.x, live.command.linear.y, live.command.angular.z) == tuple(inputs.command)
    assert live.orientation.w == inputs.quat_wxyz[0] and live.angular_velocity.z == inputs.gyro[2]
    _assert_same(tick_inputs_from_message(live), inputs)
    _assert_same(tick_inputs_from_message(stack_typestore().deserialize_cdr(bytes(raw), TYPE)), inputs)


def test_a_tick_before_the_first_depth_frame_says_so():
    msg = tick_inputs_message(_inputs(depth_stamp_s=None, joints=2), "g1_walk")
    assert not msg.has_depth_frame
    assert tick_inputs_from_message(msg).depth_stamp_s is None


def test_the_depth_frame_keeps_its_header_stamp_on_wall_clock_time():
    """A wall-clock stamp as a float is coarser than a nanosecond: the frame's own stamp is carried."""
    t = 1_760_000_000 + 123_456_789 * 1e-9
    msg = tick_inputs_message(_inputs(depth_stamp_s=t, joints=2), "b", depth_stamp=(1_760_000_000, 123_456_789))
    assert (msg.depth_frame_stamp.sec, msg.depth_frame_stamp.nanosec) == (1_760_000_000, 123_456_789)
    assert tick_inputs_from_message(msg).depth_stamp_s == t
    recovered = tick_inputs_message(_inputs(depth_stamp_s=t, joints=2), "b")  # without it: the same float
    assert tick_inputs_from_message(recovered).depth_stamp_s == t


def test_joint_positions_and_velocities_that_do_not_pair_up_are_refused():
    msg = tick_inputs_message(_inputs(joints=3), "b")
    msg.velocity = msg.velocity[:2]
    with pytest.raises(ValueError, match="3 joint positions and 2 velocities"):
        tick_inputs_from_message(msg)


def test_a_bundle_is_announced_with_its_joints_and_gains():
    bundle = load_bundle(resolve_bundle("g1_walk"))
    msg = deserialize_message(serialize_message(bundle_info_message(bundle)), BundleInfo)
    m = bundle.manifest
    assert (msg.name, msg.path, msg.uses_depth) == (m.name, str(bundle.path), m.uses_depth)
    assert tuple(msg.joint_names) == m.joint_names
    assert tuple(msg.kp) == m.kp and tuple(msg.kd) == m.kd
    assert msg.manifest_verified is True  # g1_walk is sealed


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "unsealed"])
def test_the_announcement_says_whether_the_manifest_is_sealed_to_rclpy_and_to_a_bag_reader(tmp_path, sealed):
    from parkour_bringup.bag.typestore import stack_typestore

    copy = tmp_path / "g1_walk"
    shutil.copytree(resolve_bundle("g1_walk"), copy)
    if not sealed:
        (copy / MANIFEST_SEAL).unlink()
    bundle = load_bundle(copy)
    assert bundle.manifest_verified is sealed
    raw = serialize_message(bundle_info_message(bundle))
    assert deserialize_message(raw, BundleInfo).manifest_verified is sealed
    recorded = stack_typestore().deserialize_cdr(bytes(raw), "parkour_interfaces/msg/BundleInfo")
    assert recorded.manifest_verified is sealed and recorded.name == bundle.manifest.name
