"""What the walking students' tasks share at the end of a run: the bundle, its provenance, the curves."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from parkour_core.bundle import Manifest, load_bundle
from training.export.models import StudentSize
from training.export.parity import ParityError
from training.export.student import export_student
from training.rl.models import DepthRecurrentModel

CHECKPOINT = "checkpoint.pt"
CALIBRATION_FRAMES = 64  # depth frames kept from the rollouts for the int8 calibration


def keep_calibration_frame(frames: list[np.ndarray], depth: np.ndarray, step: int) -> None:
    """Every 4th step's policy image of one environment (cycling), until CALIBRATION_FRAMES are kept."""
    if len(frames) < CALIBRATION_FRAMES and step % 4 == 0:
        frames.append(depth[step % len(depth)].copy())


def run_provenance(seed: int, wall_s: float, totals: dict[str, Any] | None = None) -> dict[str, Any]:
    """What reproduces a run: command line, seed, wall time and, given the runner's ``run_totals()``, each run's
    commit at its start with its iterations and env-steps (the exporter's ``git_commit`` is HEAD at export,
    which a commit made while the run trained moves)."""
    program = "parkour" if sys.argv[0].endswith("parkour") else sys.argv[0]
    return {"command": " ".join([program, *sys.argv[1:]]), "seed": seed, "wall_s": round(wall_s, 1), **(totals or {})}


def student_dims(model: DepthRecurrentModel) -> dict[str, Any]:
    """The layer sizes a checkpoint must match to load into a model."""
    s = model.size
    return {"conv_channels": list(s.conv_channels), "backbone_hidden": s.backbone_hidden, "latent_dim": s.latent_dim,
            "gru_hidden": s.gru_hidden, "mlp_hidden": list(s.mlp_hidden), "obs": model.obs_dim}  # fmt: skip


def pair_size(state: dict[str, torch.Tensor]) -> StudentSize:
    """The layer sizes of a bundle pair's weights (``DepthRecurrentModel.pair_state_dict``), from their shapes."""
    convs = sorted((k for k in state if k.startswith("backbone.layers.") and state[k].dim() == 4),
                   key=lambda k: int(k.split(".")[2]))  # fmt: skip
    linears = sorted((k for k in state if k.startswith("backbone.layers.") and k.endswith(".weight")
                      and state[k].dim() == 2), key=lambda k: int(k.split(".")[2]))  # fmt: skip
    mlp = sorted((k for k in state if k.startswith("student.mlp.") and k.endswith(".weight")),
                 key=lambda k: int(k.split(".")[2]))  # fmt: skip
    return StudentSize(
        conv_channels=(int(state[convs[0]].shape[0]), int(state[convs[1]].shape[0])),
        backbone_hidden=int(state[linears[0]].shape[0]), latent_dim=int(state[linears[1]].shape[0]),
        gru_hidden=int(state["student.gru.weight_hh_l0"].shape[1]),
        mlp_hidden=tuple(int(state[k].shape[0]) for k in mlp[:-1]),
    )  # fmt: skip


def save_checkpoint(model: DepthRecurrentModel, path: Path) -> None:
    torch.save({"student": student_dims(model), "state_dict": model.pair_state_dict()}, path)


def load_checkpoint(model: DepthRecurrentModel, init: Path) -> Path:
    """Stage 1's weights (a bundle folder holding ``checkpoint.pt``, or the file) into ``model``; returns the file."""
    path = init / CHECKPOINT if init.is_dir() else init
    if not path.is_file():
        raise FileNotFoundError(
            f"no stage-1 weights at {path}: pass --init with a student-walk bundle folder (it holds {CHECKPOINT})"
        )
    saved = torch.load(path, map_location="cpu", weights_only=True)
    want = student_dims(model)
    have = saved.get("student")
    if have is not None and have != want:
        raise ValueError(f"{path} holds a student of sizes {have}; this config's student is {want}")
    try:
        model.load_pair_state_dict(saved["state_dict"])
    except RuntimeError as e:  # checkpoints without the "student" record: the shapes decide
        raise ValueError(f"{path} does not fit this config's student {want}: {e}") from None
    return path


def export_walking_student(
    model: DepthRecurrentModel,
    bundle_dir: Path,
    name: str,
    provenance: dict[str, Any],
    frames: list[np.ndarray],
    template: Manifest,
) -> None:
    """:func:`export_depth_student` of a student trained under the walking policy's PD."""
    provenance = {**provenance, "gains": "kp/kd of models/g1_walk (the teacher's PD), which it trained under"}
    export_depth_student(model, bundle_dir, name, provenance, frames, template)


def export_depth_student(
    model: DepthRecurrentModel,
    bundle_dir: Path,
    name: str,
    provenance: dict[str, Any],
    frames: list[np.ndarray],
    template: Manifest,
) -> None:
    """The torch weights, then the bundle (ONNX pair) with the training manifest's terms, gait and gains.

    int8 (calibrated on ``frames``) when it passes the exporter's parity check against fp32, else fp32:
    a trained walker's actions reach ~5, where int8's error can exceed the check's tolerance.
    """
    bundle_dir.mkdir(parents=True, exist_ok=True)
    # Saved first: an export that fails must not lose the run. Stage 2 (student-step) starts from them.
    save_checkpoint(model, bundle_dir / CHECKPOINT)
    backbone, student = model.bundle_pair()
    try:
        export_student(backbone, student, bundle_dir, name, provenance, calibration_frames=frames, template=template)
    except ParityError as error:
        provenance = {**provenance, "precision_choice": f"fp32: int8 failed the parity check ({error})"}
        export_student(backbone, student, bundle_dir, name, provenance, precision="fp32", template=template)
    load_bundle(bundle_dir)
