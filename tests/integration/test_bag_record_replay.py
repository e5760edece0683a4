"""Record a real `parkour sim` run with the bag recorder, then replay it: open loop against its bundle,
and closed loop in simulation (with the simulated camera, and with the bag's own depth frames). The
stack's own topics are recorded typed; the same run rewritten as an older stack recorded it (JSON
strings, a packed array) opens and replays too.

The trained depth students (models/student_walk, models/student_step) replay with zero divergence
too, and with a deliberate error (the depth frames shifted by one, shuffled, the activation's
runner reset dropped) they must diverge: a replay that read zero there would not be checking the
depth or the recurrent state at all (g1_walk_depth_gated's actions ignore both)."""

import json
import signal
import subprocess
import sys

import numpy as np
import pytest

from parkour_bringup.bag import legacy, messages
from parkour_bringup.bag.closed_loop import plan_replay, read_recorded_run
from parkour_bringup.bag.open_loop import CONTROLS, DEFAULT_THRESHOLD, replay_against_bundle
from parkour_bringup.bag.reader import open_bag
from parkour_bringup.bag.topics import (
    BAND_TOPIC,
    BUNDLE_TOPIC,
    STATE_TOPIC,
    TICK_INPUTS_TOPIC,
    TRANSITION_TOPIC,
)
from parkour_core.domains import claim_domains
from parkour_core.robots import G1
from parkour_core.safety import Mode

from .conftest import REPO, graph_env, start_node, wait_for, write_config

pytestmark = pytest.mark.integration

BUNDLE = "g1_walk_depth_gated"  # a student's interface: depth backbone, latent, recurrent state
STUDENTS = ("student_walk", "student_step")
# The least max action divergence (action units) each control must give on a student's bag; the true
# replay gives exactly 0, and a replay that ignored the depth would give exactly 0 under the depth
# controls too. student_walk (trained on flat ground and 2-5 cm platforms) barely reads its depth on
# flat ground: its shifted- and shuffled-depth divergences are small (1e-4 to 1e-2 on a bag) but never
# zero, so its depth thresholds sit just above zero. student_step's depth divergences are tenths, a
# dropped reset's a few units for both.
CONTROL_THRESHOLDS = {
    "student_walk": {"shift-depth": 1e-5, "shuffle-depth": 1e-5, "drop-reset": DEFAULT_THRESHOLD},
    "student_step": {"shift-depth": 0.005, "shuffle-depth": DEFAULT_THRESHOLD, "drop-reset": DEFAULT_THRESHOLD},
}


def record_run(tmp_path_factory, bundle: str):
    """A 9 s `parkour sim` run recorded by the recorder node: (bag folder, environment, DDS domain, run)."""
    tmp_path = tmp_path_factory.mktemp(f"recorded_{bundle}")
    claim = claim_domains()  # held while the run is recorded
    dds_domain, ros_domain = claim.dds, claim.ros
    env = graph_env(ros_domain)
    config = write_config(tmp_path, "g1_sim.yaml", policy={"bundle": bundle})
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
        cmd.append("--no-render")
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=30)
        claim.release()
    assert recorder.returncode == 0, recorder_log.read_text()
    assert (bag_dir / "metadata.yaml").is_file() and list(bag_dir.glob("*.mcap"))
    return bag_dir, env, dds_domain, out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    bag_dir, env, dds_domain, out = record_run(tmp_path_factory, BUNDLE)
    # The supervisor measures depth exposure -> lowcmd write per command from the policy's tick inputs:
    # never less than the camera's emulated 60 ms exposure-to-publish latency (sim clock).
    supervisor = json.loads((out / "supervisor.json").read_text())
    exposure_to_lowcmd = supervisor["depth_exposure_to_lowcmd_ms"]
    assert exposure_to_lowcmd["n"] > 50 and exposure_to_lowcmd["p50"] >= 60.0, exposure_to_lowcmd
    return bag_dir, env, dds_domain


@pytest.fixture(scope="module", params=STUDENTS)
def student_bag(request, tmp_path_factory):
    bag_dir, _, _, _ = record_run(tmp_path_factory, request.param)
    return request.param, bag_dir


def test_a_trained_student_s_bag_replays_with_zero_divergence(student_bag):
    bundle, bag_dir = student_bag
    with open_bag(bag_dir) as bag:
        result = replay_against_bundle(bag, bundle)
    assert result["ticks_compared"] > 100 and result["depth_frames_missing"] == 0, result
    assert result["action_divergence"] == {"p50": 0.0, "p99": 0.0, "max": 0.0}, result


