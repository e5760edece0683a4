"""`parkour model import mjlab`: an ONNX with the metadata mjlab's exporter attaches, and each refusal.

The files are built here with torch as mjlab 1.6.0 writes them (``MjlabOnPolicyRunner.export_policy_to_onnx``:
input ``obs``, output ``actions``; ``get_base_metadata`` / ``attach_metadata_to_onnx``: CSV with three
decimals, sequence entries joined by ';'), with the rounded values mjlab wrote for its G1 velocity task, so
they run without .venv-mjlab. The import is checked against the network fed the observation restated here
in mjlab's layout; the parity with mjlab's own environment is training/backends/mjlab/test_velocity_parity.py.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from parkour_core.bundle import load_bundle
from parkour_core.bundles import verify_bundle
from parkour_core.bundles.importers import import_bundle
from parkour_core.math3d import projected_gravity
from parkour_core.robots import G1
from parkour_core.runner import RobotState

try:
    import onnx
    import torch
except ImportError:  # a robot-only install has neither: it imports nothing, it runs bundles
    pytest.skip("torch and onnx build the exports here; a robot-only install has neither", allow_module_level=True)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TERMS = ("base_ang_vel", "projected_gravity", "joint_pos", "joint_vel", "actions", "command")
# What mjlab 1.6.0's exporter wrote for its G1 (three decimals): pattern -> (action scale, stiffness, damping).
G1_ROUNDED = {
    r".*_(hip_pitch|hip_yaw)_joint|waist_yaw_joint": (0.548, 40.179, 2.558),
    r".*_(hip_roll|knee)_joint": (0.351, 99.098, 6.309),
    r".*_(ankle_.*)_joint|waist_(roll|pitch)_joint": (0.439, 28.501, 1.814),
    r".*_(shoulder_.*|elbow|wrist_roll)_joint": (0.439, 14.251, 0.907),
    r".*_wrist_(pitch|yaw)_joint": (0.075, 16.778, 1.068),
}
# A trainer's joint order other than the SDK's: by joint kind, then side (as a breadth-first walk orders them).
_LEGS = ("hip_pitch", "hip_roll", "hip_yaw", "knee")
_REST = ("ankle_pitch", "ankle_roll", "shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_roll",
         "wrist_pitch", "wrist_yaw")  # fmt: skip
BREADTH_FIRST = [
    *(f"{s}_{j}_joint" for j in _LEGS for s in ("left", "right")),
    "waist_yaw_joint",
    "waist_roll_joint",
    "waist_pitch_joint",
    *(f"{s}_{j}_joint" for j in _REST for s in ("left", "right")),
]
GO1 = [f"{leg}_{j}_joint" for leg in ("FR", "FL", "RR", "RL") for j in ("hip", "thigh", "calf")]


def rounded(joint: str, column: int) -> float:
    return next(v[column] for p, v in G1_ROUNDED.items() if re.fullmatch(p, joint))


def _one(x) -> str:
    return f"{x:.3f}" if isinstance(x, int | float) else str(x)


def csv(values: list) -> str:
    """mjlab's ``list_to_csv_str``: three decimals, sequence entries joined by ';'."""
    return ",".join(";".join(_one(v) for v in x) if isinstance(x, list | tuple) else _one(x) for x in values)


