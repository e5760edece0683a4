"""The training noise model: statistics with a fixed seed, holes, determinism, batches."""

import numpy as np
import pytest

from parkour_core.depth import DepthSpec, preprocess_depth
from parkour_sim.depth_camera import DepthNoise, add_depth_noise, depth_to_z16, make_depth_frame

SHAPE = (58, 87)


def _frames(n: int, metres: float = 1.5) -> np.ndarray:
    return np.full((n, *SHAPE), metres, dtype=np.float32)


def test_offset_is_one_value_per_frame_within_bounds():
    clean = _frames(400)
    noisy = add_depth_noise(clean, DepthNoise(0.03, 0.0, 0.0), np.random.default_rng(0))
    offsets = (noisy - clean).reshape(400, -1)
    # Without pixel noise every pixel of a frame moves by the same amount.
    np.testing.assert_allclose(offsets, offsets[:, :1].repeat(offsets.shape[1], axis=1), atol=1e-6)
    per_frame = offsets[:, 0]
    assert np.abs(per_frame).max() <= 0.03 + 1e-6
    # Uniform over [-3, 3] cm: it reaches near both ends and its spread is 0.03 / sqrt(3).
    assert per_frame.min() < -0.028 and per_frame.max() > 0.028
    assert per_frame.std() == pytest.approx(0.03 / np.sqrt(3), rel=0.1)


def test_pixel_noise_sigma_matches_the_config():
    clean = _frames(50)
    noisy = add_depth_noise(clean, DepthNoise(0.0, 0.02, 0.0), np.random.default_rng(1))
    residual = noisy - clean
    assert residual.std() == pytest.approx(0.02, rel=0.02)
    assert abs(residual.mean()) < 0.001


def test_hole_fraction_matches_the_config_and_holes_read_zero():
    clean = _frames(50)
    noisy = add_depth_noise(clean, DepthNoise(0.03, 0.03, 0.05), np.random.default_rng(2))
    holes = noisy == 0.0
    assert holes.mean() == pytest.approx(0.05, abs=0.003)
    assert np.all(noisy[~holes] > 0.0)


def test_existing_holes_stay_holes_and_noise_never_goes_negative():
    clean = np.full(SHAPE, 0.02, dtype=np.float32)
    clean[:, :10] = 0.0  # a miss: nothing in range
    noisy = add_depth_noise(clean, DepthNoise(0.0, 0.05, 0.0), np.random.default_rng(3))
    assert np.all(noisy[:, :10] == 0.0)
    assert noisy.min() >= 0.0
    assert (noisy[:, 10:] == 0.0).mean() > 0.2  # 2 cm with 5 cm sigma: many pixels pushed to <= 0


def test_same_seed_same_noise_other_seed_other_noise():
    clean = _frames(2)
    noise = DepthNoise(0.03, 0.03, 0.01)
    a = add_depth_noise(clean, noise, np.random.default_rng(7))
    b = add_depth_noise(clean, noise, np.random.default_rng(7))
    c = add_depth_noise(clean, noise, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert add_depth_noise(clean[0], noise, np.random.default_rng(7)).shape == SHAPE  # one frame works too


def test_input_is_not_modified():
    clean = _frames(1)
    before = clean.copy()
    add_depth_noise(clean, DepthNoise(), np.random.default_rng(0))
    np.testing.assert_array_equal(clean, before)


def test_bad_noise_settings_are_refused():
    with pytest.raises(ValueError):
        DepthNoise(hole_fraction=1.5)
    with pytest.raises(ValueError):
        DepthNoise(noise_sigma_m=-0.01)


def test_frame_policy_image_is_preprocess_of_the_noisy_metres():
    spec = DepthSpec()
    clean = np.linspace(0.3, 3.0, SHAPE[0] * SHAPE[1], dtype=np.float32).reshape(SHAPE)
    frame = make_depth_frame(clean, 1.25, DepthNoise(), spec, np.random.default_rng(4))
    np.testing.assert_array_equal(frame.policy, preprocess_depth(frame.metres, spec))
    assert frame.exposure_s == 1.25
    assert not np.array_equal(frame.metres, clean)


def test_z16_is_millimetres_with_holes_kept():
    z16 = depth_to_z16(np.array([[0.0, 1.2344, 1.2346, 70.0, np.nan]], dtype=np.float32))
    assert z16.dtype == np.uint16
    np.testing.assert_array_equal(z16, [[0, 1234, 1235, 65535, 0]])
