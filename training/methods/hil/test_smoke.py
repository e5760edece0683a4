"""`run_method_smoke(size="tiny")` for HIL end to end: PHP's outputs, plus the method and the
discriminator's accuracy per iteration; the bundle loads in the runtime and the sim stage runs it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import load_bundle
from parkour_core.runner import PolicyRunner
from training.configs.schema import load_smoke_size, load_train_config
from training.export.parity import random_rollout
from training.methods.hil.smoke import run_method_smoke


@pytest.mark.integration
def test_tiny_hil_smoke_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_method_smoke(out, size="tiny", seed=0, sim=True, log=lambda _: None)
    assert json.loads((out / "smoke.json").read_text()) == json.loads(json.dumps(result))
    teacher_cfg = load_train_config("hil_teacher_tiny")
    student_cfg = load_train_config(load_smoke_size("tiny").php_student)
    assert result["method"] == "hil"
    assert len(result["teacher_return"]) == teacher_cfg.run.max_iterations
    assert len(result["discriminator_accuracy"]) == teacher_cfg.run.max_iterations
    assert all(0.0 <= a <= 1.0 for a in result["discriminator_accuracy"])
    assert len(result["student_loss"]) == student_cfg.run.max_iterations
    assert all(np.isfinite(result["teacher_return"])) and all(np.isfinite(result["student_loss"]))
    teacher = result["teacher"]
    assert all(0.0 <= r <= 1.0 for r in teacher["style_reward"])  # adversarial envs got a style reward
    assert result["hil"]["env"]["num_tracking"] == result["hil"]["env"]["num_adversarial"] == 4
    np.testing.assert_allclose(result["student"]["dagger_weight"], [1.0, 1 / 3, 0.1])  # PHP's schedule, K = 3
    for name in ("curves.png", "hil_curves.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "discriminator.pt").exists() and len(list((out / "mm").glob("motion_*.npz"))) == 2

    bundle = load_bundle(out / "student" / "bundle")  # contract and SHA-256 of every file
    assert bundle.manifest.provenance["method"] == "hil"
    runner = PolicyRunner(bundle)
    rollout = random_rollout(bundle.manifest, 3, seed=0)
    runner.reset()
    for k in range(3):
        if rollout.depth_frames[k] is not None:
            runner.set_depth(rollout.depth_frames[k], stamp_s=k * 0.02)
        assert np.all(np.isfinite(runner.step(rollout.states[k], rollout.commands[k])))

    sim = result["sim"]
    assert sim["ran"], sim
    assert sim["active_from_s"] is not None  # the supervisor handed the robot to the HIL student
    assert isinstance(sim["fell"], bool) and (out / "sim" / "report.json").exists()
    assert set(result["stage_wall_s"]) >= {"mm", "teacher", "student", "sim", "total"}
