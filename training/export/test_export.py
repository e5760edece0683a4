"""The student exporter: bundles load in parkour_core, ONNX computes what torch does, checks fail when they should."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import numpy_helper

from parkour_core.bundle import MANIFEST, MANIFEST_SEAL, Bundle, load_bundle, read_manifest, write_manifest
from parkour_core.command import DiscreteCommandSpec
from parkour_core.depth import DepthSpec
from parkour_core.hashing import sha256_file
from parkour_core.robots import G1
from parkour_core.runner import PolicyRunner
from training.export import __main__ as cli
from training.export import student as student_export
from training.export.models import RecurrentStudent, parameter_count
from training.export.optimize import pack_int8_blocks, rewrite_elu
from training.export.parity import (
    ParityError,
    action_range,
    check_against_reference,
    check_against_torch,
    new_frame_ticks,
    random_rollout,
    with_models,
)
from training.export.student import (
    BACKBONE_FILE,
    BACKBONE_INT8_FILE,
    STUDENT_FILE,
    STUDENT_INT8_FILE,
    build_random_student,
    export_random_student,
)

SEED = 3


@pytest.fixture(scope="module")
def tiny_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_random_student(tmp_path_factory.mktemp("tiny") / "bundle", size="php_student_tiny", seed=SEED)


@pytest.fixture()
def modules():
    return build_random_student("php_student_tiny", SEED)


def fp32(bundle: Bundle) -> Bundle:
    return with_models(bundle, STUDENT_FILE, BACKBONE_FILE)


def onnx_input_dims(path: Path) -> dict[str, list[int]]:
    graph = onnx.load(path).graph
    return {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in graph.input}


def test_tiny_bundle_loads_and_runs_in_policy_runner(tiny_bundle: Path) -> None:
    bundle = load_bundle(tiny_bundle)
    assert bundle.manifest_verified  # the exporter seals the manifest it writes
    m = bundle.manifest
    assert (m.policy.file, m.depth_backbone and m.depth_backbone.file) == (STUDENT_INT8_FILE, BACKBONE_INT8_FILE)
    assert set(m.files) == {STUDENT_FILE, BACKBONE_FILE, STUDENT_INT8_FILE, BACKBONE_INT8_FILE}
    # Every file in the folder is hashed (no .onnx.data sidecar slipped past the manifest).
    assert {p.name for p in tiny_bundle.iterdir()} - {MANIFEST, MANIFEST_SEAL} == set(m.files)
    for name, digest in m.files.items():
        assert sha256_file(tiny_bundle / name) == digest
    runner = PolicyRunner(bundle)
    rollout = random_rollout(m, 5, seed=0)
    for k in range(5):
        frame = rollout.depth_frames[k]
        if frame is not None:
            runner.set_depth(frame, stamp_s=k * 0.02)
        targets = runner.step(rollout.states[k], rollout.commands[k])
        assert targets.shape == (29,) and np.all(np.isfinite(targets))
    assert np.any(runner.latent != 0.0) and np.any(runner.hidden != 0.0)


def test_manifest_states_the_student_contract(tiny_bundle: Path, modules) -> None:
    m = read_manifest(tiny_bundle)
    terms = [(t.name, t.dims, t.scale) for t in m.obs_terms]
    assert terms == [
        ("projected_gravity", 3, 1.0),
        ("base_ang_vel", 3, 0.25),
        ("dof_pos", 29, 1.0),
        ("dof_vel", 29, 0.05),
        ("actions", 29, 1.0),
        ("command_lin_vel", 2, 1.0),
        ("command_ang_vel", 1, 1.0),
        ("command_discrete", 2, 1.0),
    ]
    assert m.robot == "g1" and m.joint_names == G1.joint_names
    assert np.allclose(m.default_joint_pos, G1.default_q)
    assert np.allclose(m.kp, G1.kp_stand) and np.allclose(m.kd, G1.kd_stand)
    assert (m.action_scale, m.policy_hz) == (0.25, 50.0)
    assert m.command == DiscreteCommandSpec()
    assert m.depth is not None and m.depth.spec == DepthSpec()
    assert (m.depth.latent_dim, m.depth.camera_hz, m.depth.latency_s) == (32, 30.0, (0.06, 0.08))
    assert m.hidden_shape == (1, 1, 16)
    assert m.provenance["training"] == f"random weights, seed {SEED}"
    assert m.provenance["git_commit"] and m.provenance["date"]


def test_observation_size_matches_terms_onnx_and_torch(tiny_bundle: Path, modules) -> None:
    m = read_manifest(tiny_bundle)
    _, student = modules
    assert m.obs_size == sum(t.dims for t in m.obs_terms) == 98
    assert student.gru.input_size == m.obs_size + 32
    for file in (STUDENT_FILE, STUDENT_INT8_FILE):
        dims = onnx_input_dims(tiny_bundle / file)
        assert dims["obs"] == [1, m.obs_size] and dims["latent"] == [1, 32] and dims["hidden"] == [1, 1, 16]
    for file in (BACKBONE_FILE, BACKBONE_INT8_FILE):
        assert onnx_input_dims(tiny_bundle / file)["depth"] == [1, 58, 87]


def test_fp32_onnx_matches_torch_over_50_recurrent_steps(tiny_bundle: Path, modules) -> None:
    backbone, student = modules
    bundle = fp32(load_bundle(tiny_bundle))
    result = check_against_torch(bundle, backbone, student, steps=50, tolerance=1e-5, seed=11)
    assert result.steps == 50
    assert result.max_action_error <= 1e-5 and result.max_hidden_error <= 1e-5
    assert result.max_abs_action > 1e-3  # the comparison is not between two zero vectors
    recorded = read_manifest(tiny_bundle).provenance["checks"]["fp32_onnx_vs_torch"]
    assert recorded["max_action_error"] <= recorded["tolerance"] == 1e-5


def test_int8_variant_is_quantised_and_within_its_tolerance(tiny_bundle: Path) -> None:
    bundle = load_bundle(tiny_bundle)
    ops = [n.op_type for n in onnx.load(tiny_bundle / STUDENT_INT8_FILE).graph.node]
    assert ops.count("MatMulInteger") == 3  # tiny MLP: 2 hidden layers + output
    backbone_ops = [n.op_type for n in onnx.load(tiny_bundle / BACKBONE_INT8_FILE).graph.node]
    assert backbone_ops.count("MatMulInteger") == 2 and "QuantizeLinear" in backbone_ops  # Gemms; static conv
    assert backbone_ops.count("Elu") == 1 and backbone_ops.count("Max") == 2  # both conv maps rewritten
    relative = student_export.INT8_RELATIVE_TOLERANCE
    result = check_against_reference(bundle, fp32(bundle), steps=100, relative_tolerance=relative)
    assert 0.0 < result.max_action_error <= relative * result.action_range
    assert result.relative_action_error == pytest.approx(result.max_action_error / result.action_range)
    recorded = bundle.manifest.provenance["checks"]["int8_vs_fp32_onnx"]
    assert recorded["relative_tolerance"] == relative
    assert recorded["tolerance"] == pytest.approx(relative * recorded["action_range"])
    assert recorded["max_action_error"] <= recorded["tolerance"]
    with pytest.raises(ParityError, match="of the reference's action range") as failed:
        check_against_reference(bundle, fp32(bundle), steps=20, relative_tolerance=result.relative_action_error / 1e3)
    assert failed.value.comparison is not None and failed.value.tolerance is not None
    assert failed.value.comparison.max_action_error > failed.value.tolerance


def test_action_range_ignores_one_outlying_tick() -> None:
    actions = np.repeat(np.linspace(-1.0, 1.0, 2000)[:, None], 29, axis=1)
    assert action_range(actions) == pytest.approx(2.0, rel=0.01)  # p99.9 - p0.1 over every joint and tick
    actions[7, 3] = 50.0  # one tick, one joint
    assert action_range(actions) < 2.1


def hide_an_outlier_weight(student: RecurrentStudent, output_scale: float, outlier: float) -> None:
    """The same function in fp32, but one outlying weight in the output layer sets its int8 scale.

    One unit of the last hidden layer is made constant (ELU(-20) = -1); an ``outlier`` weight reads it
    into action 0 and the bias adds it back, so fp32 computes what it did (with every output scaled by
    ``output_scale``). Per-tensor int8 weights get a step of outlier / 127, which rounds the others
    (about 0.25 * output_scale) to a few steps: the int8 error becomes a large part of the actions.
    """
    hidden, last = student.mlp[-3], student.mlp[-1]
    assert isinstance(hidden, torch.nn.Linear) and isinstance(last, torch.nn.Linear)
    with torch.no_grad():
        hidden.weight[0] = 0.0
        hidden.bias[0] = -20.0
        last.weight.mul_(output_scale)
        last.bias.mul_(output_scale)
        last.weight[:, 0] = 0.0
        last.weight[0, 0] = outlier
        last.bias[0] += outlier


def test_int8_error_large_against_the_action_range_fails_though_small_in_action_units(tmp_path: Path) -> None:
    backbone, student = build_random_student("php_student_tiny", SEED)
    hide_an_outlier_weight(student, output_scale=0.02, outlier=1.0)
    with pytest.raises(ParityError, match="of the reference's action range") as failed:
        student_export.export_student(backbone, student, tmp_path / "int8", "outlier", {}, precision="int8")
    result = failed.value.comparison
    assert result is not None
    # An absolute bar of 0.02 action units would pass it: its actions span only ~0.01.
    assert result.max_action_error < 0.02 and result.action_range < 0.05
    assert result.relative_action_error > 10 * student_export.INT8_RELATIVE_TOLERANCE
    assert not (tmp_path / "int8" / MANIFEST).exists()
    # The fp32 export of the same weights is fine (ONNX = torch): only the int8 pair is refused.
    student_export.export_student(backbone, student, tmp_path / "fp32", "outlier", {}, precision="fp32")


def test_php_random_student_int8_is_judged_against_its_own_small_range(tmp_path: Path) -> None:
    """Its actions stay within about +-0.1: an absolute 0.02 bar would be 10 % of that; 2 % of the range is ~0.0035."""
    out = export_random_student(tmp_path / "php", size="php_student_gpu", seed=0, precision="int8")
    check = read_manifest(out).provenance["checks"]["int8_vs_fp32_onnx"]
    assert check["max_abs_action"] < 0.2 and check["tolerance"] < 0.005
    assert 0.0 < check["max_action_error"] <= check["tolerance"]


def test_hidden_state_carries_and_reset_restores_determinism(tiny_bundle: Path) -> None:
    session = ort.InferenceSession(str(tiny_bundle / STUDENT_FILE), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(1, 98)).astype(np.float32)
    latent = rng.normal(size=(1, 32)).astype(np.float32)
    zero = np.zeros((1, 1, 16), dtype=np.float32)
    first, hidden = session.run(None, {"obs": obs, "latent": latent, "hidden": zero})
    second, _ = session.run(None, {"obs": obs, "latent": latent, "hidden": hidden})
    again, _ = session.run(None, {"obs": obs, "latent": latent, "hidden": zero})
    assert np.max(np.abs(second - first)) > 1e-4  # same input, carried state: another action
    assert np.array_equal(again, first)  # zeroed state: the same action again

    bundle = load_bundle(tiny_bundle)
    runner = PolicyRunner(bundle)
    rollout = random_rollout(bundle.manifest, 6, seed=1)

    def run_episode() -> np.ndarray:
        out = []
        for k in range(6):
            frame = rollout.depth_frames[k]
            if frame is not None:
                runner.set_depth(frame, stamp_s=0.02 * k)
            out.append(runner.step(rollout.states[k], rollout.commands[k]))
        return np.array(out)

    episode = run_episode()
    continued = run_episode()  # no reset: hidden state and previous action carry over
    runner.reset()
    replay = run_episode()
    assert np.max(np.abs(continued - episode)) > 1e-4
    assert np.array_equal(replay, episode)


def perturb_output_bias(model_path: Path, delta: float) -> None:
    """Shift one bias of the last layer: one action moves by ``delta``, everything else is exact."""
    model = onnx.load(model_path)
    last = [n for n in model.graph.node if n.op_type == "Gemm"][-1]
    bias = next(t for t in model.graph.initializer if t.name == last.input[2])
    values = numpy_helper.to_array(bias).copy()
    values[0] += delta
    bias.CopyFrom(numpy_helper.from_array(values, bias.name))
    onnx.save(model, model_path)


def test_parity_check_reports_a_perturbed_onnx_weight(tiny_bundle: Path, tmp_path: Path, modules) -> None:
    backbone, student = modules
    copy = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, copy)
    perturb_output_bias(copy / STUDENT_FILE, 1e-3)
    m = read_manifest(copy)
    write_manifest(copy, dataclasses.replace(m, files={**m.files, STUDENT_FILE: sha256_file(copy / STUDENT_FILE)}))
    with pytest.raises(ParityError, match=r"max action error 0\.001"):
        check_against_torch(fp32(load_bundle(copy)), backbone, student, steps=50, tolerance=1e-5)


def test_cli_writes_no_manifest_and_exits_nonzero_when_the_check_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_export = student_export.export_onnx

    def export_then_corrupt(backbone, student, out_dir: Path) -> None:
        real_export(backbone, student, out_dir)
        perturb_output_bias(out_dir / STUDENT_FILE, 1e-3)

    monkeypatch.setattr(student_export, "export_onnx", export_then_corrupt)
    out = tmp_path / "bundle"
    out.mkdir()
    (out / MANIFEST).write_text("{}")  # a stale manifest from an earlier export must not survive
    (out / MANIFEST_SEAL).write_text("0" * 64 + "  manifest.json\n")  # nor its seal
    code = cli.main(["--random", "--size", "php_student_tiny", "--seed", "0", "--out", str(out)])
    assert code == 1
    assert "export failed" in capsys.readouterr().err
    assert not (out / MANIFEST).exists()
    assert not (out / MANIFEST_SEAL).exists()


def test_fp32_precision_bundle_runs_the_reference_models(tiny_bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, out)  # an earlier int8 export in the same folder
    export_random_student(out, size="php_student_tiny", seed=1, precision="fp32")
    m = load_bundle(out).manifest
    assert m.policy.file == STUDENT_FILE and m.depth_backbone is not None and m.depth_backbone.file == BACKBONE_FILE
    assert set(m.files) == {STUDENT_FILE, BACKBONE_FILE}
    assert {p.name for p in out.iterdir()} == {MANIFEST, MANIFEST_SEAL, STUDENT_FILE, BACKBONE_FILE}  # no stale int8
    assert "int8_vs_fp32_onnx" not in m.provenance["checks"]


def test_elu_rewrite_computes_elu(tmp_path: Path) -> None:
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1000])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 1000])
    graph = onnx.helper.make_graph([onnx.helper.make_node("Elu", ["x"], ["y"])], "elu", [x], [y])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    rewritten = rewrite_elu(model)
    assert [n.op_type for n in rewritten.graph.node] == ["Min", "Exp", "Sub", "Max"]
    values = np.linspace(-30.0, 30.0, 1000, dtype=np.float32)[None]
    expected = np.where(values > 0, values, np.expm1(values.astype(np.float64)))
    got = ort.InferenceSession(rewritten.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": values}
    )[0]
    assert np.max(np.abs(got - expected)) < 1e-6
    assert [n.op_type for n in rewrite_elu(model, min_elements=1001).graph.node] == ["Elu"]


def test_camera_frames_arrive_on_three_of_five_ticks() -> None:
    ticks = new_frame_ticks(50, policy_hz=50.0, camera_hz=30.0)
    assert sum(ticks) == 30
    # ticks at 0, 20, 40, 60, 80 ms; frames at 0, 33.3, 66.7 ms: new at 0, 40 and 80 ms
    assert ticks[:5] == [True, False, True, False, True]


def test_php_size_has_the_published_parameter_count() -> None:
    backbone, student = build_random_student("php_student_gpu", 0)
    total = parameter_count(backbone) + parameter_count(student)
    assert total == 11_626_045  # FACTS: about 11.6M (46 MB of fp32 weights)
    assert student.gru.hidden_size == 256


def test_int8_block_precision_uses_matmul_nbits_within_tolerance(tmp_path: Path) -> None:
    out = export_random_student(tmp_path / "block", size="php_student_tiny", seed=2, precision="int8-block")
    bundle = load_bundle(out)
    ops = [n.op_type for n in onnx.load(out / STUDENT_INT8_FILE).graph.node]
    assert ops.count("MatMulNBits") == 3 and "Gemm" not in ops
    backbone_ops = [n.op_type for n in onnx.load(out / BACKBONE_INT8_FILE).graph.node]
    assert backbone_ops.count("MatMulNBits") == 2 and "Gemm" not in backbone_ops
    recorded = bundle.manifest.provenance["checks"]["int8_vs_fp32_onnx"]
    assert recorded["weights"] == "block"
    assert 0.0 < recorded["max_action_error"] <= recorded["tolerance"]


def test_int8_blocks_round_trip_within_half_a_step() -> None:
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(5, 300)).astype(np.float32)
    weight[1, :128] = 0.0  # an all-zero block
    quantised, scales = pack_int8_blocks(weight, block_size=128)
    assert quantised.shape == (5, 3, 128) and scales.shape == (5, 3)  # 300 -> 3 blocks, zero-padded
    restored = ((quantised.astype(np.float64) - 128.0) * scales[..., None]).reshape(5, -1)
    assert np.all(restored[:, 300:] == 0.0) and np.all(restored[1, :128] == 0.0)
    step = np.repeat(scales, 128, axis=1)[:, :300]
    assert np.all(np.abs(restored[:, :300] - weight) <= 0.5 * step + 1e-7)
