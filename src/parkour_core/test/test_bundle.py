from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import (
    FORMAT_VERSION,
    MANIFEST_SEAL,
    BundleError,
    Manifest,
    load_bundle,
    read_manifest,
    seal_manifest,
    write_manifest,
)
from parkour_core.bundles import registry
from parkour_core.hashing import sha256_file
from parkour_core.paths import models_dir
from parkour_core.robots import G1


def edit_manifest(bundle: Path, edit, seal: bool = True) -> None:
    """Edit the manifest on purpose; ``seal``: as its writer would (the check under test is not the seal's)."""
    path = bundle / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))
    if seal:
        seal_manifest(bundle)


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
    seal_manifest(bundle_copy)
    with pytest.raises(BundleError, match="is not valid JSON"):
        load_bundle(bundle_copy)


def test_manifest_not_an_object(bundle_copy):
    (bundle_copy / "manifest.json").write_text("[1, 2]")
    seal_manifest(bundle_copy)
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


# ---------------------------------------------------------------------------------------------- the seal


def test_write_manifest_seals_it_and_the_seal_is_sha256sum_s(bundle_copy):
    (bundle_copy / MANIFEST_SEAL).unlink()
    write_manifest(bundle_copy, dataclasses.replace(read_manifest(bundle_copy), name="resealed"))
    digest, name = (bundle_copy / MANIFEST_SEAL).read_text().split()
    assert (digest, name) == (sha256_file(bundle_copy / "manifest.json"), "manifest.json")
    assert load_bundle(bundle_copy).manifest_verified


def dangerous(d: dict) -> None:
    """g1_walk's manifest with a tenfold action scale and three times its stiffness."""
    d["action_scale"] = 2.5
    d["kp"] = [3.0 * kp for kp in d["kp"]]


def test_manifest_edited_after_writing_is_refused_in_one_line(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d.__setitem__("kp", [3.0 * kp for kp in d["kp"]]), seal=False)
    with pytest.raises(BundleError) as refused:
        load_bundle(bundle_copy)
    message = str(refused.value)
    assert "manifest.json changed since the bundle was written" in message
    assert "re-export" in message and "re-import" in message and "\n" not in message
    with pytest.raises(BundleError, match="changed since the bundle was written"):
        read_manifest(bundle_copy)  # the supervisor reads a bundle's gains this way: refused as well


def test_a_seal_that_holds_no_digest_is_refused(bundle_copy):
    (bundle_copy / MANIFEST_SEAL).write_text("not a digest\n")
    with pytest.raises(BundleError, match=r"manifest\.sha256 holds no SHA-256"):
        load_bundle(bundle_copy)


def test_an_unsealed_bundle_loads_unverified_with_one_warning(bundle_copy, caplog):
    (bundle_copy / MANIFEST_SEAL).unlink()
    with caplog.at_level("WARNING", logger="parkour_core.bundle"):
        first = load_bundle(bundle_copy)
        again = load_bundle(bundle_copy)
    assert not first.manifest_verified and not again.manifest_verified
    (warning,) = [r.getMessage() for r in caplog.records]
    assert f"has no {MANIFEST_SEAL}" in warning and "\n" not in warning


def test_an_unsealed_bundle_is_still_bounded(bundle_copy):
    (bundle_copy / MANIFEST_SEAL).unlink()
    edit_manifest(bundle_copy, dangerous, seal=False)
    with pytest.raises(BundleError, match=r"action_scale 2\.5 moves"):
        load_bundle(bundle_copy)


# ---------------------------------------------------------------------------------------------- the bounds


def test_a_dangerous_manifest_sealed_as_if_written_so_is_refused_by_its_bounds(bundle_copy):
    edit_manifest(bundle_copy, dangerous)
    with pytest.raises(BundleError, match=r"action_scale 2\.5 moves left_ankle_roll_joint's target 2\.5 rad") as e:
        load_bundle(bundle_copy)
    assert "4.8 times its 0.524 rad range" in str(e.value) and "action_scale <= 1.31" in str(e.value)


