"""Our PHP teacher task on mjlab (MuJoCo-Warp on warp's CPU device) for two iterations.

Runs where ``.venv-mjlab`` exists (``bash training/backends/mjlab/setup.sh``); CI does not create it
(2.3 GB and about 9 minutes on 2 cores, for a backend meant for GPUs; see the README), so there the
test is skipped and says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
VENV_PY = ROOT / ".venv-mjlab" / "bin" / "python"

pytestmark = pytest.mark.skipif(
    not VENV_PY.exists(),
    reason="no .venv-mjlab (optional: `bash training/backends/mjlab/setup.sh` creates it; CI does not, see README)",
)


def test_the_teacher_task_trains_on_mjlab_on_the_cpu(tmp_path):
    """Through the command a GPU run uses (``parkour train run --backend mjlab --device cuda``), on the CPU."""
    out = tmp_path / "mjlab"
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "train", "run", "--config", "smoke_cpu", "--backend", "mjlab",
           "--device", "cpu", "--set", "run.max_iterations=2", "--set", "run.save_interval=2",
           "--out", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads((out / "mjlab_smoke.json").read_text())
    assert result["task"] == "Parkour-PHP-Teacher-G1" and result["iterations"] == 2 and result["device"] == "cpu"
    assert result["env_steps_per_s"]["n"] == 1 and result["env_steps_per_s"]["median"] > 0
    assert result["env_steps"] == result["num_envs"] * 16 * 2  # smoke_cpu: 16 steps per env and iteration
    assert list((out / "run").rglob("model_*.pt")), "mjlab's runner saved no checkpoint"
