"""`run_method_smoke(size="tiny")`: every stage runs, PHP's outputs plus LLP's, and the bundle runs in the runtime."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import load_bundle
from parkour_core.runner import PolicyRunner
from training.configs.schema import load_smoke_size, load_train_config
from training.methods.llp.smoke import run_method_smoke


@pytest.mark.integration
def test_tiny_llp_smoke_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "run"
    returned = run_method_smoke(out, "tiny", 0, True, log=lambda _: None)
    result = json.loads((out / "smoke.json").read_text())
    assert result["method"] == "llp" and result["bundle"] == returned["bundle"]
    student_cfg = load_train_config("llp_student_tiny")
    teacher_cfg = load_train_config(load_smoke_size("tiny").php_teacher)
    assert len(result["teacher_return"]) == teacher_cfg.run.max_iterations
    k = student_cfg.run.max_iterations
    assert len(result["student_loss"]) == len(result["reconstruction_loss"]) == k
    assert all(np.isfinite(result["student_loss"])) and all(np.isfinite(result["reconstruction_loss"]))
    np.testing.assert_allclose(result["student"]["dagger_weight"], [1.0, 1 / 3, 0.1])  # PHP's schedule
    assert len(result["student"]["prior_loss"]) == k and len(result["student"]["style_reward_per_step"]) == k
    # The group is the critic's input: every step of the toy cut belongs to one of the three groups.
    fractions = [result["student"][f"group_{g}_fraction"] for g in ("approach", "skill", "exit")]
    np.testing.assert_allclose(np.sum(fractions, axis=0), 1.0)
    assert result["timing"] == {"camera_hz": [27.0, 33.0], "latency_s": [0.03, 0.06]}
    summary = result["entry_exit"]["summary"]
    assert summary["trials"] == load_smoke_size("tiny").motions and summary["entry_success"] is not None
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list((out / "mm").glob("motion_*.npz"))) == load_smoke_size("tiny").motions

    bundle_dir = Path(result["bundle"])
    assert bundle_dir == out / "student" / "bundle"
    bundle = load_bundle(bundle_dir)
    assert bundle.manifest.depth is not None and bundle.manifest.depth.latency_s == (0.03, 0.06)
    assert sorted(bundle.manifest.files) == sorted(p.name for p in bundle_dir.glob("*.onnx"))
    runner = PolicyRunner(bundle)
    runner.reset()
    assert np.all(np.isfinite(runner.step(*_standing(bundle))))

    sim = result["sim"]
    assert sim["ran"], sim
    assert sim["active_from_s"] is not None and isinstance(sim["fell"], bool)


def _standing(bundle):
    from training.export.parity import random_rollout

    rollout = random_rollout(bundle.manifest, 1, seed=0)
    return rollout.states[0], rollout.commands[0]
