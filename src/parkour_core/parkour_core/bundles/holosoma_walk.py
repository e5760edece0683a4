"""Build the ``g1_walk`` bundle from holosoma-inference's trained G1 walking policy.

The ONNX weights are read from the installed package (SHA-256 pinned in parkour_core.assets)
and copied into the bundle folder, which git ignores: we never commit third-party weights.

Observation: holosoma concatenates its terms in alphabetical order of their names, whatever
order its config lists them in; the manifest records that order explicitly.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from parkour_core.assets import resolve
from parkour_core.bundle import FORMAT_VERSION, Manifest, ModelIO, load_bundle, write_manifest
from parkour_core.hashing import sha256_file
from parkour_core.obs import ObsTerm
from parkour_core.robots import G1

SOURCE = "holosoma_inference:models/loco/g1_29dof/ppo_g1_29dof.onnx"
POLICY_FILE = "policy.onnx"

# (name, dims, scale) in the order the network expects them.
OBS_TERMS = (
    ObsTerm("actions", 29),
    ObsTerm("base_ang_vel", 3, 0.25),
    ObsTerm("command_ang_vel", 1),
    ObsTerm("command_lin_vel", 2),
    ObsTerm("cos_phase", 2),
    ObsTerm("dof_pos", 29),
    ObsTerm("dof_vel", 29, 0.05),
    ObsTerm("projected_gravity", 3),
    ObsTerm("sin_phase", 2),
)
# holosoma's config lists the terms in this order; feeding it breaks the policy (a test shows it).
CONFIG_LISTED_ORDER = (
    "base_ang_vel", "projected_gravity", "command_lin_vel", "command_ang_vel",
    "dof_pos", "dof_vel", "actions", "sin_phase", "cos_phase",
)  # fmt: skip


def onnx_metadata(path: Path) -> dict[str, str]:
    import onnxruntime as ort

    return dict(ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).get_modelmeta().custom_metadata_map)


def build(out_dir: Path, terms: tuple[ObsTerm, ...] = OBS_TERMS, name: str = "g1_walk") -> Path:
    source = resolve(SOURCE)
    meta = onnx_metadata(source)
    dof_names = tuple(json.loads(meta["dof_names"]))
    if dof_names != G1.joint_names:
        raise ValueError(f"{SOURCE}: joint order {dof_names} differs from the G1 SDK order")
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, out_dir / POLICY_FILE)
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name=name,
        robot=G1.name,
        joint_names=G1.joint_names,
        default_joint_pos=tuple(float(x) for x in G1.default_q),
        action_scale=0.25,
        action_clip=100.0,
        kp=tuple(float(x) for x in json.loads(meta["kp"])),
        kd=tuple(float(x) for x in json.loads(meta["kd"])),
        obs_terms=terms,
        policy_hz=50.0,
        policy=ModelIO(POLICY_FILE, {"obs": "actor_obs"}, {"action": "action"}),
        files={POLICY_FILE: sha256_file(out_dir / POLICY_FILE)},
        gait_period_s=1.0,
        provenance={
            "source": "holosoma-inference 0.1.3, models/loco/g1_29dof/ppo_g1_29dof.onnx",
            "source_sha256": sha256_file(source),
            "source_repository": "amazon-far/holosoma (Apache-2.0)",
            "trained_with": "holosoma PPO, 200 Hz physics, decimation 4",
            "command_ranges": json.loads(meta.get("command_ranges", "{}")),
        },
    )
    write_manifest(out_dir, manifest)
    load_bundle(out_dir)
    return out_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    print(f"wrote bundle {build(args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
