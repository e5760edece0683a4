"""Wrap a trainer's ONNX policy so it reads and writes the runtime's layout.

The runtime feeds the manifest's observation (joints in the SDK order) and takes one action per
SDK joint; a trainer's network may read its joints in another order, concatenate constants or a
depth latent after the observation, take inputs the runtime never feeds, or have a per-joint
action scale the manifest's single ``action_scale`` cannot hold. The wrapper puts in front of the
trainer's graph ``obs -> Concat(obs, constants, latent) -> Gather -> Mul -> Add`` and behind it
``Min/Max (the trainer's clip) -> Gather -> Mul -> Add``, all from :class:`~.common.Plan`; the
trainer's nodes and weights are kept as they are. Needs the ``onnx`` package.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from parkour_core.bundles.importers.common import Plan


def adapt_policy(
    src: Path,
    dst: Path,
    obs_input: str,
    action_output: str,
    plan: Plan,
    fixed_inputs: dict[str, np.ndarray],
    latent_input: str | None,
) -> None:
    """Write ``src`` wrapped per ``plan`` to ``dst``: inputs ``obs_input`` [1, runtime size] (and
    ``latent_input`` [1, latent]), output ``action_output`` [1, joints]; ``fixed_inputs`` become constants."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from parkour_core.bundles.importers.common import ImportRefused

    model = onnx.load(str(src))
    graph = model.graph
    inner_obs, inner_action = f"{obs_input}__trainer", f"{action_output}__trainer"
    taken = {v for node in graph.node for v in (*node.input, *node.output)} | {i.name for i in graph.initializer}
    if inner_obs in taken or inner_action in taken or (latent_input is not None and latent_input in taken):
        raise ImportRefused(f"{src.name} already uses the names the adapter needs ({inner_obs}, {inner_action})")
    for node in graph.node:
        node.input[:] = [{obs_input: inner_obs, action_output: inner_action}.get(name, name) for name in node.input]
        node.output[:] = [inner_action if name == action_output else name for name in node.output]
    for name, value in fixed_inputs.items():  # the nodes keep reading it by its name
        graph.initializer.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
    kept = [i for i in graph.input if i.name not in (obs_input, *fixed_inputs)]
    del graph.input[:]
    graph.input.extend(kept)
    graph.input.append(helper.make_tensor_value_info(obs_input, TensorProto.FLOAT, [1, plan.n_runtime]))

    def const(name: str, value: np.ndarray) -> str:
        graph.initializer.append(numpy_helper.from_array(value, f"adapter_{name}"))
        return f"adapter_{name}"

    before = []  # the trainer's observation from the runtime's
    parts = [obs_input]
    if plan.constants.size:
        parts.append(const("constants", plan.constants.reshape(1, -1).astype(np.float32)))
    if latent_input is not None:
        graph.input.append(helper.make_tensor_value_info(latent_input, TensorProto.FLOAT, [1, plan.latent_dim]))
        parts.append(latent_input)
    ext = parts[0]
    if len(parts) > 1:
        ext = "adapter_ext"
        before.append(helper.make_node("Concat", parts, [ext], axis=1))
    before.append(helper.make_node("Gather", [ext, const("index", plan.index)], ["adapter_gathered"], axis=1))
    before.append(helper.make_node("Mul", ["adapter_gathered", const("weight", plan.weight)], ["adapter_weighted"]))
    before.append(helper.make_node("Add", ["adapter_weighted", const("bias", plan.bias)], [inner_obs]))

    after = []  # the runtime's action from the trainer's
    action = inner_action
    if plan.folded and plan.trainer_clip is not None:
        bound = np.float32(plan.trainer_clip)
        after.append(helper.make_node("Min", [action, const("clip_high", np.array(bound))], ["adapter_below"]))
        after.append(helper.make_node("Max", ["adapter_below", const("clip_low", np.array(-bound))], ["adapter_clip"]))
        action = "adapter_clip"
    after.append(helper.make_node("Gather", [action, const("perm", plan.perm)], ["adapter_sdk"], axis=1))
    scale, offset = plan.out_scale.astype(np.float32), plan.out_offset.astype(np.float32)
    after.append(helper.make_node("Mul", ["adapter_sdk", const("scale", scale)], ["adapter_scaled"]))
    after.append(helper.make_node("Add", ["adapter_scaled", const("offset", offset)], [action_output]))
    trainer_nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend([*before, *trainer_nodes, *after])  # topologically sorted, as ONNX requires

    del graph.output[:]  # only the action: the runtime reads nothing else (reference outputs are dropped)
    graph.output.append(helper.make_tensor_value_info(action_output, TensorProto.FLOAT, [1, plan.robot.num_joints]))
    del graph.value_info[:]  # the trainer's intermediate shapes named tensors this wrapper renamed
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
