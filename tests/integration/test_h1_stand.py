"""The H1 through the real graph: `parkour sim --robot h1` (MuJoCo bridge on Unitree's H1 model, supervisor,
script over rclpy and Cyclone DDS with the H1's unitree_go messages) stands up on the elastic band on the
deployers' gains, stands there and damps, as an H1 on its gantry; and a G1 bundle is refused on an H1
with a message naming both robots.

No H1 policy walks yet: the H1 config has no bundle, so no policy node runs. Everything is
judged from what the nodes wrote (supervisor transitions and counters, the bridge's ground truth).
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from .conftest import REPO, graph_env, write_config

pytestmark = pytest.mark.integration

DAMP_AT_S = 8.5  # script time of the damp request (config/h1_sim.yaml), after about 6 s standing on the band


def test_h1_stands_up_and_stands_on_the_band_and_damps_in_the_simulated_graph(tmp_path, domains):
    dds_domain, ros_domain = domains
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--robot", "h1", "--duration", "12", "--out", str(out)]
    cmd += ["--domain", str(dds_domain), "--ros-domain-id", str(ros_domain), "--no-bag", "--no-render"]
    proc = subprocess.run(cmd, cwd=REPO, env=graph_env(ros_domain), capture_output=True, text=True, timeout=600)
    logs = "\n".join(p.read_text()[-2000:] for p in sorted((out / "logs").glob("*.log"))) if out.exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + logs
    assert "bundle (none: no policy node)" in proc.stdout
    assert not (out / "logs" / "policy.log").exists()  # the graph started no policy node

    sup = json.loads((out / "supervisor.json").read_text())
    moves = [(t["from"], t["to"], t["reason"]) for t in sup["supervisor_transitions"]]
    assert moves == [
        ("DAMP", "STAND_UP", "stand up requested"),
        ("STAND_UP", "STAND", "stand-up complete"),
        ("STAND", "DAMP", "damp requested"),
    ], logs
    assert sup["commands_written"] > 0

    bridge = json.loads((out / "bridge.json").read_text())
    assert bridge["lowcmd_received"] > 0 and bridge["lowstate_sent"] > 0
    assert bridge["lowcmd_limit_violations"] == 0
    assert bridge["band_released_at_s"] is None  # never released in STAND: no PD stand holds an H1 free
    stood_at, damp_at = (next(t["t"] for t in sup["supervisor_transitions"] if t["to"] == mode)
                         for mode in ("STAND", "DAMP"))  # fmt: skip
    assert damp_at - stood_at > 4.0, (stood_at, damp_at)
    traj = bridge["trajectory"]
    t, z, tilt = (np.array(traj[k]) for k in ("t", "z", "tilt"))
    # From half a second after STAND until the damp request: standing upright on the band, the pose held.
    standing = (t >= stood_at + 0.5) & (t < damp_at)
    assert standing.sum() > 100
    assert z[standing].min() > 1.0 and z[standing].max() < 1.06, (z[standing].min(), z[standing].max())
    assert tilt[standing].max() < 0.05, tilt[standing].max()
    assert bridge["fell_at_s"] is None  # the band holds it, damped too

    report = json.loads((out / "report.json").read_text())
    assert report["robot"] == "h1" and report["modes"] == ["DAMP", "STAND_UP", "STAND", "DAMP"]
    assert report["render"]["skipped"] == "--no-render" and not (out / "filmstrip.png").exists()
    assert report["band_released_at_s"] is None and report["base_height_m"] is None  # no standing on the floor


def test_a_g1_bundle_is_refused_by_the_policy_node_on_an_h1(tmp_path):
    config = write_config(tmp_path, "h1_sim.yaml", policy={"bundle": "g1_walk"})
    cmd = [sys.executable, "-m", "parkour_control.policy_node", "--config", str(config)]
    proc = subprocess.run(cmd, cwd=REPO, env=graph_env(0), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "bundle 'g1_walk' was trained for robot 'g1', but this is a 'h1'" in proc.stdout, proc.stdout
