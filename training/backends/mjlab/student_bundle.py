"""The bundle of a student trained on mjlab, written in the runtime ``.venv``.

An mjlab run (``walk_task.train``, inside ``.venv-mjlab``) ends by saving the student's weights, the
calibration frames it kept and its provenance (``student_mjlab.pt``). The exporter checks the ONNX
pair against torch through parkour_core's ``PolicyRunner`` on onnxruntime, which ``.venv-mjlab``
does not hold (mjlab's pins stay out of the runtime venv, and the runtime's out of mjlab's), so
``parkour train run --backend mjlab`` calls :func:`export_bundle` here once the run is back:
``training.tasks.student_walk.bundle.export_walking_student``, the CPU task's own export, on the same
``DepthRecurrentModel`` rebuilt from the config's sizes. Imports no mjlab.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parkour_core.bundle import Manifest, load_bundle
from training.configs.schema import TrainConfig

MJLAB_STUDENT = "student_mjlab.pt"


def walk_manifest(cfg: TrainConfig) -> Manifest:
    """The walking student's manifest (the CPU task's: the walking policy's gains and gait clock), named after
    the config's task (``student_walk`` or ``student_step``, whose students are the same network)."""
    from training.tasks.student_walk.env import walk_student_manifest
    from training.tasks.student_walk.teacher import WALK_BUNDLE

    teacher = load_bundle(WALK_BUNDLE).manifest
    return walk_student_manifest(cfg.task, cfg.policy.rnn_hidden, cfg.policy.depth_latent, teacher, cfg.env.control_hz)


def export_bundle(out: Path | str, cfg: TrainConfig) -> Path:
    """``out/bundle`` from ``out/student_mjlab.pt``; ``out/<task>.json`` gets the bundle's path."""
    import torch
    from tensordict import TensorDict

    from parkour_core.obs import observation_size
    from training.rl.models import DEPTH_GROUP, DepthRecurrentModel
    from training.rl.task_cfg import student_model_cfg
    from training.tasks.student_walk.bundle import export_walking_student, run_provenance

    out = Path(out)
    saved = torch.load(out / MJLAB_STUDENT, map_location="cpu", weights_only=True)
    manifest = walk_manifest(cfg)
    assert manifest.depth is not None
    spec = manifest.depth.spec
    obs = TensorDict(
        {
            "policy": torch.zeros(1, observation_size(manifest.obs_terms)),
            DEPTH_GROUP: torch.zeros(1, spec.height, spec.width),
        },
        batch_size=[1],
    )
    kwargs = {k: v for k, v in student_model_cfg(cfg).items() if k != "class_name"}
    model = DepthRecurrentModel(
        obs, {"student": ["policy", DEPTH_GROUP]}, "student", len(manifest.joint_names), **kwargs
    )
    model.load_pair_state_dict(saved["state_dict"])
    provenance: dict[str, Any] = json.loads(saved["provenance"])
    # The command that ran (this process's: the parkour CLI), the run's seed and wall time.
    provenance |= run_provenance(provenance["seed"], provenance["wall_s"])
    frames = list(saved["frames"].numpy()) if saved["frames"].numel() else []
    bundle_dir = out / "bundle"
    export_walking_student(model.eval(), bundle_dir, cfg.task, provenance, frames, manifest)
    report = out / f"{cfg.task}.json"
    if report.is_file():
        result = json.loads(report.read_text())
        result["bundle"] = str(bundle_dir)
        report.write_text(json.dumps(result, indent=1))
    return bundle_dir
