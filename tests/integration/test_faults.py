"""`parkour faults`: every fault the supervisor handles, injected in the running sim graph."""

import json
import subprocess
import sys

import pytest

from parkour_bringup.fault_suite import FAULTS

from .conftest import REPO, graph_env

pytestmark = pytest.mark.integration

KEYS = {"fault", "time_to_safe_ms", "limit_violations", "fell", "fall_expected"}


def test_every_fault_reaches_its_safe_state(tmp_path, domains):
    _, ros_domain = domains
    out = tmp_path / "faults"
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "faults", "--out", str(out), "--ros-domain-id", str(ros_domain)]
    proc = subprocess.run(cmd, cwd=REPO, env=graph_env(ros_domain), capture_output=True, text=True, timeout=1800)
    table = (out / "faults.md").read_text() if (out / "faults.md").exists() else ""
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:] + table
    results = json.loads((out / "faults.json").read_text())
    assert [r["fault"] for r in results] == [f.name for f in FAULTS]
    for r in results:
        assert set(r) >= KEYS
        assert r["reached_safe"] and r["time_to_safe_ms"] is not None, r
        assert r["limit_violations"] == 0, r
        assert r["fall_expected"] or not r["fell"], r
    assert len(table.strip().splitlines()) == 2 + len(FAULTS)
