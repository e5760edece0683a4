"""holosoma-inference's G1 walking policies: ``ppo`` and ``fastsac`` (the wheel's files) or any such ONNX.

The file records its joint order (``dof_names``) and PD gains (``kp``, ``kd``); the observation,
action scale, gait period, rate and default pose are holosoma-inference's G1 locomotion config,
read from the installed wheel's ``config_values`` where it is there (verified) and otherwise this
module's copy of it (assumed). holosoma concatenates the observation terms in alphabetical order
of their names, whatever order its config lists them in; the declaration records that order. The
wheel's files are copied unchanged; their SHA-256 are pinned in parkour_core.assets.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
from pathlib import Path
from typing import Any

from parkour_core.assets import AssetError, package_dir, resolve
from parkour_core.bundles.importers.common import ImportRefused, Source, merge, metadata_list, onnx_io
from parkour_core.robots import G1

HELP = "holosoma-inference G1 walking ONNX: ppo, fastsac (the wheel's) or a file"
WHEEL = "holosoma_inference"
NAMED = {
    "ppo": f"{WHEEL}:models/loco/g1_29dof/ppo_g1_29dof.onnx",
    "fastsac": f"{WHEEL}:models/loco/g1_29dof/fastsac_g1_29dof.onnx",
}
TRAINED_WITH = {"ppo": "holosoma PPO, 200 Hz physics, decimation 4", "fastsac": "holosoma FastSAC"}

# holosoma-inference 0.1.3's config_values: observation loco_g1_29dof, task locomotion, robot g1_29dof.
CONFIG: dict[str, Any] = {
    "actor_obs": (
        "base_ang_vel",
        "projected_gravity",
        "command_lin_vel",
        "command_ang_vel",
        "dof_pos",
        "dof_vel",
        "actions",
        "sin_phase",
        "cos_phase",
    ),
    "obs_dims": {
        "base_lin_vel": 3,
        "base_ang_vel": 3,
        "projected_gravity": 3,
        "command_lin_vel": 2,
        "command_ang_vel": 1,
        "dof_pos": 29,
        "dof_vel": 29,
        "actions": 29,
        "sin_phase": 2,
        "cos_phase": 2,
    },
    "obs_scales": {
        "base_lin_vel": 2.0,
        "base_ang_vel": 0.25,
        "projected_gravity": 1.0,
        "command_lin_vel": 1.0,
        "command_ang_vel": 1.0,
        "dof_pos": 1.0,
        "dof_vel": 0.05,
        "actions": 1.0,
        "sin_phase": 1.0,
        "cos_phase": 1.0,
    },
    "history": 1,
    "rl_rate": 50,
    "policy_action_scale": 0.25,
    "use_phase": True,
    "gait_period": 1.0,
    "default_dof_angles": tuple(float(x) for x in G1.default_q),
    "dof_names": G1.joint_names,
}
# The order holosoma's config lists the terms in; feeding the network that order breaks it (a test shows it).
CONFIG_LISTED_ORDER: tuple[str, ...] = CONFIG["actor_obs"]


def _assignment_kwargs(path: Path, target: str) -> dict[str, Any] | None:
    """The literal keyword arguments of ``target = SomeConfig(...)`` in ``path``, read without importing
    it (the wheel's dependencies are not installed); None where there is no such assignment."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == target for t in node.targets)
            and isinstance(node.value, ast.Call)
        ):
            kwargs = {}
            for kw in node.value.keywords:
                try:
                    kwargs[str(kw.arg)] = ast.literal_eval(kw.value)
                except ValueError:  # not a literal (a path expression): not a value the contract needs
                    continue
            return kwargs
    return None