WRIST = G1.joint_names.index("left_wrist_pitch_joint")  # 5 N m: kp <= 5000, kd <= 50


def set_joint(key: str, joint: int, value: float):
    return lambda d: d[key].__setitem__(joint, value)


def test_kp_out_of_bound_is_refused_naming_the_joint_and_value(bundle_copy):
    edit_manifest(bundle_copy, set_joint("kp", WRIST, 6000.0))
    with pytest.raises(
        BundleError, match=r"kp 6000 of left_wrist_pitch_joint .* \(bound: kp <= 5000, at least 1 mrad\)"
    ):
        load_bundle(bundle_copy)


def test_kd_out_of_bound_is_refused_naming_the_joint_and_value(bundle_copy):
    edit_manifest(bundle_copy, set_joint("kd", WRIST, 60.0))
    with pytest.raises(
        BundleError, match=r"kd 60 of left_wrist_pitch_joint .* \(bound: kd <= 50, at least 0.1 rad/s\)"
    ):
        load_bundle(bundle_copy)


@pytest.mark.parametrize("scale", [2.5, 0.0, -0.25, float("nan")])
def test_action_scale_out_of_bound_is_refused(bundle_copy, scale):
    edit_manifest(bundle_copy, lambda d: d.__setitem__("action_scale", scale))
    with pytest.raises(BundleError, match=f"action_scale {scale}"):
        load_bundle(bundle_copy)


def test_a_tight_action_clip_bounds_the_reach_instead(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d.update(action_scale=2.5, action_clip=0.4))  # at most 1.0 rad: 1.9 ranges
    load_bundle(bundle_copy)


def test_the_stiffest_gains_an_importer_brings_pass(bundle_copy):
    """Isaac Lab's G1 29-DoF actuators (importers/examples): upper body kp 3000-5000, kd 5-10."""
    arms = [j for j, name in enumerate(G1.joint_names) if "shoulder" in name or "elbow" in name or "wrist" in name]
    waist = [j for j, name in enumerate(G1.joint_names) if name.startswith("waist")]

    def locked(d):
        for j in arms:
            d["kp"][j], d["kd"][j] = 3000.0, 10.0
        for j in waist:
            d["kp"][j], d["kd"][j] = 5000.0, 5.0
        d["action_scale"] = 0.5

    edit_manifest(bundle_copy, locked)
    load_bundle(bundle_copy)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("kp", -1.0, "kp -1.0 of left_hip_pitch_joint must be finite and at least 0"),
        ("kd", float("nan"), "kd nan of left_hip_pitch_joint must be finite"),
        ("default_joint_pos", -3.0, r"default_joint_pos -3 of left_hip_pitch_joint is outside its limits"),
    ],
)
def test_negative_non_finite_and_out_of_range_values_are_refused(bundle_copy, key, value, match):
    edit_manifest(bundle_copy, set_joint(key, 0, value))
    with pytest.raises(BundleError, match=match):
        load_bundle(bundle_copy)


def registered_bundles() -> list[tuple[str, dict]]:
    """models/registry.yaml's entries whose folder is here (student_random only after a benchmark made it)."""
    entries = registry()
    return sorted((name, entry) for name, entry in entries.items() if (models_dir() / entry["path"]).is_dir())


@pytest.mark.parametrize(("name", "entry"), [pytest.param(*e, id=e[0]) for e in registered_bundles()])
def test_every_bundle_under_models_loads_within_bounds_and_committed_ones_sealed(name, entry):
    bundle = load_bundle(models_dir() / entry["path"])
    if "trained_by" in entry:  # committed (generated ones are sealed by their generator at `make setup`)
        assert bundle.manifest_verified, f"models/{entry['path']}: {MANIFEST_SEAL} is missing"
