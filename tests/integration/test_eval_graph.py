"""`parkour eval --graph`: a cell's first instance through the full DDS graph agrees with the in-process trial."""

import json
import subprocess
import sys

import pytest

from .conftest import REPO, graph_env

pytestmark = pytest.mark.integration


def test_the_graph_trial_and_the_in_process_trial_agree(tmp_path, domains):
    _, ros_domain = domains
    out = tmp_path / "eval"
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "eval", "--quick", "--speeds", "1", "--heights", "0.36",
           "--graph", "--workers", "1", "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=graph_env(ros_domain), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((out / "eval.json").read_text())
    (row,) = result["graph_subset"]
    # A blind walker against a 36 cm box at 1 m/s falls, through either path.
    assert row["graph"] == row["in_process"] == "falls", row
    supervisor = json.loads((out / "graph" / "cell0" / "supervisor.json").read_text())
    assert [t["to"] for t in supervisor["supervisor_transitions"]][:3] == ["STAND_UP", "STAND", "ACTIVE"]
