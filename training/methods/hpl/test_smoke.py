"""`run_method_smoke(size="tiny")`: every stage runs, the student trains through the runner with its
environments in worker processes, and the bundle loads in the runtime (sim stage skipped: time)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import load_bundle
from parkour_core.runner import PolicyRunner
from training.configs.schema import load_smoke_size, load_train_config
from training.export.parity import random_rollout
from training.methods.hpl.smoke import run_method_smoke


@pytest.mark.integration
def test_tiny_hpl_smoke_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_method_smoke(out, "tiny", 0, sim=False, log=lambda _: None)
    saved = json.loads((out / "smoke.json").read_text())
    assert saved["method"] == "hpl"
    assert len(saved["teacher_return"]) == 3 and len(saved["curriculum_mean_level"]) == 3
    student = load_train_config(load_smoke_size("tiny").hpl_student)
    assert len(saved["student_loss"]) == student.run.max_iterations and all(np.isfinite(saved["student_loss"]))
    assert saved["workers"] == student.hpl.workers == 2 and saved["worker_processes"]
    assert saved["student"]["dagger_weight"] == [1.0] * 3  # HPL's DAgger: the schedule held at its start
    assert (out / "curves.png").stat().st_size > 0
    assert (out / "terrain" / "terrains.npz").exists() and saved["terrain"]["mujoco_hfields"] == 6
    assert result["sim"]["skipped"]
    bundle = load_bundle(out / "student" / "bundle")
    assert saved["bundle"] == str(out.resolve() / "student" / "bundle")
    runner = PolicyRunner(bundle)
    rollout = random_rollout(bundle.manifest, 3, seed=0)
    runner.reset()
    for k in range(3):
        if rollout.depth_frames[k] is not None:
            runner.set_depth(rollout.depth_frames[k], stamp_s=k * 0.02)
        assert np.all(np.isfinite(runner.step(rollout.states[k], rollout.commands[k])))
