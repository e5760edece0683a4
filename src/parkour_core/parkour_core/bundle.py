"""Model bundles: a folder with ``manifest.json``, its seal ``manifest.sha256`` and ONNX files.

Two kinds share one format. A blind policy has one model (``models.policy``: obs -> action).
The parkour student is a pair: ``models.depth_backbone`` (depth image -> latent) and
``models.policy`` (obs, latent, hidden -> action, hidden), with the recurrent state as explicit
input and output (``recurrent.hidden_shape``) so the runtime owns it and can reset it; the
manifest then also holds ``depth`` (the preprocessing it was trained on, latent size, camera rate
and trained latency) and, if it reads the discrete command, ``command`` (levels and sectors).

Loading verifies, in order: the manifest is the one its writer sealed (:func:`load_bundle` says
what an unsealed one does), it parses and is complete, the robot and joints match the robot spec,
gains, action scale and default pose are inside the robot's bounds (:func:`check_bounds`), every
file exists with the recorded SHA-256, and the ONNX inputs/outputs have the shapes the manifest
implies. Any failure raises :class:`BundleError` whose message says what is wrong and what to do.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.command import DiscreteCommandSpec
from parkour_core.depth import DepthSpec
from parkour_core.hashing import sha256_file
from parkour_core.obs import ObsTerm, observation_size
from parkour_core.robots import RobotSpec, get_robot

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MANIFEST_SEAL = "manifest.sha256"  # the SHA-256 of manifest.json's bytes, in sha256sum's format

# The bounds of check_bounds, for every manifest whatever wrote it (its docstring says why these).
KP_SATURATION_MIN_RAD = 1e-3  # tau_max / kp: the position error at which the PD asks for the peak torque
KD_SATURATION_MIN_RAD_S = 0.1  # tau_max / kd: the joint speed at which damping alone asks for it
ACTION_REACH_MAX_RANGES = 2.5  # action_scale x a unit network output, in ranges of the narrowest joint
TYPICAL_ACTION = 1.0  # the magnitude of a typical network output (the action's clip, where smaller)

_log = logging.getLogger(__name__)
_warned_unsealed: set[Path] = set()
_HEX64 = re.compile(r"[0-9a-f]{64}")


class BundleError(Exception):
    """A bundle that must not be run; the message names the problem and the fix."""


@dataclass(frozen=True)
class ModelIO:
    file: str
    inputs: dict[str, str]  # role -> ONNX input name
    outputs: dict[str, str]  # role -> ONNX output name


@dataclass(frozen=True)
class DepthInput:
    """What the depth backbone was trained on."""

    spec: DepthSpec
    latent_dim: int
    camera_hz: float = 30.0
    latency_s: tuple[float, float] = (0.06, 0.08)  # trained exposure-to-use latency range

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.spec.to_dict(),
            "latent_dim": self.latent_dim,
            "camera_hz": self.camera_hz,
            "latency_s": list(self.latency_s),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> DepthInput:
        own = {"latent_dim", "camera_hz", "latency_s"}
        latency = tuple(float(x) for x in d.get("latency_s", (0.06, 0.08)))
        if len(latency) != 2 or not 0.0 <= latency[0] <= latency[1]:
            raise ValueError(f"depth.latency_s must be [min, max] with 0 <= min <= max, got {list(latency)}")
        return DepthInput(
            spec=DepthSpec.from_dict({k: v for k, v in d.items() if k not in own}),
            latent_dim=int(d["latent_dim"]),
            camera_hz=float(d.get("camera_hz", 30.0)),
            latency_s=(latency[0], latency[1]),
        )


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
    depth_backbone: ModelIO | None = None
    depth: DepthInput | None = None
    hidden_shape: tuple[int, ...] | None = None
    command: DiscreteCommandSpec | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    @property
    def obs_size(self) -> int:
        return observation_size(self.obs_terms)

    @property
    def uses_depth(self) -> bool:
        return self.depth_backbone is not None

    @property
    def recurrent(self) -> bool:
        return self.hidden_shape is not None

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
                role: {"file": io.file, "inputs": io.inputs, "outputs": io.outputs}
                for role, io in (("policy", self.policy), ("depth_backbone", self.depth_backbone))
                if io is not None
            },
            "depth": None if self.depth is None else self.depth.to_dict(),
            "recurrent": None if self.hidden_shape is None else {"hidden_shape": list(self.hidden_shape)},
            "command": None if self.command is None else self.command.to_dict(),
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
            backbone = d["models"].get("depth_backbone")
            gait = d.get("gait")
            depth = d.get("depth")
            recurrent = d.get("recurrent")
            command = d.get("command")
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
                depth_backbone=None
                if backbone is None
                else ModelIO(str(backbone["file"]), dict(backbone["inputs"]), dict(backbone["outputs"])),
                depth=None if depth is None else DepthInput.from_dict(depth),
                hidden_shape=None if recurrent is None else tuple(int(x) for x in recurrent["hidden_shape"]),
                command=None if command is None else DiscreteCommandSpec.from_dict(command),
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
    # The manifest matched the seal its writer left (False: no manifest.sha256; see load_bundle).
    manifest_verified: bool = True

    def file(self, name: str) -> Path:
        return self.path / name


def read_manifest(path: Path) -> Manifest:
    """The manifest of the bundle at ``path``, refused if it changed since it was sealed (contract unchecked)."""
    return _read_manifest(Path(path))[0]


def _read_manifest(path: Path) -> tuple[Manifest, bool]:
    """The manifest and whether it is sealed (a seal it does not match is refused before it is parsed)."""
    manifest_path = path / MANIFEST
    if not path.is_dir():
        raise BundleError(f"bundle {path} does not exist or is not a folder; give a bundle folder or a registered name")
    if not manifest_path.is_file():
        raise BundleError(f"bundle {path} has no {MANIFEST}; a bundle is a folder with {MANIFEST} and ONNX files")
    sealed = check_seal(path)
    try:
        data = json.loads(manifest_path.read_text())
    except json.JSONDecodeError as e:
        raise BundleError(f"{manifest_path} is not valid JSON ({e}); restore it or re-export the bundle") from None
    if not isinstance(data, dict):
        raise BundleError(f"{manifest_path} must hold a JSON object")
    return Manifest.from_dict(data, where=str(manifest_path)), sealed


def seal_manifest(path: Path | str) -> None:
    """Record the SHA-256 of ``path``/manifest.json's bytes in manifest.sha256 beside it.

    Every writer calls it through :func:`write_manifest`; call it yourself only after editing a
    manifest on purpose (a test fixture, a fault-injection copy). The format is ``sha256sum``'s, so
    ``sha256sum -c manifest.sha256`` in the folder checks it too."""
    path = Path(path)
    (path / MANIFEST_SEAL).write_text(f"{sha256_file(path / MANIFEST)}  {MANIFEST}\n")


def check_seal(path: Path | str) -> bool:
    """True where manifest.sha256 matches manifest.json, False where there is no manifest.sha256;
    a seal that does not match (or does not parse) raises :class:`BundleError`."""
    path = Path(path)
    seal = path / MANIFEST_SEAL
    if not seal.is_file():
        return False
    text = seal.read_text(errors="replace")
    recorded = text.split()[0].lower() if text.split() else ""
    if not _HEX64.fullmatch(recorded):
        raise BundleError(
            f"bundle {path}: {MANIFEST_SEAL} holds no SHA-256 ({text[:40]!r}); re-export or re-import the bundle"
        )
    actual = sha256_file(path / MANIFEST)
    if actual != recorded:
        raise BundleError(
            f"bundle {path}: {MANIFEST} changed since the bundle was written (SHA-256 {actual[:12]}..., "
            f"{MANIFEST_SEAL} records {recorded[:12]}...); re-export it (training/export) or re-import it "
            "(parkour model import), or restore the manifest it was written with"
        )
    return True


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
    for role, io in (("policy", m.policy), ("depth_backbone", m.depth_backbone)):
        if io is not None and io.file not in m.files:
            raise BundleError(f"bundle {m.name!r}: the {role} file {io.file!r} has no SHA-256 in 'files'")
    _check_student_contract(m)
    check_bounds(m, robot)


def check_bounds(m: Manifest, robot: RobotSpec) -> None:
    """Gains, action scale and default pose a robot may run, whatever wrote the manifest.

    The supervisor clamps every command (targets inside the joint limits, the PD torque estimate
    inside the effort limits) and falls back on targets far beyond the limits, but it takes the
    bundle's gains and scale as they are; these refuse, at load, values no policy should bring:

    - kp: ``tau_max / kp >= KP_SATURATION_MIN_RAD`` (1 mrad). Below, the PD asks for the motor's
      peak torque 0.06 degrees from its target: a switch on position noise, not a PD,
      and the supervisor's torque clamp holds the target within that of the measured position. The
      stiffest trainer imported here, Isaac Lab's G1 with its upper body locked (kp 3000 on the
      5 N m wrists), is at 1.7 mrad; g1_walk at 298.
    - kd: ``tau_max / kd >= KD_SATURATION_MIN_RAD_S`` (0.1 rad/s): below, damping alone saturates
      the motor at 6 deg/s, a brake on velocity noise (Isaac Lab's wrists, kd 10: 0.5 rad/s).
    - action_scale: above 0, and a network output of 1 (or the action's clip, where smaller) moves
      no joint's target by more than ``ACTION_REACH_MAX_RANGES`` (2.5) times its range; a scale
      folded into the model is 1 (1.9 ranges of the G1's ankle roll), g1_walk's 0.25 is 0.48.
    - default_joint_pos inside the joint limits; every value finite, gains at least 0.
    """
    where = f"bundle {m.name!r}"
    for key, least in (("kp", 0.0), ("kd", 0.0), ("default_joint_pos", -math.inf)):
        for name, value in zip(robot.joint_names, getattr(m, key), strict=True):
            if not (math.isfinite(value) and value >= least):
                at_least = "" if least == -math.inf else f" and at least {least:g}"
                raise BundleError(f"{where}: {key} {value} of {name} must be finite{at_least}")
    tau = robot.tau_max
    for j, (name, kp, kd) in enumerate(zip(robot.joint_names, m.kp, m.kd, strict=True)):
        if kp * KP_SATURATION_MIN_RAD > tau[j]:
            raise BundleError(
                f"{where}: kp {kp:g} of {name} asks for its motor's peak {tau[j]:g} N m {1e3 * tau[j] / kp:.2g} mrad "
                f"from the target (bound: kp <= {tau[j] / KP_SATURATION_MIN_RAD:g}, at least "
                f"{1e3 * KP_SATURATION_MIN_RAD:g} mrad); give the gains the policy was trained with"
            )
        if kd * KD_SATURATION_MIN_RAD_S > tau[j]:
            raise BundleError(
                f"{where}: kd {kd:g} of {name} asks for its motor's peak {tau[j]:g} N m at {tau[j] / kd:.2g} rad/s "
                f"(bound: kd <= {tau[j] / KD_SATURATION_MIN_RAD_S:g}, at least {KD_SATURATION_MIN_RAD_S:g} rad/s); "
                "give the gains the policy was trained with"
            )
        q, lo, hi = m.default_joint_pos[j], robot.q_min[j], robot.q_max[j]
        if not lo <= q <= hi:
            raise BundleError(f"{where}: default_joint_pos {q:g} of {name} is outside its limits [{lo:g}, {hi:g}] rad")
    if not (math.isfinite(m.action_scale) and m.action_scale > 0.0):
        raise BundleError(f"{where}: action_scale {m.action_scale} must be finite and above 0")
    if not m.action_clip > 0.0:
        raise BundleError(f"{where}: action_clip {m.action_clip} must be above 0")
    output = min(m.action_clip, TYPICAL_ACTION)
    ranges = robot.q_max - robot.q_min
    j = int(ranges.argmin())
    reach, most = m.action_scale * output, ACTION_REACH_MAX_RANGES * ranges[j]
    if reach > most:
        raise BundleError(
            f"{where}: action_scale {m.action_scale:g} moves {robot.joint_names[j]}'s target {reach:.3g} rad for a "
            f"network output of {output:g}, {reach / ranges[j]:.2g} times its {ranges[j]:.3g} rad range (bound: "
            f"{ACTION_REACH_MAX_RANGES:g} times, action_scale <= {most / output:.3g}); "
            "give the scale the policy was trained with"
        )


def _check_student_contract(m: Manifest) -> None:
    """The depth and recurrent parts must come as complete pairs of manifest entries and model I/O."""
    if m.uses_depth != (m.depth is not None):
        raise BundleError(
            f"bundle {m.name!r}: models.depth_backbone and the 'depth' section come together "
            f"(backbone {'present' if m.uses_depth else 'absent'}, depth {'present' if m.depth else 'absent'})"
        )
    if m.depth_backbone is not None:
        for role, names in (("depth", m.depth_backbone.inputs), ("latent", m.depth_backbone.outputs)):
            if role not in names:
                raise BundleError(f"bundle {m.name!r}: models.depth_backbone has no {role!r} role")
        if "latent" not in m.policy.inputs:
            raise BundleError(f"bundle {m.name!r}: a depth bundle's policy needs a 'latent' input role")
    if m.recurrent:
        if "hidden" not in m.policy.inputs or "hidden" not in m.policy.outputs:
            raise BundleError(f"bundle {m.name!r}: a recurrent policy needs 'hidden' in its inputs and outputs")
        if not m.hidden_shape or any(d < 1 for d in m.hidden_shape):
            raise BundleError(f"bundle {m.name!r}: recurrent.hidden_shape {m.hidden_shape} must be positive dims")
    uses_discrete = any(t.name == "command_discrete" for t in m.obs_terms)
    if uses_discrete and m.command is None:
        raise BundleError(f"bundle {m.name!r}: the term command_discrete needs a 'command' section (levels, sectors)")


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
    """Read and verify a bundle (seal, contract, bounds and hashes). ONNX I/O is checked by the runner.

    A manifest that no longer matches its seal is refused: it changed after its writer (the
    exporter, an importer) checked the bundle. A bundle without a seal (made by hand, or by a stack
    older than the seal) loads, with one warning per process on the ``parkour_core.bundle`` logger
    (stderr where logging is not set up) and ``manifest_verified`` False for whoever reports it. It
    is not refused, on the robot either: the seal guards against an edit nobody meant, not against
    one somebody did (whoever can edit the manifest can reseal it or remove the seal), so refusing
    unsealed bundles would add a step, not safety; what a deliberate edit may not do is bounded for
    every bundle, sealed or not (:func:`check_bounds`).
    """
    path = Path(path)
    m, sealed = _read_manifest(path)
    try:
        spec = robot or get_robot(m.robot)
    except ValueError as e:
        raise BundleError(f"bundle {m.name!r}: {e}") from None
    check_contract(m, spec)
    check_files(path, m)
    if not sealed and path.resolve() not in _warned_unsealed:
        _warned_unsealed.add(path.resolve())
        _log.warning(
            "warning: bundle %r at %s has no %s: its manifest cannot be checked for edits since it was written; "
            "re-export or re-import it, or, trusting the manifest as it is, run `sha256sum %s > %s` in its folder",
            m.name, path, MANIFEST_SEAL, MANIFEST, MANIFEST_SEAL,
        )  # fmt: skip
    return Bundle(path=path, manifest=m, robot=spec, manifest_verified=sealed)


def write_manifest(path: Path, m: Manifest) -> None:
    """Write ``m`` as the bundle's manifest.json and seal it (:func:`seal_manifest`); a writer calls
    it last, once every file the manifest hashes is in place."""
    (path / MANIFEST).write_text(json.dumps(m.to_dict(), indent=2) + "\n")
    seal_manifest(path)


def as_array(values: tuple[float, ...]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)
