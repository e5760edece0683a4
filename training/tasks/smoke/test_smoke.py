"""`parkour train smoke --size tiny`: every stage runs, the bundle loads in the runtime, the outputs are there."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parkour_bringup import cli
from parkour_core.bundle import load_bundle
from parkour_core.runner import PolicyRunner
from training.configs.schema import load_train_config
from training.export.parity import random_rollout
from training.tasks.smoke.config import load_smoke_size


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("smoke") / "run"
    assert cli.main(["train", "smoke", "--size", "tiny", "--seed", "0", "--out", str(out)]) == 0
    return out


@pytest.mark.integration
def test_tiny_smoke_writes_a_bundle_the_runtime_runs(smoke_run: Path) -> None:
    bundle = load_bundle(smoke_run / "student" / "bundle")  # contract and SHA-256 of every file
    runner = PolicyRunner(bundle)  # ONNX I/O against the manifest
    rollout = random_rollout(bundle.manifest, 5, seed=0)
    runner.reset()
    for k in range(5):
        frame = rollout.depth_frames[k]
        if frame is not None:
            runner.set_depth(frame, stamp_s=k * 0.02)
        targets = runner.step(rollout.states[k], rollout.commands[k])
        assert targets.shape == (29,) and np.all(np.isfinite(targets))
    checks = bundle.manifest.provenance["checks"]
    assert checks["fp32_onnx_vs_torch"]["max_action_error"] <= checks["fp32_onnx_vs_torch"]["tolerance"]
    assert checks["int8_vs_fp32_onnx"]["max_action_error"] <= checks["int8_vs_fp32_onnx"]["tolerance"]


@pytest.mark.integration
def test_tiny_smoke_json_curves_and_sim(smoke_run: Path) -> None:
    result = json.loads((smoke_run / "smoke.json").read_text())
    teacher_cfg = load_train_config(load_smoke_size("tiny").php_teacher)
    student_cfg = load_train_config(load_smoke_size("tiny").php_student)
    assert len(result["teacher_return"]) == teacher_cfg.run.max_iterations
    assert len(result["student_loss"]) == student_cfg.run.max_iterations
    assert all(np.isfinite(result["teacher_return"])) and all(np.isfinite(result["student_loss"]))
    student = result["student"]
    # PHP's schedule over K = 3: lambda_D 1 -> 1/3 -> 0.1, termination 0.5 -> 0.83 -> 1.0 m.
    np.testing.assert_allclose(student["dagger_weight"], [1.0, 1 / 3, 0.1])
    np.testing.assert_allclose(student["termination_m"], [0.5, 0.5 + 0.5 * 2 / 3, 1.0])
    assert set(result["stage_wall_s"]) >= {"mm", "teacher", "student", "sim", "total"}
    assert Path(result["bundle"]) == (smoke_run / "student" / "bundle").resolve()
    assert len(list((smoke_run / "mm").glob("motion_*.npz"))) == load_smoke_size("tiny").motions
    png = smoke_run / "curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sim = result["sim"]
    assert sim["ran"], sim
    assert sim["active_from_s"] is not None  # the supervisor handed the robot to the trained policy
    assert isinstance(sim["fell"], bool)
    assert (smoke_run / "sim" / "report.json").exists()
