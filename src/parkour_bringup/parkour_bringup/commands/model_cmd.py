"""Model bundles: `parkour model verify|inspect|swap <bundle>` and `parkour model import FORMAT SRC`.

verify and inspect load the bundle the way the policy node does (hashes, contract, ONNX I/O,
a warm-up with finite outputs) and exit non-zero with the reason when it must not run; ``--robot``
checks it against the robot it is meant for, as the policy node on that robot would. Both say
whether the manifest is sealed: an unsealed one (no manifest.sha256) runs, and is reported unsealed. swap
asks the running policy node to change models (the same call as
`ros2 param set /policy_node bundle <bundle>`) and prints its answer once it has switched.
import writes a bundle from another trainer's export (parkour_core.bundles.importers), or
refuses it with the mismatch and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from parkour_core.bundle import MANIFEST_SEAL, Bundle, load_bundle
from parkour_core.bundles import verify_bundle
from parkour_core.bundles.importers import add_arguments as add_import_arguments
from parkour_core.bundles.importers import import_bundle
from parkour_core.robots import ROBOTS, get_robot
from parkour_core.runner import PolicyRunner

HELP = "verify, inspect, swap or import a model bundle"


def add_parser(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", required=True)
    for action, text in (("verify", "load and run it as the policy node would"), ("inspect", "print its contract")):
        sub = actions.add_parser(action, help=text)
        sub.add_argument("bundle", help="bundle folder or registered name")
        sub.add_argument(
            "--robot", choices=sorted(ROBOTS), default=None,
            help="the robot it must run on (default: the one its manifest names)",
        )  # fmt: skip
    sub = actions.add_parser("swap", help="switch the running policy node to it")
    sub.add_argument("bundle", help="bundle folder or registered name")
    sub.add_argument("--ros-domain-id", type=int, default=None, help="the graph's ROS_DOMAIN_ID")
    sub.add_argument("--namespace", default="/", help="the graph's ROS namespace (parkour sim --namespace)")
    sub.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the switch")
    sub = actions.add_parser("import", help="a bundle from another trainer's export (docs/byop.md)")
    add_import_arguments(sub)


def _io(session: Any) -> dict[str, Any]:
    return {
        "inputs": {i.name: list(i.shape) for i in session.get_inputs()},
        "outputs": {o.name: list(o.shape) for o in session.get_outputs()},
    }


def describe(bundle: Bundle, runner: PolicyRunner) -> dict[str, Any]:
    m = bundle.manifest
    models = {"policy": {"file": m.policy.file, **_io(runner.session)}}
    if runner.backbone is not None and m.depth_backbone is not None:
        models["depth_backbone"] = {"file": m.depth_backbone.file, **_io(runner.backbone)}
    return {
        "path": str(bundle.path),
        "name": m.name,
        "manifest_verified": bundle.manifest_verified,
        "robot": m.robot,
        "policy_hz": m.policy_hz,
        "action_scale": m.action_scale,
        "observation": [f"{t.name}[{t.dims}] x{t.scale}" for t in m.obs_terms],
        "obs_size": m.obs_size,
        "depth": None if m.depth is None else m.depth.to_dict(),
        "recurrent_hidden_shape": None if m.hidden_shape is None else list(m.hidden_shape),
        "command": None if m.command is None else m.command.to_dict(),
        "models": models,
        "files": m.files,
        "provenance": m.provenance,
    }


def swap(args: argparse.Namespace) -> int:
    if args.ros_domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(args.ros_domain_id)
    import rclpy

    from parkour_control.swap_client import request_swap
    from parkour_core.interfaces import namespace

    ns = namespace(args.namespace)
    rclpy.init()
    node = rclpy.create_node("parkour_model_swap", namespace=ns)
    try:
        ok, reason = request_swap(node, args.bundle, args.timeout)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    if not ok:
        raise RuntimeError(f"swap to {args.bundle!r} failed: {reason}")
    print(f"parkour model swap: {reason}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "swap":
        return swap(args)
    if args.action == "import":
        out = import_bundle(args.format, args.src, args.out, args.spec, args.name)
        m = load_bundle(out).manifest
        record = m.provenance["import"]
        print(
            f"parkour model import: wrote bundle {m.name} to {out}: {len(record['verified'])} checks verified, "
            f"{len(record['assumed'])} assumptions (`parkour model inspect {out}` lists them)"
        )
        return 0
    bundle, runner = verify_bundle(args.bundle, get_robot(args.robot) if args.robot else None)
    m = bundle.manifest
    if args.action == "verify":
        kind = "depth student" if m.uses_depth else "blind policy"
        seal = "manifest sealed" if bundle.manifest_verified else f"manifest unsealed (no {MANIFEST_SEAL})"
        print(
            f"bundle {m.name} OK: {kind} for {m.robot}, {len(m.joint_names)} joints, obs {m.obs_size}, "
            f"{len(m.files)} files verified, {seal}, warm-up outputs finite"
        )
        record = m.provenance.get("import")
        if record:
            print(
                f"imported from {record['format']}: {len(record['verified'])} checks verified, "
                f"{len(record['assumed'])} assumptions (`parkour model inspect` lists them)"
            )
        return 0
    print(json.dumps(describe(bundle, runner), indent=2))
    return 0
