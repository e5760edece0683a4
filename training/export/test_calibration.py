"""Simulator recordings for int8 calibration and checks: deterministic, replayable, what the policy sees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import MANIFEST, load_bundle, read_manifest
from training.export import student as student_export
from training.export.calibration import SimRecording, calibration_frames, record_sim_rollout
from training.export.parity import ParityError, concat_rollouts, runner_rollout
from training.export.student import (
    BACKBONE_INT8_FILE,
    INT8_RELATIVE_TOLERANCE,
    STUDENT_INT8_FILE,
    export_random_student,
    quantize_bundle,
)

TICKS = 160


@pytest.fixture(scope="module")
def fp32_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_random_student(
        tmp_path_factory.mktemp("fp32") / "bundle", size="php_student_tiny", seed=5, precision="fp32"
    )


@pytest.fixture(scope="module")
def recording(fp32_bundle: Path) -> SimRecording:
    return record_sim_rollout(load_bundle(fp32_bundle), TICKS, seed=3)


def test_recording_is_deterministic_and_looks_like_the_policy_input(fp32_bundle: Path, recording: SimRecording) -> None:
    again = record_sim_rollout(load_bundle(fp32_bundle), TICKS, seed=3)
    assert np.array_equal(again.actions, recording.actions)
    assert again.rollout.starts == recording.rollout.starts
    frames, frames_again = recording.frames(), again.frames()
    assert len(frames) == len(frames_again) and all(
        np.array_equal(a, b) for a, b in zip(frames, frames_again, strict=True)
    )
    rollout = recording.rollout
    assert len(rollout) == TICKS and rollout.tick_s == pytest.approx(0.02)
    assert rollout.starts[0] == 0 and all(rollout.depth_frames[k] is not None for k in rollout.starts)
    # A 30 Hz camera at a 50 Hz policy: about 3 new frames every 5 ticks.
    assert 0.45 < len(frames) / TICKS < 0.75
    depth = read_manifest(fp32_bundle).depth
    assert depth is not None
    assert all(f.shape == (depth.spec.height, depth.spec.width) and f.dtype == np.float32 for f in frames)
    assert all(np.all(np.isfinite(f)) for f in frames)
    assert np.std(np.stack(frames)) > 0.01  # a scene, not a constant image
    # Near the default pose: the robot stood on the band at it before each episode.
    default_q = np.asarray(read_manifest(fp32_bundle).default_joint_pos)
    assert np.max(np.abs(rollout.states[0].q - default_q)) < 0.2
    assert recording.describe()["ticks"] == TICKS and recording.episodes


def test_replaying_the_recording_reproduces_the_drivers_actions(fp32_bundle: Path, recording: SimRecording) -> None:
    """The rollout's frames and episode starts are what the runner saw: a fresh runner computes the same."""
    replay = runner_rollout(load_bundle(fp32_bundle), recording.rollout)
    assert np.array_equal(replay.actions, recording.actions)


def test_calibration_frames_are_spread_over_the_recording(recording: SimRecording) -> None:
    frames = recording.frames()
    picked = calibration_frames(recording, 10)
    assert len(picked) == 10 and picked[0] is frames[0] and picked[-1] is frames[-1]
    assert len(calibration_frames(recording, 10_000)) == len(frames)


def test_quantize_bundle_writes_a_checked_int8_bundle_beside_the_untouched_source(
    fp32_bundle: Path, recording: SimRecording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {p.name: p.read_bytes() for p in fp32_bundle.iterdir()}
    out = quantize_bundle(
        fp32_bundle, tmp_path / "int8", "int8", calibration_frames(recording, 32), recording.rollout,
        calibration=recording.describe(),
    )  # fmt: skip
    assert {p.name: p.read_bytes() for p in fp32_bundle.iterdir()} == before
    bundle = load_bundle(out)
    m = bundle.manifest
    assert m.name == "student_random_php_student_tiny_int8" and m.policy.file == STUDENT_INT8_FILE
    assert m.depth_backbone is not None and m.depth_backbone.file == BACKBONE_INT8_FILE
    check = m.provenance["checks"]["int8_vs_fp32_onnx"]
    assert check["steps"] == TICKS and check["rollout"] == "given" and check["calibration_frames"] == 32
    assert check["relative_tolerance"] == INT8_RELATIVE_TOLERANCE
    assert check["max_action_error"] <= check["tolerance"]
    assert check["calibration"]["driver"] == "student_random_php_student_tiny"
    assert m.provenance["quantised_from"]["files"] == read_manifest(fp32_bundle).files
    # A bar it cannot meet: refused, and no manifest vouches for the files.
    monkeypatch.setattr(student_export, "INT8_RELATIVE_TOLERANCE", check["relative_action_error"] / 10)
    with pytest.raises(ParityError, match="of the reference's action range"):
        quantize_bundle(fp32_bundle, tmp_path / "strict", "int8", None, recording.rollout)
    assert not (tmp_path / "strict" / MANIFEST).exists()


def test_a_shorter_recording_is_the_head_of_a_longer_one(fp32_bundle: Path, recording: SimRecording) -> None:
    short = record_sim_rollout(load_bundle(fp32_bundle), TICKS // 2, seed=3)
    head = recording.rollout.head(TICKS // 2)
    assert short.rollout.starts == head.starts
    assert np.array_equal(short.actions, recording.actions[: TICKS // 2])
    assert all(np.array_equal(a.q, b.q) for a, b in zip(short.rollout.states, head.states, strict=True))


def test_concatenated_rollouts_reset_where_each_begins(fp32_bundle: Path, recording: SimRecording) -> None:
    bundle = load_bundle(fp32_bundle)
    first, second = recording.rollout.head(50), recording.rollout.head(30)
    both = concat_rollouts([first, second])
    assert len(both) == 80 and both.starts == (*first.starts, 50, *(50 + k for k in second.starts if k))
    actions = runner_rollout(bundle, both).actions
    assert np.array_equal(actions[:50], recording.actions[:50])
    assert np.array_equal(actions[50:], recording.actions[:30])  # reset at 50: the same as a fresh start
