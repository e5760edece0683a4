import numpy as np
import pytest

from parkour_core.depth import DepthSpec, area_weights, crop_pixels, denormalise_depth, preprocess_depth

NO_CROP = (0.0, 0.0, 0.0, 0.0)
SPEC = DepthSpec(height=2, width=3, near_m=0.0, far_m=2.0, crop=NO_CROP)


def test_identity_size_only_normalises():
    depth = np.array([[0.5, 1.0, 1.5], [2.0, 0.25, 1.75]], dtype=np.float32)
    out = preprocess_depth(depth, SPEC)
    np.testing.assert_allclose(out, depth / 2.0 - 0.5, atol=1e-7)
    assert out.dtype == np.float32


def test_holes_become_far_and_range_is_clipped():
    depth = np.array([[0.0, np.nan, -1.0], [np.inf, 5.0, 1.0]], dtype=np.float32)
    out = preprocess_depth(depth, SPEC)
    # 0, NaN, negative -> far (+0.5); +inf and 5 m -> clipped to far; 1 m -> 0.0
    np.testing.assert_array_equal(out, [[0.5, 0.5, 0.5], [0.5, 0.5, 0.0]])


def test_near_clip_and_offset_range():
    spec = DepthSpec(height=1, width=2, near_m=0.5, far_m=1.5, crop=NO_CROP)
    out = preprocess_depth(np.array([[0.1, 1.0]], dtype=np.float32), spec)
    np.testing.assert_allclose(out, [[-0.5, 0.0]])


def test_area_downsample_by_two_is_block_mean():
    depth = np.array([[0.2, 0.4, 1.0, 1.0], [0.6, 0.8, 1.0, 1.4]], dtype=np.float32)
    spec = DepthSpec(height=1, width=2, near_m=0.0, far_m=2.0, crop=NO_CROP)
    out = preprocess_depth(depth, spec)
    # block means 0.5 and 1.1 m
    np.testing.assert_allclose(out, [[0.5 / 2 - 0.5, 1.1 / 2 - 0.5]], atol=1e-6)


def test_area_weights_fractional_spans():
    # 3 -> 2: output 0 covers [0, 1.5): pixel 0 fully, pixel 1 half -> weights (2/3, 1/3)
    w = area_weights(3, 2)
    np.testing.assert_allclose(w, [[2 / 3, 1 / 3, 0], [0, 1 / 3, 2 / 3]], atol=1e-7)
    # upsampling 1 -> 2 repeats the pixel
    np.testing.assert_allclose(area_weights(1, 2), [[1.0], [1.0]])
    assert np.allclose(area_weights(480, 58).sum(axis=1), 1.0, atol=1e-5)


def test_z16_scale_and_crop():
    # 4x6 z16 frame in millimetres; crop one column left and right (1/6 each), one row top (1/4)
    z16 = np.full((4, 6), 1000, dtype=np.uint16)
    z16[:, 0] = 0  # left band without stereo overlap: must be cropped away, not read as far
    z16[:, 5] = 0
    z16[0, :] = 0
    z16[3, 1:5] = [400, 400, 1600, 1600]
    spec = DepthSpec(height=1, width=2, near_m=0.0, far_m=2.0, crop=(0.25, 0.0, 1 / 6, 1 / 6))
    out = preprocess_depth(z16, spec, depth_scale_m=0.001)
    # kept rows 1..3, cols 1..4: left block mean (1,1,0.4,1,1,0.4)/6 = 0.8 m; right 1.2 m
    np.testing.assert_allclose(out, [[0.8 / 2 - 0.5, 1.2 / 2 - 0.5]], atol=1e-6)


def test_default_policy_size_from_d435_frame():
    frame = np.full((480, 848), 1500, dtype=np.uint16)
    out = preprocess_depth(frame, DepthSpec(crop=(0.0, 0.0, 0.1, 0.0)), depth_scale_m=0.001)
    assert out.shape == (58, 87)
    np.testing.assert_allclose(out, 1.5 / 2 - 0.5, atol=1e-6)


def test_input_untouched_and_out_buffer_used():
    depth = np.array([[0.0, 3.0, 1.0], [1.0, 1.0, 1.0]], dtype=np.float32)
    before = depth.copy()
    buf = np.empty((2, 3), dtype=np.float32)
    result = preprocess_depth(depth, SPEC, out=buf)
    assert result is buf
    np.testing.assert_array_equal(depth, before)


def test_denormalise_inverts():
    depth = np.array([[0.3, 1.2, 1.9], [0.7, 0.1, 1.0]], dtype=np.float32)
    np.testing.assert_allclose(denormalise_depth(preprocess_depth(depth, SPEC), SPEC), depth, atol=1e-6)


def test_crop_pixels_rounds_and_rejects_empty():
    assert crop_pixels((480, 640), (0.0, 0.0, 0.1, 0.05)) == (slice(0, 480), slice(64, 608))
    with pytest.raises(ValueError, match="leaves no pixels"):
        crop_pixels((2, 2), (0.4, 0.4, 0.0, 0.0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"near_m": 2.0, "far_m": 1.0}, "near_m < far_m"),
        ({"height": 0}, "positive"),
        ({"crop": (0.5, 0.5, 0.0, 0.0)}, "crop"),
        ({"crop": (-0.1, 0.0, 0.0, 0.0)}, "crop"),
    ],
)
def test_bad_spec_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DepthSpec(**kwargs)


def test_spec_round_trip_and_unknown_key():
    spec = DepthSpec(near_m=0.1, far_m=3.0, crop=(0.0, 0.02, 0.1, 0.0))
    assert DepthSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(ValueError, match="unknown keys"):
        DepthSpec.from_dict({"blur": 3})


def test_rejects_non_2d():
    with pytest.raises(ValueError, match="2D"):
        preprocess_depth(np.zeros((2, 3, 1)), SPEC)
