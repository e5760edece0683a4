"""Depth images as the bridge publishes them: encodings, stamps and bytes a subscriber decodes."""

import numpy as np
import pytest
from sensor_msgs.msg import Image

from parkour_core.depth import DepthSpec
from parkour_sim.bridge_node import DEPTH_FRAME_ID, fill_image, save_depth_frames, stamp_parts
from parkour_sim.depth_camera import DepthFrame


def _decode(msg: Image) -> np.ndarray:
    dtype = {"32FC1": "<f4", "16UC1": "<u2"}[msg.encoding]
    return np.frombuffer(bytes(msg.data), dtype=dtype).reshape(msg.height, msg.width)


def test_policy_image_is_32fc1_stamped_with_the_exposure_time():
    image = np.linspace(-0.5, 0.5, 58 * 87, dtype=np.float32).reshape(58, 87)
    msg = fill_image(Image(), image, 12.345678901)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 345678901)
    assert msg.header.frame_id == DEPTH_FRAME_ID == "camera_depth_optical_frame"
    assert (msg.encoding, msg.height, msg.width, msg.step, msg.is_bigendian) == ("32FC1", 58, 87, 87 * 4, 0)
    np.testing.assert_array_equal(_decode(msg), image)


def test_stamps_carry_a_rounded_up_fraction_into_the_seconds():
    # 1500 steps of 2 ms in floating point fall just short of 3 s; the stamp must read 3 s, not 2 s.
    t = sum([0.002] * 1500)
    assert t != 3.0 and abs(t - 3.0) < 1e-9
    assert stamp_parts(t) == (3, 0)
    assert stamp_parts(2.5) == (2, 500_000_000)
    assert stamp_parts(0.0) == (0, 0)
    msg = fill_image(Image(), np.zeros((2, 2), dtype=np.float32), t)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (3, 0)


def test_raw_image_is_16uc1_millimetres():
    mm = np.array([[0, 1234], [65535, 7]], dtype=np.uint16)
    msg = fill_image(Image(), mm, 0.5)
    assert (msg.encoding, msg.step) == ("16UC1", 4)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (0, 500_000_000)
    np.testing.assert_array_equal(_decode(msg), mm)


def test_other_images_are_refused():
    with pytest.raises(ValueError, match="float32 or uint16"):
        fill_image(Image(), np.zeros((2, 2), dtype=np.float64), 0.0)
    with pytest.raises(ValueError):
        fill_image(Image(), np.zeros((2, 2, 3), dtype=np.float32), 0.0)


def test_kept_frames_round_trip_for_the_report(tmp_path):
    spec = DepthSpec()
    frames = [
        DepthFrame(t, np.full((58, 87), t, dtype=np.float32), np.full((58, 87), -t, dtype=np.float32))
        for t in (0.0, 1.5)
    ]
    save_depth_frames(tmp_path / "f.npz", frames, spec)
    with np.load(tmp_path / "f.npz") as z:
        np.testing.assert_array_equal(z["exposure_s"], [0.0, 1.5])
        assert z["metres"].shape == (2, 58, 87) and z["policy"][1, 0, 0] == -1.5
        assert float(z["far_m"]) == spec.far_m
