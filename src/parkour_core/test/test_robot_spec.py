from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from parkour_core.robots import G1, H1, ROBOTS, RobotSpec, get_robot


def test_g1_has_29_joints_in_35_slots():
    assert G1.num_joints == 29
    assert len(G1.joint_names) == len(set(G1.joint_names)) == 29
    assert G1.motor_slots == tuple(range(29))
    assert G1.num_motor_slots == 35
    assert G1.dds_family == "unitree_hg"
    for column in (G1.q_min, G1.q_max, G1.dq_max, G1.tau_max, G1.default_q, G1.kp_stand, G1.kd_stand):
        assert column.shape == (29,) and column.dtype == np.float64


def test_g1_joint_order_matches_bundle_manifest(g1_walk_dir):
    manifest = json.loads((g1_walk_dir / "manifest.json").read_text())
    assert tuple(manifest["joint_names"]) == G1.joint_names


def test_g1_joint_order_matches_holosoma_onnx_metadata(g1_walk_dir):
    import onnxruntime as ort

    session = ort.InferenceSession(str(g1_walk_dir / "policy.onnx"), providers=["CPUExecutionProvider"])
    dof_names = json.loads(session.get_modelmeta().custom_metadata_map["dof_names"])
    assert tuple(dof_names) == G1.joint_names


def test_g1_sdk_order_groups():
    names = G1.joint_names
    assert names[0] == "left_hip_pitch_joint" and names[5] == "left_ankle_roll_joint"
    assert names[6] == "right_hip_pitch_joint" and names[11] == "right_ankle_roll_joint"
    assert names[12:15] == ("waist_yaw_joint", "waist_roll_joint", "waist_pitch_joint")
    assert names[15] == "left_shoulder_pitch_joint" and names[22] == "right_shoulder_pitch_joint"
    assert names[28] == "right_wrist_yaw_joint"


def test_g1_limits_and_defaults_are_ordered():
    assert np.all(G1.q_min < G1.default_q)
    assert np.all(G1.default_q < G1.q_max)
    assert np.all(G1.tau_max > 0) and np.all(G1.dq_max > 0)
    assert np.all(G1.kp_stand > 0) and np.all(G1.kd_stand > 0)


def test_g1_sides_mirror():
    idx = {n: i for i, n in enumerate(G1.joint_names)}
    for name in G1.joint_names:
        if not name.startswith("left_"):
            continue
        left, right = idx[name], idx["right_" + name[len("left_") :]]
        roll_or_yaw = "roll" in name or "yaw" in name
        if roll_or_yaw:
            assert G1.q_min[left] == pytest.approx(-G1.q_max[right]), name
            assert G1.q_max[left] == pytest.approx(-G1.q_min[right]), name
            assert G1.default_q[left] == pytest.approx(-G1.default_q[right]), name
        else:
            assert (G1.q_min[left], G1.q_max[left]) == (G1.q_min[right], G1.q_max[right]), name
            assert G1.default_q[left] == G1.default_q[right], name
        assert G1.tau_max[left] == G1.tau_max[right], name


def test_g1_ranges_match_mujoco_model():
    mujoco = pytest.importorskip("mujoco")
    from parkour_sim.scene import build_model

    model = build_model(G1, "flat", 0.002)
    for j in G1.joints:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j.name)
        assert jid >= 0, f"{j.name} not in the MuJoCo model"
        assert model.jnt_limited[jid], j.name
        lo, hi = model.jnt_range[jid]
        assert lo == pytest.approx(j.q_min, abs=1e-3), j.name
        assert hi == pytest.approx(j.q_max, abs=1e-3), j.name
    # The per-side ranges really differ (guards against both sides using one table row).
    left = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "left_hip_roll_joint")
    right = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "right_hip_roll_joint")
    assert model.jnt_range[left][1] > 2.0 and model.jnt_range[right][1] < 1.0


def test_get_robot():
    assert get_robot("g1") is G1
    assert get_robot("h1") is H1
    assert ROBOTS == {"g1": G1, "h1": H1}
    with pytest.raises(ValueError, match=r"unknown robot 'h2'; known robots: g1, h1"):
        get_robot("h2")


def test_rejects_duplicate_motor_slots():
    slots = list(range(29))
    slots[5] = 4
    with pytest.raises(ValueError, match="motor slots repeat"):
        dataclasses.replace(G1, motor_slots=tuple(slots))


def test_rejects_slot_count_mismatch():
    with pytest.raises(ValueError, match="29 joints but 28 motor slots"):
        dataclasses.replace(G1, motor_slots=tuple(range(28)))


def test_rejects_slot_beyond_message():
    with pytest.raises(ValueError, match="motor slot beyond the 35 slots"):
        dataclasses.replace(G1, motor_slots=(*range(28), 35))


def test_rejects_default_outside_range():
    joints = list(G1.joints)
    joints[3] = dataclasses.replace(joints[3], default_q=3.0)
    with pytest.raises(ValueError, match=r"left_knee_joint has default 3\.0 outside"):
        dataclasses.replace(G1, joints=tuple(joints))


def test_rejects_inverted_range():
    joints = list(G1.joints)
    joints[0] = dataclasses.replace(joints[0], q_min=1.0, q_max=-1.0, default_q=0.0)
    with pytest.raises(ValueError, match="left_hip_pitch_joint"):
        RobotSpec(**{**{f.name: getattr(G1, f.name) for f in dataclasses.fields(G1)}, "joints": tuple(joints)})