class MjlabPolicy(torch.nn.Module):
    """rsl_rl 5's ONNX actor as mjlab exports it: the observation normalizer, then the MLP."""

    def __init__(self, n_obs: int, n_act: int, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.n_obs = n_obs
        self.mlp = torch.nn.Sequential(torch.nn.Linear(n_obs, 64), torch.nn.ELU(), torch.nn.Linear(64, n_act))
        gen = torch.Generator().manual_seed(seed + 1)
        self.mean = torch.nn.Buffer(torch.randn(n_obs, generator=gen) * 0.1)
        self.std = torch.nn.Buffer(torch.rand(n_obs, generator=gen) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp((x - self.mean) / (self.std + 1e-2))


def mjlab_export(path: Path, joints: list[str] | None = None, terms: tuple[str, ...] = TERMS, n_obs: int | None = None,
                 **changes) -> tuple[Path, MjlabPolicy]:  # fmt: skip
    """An mjlab-format file for the G1 velocity task (``joints``: the trainer's order); ``changes`` replace
    metadata entries (None removes one)."""
    joints = list(G1.joint_names) if joints is None else joints
    n = len(joints)
    dims = {"base_ang_vel": 3, "projected_gravity": 3, "command": 3, "base_lin_vel": 3}
    n_obs = n_obs or sum(dims.get(t, n) for t in terms)
    model = MjlabPolicy(n_obs, n)
    torch.onnx.export(model.eval(), (torch.zeros(1, n_obs),), str(path), export_params=True, opset_version=18,
                      input_names=["obs"], output_names=["actions"], dynamic_axes={}, dynamo=False)  # fmt: skip
    g1 = set(joints) <= set(G1.joint_names)
    metadata = {
        "run_path": "local",
        "joint_names": joints,
        "joint_stiffness": [rounded(j, 1) if g1 else 20.0 for j in joints],
        "joint_damping": [rounded(j, 2) if g1 else 0.5 for j in joints],
        "default_joint_pos": [float(G1.default_q[G1.joint_names.index(j)]) if g1 else 0.1 for j in joints],
        "command_names": ["twist"],
        "observation_names": list(terms),
        "observation_terms_scale": [1.0] * len(terms),
        "observation_terms_flatten_history_dim": [True] * len(terms),
        "observation_terms_history_length": [0] * len(terms),
        "observation_terms_clip": [[float("-inf"), float("inf")]] * len(terms),
        "action_scale": [rounded(j, 0) if g1 else 0.25 for j in joints],
    } | changes
    proto = onnx.load(str(path))
    for key, value in metadata.items():
        if value is not None:
            proto.metadata_props.add(key=key, value=csv(value) if isinstance(value, list) else str(value))
    onnx.save(proto, str(path))
    return path, model


def random_state(rng: np.random.Generator) -> RobotState:
    quat = np.array([1.0, *rng.normal(0, 0.05, 3)])
    q, dq, gyro = G1.default_q + rng.normal(0, 0.1, 29), rng.normal(0, 0.5, 29), rng.normal(0, 0.3, 3)
    return RobotState(q, dq, quat / np.linalg.norm(quat), gyro)


def check_runs_as_mjlab(bundle_dir: Path, model: MjlabPolicy, joints: list[str]) -> None:
    """The runtime's targets (SDK order) against mjlab's: the network on mjlab's observation in the trainer's
    joint order, ``default + scale x action`` with the scale the import recorded."""
    bundle, runner = verify_bundle(str(bundle_dir))
    assert bundle.manifest_verified
    record = bundle.manifest.provenance["import"]
    to_file = [G1.joint_names.index(j) for j in joints]  # file joint i is SDK joint to_file[i]
    scale = np.asarray(record["action"]["scale"])
    default = np.asarray(bundle.manifest.default_joint_pos)[to_file]
    rng, last = np.random.default_rng(1), np.zeros(29)
    for _ in range(5):
        s, command = random_state(rng), rng.normal(0, 0.5, 3)
        obs = np.concatenate([s.gyro, projected_gravity(s.quat_wxyz), s.q[to_file] - default, s.dq[to_file], last,
                              command])  # fmt: skip
        with torch.no_grad():
            action = model(torch.tensor(obs, dtype=torch.float32)[None])[0].numpy().astype(np.float64)
        expected = np.empty(29)
        expected[to_file] = default + scale * action
        np.testing.assert_allclose(runner.step(s, command), expected, atol=1e-5)
        last = action


def test_mjlab_g1_export_imports_from_its_metadata_and_runs_as_the_trainer_s_network(tmp_path):
    path, model = mjlab_export(tmp_path / "policy.onnx")
    out = import_bundle("mjlab", str(path), tmp_path / "mjlab_walk")
    check_runs_as_mjlab(out, model, list(G1.joint_names))
    m = load_bundle(out).manifest
    record = m.provenance["import"]
    assert record["format"] == "mjlab" and m.policy_hz == 50.0 and m.obs_size == 96
    assert [t["maps_to"] for t in record["observation"]["terms"]][-1] == ["command_lin_vel", "command_ang_vel"]
    # The metadata's three decimals give way to mjlab's G1 constants they round to (scale 0.548 is 0.54754...).
    for values, column in ((record["action"]["scale"], 0), (m.kp, 1), (m.kd, 2)):
        rounded_values = [rounded(j, column) for j in G1.joint_names]
        assert np.abs(np.asarray(values) - rounded_values).max() <= 5e-4 and list(values) != rounded_values
    assert record["action"]["scale"][0] == pytest.approx(0.25 * 88.0 / m.kp[0], rel=1e-12)  # 0.25 effort / kp
    assert sum("mjlab 1.6.0's G1 constants" in v for v in record["verified"]) == 3
    assert any("50 Hz" in a for a in record["assumed"])


def test_mjlab_joint_order_other_than_the_sdk_s_is_mapped_by_name(tmp_path):
    path, model = mjlab_export(tmp_path / "policy.onnx", joints=BREADTH_FIRST)
    out = import_bundle("mjlab", str(path), tmp_path / "b")
    check_runs_as_mjlab(out, model, BREADTH_FIRST)
    record = load_bundle(out).manifest.provenance["import"]
    assert record["trainer_joint_order"] == BREADTH_FIRST and any("reordered" in a for a in record["adapter"])


def test_mjlab_gains_that_are_not_mjlab_s_g1_constants_are_the_metadata_s_rounded_values(tmp_path):
    path, _ = mjlab_export(tmp_path / "policy.onnx", joint_stiffness=[50.0] * 29)
    m = load_bundle(import_bundle("mjlab", str(path), tmp_path / "b")).manifest
    record = m.provenance["import"]
    assert m.kp == (50.0,) * 29 and m.kd != tuple(rounded(j, 2) for j in G1.joint_names)
    assert any("PD stiffness as the metadata rounds it" in a for a in record["assumed"])


# ---------------------------------------------------------------------------------------------- refusals


def _sibling(name: str) -> Any:
    """A test module beside this one, by path (tests here are not a package: ``--import-mode=importlib``)."""
    spec = importlib.util.spec_from_file_location(f"parkour_core_{name}", Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# One refusal check for every importer: refused with one line holding the words, and nothing written.
refused = _sibling("test_bundle_import").refused


def test_mjlab_refused_unknown_term_the_stock_task_s_base_lin_vel(tmp_path):
    path, _ = mjlab_export(tmp_path / "policy.onnx", terms=("base_lin_vel", *TERMS))
    message = refused(lambda out: import_bundle("mjlab", str(path), out), tmp_path,
                      "observation term 'base_lin_vel' maps to no parkour_core term")  # fmt: skip
    assert "retrain without it" in message
    path, _ = mjlab_export(tmp_path / "contact.onnx", terms=(*TERMS, "foot_contact"), n_obs=98)
    refused(lambda out: import_bundle("mjlab", str(path), out), tmp_path,
            "observation term 'foot_contact' maps to no parkour_core term")  # fmt: skip


def test_mjlab_refused_joint_order_mismatch(tmp_path):
    path, _ = mjlab_export(tmp_path / "policy.onnx", joints=BREADTH_FIRST)
    spec = tmp_path / "spec.yaml"
    spec.write_text("joints: [" + ", ".join(G1.joint_names) + "]\n")
    refused(lambda out: import_bundle("mjlab", str(path), out, spec=spec), tmp_path,
            "joint order: policy.onnx records 'right_hip_pitch_joint' at position 1, the declaration "
            "'left_hip_roll_joint'")  # fmt: skip


def test_mjlab_refused_missing_default_pose(tmp_path):
    path, _ = mjlab_export(tmp_path / "policy.onnx", default_joint_pos=None)
    refused(lambda out: import_bundle("mjlab", str(path), out), tmp_path,
            "default_joint_pos is missing: supply the default pose")  # fmt: skip


def test_mjlab_refused_missing_action_scale(tmp_path):
    path, _ = mjlab_export(tmp_path / "policy.onnx", action_scale=None)
    refused(lambda out: import_bundle("mjlab", str(path), out), tmp_path,
            "action.scale is missing: supply the action scale")  # fmt: skip


def test_mjlab_refused_wrong_robot(tmp_path):
    path, _ = mjlab_export(tmp_path / "policy.onnx", joints=GO1)
    refused(lambda out: import_bundle("mjlab", str(path), out), tmp_path,
            "robot: policy.onnx's joints (FR_hip_joint, FR_thigh_joint, FR_calf_joint, ...) are none of a robot "
            "this stack runs (g1, h1)")  # fmt: skip


def test_mjlab_refused_dof_count(tmp_path):
    """The 23-joint G1 (no wrist pitch and yaw, no waist roll and pitch)."""
    g1_23 = [j for j in G1.joint_names if not re.fullmatch(r".*_wrist_(pitch|yaw)_joint|waist_(roll|pitch)_joint", j)]
    path, _ = mjlab_export(tmp_path / "policy.onnx", joints=g1_23)
    refused(lambda out: import_bundle("mjlab", str(path), out), tmp_path,
            "DoF count: the policy drives 23 joints, the g1 has 29")  # fmt: skip


def test_mjlab_refused_what_mjlab_records_but_the_runtime_cannot_restate(tmp_path):
    """History, a per-value scale, an asymmetric clip, a file without mjlab's metadata."""
    cases: dict[str, dict[str, Any]] = {
        "stacks 5 frames of history": {"observation_terms_history_length": [5, 0, 0, 0, 0, 0]},
        "has a scale per value (1.000;2.000;1.000)": {"observation_terms_scale": [1.0, 1.0, 1.0, 1.0, 1.0,
                                                                                  [1.0, 2.0, 1.0]]},
        "is clipped to [-1.0, 2.0]": {"observation_terms_clip": [[-1.0, 2.0]] + [[float("-inf"), float("inf")]] * 5},
        "has no mjlab metadata": {"joint_names": None, "observation_names": None},
    }  # fmt: skip
    for i, (words, changes) in enumerate(cases.items()):
        path, _ = mjlab_export(tmp_path / f"policy{i}.onnx", **changes)
        refused(lambda out, path=path: import_bundle("mjlab", str(path), out), tmp_path, words)


def test_mjlab_a_clip_and_scale_are_the_runtime_s_term_clip(tmp_path):
    clip = [[-20.0, 20.0] if t == "joint_vel" else [float("-inf"), float("inf")] for t in TERMS]
    path, _ = mjlab_export(tmp_path / "policy.onnx", observation_terms_clip=clip,
                           observation_terms_scale=[0.05 if t == "joint_vel" else 1.0 for t in TERMS])  # fmt: skip
    term = next(t for t in load_bundle(import_bundle("mjlab", str(path), tmp_path / "b")).manifest.obs_terms
                if t.name == "dof_vel")  # fmt: skip
    assert (term.scale, term.clip) == (0.05, pytest.approx(1.0))
