"""Build ``g1_walk_depth_gated``: the trained walking policy wearing a student's interface.

Until a trained parkour student exists, the depth pipeline, the recurrent runtime and the
supervisor's depth rules need a bundle that *walks* and *reads depth*. This one wraps the
``g1_walk`` policy ONNX: a depth backbone (the mean of the policy image, broadcast to a 32-d
latent) and a student with inputs (obs, latent, hidden) and outputs (action, hidden), where
``action = walk(obs) + 0 * sum(latent)`` and ``hidden' = tanh(hidden + 0.1)``. The actions equal
the walking policy's whenever the depth is finite, a NaN from the depth path reaches the
actions, and the hidden state really evolves. It is a test stand-in, not a parkour policy.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from parkour_core.bundle import DepthInput, Manifest, ModelIO, load_bundle, read_manifest, write_manifest
from parkour_core.depth import DepthSpec
from parkour_core.hashing import sha256_file

NAME = "g1_walk_depth_gated"
STUDENT_FILE = "student.onnx"
BACKBONE_FILE = "depth_backbone.onnx"
LATENT_DIM = 32
HIDDEN_SHAPE = (1, 1, 8)


def _student(walk_onnx: Path, out: Path, action_name: str) -> None:
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(walk_onnx))
    graph = model.graph
    walk_action = f"{action_name}_walk"
    for node in graph.node:
        node.output[:] = [walk_action if o == action_name else o for o in node.output]
    graph.input.extend(
        [
            helper.make_tensor_value_info("depth_latent", TensorProto.FLOAT, [1, LATENT_DIM]),
            helper.make_tensor_value_info("h_in", TensorProto.FLOAT, list(HIDDEN_SHAPE)),
        ]
    )
    graph.initializer.extend(
        [
            helper.make_tensor("gate_zero", TensorProto.FLOAT, [], [0.0]),
            helper.make_tensor("hidden_bias", TensorProto.FLOAT, [], [0.1]),
        ]
    )
    graph.node.extend(
        [
            helper.make_node("ReduceSum", ["depth_latent"], ["latent_sum"], keepdims=1),
            helper.make_node("Mul", ["latent_sum", "gate_zero"], ["latent_gate"]),
            helper.make_node("Add", [walk_action, "latent_gate"], [action_name]),
            helper.make_node("Add", ["h_in", "hidden_bias"], ["h_pre"]),
            helper.make_node("Tanh", ["h_pre"], ["h_out"]),
        ]
    )
    # The graph output keeps its name: only the node that produces it changed.
    graph.output.append(helper.make_tensor_value_info("h_out", TensorProto.FLOAT, list(HIDDEN_SHAPE)))
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


def _backbone(spec: DepthSpec, out: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("ReduceMean", ["depth"], ["mean"], axes=[1, 2], keepdims=0),
            helper.make_node("Unsqueeze", ["mean", "axis"], ["mean_col"]),
            helper.make_node("Mul", ["mean_col", "ones"], ["latent"]),
        ],
        "mean_depth_backbone",
        [helper.make_tensor_value_info("depth", TensorProto.FLOAT, [1, spec.height, spec.width])],
        [helper.make_tensor_value_info("latent", TensorProto.FLOAT, [1, LATENT_DIM])],
        initializer=[
            helper.make_tensor("axis", TensorProto.INT64, [1], [1]),
            helper.make_tensor("ones", TensorProto.FLOAT, [1, LATENT_DIM], [1.0] * LATENT_DIM),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


def build(walk_bundle: Path, out_dir: Path, spec: DepthSpec | None = None) -> Path:
    spec = spec or DepthSpec()
    walk = read_manifest(walk_bundle)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    obs_name = walk.policy.inputs["obs"]
    action_name = walk.policy.outputs["action"]
    _student(walk_bundle / walk.policy.file, out_dir / STUDENT_FILE, action_name)
    _backbone(spec, out_dir / BACKBONE_FILE)
    manifest = Manifest(
        name=NAME,
        robot=walk.robot,
        joint_names=walk.joint_names,
        default_joint_pos=walk.default_joint_pos,
        action_scale=walk.action_scale,
        action_clip=walk.action_clip,
        kp=walk.kp,
        kd=walk.kd,
        obs_terms=walk.obs_terms,
        policy_hz=walk.policy_hz,
        policy=ModelIO(
            STUDENT_FILE,
            {"obs": obs_name, "latent": "depth_latent", "hidden": "h_in"},
            {"action": action_name, "hidden": "h_out"},
        ),
        files={name: sha256_file(out_dir / name) for name in (STUDENT_FILE, BACKBONE_FILE)},
        gait_period_s=walk.gait_period_s,
        depth_backbone=ModelIO(BACKBONE_FILE, {"depth": "depth"}, {"latent": "latent"}),
        depth=DepthInput(spec=spec, latent_dim=LATENT_DIM),
        hidden_shape=HIDDEN_SHAPE,
        provenance={
            "built_from": f"{walk.name} ({json.dumps(walk.provenance.get('source', ''))})",
            "purpose": "test stand-in: walks like g1_walk and reads depth without using it",
        },
    )
    write_manifest(out_dir, manifest)
    load_bundle(out_dir)
    return out_dir


def main(argv: list[str] | None = None) -> int:
    from parkour_core.bundles import resolve_bundle

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--walk", default="g1_walk", help="the walking bundle to wrap")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    print(f"wrote bundle {build(resolve_bundle(args.walk), args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
