"""Open-loop replay of a bag against a bundle, on bags written as the policy node and recorder would."""

import json
import subprocess
import sys

import numpy as np
import pytest

from parkour_bringup.bag.open_loop import DEFAULT_THRESHOLD, replay_against_bundle
from parkour_bringup.bag.reader import BagError, open_bag
from parkour_bringup.bag.synthetic import write_synthetic_bag
from parkour_core.bundle import read_manifest
from parkour_core.bundles import resolve_bundle

BUNDLE = "g1_walk_depth_gated"


@pytest.fixture(scope="module")
def recorded_bag(tmp_path_factory):
    return write_synthetic_bag(tmp_path_factory.mktemp("bags") / "walk", bundle=BUNDLE, ticks=90)


def test_the_recorded_bundle_replays_with_zero_divergence(recorded_bag):
    with open_bag(recorded_bag) as bag:
        result = replay_against_bundle(bag, BUNDLE)
    assert result["ticks_compared"] == 90
    assert result["depth_frames_missing"] == 0
    assert result["action_divergence"] == {"p50": 0.0, "p99": 0.0, "max": 0.0}
    assert result["target_divergence_rad"]["max"] == 0.0
    assert result["first_tick_over_threshold"] is None
    assert len(result["per_joint"]) == 29 and all(v["max"] == 0.0 for v in result["per_joint"].values())


def test_a_bag_recorded_under_a_namespace_reads_by_the_root_names_and_replays_alike(tmp_path):
    """The recorder keeps a namespaced graph's topic names (/robot1/policy/tick_inputs) and the namespace;
    the readers take it off, so the replay is the same as of a bag from the root namespace."""
    bag_path = write_synthetic_bag(tmp_path / "robot1", bundle=BUNDLE, ticks=30, namespace="/robot1")
    with open_bag(bag_path) as bag:
        stored = [c.topic for c in bag._reader.connections]
        assert stored and all(t.startswith("/robot1/") for t in stored), stored
        assert bag.namespace == "/robot1" and bag.topics["/policy/tick_inputs"] == 30, bag.topics
        result = replay_against_bundle(bag, BUNDLE)
    assert result["ticks_compared"] == 30 and result["action_divergence"]["max"] == 0.0, result


def test_a_different_policy_shows_its_divergence_and_first_tick_over_threshold(tmp_path):
    # Recorded targets 0.05 rad off what the bundle computes: an action change of 0.05 / action_scale.
    bag_path = write_synthetic_bag(tmp_path / "offset", bundle=BUNDLE, ticks=30, target_offset=0.05)
    with open_bag(bag_path) as bag:
        result = replay_against_bundle(bag, BUNDLE, threshold=0.1)
    scale = read_manifest(resolve_bundle(BUNDLE)).action_scale
    assert result["action_divergence"]["max"] == pytest.approx(0.05 / scale)
    assert result["action_divergence"]["p50"] == pytest.approx(0.05 / scale)
    assert result["target_divergence_rad"]["max"] == pytest.approx(0.05)
    first = result["first_tick_over_threshold"]
    assert first["tick"] == 0 and first["value"] == pytest.approx(0.05 / scale)
    assert first["joint"] in result["per_joint"]


def test_dropping_the_runner_reset_is_detected(tmp_path, recorded_bag):
    """The replay must reset where the recording did; without it the recurrent state diverges."""
    import parkour_bringup.bag.open_loop as open_loop

    original = open_loop.read_tick_inputs
    resets_seen = []

    def without_reset(message):
        inputs = original(message)
        if inputs.reset:
            resets_seen.append(1)
            inputs.reset = len(resets_seen) == 1  # keep the new runner's mark, drop the activation
        return inputs

    open_loop.read_tick_inputs = without_reset
    try:
        with open_bag(recorded_bag) as bag:
            result = replay_against_bundle(bag, BUNDLE)
    finally:
        open_loop.read_tick_inputs = original
    assert result["action_divergence"]["max"] > 0.0


def test_a_bag_that_starts_mid_episode_is_compared_from_its_first_reset(tmp_path):
    """The recorder matched the policy late: the runner's memory from before the bag is unknown until a reset."""
    ticks, starts_at, activation = 90, 7, 90 // 5
    bag_path = write_synthetic_bag(tmp_path / "late", bundle=BUNDLE, ticks=ticks, recording_starts_at=starts_at)
    with open_bag(bag_path) as bag:
        result = replay_against_bundle(bag, BUNDLE)
    assert result["ticks_replayed"] == ticks - starts_at
    assert result["ticks_out_of_sync"] == activation - starts_at
    assert result["ticks_compared"] == ticks - activation
    assert result["action_divergence"] == {"p50": 0.0, "p99": 0.0, "max": 0.0}


