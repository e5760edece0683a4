"""Record a real `parkour sim` run with the bag recorder, then replay it open loop against its bundle."""

import json
import signal
import subprocess
import sys

import pytest

from parkour_bringup.bag.open_loop import replay_against_bundle
from parkour_bringup.bag.reader import open_bag
from parkour_bringup.bag.topics import TICK_INPUTS_TOPIC

from .conftest import REPO, graph_env, start_node, wait_for, write_config

pytestmark = pytest.mark.integration

BUNDLE = "g1_walk_depth_gated"  # a student's interface: depth backbone, latent, recurrent state


def test_a_recorded_sim_run_replays_with_zero_divergence_on_its_own_bundle(tmp_path, domains):
    dds_domain, ros_domain = domains
    env = graph_env(ros_domain)
    config = write_config(tmp_path, "g1_sim.yaml", policy={"bundle": BUNDLE})
    bag_dir = tmp_path / "bag"
    rec_run = tmp_path / "recorder"
    recorder = start_node("parkour_bringup.bag.recorder", config, rec_run, env, "--bag", str(bag_dir),
                          "--ros-args", "-p", "use_sim_time:=true")  # fmt: skip
    recorder_log = rec_run / "recorder.log"
    try:
        wait_for(lambda: (rec_run / "ready" / "recorder").exists() or recorder.poll() is not None, 60, "the recorder")
        assert recorder.poll() is None, recorder_log.read_text()
        # 9 s of sim time: stand-up, release and activation (a runner reset) and walking; the script starts
        # 1-3 s in, once robot state flows.
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--config", str(config), "--duration", "9"]
        cmd += ["--no-bag", "--out", str(out), "--domain", str(dds_domain), "--ros-domain-id", str(ros_domain)]
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=30)
    assert recorder.returncode == 0, recorder_log.read_text()
    assert (bag_dir / "metadata.yaml").is_file() and list(bag_dir.glob("*.mcap"))

    with open_bag(bag_dir) as bag:
        assert bag.robot == "g1"
        assert bag.custom_data["bundle"] == BUNDLE
        assert len(bag.custom_data["bundle_manifest_sha256"]) == 64
        assert BUNDLE in bag.custom_data["config"]
        for topic in ("/robot/joint_states", "/robot/imu", "/policy/joint_targets", "/cmd_vel",
                      "/camera/depth/policy", "/policy/bundle", "/supervisor/state", TICK_INPUTS_TOPIC):  # fmt: skip
            assert bag.topics.get(topic, 0) > 0, (topic, bag.topics)
        resets = sum(bool(m.msg.data[2]) for m in bag.messages([TICK_INPUTS_TOPIC]))
        assert resets >= 1, "the run never activated: no runner reset to replay"
        result = replay_against_bundle(bag, BUNDLE)
    assert result["ticks_compared"] > 100, result
    # Frames exposed before the recorder matched the camera are counted apart; after that, none lost.
    assert result["depth_frames_missing"] == 0, result
    assert result["action_divergence"] == {"p50": 0.0, "p99": 0.0, "max": 0.0}, result
    assert result["first_tick_over_threshold"] is None

    # The command line writes the same numbers to divergence.json.
    out = tmp_path / "replay"
    cli = [sys.executable, "-m", "parkour_bringup.cli", "bag", "replay", str(bag_dir), "--bundle", BUNDLE]
    proc = subprocess.run([*cli, "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = json.loads((out / "divergence.json").read_text())
    assert written["action_divergence"] == {"p50": 0.0, "p99": 0.0, "max": 0.0}
