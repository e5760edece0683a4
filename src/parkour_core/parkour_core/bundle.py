"""Model bundles: a folder with ``manifest.json`` and ONNX files.

Loading verifies, in order: the manifest parses and is complete, the robot and joints match
the robot spec, every file exists with the recorded SHA-256, and the ONNX inputs/outputs have
the shapes the manifest implies. Any failure raises :class:`BundleError` whose message says
what is wrong and what to do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.hashing import sha256_file
from parkour_core.obs import ObsTerm, observation_size
from parkour_core.robots import RobotSpec, get_robot

FORMAT_VERSION = 1
MANIFEST = "manifest.json"


class BundleError(Exception):
    """A bundle that must not be run; the message names the problem and the fix."""


@dataclass(frozen=True)
class ModelIO:
    file: str
    inputs: dict[str, str]  # role -> ONNX input name
    outputs: dict[str, str]  # role -> ONNX output name


@dataclass(frozen=True)
class Manifest:
    name: str
    robot: str
    joint_names: tuple[str, ...]
    default_joint_pos: tuple[float, ...]
    action_scale: float
    action_clip: float
    kp: tuple[float, ...]
    kd: tuple[float, ...]
    obs_terms: tuple[ObsTerm, ...]
    policy_hz: float
    policy: ModelIO
    files: dict[str, str]
    gait_period_s: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    @property
    def obs_size(self) -> int:
        return observation_size(self.obs_terms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": self.format_version,
            "name": self.name,
            "robot": self.robot,
            "joint_names": list(self.joint_names),
            "default_joint_pos": list(self.default_joint_pos),
            "action_scale": self.action_scale,
            "action_clip": self.action_clip,
            "kp": list(self.kp),
            "kd": list(self.kd),
            "observation": {"terms": [t.to_dict() for t in self.obs_terms]},
            "gait": None if self.gait_period_s is None else {"period_s": self.gait_period_s},
            "rates": {"policy_hz": self.policy_hz},
            "models": {
                "policy": {"file": self.policy.file, "inputs": self.policy.inputs, "outputs": self.policy.outputs}
            },
            "files": dict(self.files),
            "provenance": self.provenance,
        }

    @staticmethod
    def from_dict(d: dict[str, Any], where: str = MANIFEST) -> Manifest:
        try:
            version = d["format_version"]
            if version != FORMAT_VERSION:
                raise BundleError(
                    f"{where}: format_version {version} is not supported (this runtime reads {FORMAT_VERSION}); "
                    "re-export the bundle with this version of training/export"
                )
            policy = d["models"]["policy"]
            gait = d.get("gait")
            return Manifest(
                format_version=version,
                name=str(d["name"]),
                robot=str(d["robot"]),
                joint_names=tuple(str(n) for n in d["joint_names"]),
                default_joint_pos=tuple(float(x) for x in d["default_joint_pos"]),
                action_scale=float(d["action_scale"]),
                action_clip=float(d.get("action_clip", 100.0)),
                kp=tuple(float(x) for x in d["kp"]),
                kd=tuple(float(x) for x in d["kd"]),
                obs_terms=tuple(ObsTerm.from_dict(t) for t in d["observation"]["terms"]),
                policy_hz=float(d["rates"]["policy_hz"]),
                policy=ModelIO(str(policy["file"]), dict(policy["inputs"]), dict(policy["outputs"])),
                files={str(k): str(v) for k, v in d["files"].items()},
                gait_period_s=None if gait is None else float(gait["period_s"]),
                provenance=dict(d.get("provenance", {})),
            )
        except KeyError as e:
            raise BundleError(f"{where}: missing key {e}; see docs in parkour_core/bundle.py for the format") from None
        except (TypeError, ValueError) as e:
            raise BundleError(f"{where}: malformed value: {e}") from None


@dataclass(frozen=True)
class Bundle:
    path: Path
    manifest: Manifest
    robot: RobotSpec

    def file(self, name: str) -> Path:
        return self.path / name


def read_manifest(path: Path) -> Manifest:
    manifest_path = path / MANIFEST
    if not path.is_dir():
        raise BundleError(f"bundle {path} does not exist or is not a folder; give a bundle folder or a registered name")
    if not manifest_path.is_file():
        raise BundleError(f"bundle {path} has no {MANIFEST}; a bundle is a folder with {MANIFEST} and ONNX files")
    try:
        data = json.loads(manifest_path.read_text())
    except json.JSONDecodeError as e:
        raise BundleError(f"{manifest_path} is not valid JSON ({e}); restore it or re-export the bundle") from None
    if not isinstance(data, dict):
        raise BundleError(f"{manifest_path} must hold a JSON object")
    return Manifest.from_dict(data, where=str(manifest_path))


def check_contract(m: Manifest, robot: RobotSpec) -> None:
    """The manifest must describe exactly this robot's joints with consistent array sizes."""
    n = len(m.joint_names)
    if m.robot != robot.name:
        raise BundleError(
            f"bundle {m.name!r} was trained for robot {m.robot!r}, but this is a {robot.name!r}; "
            f"use a {robot.name} bundle"
        )
    if tuple(m.joint_names) != robot.joint_names:
        missing = sorted(set(robot.joint_names) - set(m.joint_names))
        extra = sorted(set(m.joint_names) - set(robot.joint_names))
        detail = f"missing {missing}, unknown {extra}" if (missing or extra) else "same joints in another order"
        raise BundleError(f"bundle {m.name!r}: joint_names do not match the {robot.name} SDK order ({detail})")
    for key in ("default_joint_pos", "kp", "kd"):
        if len(getattr(m, key)) != n:
            raise BundleError(f"bundle {m.name!r}: {key} has {len(getattr(m, key))} values for {n} joints")
    if not (0.0 < m.policy_hz <= 1000.0):
        raise BundleError(f"bundle {m.name!r}: rates.policy_hz {m.policy_hz} is outside (0, 1000]")
    if m.policy.file not in m.files:
        raise BundleError(f"bundle {m.name!r}: the policy file {m.policy.file!r} has no SHA-256 in 'files'")


def check_files(path: Path, m: Manifest) -> None:
    for name, expected in m.files.items():
        f = path / name
        if not f.is_file():
            raise BundleError(f"bundle {m.name!r}: file {name} listed in the manifest is missing from {path}")
        actual = sha256_file(f)
        if actual != expected:
            raise BundleError(
                f"bundle {m.name!r}: {name} has SHA-256 {actual[:12]}..., the manifest records {expected[:12]}...; "
                "the file was changed or corrupted: re-export or re-fetch the bundle"
            )


def load_bundle(path: Path | str, robot: RobotSpec | None = None) -> Bundle:
    """Read and verify a bundle (contract and hashes). ONNX I/O is checked by the runner."""
    path = Path(path)
    m = read_manifest(path)
    try:
        spec = robot or get_robot(m.robot)
    except ValueError as e:
        raise BundleError(f"bundle {m.name!r}: {e}") from None
    check_contract(m, spec)
    check_files(path, m)
    return Bundle(path=path, manifest=m, robot=spec)


def write_manifest(path: Path, m: Manifest) -> None:
    (path / MANIFEST).write_text(json.dumps(m.to_dict(), indent=2) + "\n")


def as_array(values: tuple[float, ...]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)
