"""Export the recurrent depth student as a model bundle, and check it numerically before it is used.

``export_student`` writes, into one folder:

- ``depth_backbone.onnx`` and ``student.onnx``: the fp32 reference, exported from torch with the
  GRU hidden state as an explicit input/output, checked through parkour_core's PolicyRunner
  against torch over a recurrent rollout (max error recorded in the manifest's provenance);
- with ``precision="int8"`` (the default) or ``"int8-block"`` also ``depth_backbone.int8.onnx`` and
  ``student.int8.onnx`` (see :mod:`training.export.optimize`), checked against the fp32 reference;
  the manifest's ``models`` then point at them and provenance names the reference files;
- ``manifest.json`` last, with the SHA-256 of every file, and its seal ``manifest.sha256``
  (parkour_core.bundle.write_manifest), so a failed export leaves no loadable bundle.

The contract (robot, joints, default pose, gains, observation terms, depth settings, rates) comes
from parkour_core, the same code the policy node runs.
"""

from __future__ import annotations

import dataclasses
import datetime
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch

from parkour_core.bundle import (
    FORMAT_VERSION,
    MANIFEST,
    MANIFEST_SEAL,
    Bundle,
    BundleError,
    DepthInput,
    Manifest,
    ModelIO,
    check_contract,
    check_files,
    load_bundle,
    write_manifest,
)
from parkour_core.command import DiscreteCommandSpec
from parkour_core.depth import DepthSpec
from parkour_core.hashing import sha256_file
from parkour_core.obs import ObsTerm, observation_size
from parkour_core.provenance import git_commit
from parkour_core.robots import G1, RobotSpec
from training.export.models import DepthBackbone, RecurrentStudent, StudentSize, parameter_count, student_size
from training.export.optimize import quantize_backbone, quantize_student
from training.export.parity import (
    Rollout,
    check_against_reference,
    check_against_torch,
    synthetic_depth_frame,
    with_models,
)

# The student's observation, in the order the network reads it.
STUDENT_OBS_TERMS = (
    ObsTerm("projected_gravity", 3),
    ObsTerm("base_ang_vel", 3, 0.25),
    ObsTerm("dof_pos", 29),
    ObsTerm("dof_vel", 29, 0.05),
    ObsTerm("actions", 29),
    ObsTerm("command_lin_vel", 2),
    ObsTerm("command_ang_vel", 1),
    ObsTerm("command_discrete", 2),
)
ACTION_SCALE = 0.25
POLICY_HZ = 50.0
OPSET = 17

BACKBONE_FILE = "depth_backbone.onnx"
STUDENT_FILE = "student.onnx"
BACKBONE_INT8_FILE = "depth_backbone.int8.onnx"
STUDENT_INT8_FILE = "student.int8.onnx"

# ONNX names of the models' inputs and outputs (an ONNX graph cannot reuse an input name as an output).
POLICY_IO = ModelIO(
    STUDENT_FILE, {"obs": "obs", "latent": "latent", "hidden": "hidden"}, {"action": "action", "hidden": "hidden_out"}
)
BACKBONE_IO = ModelIO(BACKBONE_FILE, {"depth": "depth"}, {"latent": "latent"})

# The fp32 ONNX must compute what torch computes: only float reordering may differ (errors of order 1e-7).
PARITY_TOLERANCE = 1e-5
PARITY_STEPS = 50
# The int8 variant against fp32: the worst action error over the rollout (every joint and tick) may
# be at most this fraction of the fp32 actions' own range there (p99.9 - p0.1 over all joints and
# ticks, parity.action_range). Relative, because int8 error scales with the weights and activations
# (one scale per tensor): an absolute bar (say 0.02 action units) passes a random student whose
# actions never leave +-0.1 at an error of 20 % of its range, and says nothing about trained walkers
# commanding up to 8. 2 % is 1/50 of what the policy itself commands: on the trained students'
# simulator recordings (their ranges: bench/results/policy.json) it lies below the 0.2 standard
# deviation of the Gaussian that student_step's actions were sampled from in training, and about at
# the 90th percentile of the policy's own change of one action from one 20 ms tick to the next. The
# verdict rests on the worst tick, so it depends on how much driving the rollout holds
# (calibration.CHECK_SEEDS / CHECK_TICKS for trained students).
INT8_RELATIVE_TOLERANCE = 0.02
INT8_STEPS = 200
CALIBRATION_FRAMES = 64

# precision -> int8 weight scheme of training.export.optimize (None: the fp32 reference runs).
PRECISIONS: dict[str, str | None] = {"int8": "dynamic", "int8-block": "block", "fp32": None}


class ExportError(Exception):
    """The export cannot produce a bundle that is safe to run; the message says why."""


