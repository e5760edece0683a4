"""A busy host slows the simulated graph down and does nothing else to it.

A process started here keeps one of the machine's cores busy while a 60 s `parkour sim` runs (the
demo's walk and turn, then standing, with the depth-reading bundle and the simulated camera). The
simulator holds sim time at each supervisor and policy tick until that node has answered, so the
load may stretch wall time but must not make the robot fall, must not take it out of ACTIVE for
staleness, must not make the simulated robot miss a policy target on the sim clock, and must not let
the supervisor act on targets older than one policy period of sim time. Nothing here is timed.
"""

import json
import subprocess
import sys

import pytest

from .conftest import REPO, graph_env

pytestmark = pytest.mark.integration

STALENESS = {"lowstate stale", "policy targets stale or not finite", "depth stale"}


def test_a_busy_core_slows_the_simulation_but_the_robot_walks_on(tmp_path, domains):
    dds_domain, ros_domain = domains
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--bundle", "g1_walk_depth_gated", "--duration", "60",
           "--no-bag", "--out", str(out), "--domain", str(dds_domain), "--ros-domain-id", str(ros_domain)]  # fmt: skip
    cmd.append("--no-render")
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=graph_env(ros_domain), capture_output=True, text=True, timeout=1500)
    finally:
        hog.kill()
        hog.wait()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    bridge = json.loads((out / "bridge.json").read_text())
    supervisor = json.loads((out / "supervisor.json").read_text())
    policy = json.loads((out / "policy.json").read_text())
    assert not bridge["fell"], bridge["fell_at_s"]
    reasons = [t["reason"] for t in supervisor["supervisor_transitions"]]
    assert reasons == ["stand up requested", "stand-up complete", "activate requested"], reasons
    assert not STALENESS & set(reasons)
    assert supervisor["final_mode"] == "ACTIVE"
    # In ACTIVE the supervisor used the targets of the last policy tick before each of its ticks (sim time).
    assert supervisor["target_age_ms"]["max"] <= 20.0 + 0.01, supervisor["target_age_ms"]
    # The simulated robot got a target every 20 ms of sim time, whatever the host did.
    late = [(tick, period) for tick, period in zip(policy["period_ticks"], policy["periods_ms"], strict=True)
            if period > 20.0 + 1e-6]  # fmt: skip
    assert policy["deadline_misses"] == 0 and not late, (late[:10], bridge["policy_waits_past_100ms_sim_s_ms_gave_up"])
    assert bridge["sim_time_s"] >= 60.0
