"""Bags recorded before the stack had its own message types still open, read and replay like new ones.

The old bags are written here the way an older stack recorded them (JSON in std_msgs/String, the tick
inputs packed in a Float64MultiArray: parkour_bringup.bag.legacy), next to the same run in today's
types, and every reader must get the same out of both. So is a bag that recorded one of the stack's own
types with a definition of fewer fields than today's (BundleInfo without manifest_verified).
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from parkour_bringup.bag import legacy, messages
from parkour_bringup.bag.closed_loop import plan_replay, read_recorded_run
from parkour_bringup.bag.open_loop import replay_against_bundle
from parkour_bringup.bag.reader import BagError, open_bag
from parkour_bringup.bag.synthetic import BagWriter, write_synthetic_bag
from parkour_bringup.bag.topics import (
    BAND_TOPIC,
    BUNDLE_TOPIC,
    CMD_VEL_TOPIC,
    JOINT_STATES_TOPIC,
    STATE_TOPIC,
    TICK_INPUTS_TOPIC,
    TRANSITION_TOPIC,
    TickInputs,
)
from parkour_core.paths import config_dir
from parkour_core.safety import Mode
from parkour_core.supervisor_core import TransitionRecord

BUNDLE = "g1_walk_depth_gated"
TRANSITIONS = (
    TransitionRecord(2.0, Mode.DAMP, Mode.STAND_UP, "stand up requested"),
    TransitionRecord(4.0, Mode.STAND_UP, Mode.STAND, "stand-up complete"),
    TransitionRecord(6.0, Mode.STAND, Mode.ACTIVE, "activate requested"),
)


@pytest.fixture(scope="module")
def policy_bags(tmp_path_factory):
    """The same synthetic walk in today's types and in the old ones."""
    folder = tmp_path_factory.mktemp("bags")
    new = write_synthetic_bag(folder / "typed", bundle=BUNDLE, ticks=60)
    old = write_synthetic_bag(folder / "legacy", bundle=BUNDLE, ticks=60, legacy=True)
    return new, old


def write_run_bag(path, old: bool):
    """A sim run's operator and robot streams: stand up, stand, band released, activate, walk, band hooked on."""
    from parkour_interfaces.msg import BandState
    from parkour_safety.messages import state_message, transition_message

    custom = {"robot": "g1", "mode": "sim", "bundle": BUNDLE, "config": (config_dir() / "g1_sim.yaml").read_text()}
    writer = BagWriter(path, custom, legacy=old)
    for released, t in ((False, 0.0), (True, 5.0), (False, 7.0)):
        if old:
            state = {"state": "released" if released else "hanging", "t": t}
            writer.write(BAND_TOPIC, int(t * 1e9), writer.string(json.dumps(state)))
        else:
            band = BandState(released=released)
            band.header.stamp.sec = int(t)
            writer.write_ros(BAND_TOPIC, int(t * 1e9), band)
    for record in TRANSITIONS:
        t_ns = int(record.t * 1e9)
        if old:
            writer.write(TRANSITION_TOPIC, t_ns, writer.string(json.dumps(record.to_dict())))
            writer.write(STATE_TOPIC, t_ns, writer.string(record.to_mode.value))
        else:
            writer.write_ros(TRANSITION_TOPIC, t_ns, transition_message(record))
            writer.write_ros(STATE_TOPIC, t_ns, state_message(record.to_mode, record.reason, record.t))
    for k in range(400):
        t_ns = k * 20_000_000
        writer.write(JOINT_STATES_TOPIC, t_ns, writer.joint_state(t_ns, "", ("a", "b"), [np.sin(k / 50), 0.1]))
        if k >= 350:
            twist = writer.types["geometry_msgs/msg/Twist"]
            vector = writer.types["geometry_msgs/msg/Vector3"]
            cmd = twist(linear=vector(x=0.5, y=0.0, z=0.0), angular=vector(x=0.0, y=0.0, z=0.0))
            writer.write(CMD_VEL_TOPIC, t_ns, cmd)
    writer.close()
    return path


