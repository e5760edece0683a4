"""Model swaps in the running sim graph, under load: the robot walks while bundles come and go."""

import json
import subprocess
import sys

import pytest

from parkour_bringup.bundle_faults import BAD_BUNDLES, renamed
from parkour_core.bundles import resolve_bundle

from .conftest import REPO, graph_env, write_config

pytestmark = pytest.mark.integration

WALK = {"at_s": 4.0, "cmd": [0.4, 0.0, 0.0]}
BASE_STEPS = [
    {"at_s": 0.2, "request": "stand_up"},
    {"at_s": 2.5, "request": "release_band", "in_mode": "STAND"},
    {"at_s": 3.5, "request": "activate", "in_mode": "STAND"},
    WALK,
]


def test_swaps_while_walking(tmp_path, domains):
    dds_domain, ros_domain = domains
    source = resolve_bundle("g1_walk")
    good = renamed(source, tmp_path / "bundles" / "good")
    bad = {fault: build(source, tmp_path / "bundles" / fault) for fault, build in BAD_BUNDLES.items()}
    swaps = [(5.0, str(good))] + [(5.5 + 0.5 * k, str(path)) for k, path in enumerate(bad.values())]
    swaps.append((10.0, "g1_walk"))
    steps = BASE_STEPS + [{"at_s": t, "request": "swap", "bundle": b} for t, b in swaps]
    config = write_config(tmp_path, "g1_sim.yaml", script={"steps": steps}, policy={"shadow_ticks": 10})
    out = tmp_path / "run"
    # 16 s of sim time: the script's clock starts 1-3 s in (once robot state and /clock flow), and the
    # last swap, at script time 10 s, needs its shadow ticks and answer before the run ends.
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--config", str(config), "--duration", "16"]
    cmd += ["--no-render", "--out", str(out), "--domain", str(dds_domain), "--ros-domain-id", str(ros_domain)]
    proc = subprocess.run(cmd, cwd=REPO, env=graph_env(ros_domain), capture_output=True, text=True, timeout=600)
    logs = "\n".join(p.read_text()[-2000:] for p in sorted((out / "logs").glob("*.log"))) if out.exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + logs

    policy = json.loads((out / "policy.json").read_text())
    results = policy["swaps"]
    assert [s["requested"] for s in results] == [b for _, b in swaps], logs
    assert [s["ok"] for s in results] == [True] + [False] * len(bad) + [True], results
    reasons = {fault: s["message"] for fault, s in zip(bad, results[1:-1], strict=True)}
    assert "SHA-256" in reasons["hash_mismatch"]
    assert "missing" in reasons["missing_file"]
    assert "joint_names" in reasons["wrong_joint_count"]
    assert "robot" in reasons["wrong_robot"]
    assert "shape" in reasons["wrong_shapes"]
    assert "NaN" in reasons["nan_outputs"] and "shadow" in reasons["nan_outputs"]
    assert results[0]["shadow_ticks"] == 10
    assert results[0]["manifest_verified"] is True and results[-1]["manifest_verified"] is True  # both sealed
    assert policy["bundle_name"] == "g1_walk" and policy["manifest_verified"] is True
    assert policy["nonfinite_ticks"] == 0  # the NaN bundle never drove the robot

    report = json.loads((out / "report.json").read_text())
    assert report["fell"] is False
    assert report["forward_displacement_m"] > 1.5, report
    assert report["final_mode"] == "ACTIVE"
    assert (out / "swap_period_hist.png").stat().st_size > 0
