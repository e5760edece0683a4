"""`parkour faults`: every fault the supervisor handles, injected in the running sim graph."""

import json
import os
import subprocess
import sys

import pytest

from parkour_bringup.fault_suite import FAULTS

from .conftest import REPO, graph_env

pytestmark = pytest.mark.integration

KEYS = {"fault", "time_to_safe_ms", "expected_reasons", "deadline_ms", "verdict", "limit_violations", "fell",
        "fall_expected"}  # fmt: skip


def test_every_fault_reaches_its_safe_state(tmp_path, domains):
    dds_domain, ros_domain = domains
    out = tmp_path / "faults"
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "faults", "--out", str(out), "--ros-domain-id", str(ros_domain),
           "--domain", str(dds_domain)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=graph_env(ros_domain), capture_output=True, text=True, timeout=1800)
    table = (out / "faults.md").read_text() if (out / "faults.md").exists() else ""
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:] + table
    written = json.loads((out / "faults.json").read_text())
    assert written["command"].startswith("parkour faults") and written["git_commit"], written
    results = written["faults"]
    assert [r["fault"] for r in results] == [f.name for f in FAULTS]
    for r in results:
        assert set(r) >= KEYS
        # The first transition after the injection: the fault's safe mode, for its own rule, by its deadline.
        assert r["reached_safe"] and r["time_to_safe_ms"] is not None, r
        assert r["time_to_safe_ms"] <= r["deadline_ms"], r
        assert r["limit_violations"] == 0, r
        assert r["fall_expected"] or not r["fell"], r
        assert r["passed"], r
    camera = results[0]
    assert camera["fault"] == "camera_stall" and camera["returned"], camera  # back to ACTIVE in time
    assert len(table.strip().splitlines()) == 2 + len(FAULTS)


def test_the_suite_fails_when_the_lowstate_timeout_rule_is_removed(tmp_path, domains):
    """The check can fail: without its rule a stalled robot falls and the tilt rule damps it, in DAMP
    as the fault wants but for another reason, and the suite must not accept that."""
    dds_domain, ros_domain = domains
    out = tmp_path / "broken"
    env = graph_env(ros_domain)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "bench" / "faults" / "rule_breaker"),
                                                      env.get("PYTHONPATH", "")]))  # fmt: skip
    env["PARKOUR_BREAK_RULE"] = "lowstate_timeout_removed"
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "faults", "--only", "lowstate_stall", "--out", str(out),
           "--ros-domain-id", str(ros_domain), "--domain", str(dds_domain)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0, proc.stdout[-3000:]
    (result,) = json.loads((out / "faults.json").read_text())["faults"]
    assert not result["passed"] and result["fault"] == "lowstate_stall", result
    assert "lowstate stale" not in result["verdict"].split(":")[0], result  # the rule that fired is another's
