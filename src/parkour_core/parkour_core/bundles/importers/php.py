"""PHP's released depth student: ``depth_backbone.onnx`` and ``student.onnx`` in one folder.

As PHP's exporter writes them (amazon-far/php_parkour ``wbt_training/utils/exporter.py``): the
backbone maps ``depth_image`` [1, H, W] to ``depth_latent`` [1, L]; the student, an MLP, takes
``obs`` (its actor terms in alphabetical order of their names, then the latent: the metadata's
``observation_names`` ends with ``placeholder``) and ``time_step``, and returns ``actions`` and six
motion-reference outputs the runtime does not read. Its metadata (comma-separated values, three
decimals) holds the joint names, per-joint action scale, default pose and gains. The adapter
concatenates the latent inside the model and holds ``time_step`` at 0, after checking the
actions do not depend on it. PHP's one-hot ``velocity_command`` has no parkour_core term.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.bundle import DepthInput
from parkour_core.bundles.importers.common import LATENT, Backbone, ImportRefused, Source, merge, metadata_list, onnx_io
from parkour_core.depth import DepthSpec
from parkour_core.robots import G1

HELP = "PHP's depth student: a folder with depth_backbone.onnx and student.onnx"
STUDENT, BACKBONE = "student.onnx", "depth_backbone.onnx"

# PHP's student actor terms (config_values/depth_distillation.py): parkour_core's term, dims (None: one
# per joint) and the training noise. robot_anchor_projected_gravity is gravity in the motion anchor's
# frame: parkour_core's projected_gravity only when that anchor is the pelvis.
TERMS: dict[str, tuple[str | None, int | None, str]] = {
    "actions": ("actions", None, "none"),
    "base_ang_vel": ("base_ang_vel", 3, "U(-0.2, 0.2)"),
    "dof_pos": ("dof_pos", None, "U(-0.01, 0.01)"),
    "dof_vel": ("dof_vel", None, "U(-0.5, 0.5)"),
    "robot_anchor_projected_gravity": ("projected_gravity", 3, "U(-0.05, 0.05)"),
    "velocity_command": (None, 15, "none"),
}
LATENT_SLOT = "placeholder"  # the metadata's name of the latent's slot
PELVIS = "pelvis"


def _csv(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _floats(text: str) -> list[float]:
    return [float(v) for v in _csv(text)]


def _shape(io: dict[str, tuple[list[Any], str]], name: str, where: str, rank: int) -> list[Any]:
    if name not in io:
        raise ImportRefused(f"{where} has no {name!r} (it has {sorted(io)}): not the format PHP's exporter writes")
    shape = io[name][0]
    if len(shape) != rank or not all(isinstance(d, int) for d in shape[1:]):
        raise ImportRefused(f"{where}: {name!r} has shape {shape}, PHP's exporter writes a fixed rank-{rank} shape")
    return shape


def _time_step_free(student: Path, width: int) -> bool:
    """Whether the student's actions are the same at time_step 0 and far along a reference."""
    from parkour_core.inference import make_session

    session = make_session(student)
    obs = np.random.default_rng(0).normal(0.0, 1.0, (1, width)).astype(np.float32)
    at = [session.run(["actions"], {"obs": obs, "time_step": np.array([[t]], np.float32)})[0] for t in (0.0, 1e4)]
    return bool(np.array_equal(at[0], at[1]))


def read(src: str, spec: dict[str, Any] | None) -> Source:
    folder = Path(src)
    student, backbone = folder / STUDENT, folder / BACKBONE
    if not (student.is_file() and backbone.is_file()):
        raise ImportRefused(f"{folder} must hold {BACKBONE} and {STUDENT} (PHP's student pair)")
    s_in, s_out, meta = onnx_io(student)
    b_in, b_out, _ = onnx_io(backbone)
    obs_width = _shape(s_in, "obs", STUDENT, 2)[1]
    _shape(s_in, "time_step", STUDENT, 2)
    _shape(s_out, "actions", STUDENT, 2)
    _, height, width = _shape(b_in, "depth_image", BACKBONE, 3)
    latent_dim = _shape(b_out, "depth_latent", BACKBONE, 2)[1]

    joints = metadata_list(meta, "joint_names", _csv)
    names = metadata_list(meta, "observation_names", _csv) or []
    anchor = meta.get("anchor_body_name")
    terms = []
    for name in names:
        if name == LATENT_SLOT:
            terms.append({"name": name, "maps_to": LATENT, "dims": latent_dim, "noise": "none"})
            continue
        entry: dict[str, Any] = {"name": name}
        if name in TERMS:  # a name PHP's exporter writes that is not here: refused as unknown, by name
            term, dims, entry["noise"] = TERMS[name]
            if name == "robot_anchor_projected_gravity" and anchor != PELVIS:
                term = None  # gravity in another body's frame (the torso's turns with the waist)
            if term is not None:
                entry["maps_to"] = term
            if dims is not None or joints:
                entry["dims"] = dims if dims is not None else len(joints or [])
        terms.append(entry)
    kp = metadata_list(meta, "kp", _floats) or metadata_list(meta, "joint_stiffness", _floats)
    kd = metadata_list(meta, "kd", _floats) or metadata_list(meta, "joint_damping", _floats)
    base: dict[str, Any] = {
        "robot": G1.name,
        "policy_hz": 50.0,
        "joints": joints,
        "default_joint_pos": metadata_list(meta, "default_joint_pos", _floats),
        "observation": {
            "order": "alphabetical by term name, then the depth latent (PHP's observation manager)",
            "terms": terms or None,
        },
        "action": {"scale": metadata_list(meta, "action_scale", _floats), "kp": kp, "kd": kd},
        "model": {"input": "obs", "output": "actions"},
    }
    if not _time_step_free(student, obs_width):
        raise ImportRefused(
            f"{STUDENT}'s actions depend on time_step, which the runtime does not feed; export a student "
            "whose actions read only obs"
        )
    depth = DepthInput(spec=DepthSpec(height=height, width=width), latent_dim=latent_dim)
    return Source(
        format="php",
        policy=student,
        declaration=merge(base, spec),
        verified=[
            f"{BACKBONE} maps depth_image [1, {height}, {width}] to depth_latent [1, {latent_dim}]; the student's obs "
            "width is its terms' and the latent's",
            "joint names, per-joint action scale, default pose and PD gains are the student's metadata (PHP's "
            "exporter rounds them to three decimals)",
            f"the motion anchor is {anchor!r}" + (" (projected_gravity is the pelvis's)" if anchor == PELVIS else ""),
            "the student's actions do not depend on time_step (compared at 0 and 10000); it is held at 0",
        ],
        assumed=[
            "the robot is the 29-joint G1 and the policy runs at 50 Hz (the metadata names neither)",
            "the depth image: near/far range, crop, camera rate and latency are parkour_core's defaults "
            "(the files record only its size)",
            "PHP's terms mean what parkour_core's terms compute (dof_pos relative to the default pose, actions the "
            "previous raw action, base_ang_vel in the body frame)",
            "the six motion-reference outputs are not needed to run the policy (they are dropped)",
        ],
        provenance={"source": f"PHP student pair {folder.name}", "source_repository": "amazon-far/php_parkour"},
        file_joints=None if joints is None else tuple(joints),
        fixed_inputs={"time_step": np.zeros((1, 1), dtype=np.float32)},
        backbone=Backbone(backbone, "depth_image", "depth_latent", depth),
        policy_file=STUDENT,
    )
