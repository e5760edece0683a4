import numpy as np

from training.motion_matching import quat
from training.motion_matching.features import DIMS, clip_features, fit_normalizer, horizon_frames


def _walk(n=200, fps=50.0, speed=1.0, yaw=0.7):
    t = np.arange(n) / fps
    d = np.array([np.cos(yaw), np.sin(yaw)])
    root = np.stack([speed * t * d[0], speed * t * d[1], np.full(n, 0.79)], axis=1)
    q = np.tile(quat.from_yaw(yaw), (n, 1))
    local = np.array([[0.0, 0.1, -0.75], [0.0, -0.1, -0.75]])
    feet = root[:, None, :] + quat.rotate(np.broadcast_to(q[:, None, :], (n, 2, 4)), np.broadcast_to(local, (n, 2, 3)))
    return root, q, feet


def test_feature_layout_in_the_character_frame():
    root, q, feet = _walk()
    f, valid = clip_features(root, q, feet, 50.0)
    assert f.shape == (200, DIMS) == (200, 27)
    assert horizon_frames(50.0) == [16, 34, 50]  # 0.33, 0.67, 1.0 s
    k = 10
    # straight ahead at 1 m/s whatever the world yaw: x = distance, y = 0, heading (1, 0)
    np.testing.assert_allclose(f[k, 0:12:4], [16 / 50, 34 / 50, 1.0], atol=1e-9)
    np.testing.assert_allclose(f[k, 1:12:4], 0.0, atol=1e-9)
    np.testing.assert_allclose(f[k, 2:12:4], 1.0, atol=1e-9)
    # feet: left at +y in the character frame; velocities forward at 1 m/s
    np.testing.assert_allclose(f[k, 12:18], [0.0, 0.1, -0.75, 0.0, -0.1, -0.75], atol=1e-9)
    np.testing.assert_allclose(f[k, 18:24], [1.0, 0, 0, 1.0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(f[k, 24:27], [1.0, 0, 0], atol=1e-9)
    # the last second has no full future
    assert valid[:150].all() and not valid[151:].any()


def test_normalisation_is_per_dimension():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5000, 27)) * np.linspace(0.1, 10, 27) + np.arange(27)
    norm = fit_normalizer(
        x,
        weights={
            k: 1.0
            for k in ("trajectory_position", "trajectory_heading", "foot_position", "foot_velocity", "root_velocity")
        },
    )
    z = norm(x)
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(z.std(axis=0), 1.0, atol=1e-9)
    # a constant dimension does not divide by zero
    x[:, 5] = 3.0
    assert np.isfinite(fit_normalizer(x)(x)).all()