def student_manifest(
    name: str,
    hidden_size: int,
    files: dict[str, str],
    provenance: dict[str, Any],
    robot: RobotSpec = G1,
    latent_dim: int = 32,
) -> Manifest:
    """The standard student's manifest. A student trained with other terms, a gait clock or other gains
    (``training.tasks.student_walk``) replaces those fields; ``export_student(template=...)`` does."""
    return Manifest(
        format_version=FORMAT_VERSION,
        name=name,
        robot=robot.name,
        joint_names=robot.joint_names,
        default_joint_pos=tuple(float(x) for x in robot.default_q),
        action_scale=ACTION_SCALE,
        action_clip=100.0,
        kp=tuple(float(x) for x in robot.kp_stand),
        kd=tuple(float(x) for x in robot.kd_stand),
        obs_terms=STUDENT_OBS_TERMS,
        policy_hz=POLICY_HZ,
        policy=POLICY_IO,
        depth_backbone=BACKBONE_IO,
        depth=DepthInput(DepthSpec(), latent_dim=latent_dim, camera_hz=30.0, latency_s=(0.06, 0.08)),
        hidden_shape=(1, 1, hidden_size),
        command=DiscreteCommandSpec(),
        files=files,
        provenance=provenance,
    )


def build_random_student(size: str | StudentSize, seed: int) -> tuple[DepthBackbone, RecurrentStudent]:
    """Freshly initialised torch modules (PyTorch's default init), reproducible from ``seed``; ``size``: a
    training config whose policy section sizes them (:func:`~training.export.models.student_size`)."""
    sizes = student_size(size) if isinstance(size, str) else size
    torch.manual_seed(seed)
    depth = DepthSpec()
    backbone = DepthBackbone(sizes, depth.height, depth.width).eval()
    student = RecurrentStudent(observation_size(STUDENT_OBS_TERMS), sizes, G1.num_joints).eval()
    return backbone, student


def export_onnx(backbone: DepthBackbone, student: RecurrentStudent, out_dir: Path) -> None:
    """Both fp32 models, batch 1, with the legacy (TorchScript) exporter: one self-contained file each."""
    depth = DepthSpec()
    hidden = torch.zeros(1, 1, student.gru.hidden_size)
    obs = torch.zeros(1, student.gru.input_size - _latent_dim(backbone))
    latent = torch.zeros(1, _latent_dim(backbone))
    with warnings.catch_warnings():
        # Batch size is fixed at 1 and h0 is an explicit input: exactly what this warning asks for.
        warnings.filterwarnings("ignore", message=".*batch_size other than 1.*")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        # nn.GRU checks its input sizes in Python; with fixed batch-1 shapes the traced constants are right.
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        torch.onnx.export(
            backbone,
            (torch.zeros(1, depth.height, depth.width),),
            str(out_dir / BACKBONE_FILE),
            input_names=[BACKBONE_IO.inputs["depth"]],
            output_names=[BACKBONE_IO.outputs["latent"]],
            opset_version=OPSET,
            dynamo=False,
        )
        torch.onnx.export(
            student,
            (obs, latent, hidden),
            str(out_dir / STUDENT_FILE),
            input_names=[POLICY_IO.inputs[role] for role in ("obs", "latent", "hidden")],
            output_names=[POLICY_IO.outputs[role] for role in ("action", "hidden")],
            opset_version=OPSET,
            dynamo=False,
        )


def _latent_dim(backbone: DepthBackbone) -> int:
    last = backbone.layers[-1]
    assert isinstance(last, torch.nn.Linear)
    return last.out_features


def model_files(out_dir: Path, model_file: str) -> list[str]:
    """The ONNX file and any external-data files it reads (none with the legacy exporter below 2 GB)."""
    model = onnx.load(out_dir / model_file, load_external_data=False)
    names = [model_file]
    for tensor in model.graph.initializer:
        if onnx.external_data_helper.uses_external_data(tensor):
            location = next(e.value for e in tensor.external_data if e.key == "location")
            if location not in names:
                names.append(location)
    return names


def _hashes(out_dir: Path, names: list[str]) -> dict[str, str]:
    return {name: sha256_file(out_dir / name) for name in names}