@pytest.fixture(scope="module")
def run_bags(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    return write_run_bag(folder / "typed", old=False), write_run_bag(folder / "legacy", old=True)


def test_the_packed_tick_inputs_of_an_older_stack_decode_exactly():
    rng = np.random.default_rng(1)
    inputs = TickInputs(12, 345, True, 11.96, rng.normal(size=3), rng.normal(size=4), rng.normal(size=3),
                        rng.normal(size=29), rng.normal(size=29))  # fmt: skip
    label, data = legacy.encode_tick_inputs(inputs)
    back = legacy.decode_tick_inputs(label, data)
    assert (back.stamp_sec, back.stamp_nanosec, back.reset, back.depth_stamp_s) == (12, 345, True, 11.96)
    for name in ("command", "quat_wxyz", "gyro", "q", "dq"):
        np.testing.assert_array_equal(getattr(back, name), getattr(inputs, name))
    no_depth = legacy.decode_tick_inputs(
        *legacy.encode_tick_inputs(TickInputs(0, 0, False, None, *(np.zeros(k) for k in (3, 4, 3, 2, 2))))
    )
    assert no_depth.depth_stamp_s is None and not no_depth.reset
    with pytest.raises(ValueError, match="layout"):
        legacy.decode_tick_inputs("another_layout", data)
    with pytest.raises(ValueError, match="values"):
        legacy.decode_tick_inputs(legacy.TICK_INPUTS_LAYOUT, data[:-1])


def test_an_old_bag_holds_the_old_types_and_reads_as_the_new_one(policy_bags):
    new, old = policy_bags
    with open_bag(new) as typed, open_bag(old) as packed:
        assert typed.topics == packed.topics
        a = [messages.tick_inputs(m) for m in typed.messages([TICK_INPUTS_TOPIC])]
        b_messages = list(packed.messages([TICK_INPUTS_TOPIC]))
        b = [messages.tick_inputs(m) for m in b_messages]
    assert {m.msgtype for m in b_messages} == {legacy.PACKED}
    assert len(a) == len(b) == 60
    for x, y in zip(a, b, strict=True):
        assert (x.stamp_ns, x.reset, x.depth_stamp_s) == (y.stamp_ns, y.reset, y.depth_stamp_s)
        np.testing.assert_array_equal(np.concatenate([x.q, x.dq, x.command]), np.concatenate([y.q, y.dq, y.command]))


def test_an_old_bag_replays_open_loop_as_the_new_one_does(policy_bags):
    results = []
    for path in policy_bags:
        with open_bag(path) as bag:
            results.append(replay_against_bundle(bag, BUNDLE))
    new, old = results
    assert old["ticks_compared"] == new["ticks_compared"] == 60
    assert old["action_divergence"] == new["action_divergence"] == {"p50": 0.0, "p99": 0.0, "max": 0.0}
    assert old["recorded_action_basis"] == new["recorded_action_basis"]  # the announcement's path, read from JSON


@pytest.mark.parametrize("verb", [["info"], ["replay", "--bundle", BUNDLE]])
def test_the_cli_opens_an_old_bag(policy_bags, verb):
    _, old = policy_bags
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "bag", verb[0], str(old), *verb[1:]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = json.loads(proc.stdout[proc.stdout.index("{") :])
    if verb[0] == "info":
        assert printed["topics"][TICK_INPUTS_TOPIC] == 60 and printed["metadata"]["robot"] == "g1"
    else:
        assert printed["action_divergence"]["max"] == 0.0


def test_an_old_run_bag_plans_the_same_closed_loop_replay(run_bags):
    new, old = run_bags
    with open_bag(new) as bag:
        typed = read_recorded_run(bag)
    with open_bag(old) as bag:
        packed = read_recorded_run(bag)
        modes = [messages.mode(m) for m in bag.messages([STATE_TOPIC])]
    assert typed.transitions == packed.transitions == [r.to_dict() for r in TRANSITIONS]
    assert typed.band_released_t == packed.band_released_t == 5.0
    assert typed.band_later == packed.band_later == [(7.0, False)]
    np.testing.assert_array_equal(typed.commands.values, packed.commands.values)
    np.testing.assert_array_equal(typed.joints.values, packed.joints.values)
    assert plan_replay(typed).steps == plan_replay(packed).steps
    assert modes == ["STAND_UP", "STAND", "ACTIVE"]


# BundleInfo without manifest_verified: a bag records the definition it was written with, and is read with it.
EARLIER_BUNDLE_INFO = """std_msgs/Header header
string name
string path
string[] joint_names
float64[] kp
float64[] kd
bool uses_depth
"""


def with_earlier_bundle_info(src, out):
    """``src`` rewritten with /policy/bundle in the BundleInfo definition above, everything else as it was."""
    import yaml
    from rosbags.rosbag2 import Reader, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    from parkour_bringup.bag.reader import write_checksums
    from parkour_bringup.bag.typestore import stack_typestore

    msgtype = "parkour_interfaces/msg/BundleInfo"
    today, earlier = stack_typestore(), get_typestore(Stores.ROS2_KILTED)
    earlier.register(get_types_from_msg(EARLIER_BUNDLE_INFO, msgtype))
    fields = [name for name, _ in earlier.fielddefs[msgtype][1]]
    info = yaml.safe_load((src / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    writer = Writer(out, version=8, storage_plugin=StoragePlugin.MCAP)
    for k, v in (info.get("custom_data") or {}).items():
        writer.set_custom_data(k, v)
    writer.open()
    with Reader(src) as reader:
        added = {}
        for c in reader.connections:
            store = earlier if c.msgtype == msgtype else today
            added[c.id] = writer.add_connection(c.topic, c.msgtype, typestore=store)
        for c, t_ns, raw in reader.messages():
            if c.msgtype == msgtype:
                msg = today.deserialize_cdr(raw, msgtype)
                old = earlier.types[msgtype](**{name: getattr(msg, name) for name in fields})
                raw = bytes(earlier.serialize_cdr(old, msgtype))
            writer.write(added[c.id], t_ns, raw)
    writer.close()
    write_checksums(out)
    return out


def test_a_bundle_announcement_recorded_before_manifest_verified_reads_and_replays(policy_bags, tmp_path):
    """Today's BundleInfo has one field more than that bag's bytes: it decodes with the definition it recorded."""
    new, _ = policy_bags
    earlier = with_earlier_bundle_info(new, tmp_path / "earlier")
    with open_bag(new) as today, open_bag(earlier) as bag:
        assert bag.topics == today.topics
        a = [m for m in today.messages([BUNDLE_TOPIC])]
        b = [m for m in bag.messages([BUNDLE_TOPIC])]
        assert [messages.bundle(m) for m in a] == [messages.bundle(m) for m in b] and len(b) == 1
        assert a[0].msg.manifest_verified is True and not hasattr(b[0].msg, "manifest_verified")
        assert bag.verify() == today.verify()
    results = []
    for path in (new, earlier):
        with open_bag(path) as bag:
            results.append(replay_against_bundle(bag, BUNDLE))
    assert results[0]["ticks_compared"] == results[1]["ticks_compared"] == 60
    assert results[0]["action_divergence"] == results[1]["action_divergence"]


def test_an_old_transition_that_is_not_the_supervisor_s_json_is_refused_in_one_line(tmp_path):
    custom = {"robot": "g1", "config": "robot: g1\n"}
    writer = BagWriter(tmp_path / "bad", custom, legacy=True)
    writer.write(TRANSITION_TOPIC, 1, writer.string("ACTIVE"))
    writer.write(JOINT_STATES_TOPIC, 2, writer.joint_state(2, "", ("a",), [0.0]))
    writer.close()
    with open_bag(tmp_path / "bad") as bag, pytest.raises(BagError, match="not the JSON object an older stack"):
        read_recorded_run(bag)