@pytest.mark.parametrize("control", CONTROLS)
def test_a_deliberate_error_in_the_replay_shows_as_divergence(student_bag, control):
    bundle, bag_dir = student_bag
    with open_bag(bag_dir) as bag:
        result = replay_against_bundle(bag, bundle, control=control)
    assert result["control"] == control and result["ticks_compared"] > 100, result
    if control == "drop-reset":
        assert result["resets_dropped"] >= 1, result  # the activation's
    divergence = result["action_divergence"]
    assert divergence["max"] > CONTROL_THRESHOLDS[bundle][control], (control, divergence)


def test_a_recorded_sim_run_replays_with_zero_divergence_on_its_own_bundle(recorded, tmp_path):
    bag_dir, env, _ = recorded

    with open_bag(bag_dir) as bag:
        assert bag.robot == "g1"
        assert bag.custom_data["bundle"] == BUNDLE
        assert len(bag.custom_data["bundle_manifest_sha256"]) == 64
        assert BUNDLE in bag.custom_data["config"]
        for topic in ("/robot/joint_states", "/robot/imu", "/policy/joint_targets", "/cmd_vel",
                      "/camera/depth/policy", "/policy/bundle", "/supervisor/state", TICK_INPUTS_TOPIC):  # fmt: skip
            assert bag.topics.get(topic, 0) > 0, (topic, bag.topics)
        resets = [bool(m.msg.reset) for m in bag.messages([TICK_INPUTS_TOPIC])]
        # The policy's first tick is marked as a reset (a new runner); the activation's comes after it.
        assert sum(resets[1:]) >= 1, "the run never activated: no runner reset to replay"
        result = replay_against_bundle(bag, BUNDLE)
    assert result["ticks_compared"] > 100, result
    assert result["targets_without_inputs"] == 0, result  # no tick lost between the policy and the bag
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


def test_the_stack_s_own_topics_are_recorded_with_typed_fields(recorded):
    """What `ros2 topic echo` would show of each: typed fields, stamped where the data has a time."""
    bag_dir, _, _ = recorded
    with open_bag(bag_dir) as bag:
        own = {topic: list(bag.messages([topic])) for topic in
               (STATE_TOPIC, TRANSITION_TOPIC, BUNDLE_TOPIC, BAND_TOPIC, TICK_INPUTS_TOPIC)}  # fmt: skip
    for topic, recorded_messages in own.items():
        assert recorded_messages, topic
        assert all(m.msgtype.startswith("parkour_interfaces/msg/") for m in recorded_messages), topic
    modes = {m.value for m in Mode}
    assert {m.msg.mode for m in own[STATE_TOPIC]} <= modes and own[STATE_TOPIC][-1].msg.reason
    transitions = [m.msg for m in own[TRANSITION_TOPIC]]
    assert [(t.from_mode, t.to_mode) for t in transitions][:2] == [("DAMP", "STAND_UP"), ("STAND_UP", "STAND")]
    assert all(t.header.stamp.sec > 0 or t.header.stamp.nanosec > 0 for t in transitions)
    bundle = own[BUNDLE_TOPIC][-1].msg
    assert bundle.name == BUNDLE and tuple(bundle.joint_names) == G1.joint_names and len(bundle.kp) == 29
    assert bundle.uses_depth and bundle.path.endswith(BUNDLE)
    band = [m.msg for m in own[BAND_TOPIC]]
    assert band[-1].released and band[-1].header.stamp.sec > 0
    tick = own[TICK_INPUTS_TOPIC][-1].msg
    assert tick.header.frame_id == BUNDLE and len(tick.position) == len(tick.velocity) == 29
    assert tick.has_depth_frame and tick.command.linear.x > 0.0 and abs(tick.orientation.w) > 0.5


def write_as_an_older_stack_recorded_it(bag_dir, out):
    """The bag rewritten with the types an older stack recorded on its own topics (bag.legacy), the rest as is."""
    from rosbags.rosbag2 import Reader

    from parkour_bringup.bag.reader import BagMessage
    from parkour_bringup.bag.synthetic import BagWriter

    with open_bag(bag_dir) as bag:
        custom = dict(bag.custom_data)
        typestore = bag._typestore
    writer = BagWriter(out, custom, legacy=True)
    with Reader(bag_dir) as reader:
        for connection, t_ns, raw in reader.messages():
            topic = connection.topic
            if topic not in legacy.MSGTYPES:
                writer.writer.write(writer.connections[topic], t_ns, raw)
                continue
            m = BagMessage(topic, t_ns, typestore.deserialize_cdr(raw, connection.msgtype), connection.msgtype)
            if topic == TICK_INPUTS_TOPIC:
                old = legacy.packed_tick_inputs_message(writer.types, messages.tick_inputs(m))
            elif topic == TRANSITION_TOPIC:
                old = writer.string(json.dumps(messages.transition(m)))
            elif topic == BUNDLE_TOPIC:
                info = {"name": m.msg.name, "path": m.msg.path, "kp": [float(v) for v in m.msg.kp],
                        "kd": [float(v) for v in m.msg.kd], "uses_depth": bool(m.msg.uses_depth)}  # fmt: skip
                old = writer.string(json.dumps(info))
            elif topic == BAND_TOPIC:
                released, t = messages.band(m)
                old = writer.string(json.dumps({"state": "released" if released else "hanging", "t": round(t, 4)}))
            else:
                old = writer.string(messages.mode(m))
            writer.write(topic, t_ns, old)
    writer.close()
    return out