def export_student(
    backbone: DepthBackbone,
    student: RecurrentStudent,
    out_dir: Path | str,
    name: str,
    provenance: dict[str, Any],
    precision: str = "int8",
    calibration_frames: list[np.ndarray] | None = None,
    template: Manifest | None = None,
    parity_rollout: Rollout | None = None,
    calibration: dict[str, Any] | None = None,
) -> Path:
    """Write and check a student bundle; returns its folder.

    ``template``: the manifest the student was trained under; its observation terms, gait clock and
    PD gains replace the standard student's (the parity checks then run with them).

    Raises :class:`training.export.parity.ParityError` when a numerical check fails and
    :class:`ExportError` for arguments it cannot export; either way no manifest is left in
    ``out_dir``, so nothing can load the files.

    ``calibration_frames`` (preprocessed policy images) set the int8 ranges of the backbone's
    convolutions; without them only the matrix weights are quantised. ``parity_rollout`` is the
    rollout the int8 check runs on (default: a random one); ``calibration`` describes both for the
    manifest (e.g. ``calibration.SimRecording.describe()``).
    """
    if precision not in PRECISIONS:
        raise ExportError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # A manifest left from an earlier export would vouch for files this export is about to replace,
    # and an int8 pair left from one would sit unhashed beside an fp32 export.
    for stale in (MANIFEST, MANIFEST_SEAL, BACKBONE_FILE, STUDENT_FILE, BACKBONE_INT8_FILE, STUDENT_INT8_FILE):
        (out_dir / stale).unlink(missing_ok=True)
    export_onnx(backbone, student, out_dir)
    reference_files = model_files(out_dir, STUDENT_FILE) + model_files(out_dir, BACKBONE_FILE)
    manifest = student_manifest(
        name, student.gru.hidden_size, _hashes(out_dir, reference_files), {}, latent_dim=_latent_dim(backbone)
    )
    if template is not None:
        manifest = dataclasses.replace(
            manifest, obs_terms=template.obs_terms, gait_period_s=template.gait_period_s, kp=template.kp, kd=template.kd
        )
    reference = _bundle_in_memory(out_dir, manifest)
    parity = check_against_torch(reference, backbone, student, steps=PARITY_STEPS, tolerance=PARITY_TOLERANCE)
    checks: dict[str, Any] = {
        "fp32_onnx_vs_torch": {**parity.to_dict(), "tolerance": PARITY_TOLERANCE, "through": "PolicyRunner"},
    }
    final = reference
    scheme = PRECISIONS[precision]
    if scheme is not None:
        final, checks["int8_vs_fp32_onnx"] = quantize_and_check(
            out_dir, reference, scheme, calibration_frames, parity_rollout, calibration
        )
    provenance = {
        **provenance,
        "git_commit": git_commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "exporter": f"training.export (torch {torch.__version__}, legacy ONNX exporter, opset {OPSET})",
        "precision": precision,
        "parameters": {
            "depth_backbone": parameter_count(backbone),
            "student": parameter_count(student),
            "total": parameter_count(backbone) + parameter_count(student),
        },
        "reference_models": {"policy": STUDENT_FILE, "depth_backbone": BACKBONE_FILE},
        "checks": checks,
    }
    write_manifest(out_dir, dataclasses.replace(final.manifest, provenance=provenance))
    load_bundle(out_dir)  # the bundle as the robot will read it: contract and hashes
    return out_dir


def quantize_and_check(
    out_dir: Path,
    reference: Bundle,
    scheme: str,
    calibration_frames: list[np.ndarray] | None,
    parity_rollout: Rollout | None = None,
    calibration: dict[str, Any] | None = None,
) -> tuple[Bundle, dict[str, Any]]:
    """Write the int8 pair beside ``reference``'s fp32 files in ``out_dir`` and check it against them.

    Returns the int8 bundle (in memory: no manifest written) and its check for the provenance;
    raises ParityError beyond :data:`INT8_RELATIVE_TOLERANCE` of the fp32 action range.
    """
    quantize_student(out_dir / STUDENT_FILE, out_dir / STUDENT_INT8_FILE, scheme)
    quantize_backbone(out_dir / BACKBONE_FILE, out_dir / BACKBONE_INT8_FILE, calibration_frames, scheme=scheme)
    int8_files = model_files(out_dir, STUDENT_INT8_FILE) + model_files(out_dir, BACKBONE_INT8_FILE)
    files = _hashes(out_dir, [*reference.manifest.files, *int8_files])
    candidate = with_models(
        dataclasses.replace(reference, manifest=dataclasses.replace(reference.manifest, files=files)),
        STUDENT_INT8_FILE,
        BACKBONE_INT8_FILE,
    )
    error = check_against_reference(
        candidate, reference, steps=INT8_STEPS, relative_tolerance=INT8_RELATIVE_TOLERANCE, rollout=parity_rollout
    )
    check = {
        **error.to_dict(),
        "relative_tolerance": INT8_RELATIVE_TOLERANCE,
        "tolerance": INT8_RELATIVE_TOLERANCE * error.action_range,
        "through": "PolicyRunner",
        "rollout": "given" if parity_rollout is not None else "random_rollout (random states, synthetic frames)",
        "weights": scheme,
        "static_int8_convs": bool(calibration_frames),
        "calibration_frames": len(calibration_frames or []),
    }
    if calibration is not None:
        check["calibration"] = calibration
    return candidate, check