def test_ticks_stepped_on_a_frame_not_in_the_bag_are_compared_from_the_next_reset(tmp_path):
    """The recorder matched the camera later than the policy (DDS discovery on a busy machine): the
    student's recurrent state took in latents the replay does not have, until the activation resets it."""
    ticks, depth_from, activation = 90, 7, 90 // 5
    bag_path = write_synthetic_bag(tmp_path / "late_depth", bundle="student_walk", ticks=ticks,
                                   depth_recorded_from=depth_from)  # fmt: skip
    with open_bag(bag_path) as bag:
        result = replay_against_bundle(bag, "student_walk")
    assert result["depth_frames_before_recording"] > 0
    assert result["ticks_compared"] == ticks - activation
    assert result["action_divergence"] == {"p50": 0.0, "p99": 0.0, "max": 0.0}
    with open_bag(bag_path) as bag:
        dropped = replay_against_bundle(bag, "student_walk", control="drop-reset")
    assert dropped["resets_dropped"] == 1 and dropped["action_divergence"]["max"] > DEFAULT_THRESHOLD


def test_dropping_the_activation_s_reset_shows_in_a_bag_that_starts_mid_episode(tmp_path):
    """The recorder matched the policy late: the bag's only reset is the activation's, and the control drops it."""
    bag_path = write_synthetic_bag(tmp_path / "late", bundle="student_walk", ticks=90, recording_starts_at=7)
    with open_bag(bag_path) as bag:
        dropped = replay_against_bundle(bag, "student_walk", control="drop-reset")
    assert dropped["resets_dropped"] == 1 and dropped["action_divergence"]["max"] > DEFAULT_THRESHOLD


def test_a_bag_without_any_reset_says_what_to_record(tmp_path):
    bag_path = write_synthetic_bag(tmp_path / "no_reset", bundle=BUNDLE, ticks=40, recording_starts_at=10)
    with open_bag(bag_path) as bag, pytest.raises(BagError, match="no runner reset"):
        replay_against_bundle(bag, BUNDLE)


def test_cli_writes_divergence_json(tmp_path, recorded_bag):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "bag", "replay", str(recorded_bag), "--bundle", BUNDLE]
    proc = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    written = json.loads((out / "divergence.json").read_text())
    assert written["action_divergence"] == {"p50": 0.0, "p99": 0.0, "max": 0.0}
    assert written["bundle_name"] == BUNDLE


def test_cli_fail_above_exits_non_zero_on_divergence(tmp_path):
    bag_path = write_synthetic_bag(tmp_path / "offset", bundle=BUNDLE, ticks=10, target_offset=0.05)
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "bag", "replay", str(bag_path), "--bundle", BUNDLE]
    proc = subprocess.run([*cmd, "--fail-above", "0.1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "exceeds --fail-above" in proc.stderr


def test_other_readers_read_the_bag(recorded_bag):
    """The storage is plain MCAP with ROS 2 schemas: mcap-ros2-support decodes it without rosbags."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    mcap_files = list(recorded_bag.glob("*.mcap"))
    assert len(mcap_files) == 1
    with mcap_files[0].open("rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        decoded = list(reader.iter_decoded_messages(topics=["/policy/joint_targets", "/policy/tick_inputs"]))
    targets = [msg for _, channel, _, msg in decoded if channel.topic == "/policy/joint_targets"]
    assert len(targets) == 90
    assert targets[0].header.frame_id == BUNDLE and len(targets[0].position) == 29
    # The stack's own types decode from the definitions the bag carries.
    ticks = [msg for _, channel, _, msg in decoded if channel.topic == "/policy/tick_inputs"]
    assert len(ticks) == 90 and ticks[0].reset and len(ticks[0].velocity) == 29


def test_depth_controls_move_every_frame_and_keep_the_set():
    from parkour_bringup.bag.open_loop import _controlled_depth

    depth = {0.1 * k: np.full((2, 2), float(k), dtype=np.float32) for k in range(6)}
    shifted = _controlled_depth(depth, "shift-depth", seed=0)
    # Each stamp carries the frame exposed before it (the first the last one's).
    assert [float(shifted[s][0, 0]) for s in sorted(shifted)] == [5.0, 0.0, 1.0, 2.0, 3.0, 4.0]
    shuffled = _controlled_depth(depth, "shuffle-depth", seed=3)
    values = [float(shuffled[s][0, 0]) for s in sorted(shuffled)]
    assert sorted(values) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and all(v != k for k, v in enumerate(values))
    assert _controlled_depth(depth, "drop-reset", seed=0) is depth


def test_a_depth_control_on_a_bundle_that_reads_no_depth_is_refused(tmp_path):
    bag_path = write_synthetic_bag(tmp_path / "blind", bundle="g1_walk", ticks=10)
    with open_bag(bag_path) as bag, pytest.raises(BagError, match="no depth to alter"):
        replay_against_bundle(bag, "g1_walk", control="shift-depth")
    with open_bag(bag_path) as bag, pytest.raises(ValueError, match="unknown control"):
        replay_against_bundle(bag, "g1_walk", control="flip")
