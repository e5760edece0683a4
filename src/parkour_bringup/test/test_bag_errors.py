"""Bad bags are refused with one clear line, and nothing is written or overwritten."""

import shutil
import subprocess
import sys

import pytest
import yaml

from parkour_bringup.bag.open_loop import replay_against_bundle
from parkour_bringup.bag.reader import CHECKSUMS, BagError, open_bag
from parkour_bringup.bag.synthetic import BagWriter, write_synthetic_bag

BUNDLE = "g1_walk_depth_gated"


@pytest.fixture(scope="module")
def good_bag(tmp_path_factory):
    return write_synthetic_bag(tmp_path_factory.mktemp("bags") / "good", bundle=BUNDLE, ticks=40)


def _copy(good_bag, tmp_path, name="bag"):
    return shutil.copytree(good_bag, tmp_path / name)


def _replay(path, bundle=BUNDLE):
    with open_bag(path) as bag:
        return replay_against_bundle(bag, bundle)


def _mcap(path):
    (mcap,) = path.glob("*.mcap")
    return mcap


def _corrupt_middle(good_bag, tmp_path):
    bag = _copy(good_bag, tmp_path)
    mcap = _mcap(bag)
    data = bytearray(mcap.read_bytes())
    middle = len(data) // 3
    data[middle : middle + 4096] = b"\xff" * 4096
    mcap.write_bytes(bytes(data))
    return bag


def test_missing_path_and_plain_file(tmp_path):
    with pytest.raises(BagError, match="does not exist"):
        open_bag(tmp_path / "nope")
    (tmp_path / "file.mcap").write_bytes(b"x")
    with pytest.raises(BagError, match="not a bag folder"):
        open_bag(tmp_path / "file.mcap")


def test_unfinished_recording_without_metadata(good_bag, tmp_path):
    bag = _copy(good_bag, tmp_path)
    (bag / "metadata.yaml").unlink()
    with pytest.raises(BagError, match=r"no metadata\.yaml: the recording did not finish cleanly"):
        open_bag(bag)


def test_truncated_storage(good_bag, tmp_path):
    bag = _copy(good_bag, tmp_path)
    mcap = _mcap(bag)
    data = mcap.read_bytes()
    mcap.write_bytes(data[: len(data) // 2])
    with pytest.raises(BagError, match=r"corrupt or truncated|cannot be opened|truncated"):
        _replay(bag)


def test_corrupt_storage(good_bag, tmp_path):
    bag = _corrupt_middle(good_bag, tmp_path)
    with pytest.raises(BagError, match=r"corrupt or truncated|cannot be opened|truncated"):
        _replay(bag)


@pytest.mark.parametrize("verb", ["info", "replay"])
def test_cli_says_a_bag_damaged_in_the_middle_is_damaged_and_where(good_bag, tmp_path, verb):
    """info reads every record (the metadata's counts say nothing about the data); neither verb leaks the storage
    reader's own error text."""
    bag = _corrupt_middle(good_bag, tmp_path)
    args = ["--bundle", BUNDLE] if verb == "replay" else []
    proc = subprocess.run([sys.executable, "-m", "parkour_bringup.cli", "bag", verb, str(bag), *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stdout + proc.stderr
    assert "is damaged (corrupt or truncated storage)" in lines[0] and "messages its metadata lists read" in lines[0]
    assert "Python int" not in lines[0] and not proc.stdout.strip()


def test_a_byte_changed_inside_a_message_is_damage_by_the_checksums_written_at_close(good_bag, tmp_path):
    """The storage's records still parse (rosbags writes no CRCs); the value would silently differ."""
    bag = _copy(good_bag, tmp_path)
    mcap = _mcap(bag)
    data = bytearray(mcap.read_bytes())
    data[len(data) // 2] ^= 0x01
    mcap.write_bytes(bytes(data))
    with open_bag(bag) as opened, pytest.raises(BagError, match=r"damaged \(changed since it was recorded\): "
                                                              rf"{mcap.name} has SHA-256"):  # fmt: skip
        opened.verify()
    (bag / CHECKSUMS).unlink()  # a bag from before checksums: read as before
    with open_bag(bag) as opened:
        assert opened.verify() == opened.topics


def test_verify_counts_every_message_of_a_good_bag(good_bag):
    with open_bag(good_bag) as bag:
        assert bag.verify() == bag.topics


def test_bag_of_another_robot(tmp_path):
    bag = write_synthetic_bag(tmp_path / "h1", bundle=BUNDLE, ticks=3, robot="h1")
    with pytest.raises(BagError, match="recorded on a h1, not a g1"):
        _replay(bag)


def test_bag_that_does_not_say_its_robot(good_bag, tmp_path):
    bag = _copy(good_bag, tmp_path)
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())
    del meta["rosbag2_bagfile_information"]["custom_data"]["robot"]
    (bag / "metadata.yaml").write_text(yaml.safe_dump(meta))
    with pytest.raises(BagError, match="does not say which robot"):
        _replay(bag)


def test_bag_without_the_policy_inputs(tmp_path):
    writer = BagWriter(tmp_path / "joints_only", {"robot": "g1"})
    writer.write("/robot/joint_states", 1, writer.joint_state(1, "", ["a"], [0.0]))
    writer.close()
    with pytest.raises(BagError, match="no messages on /policy/tick_inputs, /policy/joint_targets"):
        _replay(tmp_path / "joints_only")


def test_unknown_bundle(good_bag):
    with pytest.raises(BagError, match="bundle 'no_such_bundle'"):
        _replay(good_bag, "no_such_bundle")


def test_cli_refuses_a_truncated_bag_and_keeps_the_previous_result(good_bag, tmp_path):
    bag = _copy(good_bag, tmp_path)
    mcap = _mcap(bag)
    mcap.write_bytes(mcap.read_bytes()[:2000])
    out = tmp_path / "out"
    out.mkdir()
    previous = out / "divergence.json"
    previous.write_text('{"previous": true}\n')
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "bag", "replay", str(bag), "--bundle", BUNDLE]
    proc = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("parkour bag: error:"), proc.stderr
    assert previous.read_text() == '{"previous": true}\n'


def test_recording_never_overwrites_a_bag(good_bag):
    before = sorted(p.name for p in good_bag.iterdir())
    proc = subprocess.run(
        [sys.executable, "-m", "parkour_bringup.cli", "bag", "record", str(good_bag)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "never overwrites" in proc.stderr
    assert sorted(p.name for p in good_bag.iterdir()) == before