def quantize_bundle(
    source: Path | str,
    out_dir: Path | str,
    precision: str = "int8",
    calibration_frames: list[np.ndarray] | None = None,
    parity_rollout: Rollout | None = None,
    calibration: dict[str, Any] | None = None,
    name: str | None = None,
) -> Path:
    """An int8 bundle from an fp32 student bundle's ONNX files (a trained one: no torch weights needed).

    The fp32 files are copied to ``out_dir`` unchanged (``source`` is never written), the int8 pair
    is made and checked beside them as :func:`export_student` does, and the manifest names the
    source; the bundle is called ``name`` (default ``<source name>_int8``). Raises ParityError (no
    manifest written) when the int8 pair fails its check.
    """
    scheme = PRECISIONS.get(precision)
    if scheme is None:
        raise ExportError(f"precision {precision!r} is not an int8 one of {', '.join(PRECISIONS)}")
    source_bundle = load_bundle(source)
    m = source_bundle.manifest
    if m.depth_backbone is None or m.policy.file != STUDENT_FILE or m.depth_backbone.file != BACKBONE_FILE:
        raise ExportError(f"bundle {m.name!r} does not run the fp32 student pair ({STUDENT_FILE}, {BACKBONE_FILE})")
    out_dir = Path(out_dir)
    if out_dir.resolve() == source_bundle.path.resolve():
        raise ExportError("quantize_bundle writes a new folder; it never changes the source bundle")
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in (MANIFEST, MANIFEST_SEAL, BACKBONE_FILE, STUDENT_FILE, BACKBONE_INT8_FILE, STUDENT_INT8_FILE):
        (out_dir / stale).unlink(missing_ok=True)
    for file in m.files:
        shutil.copyfile(source_bundle.file(file), out_dir / file)
    reference = _bundle_in_memory(out_dir, m)
    try:
        final, check = quantize_and_check(out_dir, reference, scheme, calibration_frames, parity_rollout, calibration)
    except BundleError as e:
        raise ExportError(f"the int8 pair of {m.name!r} does not load: {e}") from None
    provenance = {
        **m.provenance,
        "precision": precision,
        "precision_choice": f"{precision}: quantised from the fp32 bundle, within the int8 check",
        "quantised_from": {"bundle": str(source), "files": dict(m.files)},
        "quantised": {
            "git_commit": git_commit(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        },
        "reference_models": {"policy": STUDENT_FILE, "depth_backbone": BACKBONE_FILE},
        "checks": {**m.provenance.get("checks", {}), "int8_vs_fp32_onnx": check},
    }
    write_manifest(out_dir, dataclasses.replace(final.manifest, name=name or f"{m.name}_int8", provenance=provenance))
    load_bundle(out_dir)
    return out_dir


def _bundle_in_memory(out_dir: Path, manifest: Manifest) -> Bundle:
    """A Bundle for files on disk whose manifest is not written yet (it records the checks' results)."""
    check_contract(manifest, G1)
    check_files(out_dir, manifest)
    return Bundle(path=out_dir, manifest=manifest, robot=G1)


def export_random_student(
    out_dir: Path | str,
    size: str = "php_student_tiny",
    seed: int = 0,
    precision: str = "int8",
    name: str | None = None,
    calibration_frames: list[np.ndarray] | None = None,
    parity_rollout: Rollout | None = None,
    calibration: dict[str, Any] | None = None,
) -> Path:
    """A student bundle with random weights (for tests, benchmarks and the runtime before training lands).

    Without ``calibration_frames`` the int8 convs are calibrated on synthetic frames
    (``parity.synthetic_depth_frame``); simulator frames come from :mod:`training.export.calibration`.
    ``size``: a training config whose policy section sizes the student (``php_student_gpu``: PHP's).
    """
    try:
        backbone, student = build_random_student(size, seed)
    except ValueError as e:  # the config loader's ConfigError: an unknown config or a bad policy section
        raise ExportError(f"size {size!r}: {e}") from e
    if calibration_frames is None:
        rng = np.random.default_rng(seed + 1_000_003)  # frames independent of the checks' rollouts
        depth = DepthSpec()
        calibration_frames = [synthetic_depth_frame(rng, depth) for _ in range(CALIBRATION_FRAMES)]
    return export_student(
        backbone,
        student,
        out_dir,
        name=name or f"student_random_{size}",
        provenance={"training": f"random weights, seed {seed}", "size": size},
        precision=precision,
        calibration_frames=calibration_frames,
        parity_rollout=parity_rollout,
        calibration=calibration,
    )