def test_a_bag_from_before_the_stack_s_own_types_opens_and_replays_open_and_closed_loop(recorded, tmp_path):
    bag_dir, env, _ = recorded
    old = write_as_an_older_stack_recorded_it(bag_dir, tmp_path / "old_bag")
    info = subprocess.run([sys.executable, "-m", "parkour_bringup.cli", "bag", "info", str(old)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert info.returncode == 0, info.stdout + info.stderr
    with open_bag(bag_dir) as bag:
        assert json.loads(info.stdout)["topics"] == bag.topics
        typed_run = read_recorded_run(bag)
    with open_bag(old) as bag:
        assert {c.msgtype for c in bag._reader.connections if c.topic == TRANSITION_TOPIC} == {legacy.STRING}
        old_run = read_recorded_run(bag)
        result = replay_against_bundle(bag, BUNDLE)
    assert result["ticks_compared"] > 100 and result["action_divergence"]["max"] == 0.0, result
    assert old_run.transitions == typed_run.transitions
    assert old_run.band_released_t == pytest.approx(typed_run.band_released_t, abs=1e-4)
    np.testing.assert_array_equal(old_run.joints.values, typed_run.joints.values)
    assert plan_replay(old_run).steps == plan_replay(typed_run).steps
    replayed = _replay_sim(old, tmp_path / "old_sim", env)
    assert replayed["modes"]["same_sequence"], replayed["modes"]
    assert [p["request"] for p in replayed["alignment"]] == ["stand_up", "activate"]


def _replay_sim(bag_dir, out, env, *extra):
    """A closed-loop replay on domains it chooses itself, free ones."""
    cli = [sys.executable, "-m", "parkour_bringup.cli", "bag", "replay", str(bag_dir), "--sim", "--out", str(out)]
    cli += [*extra]
    proc = subprocess.run(cli, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "divergence.json").read_text())


def test_closed_loop_replay_re_drives_the_simulated_robot_like_the_recording(recorded, tmp_path):
    bag_dir, env, _ = recorded
    with open_bag(bag_dir) as bag:
        assert bag.topics.get("/sim/base_pose", 0) > 0 and bag.topics.get("/sim/band", 0) > 0, bag.topics
    result = _replay_sim(bag_dir, tmp_path / "sim_camera", env)
    assert result["modes"]["same_sequence"], result["modes"]
    assert [p["request"] for p in result["alignment"]] == ["stand_up", "activate"]
    # The script keeps the recorded spacing of the requests (the in_mode waits did not stretch it).
    shifts = [p["shift_s"] for p in result["alignment"]]
    assert abs(shifts[1] - shifts[0]) < 0.25, result["alignment"]
    walked = result["distance_m"]
    assert walked["recorded"] > 0.5, walked  # the recording walked, so the replay must have been commanded to
    assert abs(walked["replayed"] - walked["recorded"]) < 0.4 * walked["recorded"], walked
    assert result["base_planar_m"]["p50"] < 0.3, result["base_planar_m"]
    assert result["compared_s"] > 5.0
    assert (tmp_path / "sim_camera" / "bag" / "metadata.yaml").is_file()
    assert (tmp_path / "sim_camera" / "divergence.png").is_file()

    # The bag's own depth frames instead of the simulated camera: the policy sees what it saw.
    out = tmp_path / "bag_depth"
    result = _replay_sim(bag_dir, out, env, "--depth-from-bag")
    player = json.loads((out / "depth_player.json").read_text())
    assert player["published"] > 100, player
    assert result["depth_source"] == "bag" and result["modes"]["same_sequence"], result["modes"]
    with open_bag(out / "bag") as bag:
        assert bag.topics.get("/camera/depth/policy", 0) >= player["published"] - 5, bag.topics
