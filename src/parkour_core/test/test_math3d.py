from __future__ import annotations

import numpy as np
import pytest

from parkour_core.math3d import projected_gravity, rotate_inverse, tilt_rad, yaw_of


def quat_axis_angle(axis, angle: float) -> np.ndarray:
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def rotation_matrix(quat_wxyz) -> np.ndarray:
    w, x, y, z = quat_wxyz
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_projected_gravity_identity_is_down():
    np.testing.assert_allclose(projected_gravity(np.array([1.0, 0, 0, 0])), [0.0, 0.0, -1.0], atol=1e-12)


def test_projected_gravity_pitch_90_deg_nose_down():
    # Pitch +90 deg about body y: the body x axis points along world -z, so gravity lies along body +x.
    g = projected_gravity(quat_axis_angle([0, 1, 0], np.pi / 2))
    np.testing.assert_allclose(g, [1.0, 0.0, 0.0], atol=1e-12)


def test_projected_gravity_pitch_minus_90_and_roll_90():
    np.testing.assert_allclose(projected_gravity(quat_axis_angle([0, 1, 0], -np.pi / 2)), [-1.0, 0, 0], atol=1e-12)
    # Roll +90 deg about body x: body y points up, so gravity lies along body -y.
    np.testing.assert_allclose(projected_gravity(quat_axis_angle([1, 0, 0], np.pi / 2)), [0, -1.0, 0], atol=1e-12)


def test_projected_gravity_is_unaffected_by_yaw():
    np.testing.assert_allclose(projected_gravity(quat_axis_angle([0, 0, 1], 1.3)), [0, 0, -1.0], atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_rotate_inverse_matches_transposed_rotation_matrix(seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    v = rng.normal(size=3)
    np.testing.assert_allclose(rotate_inverse(q, v), rotation_matrix(q).T @ v, atol=1e-12)


def test_tilt_rad_identity_is_zero():
    assert tilt_rad(np.array([1.0, 0, 0, 0])) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("angle", [0.1, 0.5, 1.0, np.pi / 2, 2.5])
def test_tilt_rad_equals_roll_or_pitch_angle(angle):
    assert tilt_rad(quat_axis_angle([0, 1, 0], angle)) == pytest.approx(angle, abs=1e-9)
    assert tilt_rad(quat_axis_angle([1, 0, 0], -angle)) == pytest.approx(angle, abs=1e-9)
    # Yaw does not tilt (arccos near 1 resolves only ~sqrt(eps) = 1.5e-8 rad).
    assert tilt_rad(quat_axis_angle([0, 0, 1], angle)) == pytest.approx(0.0, abs=1e-7)


def test_yaw_of():
    assert yaw_of(quat_axis_angle([0, 0, 1], 0.7)) == pytest.approx(0.7, abs=1e-12)
    assert yaw_of(np.array([1.0, 0, 0, 0])) == pytest.approx(0.0, abs=1e-12)
