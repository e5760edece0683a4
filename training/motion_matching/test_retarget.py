import numpy as np
import pytest

from training.motion_matching import data
from training.motion_matching.kinematics import joint_limits
from training.motion_matching.retarget import resample, retarget

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
