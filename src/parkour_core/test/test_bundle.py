from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import FORMAT_VERSION, BundleError, Manifest, load_bundle, read_manifest, write_manifest
from parkour_core.hashing import sha256_file
from parkour_core.robots import G1


def edit_manifest(bundle: Path, edit) -> None:
    path = bundle / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))


def test_load_real_bundle(g1_walk_dir):
    b = load_bundle(g1_walk_dir)
    m = b.manifest
    assert b.robot is G1
    assert m.name == "g1_walk"
    assert m.robot == "g1"
    assert m.format_version == FORMAT_VERSION
    assert m.joint_names == G1.joint_names
    assert len(m.kp) == len(m.kd) == len(m.default_joint_pos) == 29
    assert m.obs_size == 100
    assert m.policy.file == "policy.onnx"
    assert m.files["policy.onnx"] == sha256_file(g1_walk_dir / "policy.onnx")
    assert b.file("policy.onnx") == g1_walk_dir / "policy.onnx"
    np.testing.assert_allclose(m.default_joint_pos, G1.default_q)


def test_load_accepts_str_path(g1_walk_dir):
    assert load_bundle(str(g1_walk_dir)).manifest.name == "g1_walk"


def test_manifest_round_trips_through_write(bundle_copy):
    m = read_manifest(bundle_copy)
    write_manifest(bundle_copy, m)
    assert read_manifest(bundle_copy) == m
    assert Manifest.from_dict(m.to_dict()) == m
    load_bundle(bundle_copy)


def test_folder_missing(tmp_path):
    with pytest.raises(BundleError, match="does not exist or is not a folder"):
        load_bundle(tmp_path / "nope")


def test_manifest_file_missing(bundle_copy):
    (bundle_copy / "manifest.json").unlink()
    with pytest.raises(BundleError, match=r"has no manifest\.json"):
        load_bundle(bundle_copy)


def test_manifest_not_json(bundle_copy):
    (bundle_copy / "manifest.json").write_text('{"format_version": 1,,}')
    with pytest.raises(BundleError, match="is not valid JSON"):
        load_bundle(bundle_copy)


def test_manifest_not_an_object(bundle_copy):
    (bundle_copy / "manifest.json").write_text("[1, 2]")
    with pytest.raises(BundleError, match="must hold a JSON object"):
        load_bundle(bundle_copy)


@pytest.mark.parametrize("key", ["name", "robot", "joint_names", "kp", "kd", "action_scale", "files", "observation"])
def test_missing_key(bundle_copy, key):
    edit_manifest(bundle_copy, lambda d: d.pop(key))
    with pytest.raises(BundleError, match=f"missing key '{key}'"):
        load_bundle(bundle_copy)


def test_missing_nested_key(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d["rates"].pop("policy_hz"))
    with pytest.raises(BundleError, match="missing key 'policy_hz'"):
        load_bundle(bundle_copy)


def test_malformed_value(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d.__setitem__("action_scale", "big"))
    with pytest.raises(BundleError, match="malformed value"):
        load_bundle(bundle_copy)


def test_unknown_obs_term_is_a_bundle_error(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d["observation"]["terms"][0].__setitem__("name", "foot_contacts"))
    with pytest.raises(BundleError, match="foot_contacts"):
        load_bundle(bundle_copy)


def test_policy_onnx_missing(bundle_copy):
    (bundle_copy / "policy.onnx").unlink()
    with pytest.raises(BundleError, match=r"file policy\.onnx listed in the manifest is missing"):
        load_bundle(bundle_copy)


def test_sha256_mismatch(bundle_copy):
    path = bundle_copy / "policy.onnx"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"policy.onnx has SHA-256 .*the manifest records .*changed or corrupted"):
        load_bundle(bundle_copy)


def test_policy_file_without_hash(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d.__setitem__("files", {}))
    with pytest.raises(BundleError, match="has no SHA-256"):
        load_bundle(bundle_copy)


def test_unknown_robot_name(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d.__setitem__("robot", "h2"))
    with pytest.raises(BundleError, match=r"unknown robot 'h2'"):
        load_bundle(bundle_copy)


def test_robot_name_differs_from_given_spec(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d.__setitem__("robot", "h1"))
    with pytest.raises(BundleError, match=r"trained for robot 'h1', but this is a 'g1'"):
        load_bundle(bundle_copy, robot=G1)


def test_wrong_joint_count(bundle_copy):
    def drop_last_joint(d):
        for key in ("joint_names", "default_joint_pos", "kp", "kd"):
            d[key] = d[key][:-1]

    edit_manifest(bundle_copy, drop_last_joint)
    with pytest.raises(BundleError, match=r"joint_names do not match .*missing \['right_wrist_yaw_joint'\]"):
        load_bundle(bundle_copy)


def test_unknown_joint_name(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d["joint_names"].__setitem__(3, "left_toe_joint"))
    with pytest.raises(BundleError, match=r"missing \['left_knee_joint'\], unknown \['left_toe_joint'\]"):
        load_bundle(bundle_copy)


def test_wrong_joint_order(bundle_copy):
    def swap(d):
        names = d["joint_names"]
        names[0], names[6] = names[6], names[0]

    edit_manifest(bundle_copy, swap)
    with pytest.raises(BundleError, match="same joints in another order"):
        load_bundle(bundle_copy)


@pytest.mark.parametrize("key", ["kp", "kd", "default_joint_pos"])
def test_array_length_mismatch(bundle_copy, key):
    edit_manifest(bundle_copy, lambda d: d[key].append(1.0))
    with pytest.raises(BundleError, match=f"{key} has 30 values for 29 joints"):
        load_bundle(bundle_copy)


def test_format_version_99(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d.__setitem__("format_version", 99))
    with pytest.raises(BundleError, match=r"format_version 99 is not supported"):
        load_bundle(bundle_copy)


@pytest.mark.parametrize("hz", [0.0, -50.0, 1000.5])
def test_policy_hz_out_of_range(bundle_copy, hz):
    edit_manifest(bundle_copy, lambda d: d["rates"].__setitem__("policy_hz", hz))
    with pytest.raises(BundleError, match=r"policy_hz .* is outside \(0, 1000\]"):
        load_bundle(bundle_copy)
