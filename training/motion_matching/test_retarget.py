import numpy as np
import pytest

from training.motion_matching import data
from training.motion_matching.kinematics import joint_limits
from training.motion_matching.retarget import CLEARANCE_M, L_FOOT, L_HAND, L_TOE, resample, retarget, surface_targets
from training.motion_matching.terrain import Boxes

CLIMB = (
    "holosoma_retargeting:holosoma_retargeting/demo_data/climb/"
    "mocap_climb_seq_3/mocap_climb_seq_3_joint_positions_f200-2600.npy"
)


def test_resample_is_linear():
    x = np.arange(13, dtype=float)[:, None]  # 0.1 s at 120 fps
    y = resample(x, 120.0, 50.0)
    np.testing.assert_allclose(y[:, 0], np.arange(6) * 120 / 50)


def test_retarget_climb_mocap_stays_in_g1_limits():
    human = data.load_mocap(CLIMB)[240:480]  # 2-4 s: stepping onto the box
    res = retarget(human, 120.0, 50.0, 1.32 / 1.78)
    lo, hi = joint_limits()
    assert res.joint_pos.shape == (100, 29)
    assert np.all(res.joint_pos >= lo - 1e-9) and np.all(res.joint_pos <= hi + 1e-9)
    np.testing.assert_allclose(np.linalg.norm(res.root_quat, axis=1), 1.0, atol=1e-9)
    assert float(np.median(res.keypoint_error_m)) < 0.08  # human and G1 proportions differ by a few cm
    # smooth: no joint moves more than 20 rad/s between frames
    assert np.abs(np.diff(res.joint_pos, axis=0)).max() * 50 < 20


def test_missing_data_says_run_make_setup(monkeypatch, tmp_path):
    monkeypatch.setenv("PARKOUR_MM_ASSETS", str(tmp_path))
    with pytest.raises(data.DataError, match="run `make setup`"):
        data.load_mocap(CLIMB)


def test_a_standing_foot_goes_onto_the_surface_and_the_swing_carries_the_change_over():
    """A foot still on the floor (ankle 10 cm up: the human's), swinging, then still on a 30 cm box (ankle 7 cm
    over its top); a hand leaning 2 cm into the box."""
    box = Boxes(np.array([[1.0, 0.0, 0.15]]), np.array([[0.5, 0.5, 0.15]]), np.array([0.0]))
    t = 60
    human = np.zeros((t, 53, 3))
    x = np.concatenate([np.zeros(20), np.linspace(0.0, 1.0, 20), np.ones(20)])  # still, swing, still on the box
    arc = np.linspace(0.0, 1.0, 20)
    z = np.concatenate([np.full(20, 0.10), 0.10 + 0.27 * arc + 0.3 * np.sin(np.pi * arc), np.full(20, 0.37)])
    human[:, L_FOOT] = np.stack([x, np.zeros(t), z], axis=-1)
    human[:, L_TOE] = human[:, L_FOOT] + [0.15, 0.0, -0.06]
    human[:, L_HAND] = [1.0, 0.3, 0.30 - 0.02]
    out = surface_targets(human, box, fps=50.0)
    ankle = out[:, L_FOOT, 2]
    np.testing.assert_allclose(ankle[:20], CLEARANCE_M[L_FOOT])  # on the floor
    np.testing.assert_allclose(ankle[41:], 0.30 + CLEARANCE_M[L_FOOT])  # on the box top
    np.testing.assert_allclose(out[41:, L_TOE, 2], 0.30 + CLEARANCE_M[L_TOE])  # the sole flat
    # the swing keeps the human's path, its offset changing a few mm a frame: no jump at lift-off or touchdown
    assert np.abs(np.diff(ankle) - np.diff(z)).max() < 0.005
    np.testing.assert_allclose(out[:, L_HAND, 2], 0.30 + CLEARANCE_M[L_HAND])  # raised out of the box


def test_retargeted_skill_clips_stand_on_their_boxes_not_in_them():
    from training.motion_matching.clip_check import check_skill
    from training.motion_matching.skills import load_registry

    for row in check_skill(load_registry()["step_up_box"]):
        assert row.penetrating_frames < 0.1 and row.penetration_max_m < 0.04, row
        assert row.floating_frames < 0.1, row  # on them: not hovering above
        assert row.legs_near_limit_frames < 0.3, row  # the stance as wide as the G1's hips: ankles not rolled out
