"""The whole graph: MuJoCo bridge + supervisor + policy + script over real rclpy and Cyclone DDS."""

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from parkour_core.config import load_config
from parkour_sim.filmstrip import FRAME_H, FRAME_W
from parkour_sim.render import FRAMES, STATE_HZ

from .conftest import REPO, graph_env

pytestmark = pytest.mark.integration

REQUIRED = {
    "fell", "distance_m", "mean_speed_mps", "policy_period_ms", "deadline_misses", "lowstate_age_ms",
    "sim_real_time_factor", "supervisor_transitions", "limit_clamps", "depth_age_ms", "depth_fps", "depth_age_source",
}  # fmt: skip


def test_g1_walks_through_the_whole_graph(tmp_path, domains):
    dds_domain, ros_domain = domains
    out = tmp_path / "run"
    # 17 s of sim time: stand-up and release, then 10 s at 0.5 m/s, then the turn begins.
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--duration", "17", "--out", str(out)]
    cmd += ["--domain", str(dds_domain), "--ros-domain-id", str(ros_domain)]
    proc = subprocess.run(cmd, cwd=REPO, env=graph_env(ros_domain), capture_output=True, text=True, timeout=600)
    logs = "\n".join(p.read_text()[-2000:] for p in sorted((out / "logs").glob("*.log"))) if out.exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + logs
    report = json.loads((out / "report.json").read_text())
    assert set(report) >= REQUIRED
    assert report["fell"] is False
    assert report["forward_displacement_m"] > 2.0, report
    modes = [t["to"] for t in report["supervisor_transitions"]]
    assert modes[:3] == ["STAND_UP", "STAND", "ACTIVE"], modes
    assert report["final_mode"] == "ACTIVE"
    assert report["lowstate_sent"] > 0 and report["lowcmd_received"] > 0
    for png in ("base_path.png", "velocity.png", "policy_period_hist.png", "depth_strip.png"):
        assert (out / png).stat().st_size > 0
        assert png in report["plots"]
    # The simulated D435i: frames arrive at about the configured rate (sim time; a loose sanity bound).
    cam = load_config(out / "config.yaml").sim_camera
    assert cam.enabled
    assert 0.5 * cam.hz <= report["depth_fps"] <= 1.5 * cam.hz, report["depth_fps"]
    assert report["depth_age_source"] in ("policy", "bridge")
    assert set(report["depth_age_ms"]) == {"p50", "p99"}
    if report["depth_age_source"] == "bridge":
        # Sim time from exposure to publication: the drawn latency, rounded up to a physics step.
        assert cam.latency_min_s * 1e3 <= report["depth_age_ms"]["p50"] <= cam.latency_max_s * 1e3 + 2.0
    # Pictures of the run, rendered after the graph stopped from the states the bridge kept: the whole
    # qpos at STATE_HZ over the 17 s, and a filmstrip of FRAMES frames side by side.
    with np.load(out / "trajectory.npz") as states:
        t, qpos = states["t"], states["qpos"]
    assert abs(len(t) - 17 * STATE_HZ) <= 1, len(t)
    assert t[-1] == pytest.approx(17.0, abs=1.0 / STATE_HZ) and np.all(np.diff(t) > 0)
    assert qpos.shape == (len(t), 36)  # the G1's floating base (7) and 29 joints
    assert qpos[-1, 0] - qpos[0, 0] > 2.0  # it walked: the base's x, as forward_displacement_m says
    render = report["render"]
    assert render["filmstrip"] == "filmstrip.png" and render["frames"] == FRAMES, render
    assert (render["mp4"] == "run.mp4") == (out / "run.mp4").is_file()
    with Image.open(out / "filmstrip.png") as strip:
        assert strip.size == (FRAMES * FRAME_W, FRAME_H)
    assert "rendered filmstrip.png" in proc.stdout
