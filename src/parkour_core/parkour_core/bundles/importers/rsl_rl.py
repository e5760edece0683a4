"""rsl_rl's ONNX export (Isaac Lab's ``export_policy_as_onnx``): ``obs`` in, ``actions`` out.

The file records nothing but the network (with its observation normalizer): robot, joint order,
default pose, observation terms and action come from the user's import spec (docs/byop.md;
``examples/`` holds Isaac Lab's G1 velocity task). The model's sizes are checked against the
spec; everything else is recorded as assumed, as declared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parkour_core.bundles.importers.common import ImportRefused, Source, merge

HELP = "rsl_rl / Isaac Lab export_policy_as_onnx (policy.onnx), with --spec"
EXAMPLES = Path(__file__).parent / "examples"
DEFAULTS: dict[str, Any] = {"model": {"input": "obs", "output": "actions"}}  # the names rsl_rl's exporter gives


def read(src: str, spec: dict[str, Any] | None) -> Source:
    if spec is None:
        raise ImportRefused(
            "an rsl_rl export records no robot, joints, observation or action: supply them with --spec YAML "
            f"(docs/byop.md; Isaac Lab's G1 velocity task: {EXAMPLES / 'isaaclab_g1_29dof_velocity.yaml'})"
        )
    path = Path(src)
    return Source(
        format="rsl_rl",
        policy=path,
        declaration=merge(DEFAULTS, spec),
        verified=[
            "the model's observation width equals the declared terms' sum and its action width the joint count",
        ],
        assumed=[
            "each term's meaning, order, scale, clip, history and noise, as the spec declares them",
            "the joint order, default pose, action scale, offset and clip and the PD gains, as the spec declares them",
            "the policy rate, as the spec declares it",
        ],
        provenance={"source": f"rsl_rl ONNX export {path.name}"},
    )
