from pathlib import Path

import numpy as np
import pytest

from parkour_core.robots import G1
from training.envs import reference as refmod


def test_standing_reference_has_the_feet_on_the_floor_and_no_motion() -> None:
    ref = refmod.standing_reference(seconds=0.2)
    assert ref.body_names[ref.anchor_index] == "pelvis"
    np.testing.assert_allclose(ref.body_pos_w[:, ref.anchor_index], ref.root_pos)
    assert 0.7 < ref.root_pos[0, 2] < 0.8
    np.testing.assert_allclose(ref.body_lin_vel_w, 0.0, atol=1e-9)
    np.testing.assert_allclose(ref.body_ang_vel_w, 0.0, atol=1e-9)


def _write_synth_npz(path: Path, ref: refmod.Reference) -> None:
    """A motion file with the keys `parkour mm synth` writes (the ones an environment reads)."""
    n = ref.num_frames
    np.savez(
        path,
        fps=np.float64(ref.fps),
        joint_names=np.array(G1.joint_names),
        root_pos=ref.root_pos.astype(np.float32),
        root_quat=ref.root_quat.astype(np.float32),
        joint_pos=ref.joint_pos.astype(np.float32),
        command_vel_world=np.tile(np.array([0.5, 0.0], np.float32), (n, 1)),
        command_heading=np.zeros(n, np.float32),
        terrain_box_center=np.array([[1.0, 0.0, 0.1]], np.float32),
        terrain_box_half_size=np.array([[0.3, 0.5, 0.1]], np.float32),
        terrain_box_yaw=np.array([0.3], np.float32),
    )


def test_load_a_synth_motion_and_its_kinematics(tmp_path: Path) -> None:
    squat = refmod.squat_reference(seconds=1.0)
    _write_synth_npz(tmp_path / "motion_00000.npz", squat)
    ref = refmod.load_reference(tmp_path / "motion_00000.npz")
    assert ref.name == "motion_00000" and ref.num_frames == squat.num_frames and ref.fps == 50.0
    assert ref.terrain.scene()["boxes"][0]["yaw_deg"] == pytest.approx(np.rad2deg(0.3))
    np.testing.assert_allclose(ref.command_vel_world[:, 0], 0.5)
    # Feet stay put while the pelvis goes down; velocities are the differences of the positions.
    ankles = [ref.body_names.index(b) for b in G1.foot_bodies]
    np.testing.assert_allclose(ref.body_pos_w[:, ankles], ref.body_pos_w[:1, ankles].repeat(ref.num_frames, 0),
                               atol=1e-5)  # fmt: skip
    assert ref.root_pos[-1, 2] < ref.root_pos[0, 2] - 0.1
    mid = ref.num_frames // 2
    np.testing.assert_allclose(
        ref.body_lin_vel_w[mid], (ref.body_pos_w[mid + 1] - ref.body_pos_w[mid - 1]) * ref.fps / 2, atol=1e-9
    )
    np.testing.assert_allclose(ref.joint_vel[mid], (ref.joint_pos[mid + 1] - ref.joint_pos[mid - 1]) * 25.0, atol=1e-4)