def wheel_config() -> dict[str, Any] | None:
    """:data:`CONFIG` as the installed holosoma-inference states it, or None where it is not installed
    or its files do not hold these assignments."""
    try:
        root = package_dir(WHEEL) / "config" / "config_values"
        obs = _assignment_kwargs(root / "observation.py", "loco_g1_29dof")
        task = _assignment_kwargs(root / "task.py", "locomotion")
        robot = _assignment_kwargs(root / "robot.py", "g1_29dof")
    except (AssetError, OSError, SyntaxError):
        return None
    if obs is None or task is None or robot is None:
        return None
    try:
        return {
            "actor_obs": tuple(obs["obs_dict"]["actor_obs"]),
            "obs_dims": dict(obs["obs_dims"]),
            "obs_scales": dict(obs["obs_scales"]),
            "history": int(obs["history_length_dict"]["actor_obs"]),
            "rl_rate": task["rl_rate"],
            "policy_action_scale": task["policy_action_scale"],
            "use_phase": task["use_phase"],
            "gait_period": task["gait_period"],
            "default_dof_angles": tuple(float(x) for x in robot["default_dof_angles"]),
            "dof_names": tuple(robot["dof_names"]),
        }
    except (KeyError, TypeError, ValueError):
        return None


def read(src: str, spec: dict[str, Any] | None) -> Source:
    verified: list[str] = []
    if src in NAMED:
        try:
            path = resolve(NAMED[src])
        except AssetError as e:
            raise ImportRefused(str(e)) from None
        verified.append(f"the file is holosoma-inference's {path.name}, with the SHA-256 parkour_core.assets pins")
    else:
        path = Path(src)
    _, _, meta = onnx_io(path)
    dof_names = metadata_list(meta, "dof_names")
    if dof_names is None:
        raise ImportRefused(f"{path.name} has no dof_names metadata: it is not a holosoma-inference export")
    config = wheel_config()
    from_wheel = config is not None
    config = config or CONFIG
    history = config["history"]
    terms = [
        {"name": t, "maps_to": t, "dims": config["obs_dims"][t], "scale": config["obs_scales"][t], "history": history}
        for t in sorted(config["actor_obs"])
    ]
    base = {
        "robot": G1.name,
        "policy_hz": float(config["rl_rate"]),
        "gait_period_s": float(config["gait_period"]) if config["use_phase"] else None,
        "joints": list(config["dof_names"]),
        "default_joint_pos": list(config["default_dof_angles"]),
        "observation": {"order": "alphabetical by term name (holosoma's observation builder)", "terms": terms},
        "action": {
            "scale": float(config["policy_action_scale"]),
            "kp": metadata_list(meta, "kp"),
            "kd": metadata_list(meta, "kd"),
        },
        "model": {"input": "actor_obs", "output": "action"},
    }
    verified.append("the joint order the file records (dof_names) is holosoma's g1_29dof order")
    verified.append("kp and kd are the file's own (metadata)")
    config_files = "holosoma_inference config_values (observation loco_g1_29dof, task locomotion, robot g1_29dof)"
    if from_wheel:
        verified.append(f"the terms, scales, action scale, rate, gait period and default pose: {config_files}")
    assumed = [] if from_wheel else [
        f"the terms, scales, action scale, rate, gait period and default pose: this importer's copy of "
        f"holosoma-inference 0.1.3's {config_files}, the wheel's own files not being readable here"
    ]  # fmt: skip
    assumed += [
        "the network reads its terms in alphabetical order of their names (holosoma's observation builder)",
        "holosoma's terms mean what parkour_core's terms of the same names compute (dof_pos relative to the "
        "default pose, actions the previous raw action, the gait phase of a 1 s two-foot clock)",
        "the training noise of each term is not recorded in the inference config",
    ]
    try:
        version = importlib.metadata.version("holosoma-inference")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown version"
    inside = NAMED[src].partition(":")[2] if src in NAMED else path.name
    from parkour_core.hashing import sha256_file

    provenance = {
        "source": f"holosoma-inference {version}, {inside}",
        "source_sha256": sha256_file(path),
        "source_repository": "amazon-far/holosoma (Apache-2.0)",
        "trained_with": TRAINED_WITH.get(src, "holosoma (not recorded in the file)"),
        "command_ranges": json.loads(meta.get("command_ranges", "{}")),
    }
    return Source(
        format="holosoma",
        policy=path,
        declaration=merge(base, spec),
        verified=verified,
        assumed=assumed,
        provenance=provenance,
        file_joints=tuple(str(n) for n in dof_names),
        origin=NAMED.get(src),
    )
