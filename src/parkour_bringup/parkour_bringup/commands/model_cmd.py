"""Check and describe model bundles: `parkour model verify|inspect <bundle>`."""

from __future__ import annotations

import argparse
import json

from parkour_core.bundle import load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.runner import PolicyRunner

HELP = "verify or inspect a model bundle"


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("verify", "inspect"))
    p.add_argument("bundle", help="bundle folder or registered name")


def run(args: argparse.Namespace) -> int:
    bundle = load_bundle(resolve_bundle(args.bundle))
    PolicyRunner(bundle)  # ONNX I/O against the manifest, and a warm-up with finite outputs
    m = bundle.manifest
    if args.action == "verify":
        print(
            f"bundle {m.name} OK: robot {m.robot}, {len(m.joint_names)} joints, "
            f"obs {m.obs_size}, {len(m.files)} files verified"
        )
        return 0
    info = {
        "path": str(bundle.path),
        "name": m.name,
        "robot": m.robot,
        "policy_hz": m.policy_hz,
        "action_scale": m.action_scale,
        "observation": [f"{t.name}[{t.dims}] x{t.scale}" for t in m.obs_terms],
        "obs_size": m.obs_size,
        "files": m.files,
        "provenance": m.provenance,
    }
    print(json.dumps(info, indent=2))
    return 0
