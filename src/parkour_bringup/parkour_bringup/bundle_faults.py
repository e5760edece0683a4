"""Faulty copies of a good bundle, for swap tests and ``parkour faults``.

Each builder copies the source bundle into ``out`` and breaks one thing the loader, the swap or
the supervisor must catch. Nothing here is a mock: the results are real bundles that fail for
real reasons.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parkour_core.bundle import MANIFEST, seal_manifest
from parkour_core.hashing import sha256_file


def _copy(source: Path, out: Path, name: str) -> Path:
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out)
    _edit(out, lambda d: d.update(name=name))
    return out


def _edit(bundle: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = bundle / MANIFEST
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n")
    seal_manifest(bundle)  # each copy fails for the one thing it breaks, not for an edited manifest


def _policy_file(bundle: Path) -> Path:
    return bundle / json.loads((bundle / MANIFEST).read_text())["models"]["policy"]["file"]


def renamed(source: Path, out: Path, name: str = "g1_walk_copy") -> Path:
    """A good bundle under another name (the same weights): a swap that must succeed."""
    return _copy(source, out, name)


def corrupt_weights(source: Path, out: Path) -> Path:
    """One byte of the policy ONNX flipped: the SHA-256 no longer matches."""
    bundle = _copy(source, out, "bad_hash")
    onnx = _policy_file(bundle)
    data = bytearray(onnx.read_bytes())
    data[len(data) // 2] ^= 0xFF
    onnx.write_bytes(bytes(data))
    return bundle


def missing_file(source: Path, out: Path) -> Path:
    bundle = _copy(source, out, "missing_file")
    _policy_file(bundle).unlink()
    return bundle


def wrong_joint_count(source: Path, out: Path) -> Path:
    def drop_last_joint(d: dict[str, Any]) -> None:
        for key in ("joint_names", "default_joint_pos", "kp", "kd"):
            d[key] = d[key][:-1]

    bundle = _copy(source, out, "wrong_joints")
    _edit(bundle, drop_last_joint)
    return bundle


def wrong_robot(source: Path, out: Path) -> Path:
    bundle = _copy(source, out, "wrong_robot")
    _edit(bundle, lambda d: d.update(robot="h1"))
    return bundle


def wrong_shapes(source: Path, out: Path) -> Path:
    """The manifest's observation is one value longer than the ONNX input."""

    def widen_first_term(d: dict[str, Any]) -> None:
        d["observation"]["terms"][0]["dims"] += 1

    bundle = _copy(source, out, "wrong_shapes")
    _edit(bundle, widen_first_term)
    return bundle


def nan_when_moving(source: Path, out: Path) -> Path:
    """A blind bundle whose policy is finite on a standing robot and NaN once the base rotates.

    action = 0 * sqrt(-sum|base_ang_vel|): sqrt(-0) is -0 at the warm-up (zero angular velocity),
    NaN for any real motion, so it passes loading and warm-up and must be caught on live data.
    """
    import onnx
    from onnx import TensorProto, helper

    bundle = _copy(source, out, "nan_when_moving")
    manifest = json.loads((bundle / MANIFEST).read_text())
    obs_name = manifest["models"]["policy"]["inputs"]["obs"]
    action_name = manifest["models"]["policy"]["outputs"]["action"]
    start = 0
    for term in manifest["observation"]["terms"]:
        if term["name"] == "base_ang_vel":
            break
        start += term["dims"]
    else:
        raise ValueError(f"{source}: nan_when_moving needs a base_ang_vel term")
    obs_size = sum(t["dims"] for t in manifest["observation"]["terms"])
    joints = len(manifest["joint_names"])
    graph = helper.make_graph(
        [
            helper.make_node("Slice", [obs_name, "start", "end", "axis"], ["gyro"]),
            helper.make_node("Abs", ["gyro"], ["gyro_abs"]),
            helper.make_node("ReduceSum", ["gyro_abs"], ["spin"], keepdims=1),
            helper.make_node("Neg", ["spin"], ["neg_spin"]),
            helper.make_node("Sqrt", ["neg_spin"], ["root"]),
            helper.make_node("Mul", ["zeros", "root"], [action_name]),
        ],
        "nan_when_moving",
        [helper.make_tensor_value_info(obs_name, TensorProto.FLOAT, [1, obs_size])],
        [helper.make_tensor_value_info(action_name, TensorProto.FLOAT, [1, joints])],
        initializer=[
            helper.make_tensor("start", TensorProto.INT64, [1], [start]),
            helper.make_tensor("end", TensorProto.INT64, [1], [start + 3]),
            helper.make_tensor("axis", TensorProto.INT64, [1], [1]),
            helper.make_tensor("zeros", TensorProto.FLOAT, [1, joints], [0.0] * joints),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    policy = _policy_file(bundle)
    onnx.save(model, policy)
    _edit(bundle, lambda d: d["files"].update({policy.name: sha256_file(policy)}))
    return bundle


BAD_BUNDLES: dict[str, Callable[[Path, Path], Path]] = {
    "hash_mismatch": corrupt_weights,
    "missing_file": missing_file,
    "wrong_joint_count": wrong_joint_count,
    "wrong_robot": wrong_robot,
    "wrong_shapes": wrong_shapes,
    "nan_outputs": nan_when_moving,
}
