"""What every importer shares: the declared contract, its checks and the bundle writer.

An importer turns a trainer's export into a :class:`Source`: the model files and a declaration in
the format of an import spec (docs/byop.md) -- the robot, the trainer's joint order and default
pose, the observation terms mapped onto parkour_core's and the action -- with what it verified
against the files and what it took on trust. :func:`write_bundle` checks the declaration
(:func:`plan`: each refusal is one :class:`ImportRefused` line naming the mismatch and what to
supply), adapts the model where the trainer's layout is not the runtime's (:mod:`.adapter`),
writes the bundle beside ``--out`` (its manifest sealed: ``write_manifest``), loads and runs it as
the policy node would, and only then moves it into place: a refused import leaves nothing new in ``--out``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from parkour_core.bundle import (
    MANIFEST,
    BundleError,
    DepthInput,
    Manifest,
    ModelIO,
    load_bundle,
    write_manifest,
)
from parkour_core.command import DiscreteCommandSpec
from parkour_core.hashing import sha256_file
from parkour_core.obs import TERMS, ObsTerm
from parkour_core.robots import ROBOTS, RobotSpec

# The pseudo-term of a depth latent the trainer concatenated to its observation, and the adapted
# model's input that takes it.
LATENT = "depth_latent"
JOINT_TERMS = ("actions", "dof_pos", "dof_vel")  # one value per joint, in the joint order
FIXED_DIMS = {
    "base_ang_vel": 3,
    "projected_gravity": 3,
    "command_lin_vel": 2,
    "command_ang_vel": 1,
    "command_discrete": 2,
    "sin_phase": 2,
    "cos_phase": 2,
}
GAIT_TERMS = ("sin_phase", "cos_phase")
NO_ACTION_CLIP = 100.0  # the manifest's action_clip when the trainer clips nothing (bundle.py's default)
ADAPTER_TOLERANCE = 1e-5  # the adapted model against the trainer's, on random observations
ADAPTER_SAMPLES = 20
BACKBONE_FILE = "depth_backbone.onnx"

TOP_KEYS = ("robot", "policy_hz", "gait_period_s", "joints", "default_joint_pos", "observation", "action", "model",
            "command")  # fmt: skip
OBSERVATION_KEYS = ("order", "terms")
TERM_KEYS = ("name", "maps_to", "dims", "scale", "clip", "history", "noise", "constant")
ACTION_KEYS = ("scale", "offset", "clip", "kp", "kd")
MODEL_KEYS = ("input", "output")


class ImportRefused(BundleError):
    """An import that must not become a bundle; the message names the mismatch and what to supply."""


@dataclass(frozen=True)
class TermDecl:
    """One term of the trainer's observation, in the order its network reads them.

    ``clip`` bounds the raw value before ``scale`` (Isaac Lab's and mjlab's order); ``history`` is
    the number of frames the trainer stacks; ``noise`` what the trainer added ("none": noise-free;
    None: not recorded). ``constant`` feeds these values every tick instead of a term.
    """

    name: str
    maps_to: tuple[str, ...]
    dims: int
    scale: float = 1.0
    clip: float | None = None
    history: int = 1
    noise: str | None = None
    constant: tuple[float, ...] | None = None

    def record(self, index: int) -> dict[str, Any]:
        noise_free = None if self.noise is None else self.noise.strip().lower() in ("none", "0", "0.0")
        return {
            "index": index,
            "name": self.name,
            "maps_to": list(self.maps_to),
            "dims": self.dims,
            "scale": self.scale,
            "clip": self.clip,
            "history": self.history,
            "noise": self.noise,
            "noise_free": noise_free,
            "constant": None if self.constant is None else list(self.constant),
        }


@dataclass(frozen=True)
class Declaration:
    """The parsed declaration; per-joint values are in the trainer's joint order."""

    robot: str
    joints: tuple[str, ...]
    default_joint_pos: tuple[float, ...]
    terms: tuple[TermDecl, ...]
    order: str
    action_scale: tuple[float, ...]
    action_offset: tuple[float, ...]
    action_clip: float | None
    kp: tuple[float, ...]
    kd: tuple[float, ...]
    policy_hz: float
    obs_input: str
    action_output: str
    gait_period_s: float | None = None
    command: DiscreteCommandSpec | None = None


@dataclass(frozen=True)
class Backbone:
    """A depth backbone copied as it is: depth image in, latent out."""

    path: Path
    depth_input: str
    latent_output: str
    depth: DepthInput


@dataclass
class Source:
    """What an importer read: the files, the declaration (spec format) and what it checked or assumed.

    ``file_joints``: the joint order the file itself records (metadata), checked against the
    declaration's; ``fixed_inputs``: model inputs the runtime does not feed, held at these values.
    """

    format: str
    policy: Path
    declaration: dict[str, Any]
    verified: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    file_joints: tuple[str, ...] | None = None
    fixed_inputs: dict[str, np.ndarray] = field(default_factory=dict)
    backbone: Backbone | None = None
    policy_file: str = "policy.onnx"
    spec_path: Path | None = None
    origin: str | None = None  # where the policy file comes from, when a path on this machine says less


# ---------------------------------------------------------------------------------------------- reading


def read_spec(path: Path) -> dict[str, Any]:
    """An import spec (YAML) as a dict; a file that does not parse is refused as FILE:LINE:COL."""
    from parkour_core.config import yaml_error_line

    if not path.is_file():
        raise ImportRefused(f"--spec {path}: no such file; write the import spec described in docs/byop.md")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ImportRefused(yaml_error_line(path, e)) from None
    if not isinstance(data, dict):
        raise ImportRefused(f"{path}: an import spec is a mapping of keys (robot, joints, ...), see docs/byop.md")
    return data


def merge(base: dict[str, Any], spec: dict[str, Any] | None) -> dict[str, Any]:
    """``spec`` over ``base``: mappings merge key by key, observation terms by name, anything else is
    replaced. An importer's reading of a file is the base; the user's ``--spec`` supplies or overrides."""
    if not spec:
        return dict(base)
    out = dict(base)
    for key, value in spec.items():
        if key == "observation" and isinstance(value, dict) and isinstance(base.get(key), dict):
            out[key] = {**base[key], **{k: v for k, v in value.items() if k != "terms"}}
            out[key]["terms"] = _merge_terms(base[key].get("terms") or [], value.get("terms"))
        elif isinstance(value, dict) and isinstance(base.get(key), dict) and key != "default_joint_pos":
            out[key] = {**base[key], **value}
        else:
            out[key] = value
    return out


def _merge_terms(base: list[Any], spec: Any) -> Any:
    if spec is None:
        return base
    if not isinstance(spec, list):
        return spec  # refused by parse_declaration, which names it
    named = {t.get("name"): t for t in spec if isinstance(t, dict)}
    merged = [{**t, **named.pop(t.get("name"))} if t.get("name") in named else t for t in base]
    return merged + [t for t in spec if isinstance(t, dict) and t.get("name") in named]


def onnx_io(path: Path) -> tuple[dict[str, tuple[list[Any], str]], dict[str, tuple[list[Any], str]], dict[str, str]]:
    """(inputs, outputs, metadata) of an ONNX file: name -> (shape, type), and its custom metadata."""
    import onnxruntime as ort

    if not path.is_file():
        raise ImportRefused(f"{path}: no such file; give the exported ONNX file")
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        raise ImportRefused(f"{path}: onnxruntime cannot load it ({e}); give the exported ONNX file") from None
    inputs = {i.name: (list(i.shape), i.type) for i in session.get_inputs()}
    outputs = {o.name: (list(o.shape), o.type) for o in session.get_outputs()}
    return inputs, outputs, dict(session.get_modelmeta().custom_metadata_map)


def _where(key: str) -> str:
    return f"declaration: {key}"


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ImportRefused(f"{_where(key)} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ImportRefused(f"{_where(key)} must be finite, got {value!r}")
    return float(value)


def per_joint(value: Any, joints: Sequence[str], key: str, what: str) -> tuple[float, ...]:
    """One value per joint, in the trainer's order, from a number (every joint), a list (the trainer's
    joint order) or a map of joint-name patterns to numbers (the first pattern that matches wins)."""
    if value is None:
        raise ImportRefused(
            f"{_where(key)} is missing: supply {what} (one number, a list in the trainer's joint order, "
            "or a map of joint-name patterns to numbers)"
        )
    if isinstance(value, list):
        if len(value) != len(joints):
            raise ImportRefused(
                f"{_where(key)} has {len(value)} values for {len(joints)} joints: give one per joint, "
                "in the trainer's joint order"
            )
        return tuple(_number(v, f"{key}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        out = []
        for joint in joints:
            for pattern, v in value.items():
                try:
                    matched = re.fullmatch(str(pattern), joint) is not None
                except re.error as e:
                    raise ImportRefused(f"{_where(key)}: {pattern!r} is not a regular expression ({e})") from None
                if matched:
                    out.append(_number(v, f"{key}.{pattern}"))
                    break
            else:
                raise ImportRefused(
                    f"{_where(key)} gives no value for joint {joint!r}: add it (a last '.*' pattern "
                    "catches every joint not matched before)"
                )
        return tuple(out)
    return (_number(value, key),) * len(joints)


def _unknown_keys(d: dict[str, Any], known: Sequence[str], key: str) -> None:
    unknown = sorted(set(d) - set(known))
    if unknown:
        raise ImportRefused(f"{_where(key)}: unknown keys {unknown}; known: {', '.join(known)}")


def _mapping(d: Any, key: str) -> dict[str, Any]:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise ImportRefused(f"{_where(key)} must be a mapping, got {d!r}")
    return d


def parse_term(d: Any, index: int) -> TermDecl:
    key = f"observation.terms[{index}]"
    if not isinstance(d, dict) or "name" not in d:
        raise ImportRefused(f"{_where(key)} must be a mapping with at least 'name', got {d!r}")
    _unknown_keys(d, TERM_KEYS, f"{key} ({d['name']})")
    name = str(d["name"])
    key = f"observation term {name!r}"
    maps_to = d.get("maps_to")
    maps = () if maps_to is None else tuple(str(m) for m in (maps_to if isinstance(maps_to, list) else [maps_to]))
    constant = d.get("constant")
    values = None
    if constant is not None:
        if not isinstance(constant, list) or not constant:
            raise ImportRefused(f"{key}: constant must be a non-empty list of the values the network reads")
        values = tuple(_number(v, f"{name}.constant") for v in constant)
    dims = d.get("dims")
    if dims is None and values is not None:
        dims = len(values)
    clip = d.get("clip")
    history = d.get("history", 1)
    if isinstance(history, bool) or not isinstance(history, int) or history < 0:
        raise ImportRefused(f"{key}: history must be a whole number of frames, got {history!r}")
    noise = d.get("noise")
    return TermDecl(
        name=name,
        maps_to=maps,
        dims=-1 if dims is None else int(_number(dims, f"{name}.dims")),
        scale=_number(d.get("scale", 1.0), f"{name}.scale"),
        clip=None if clip is None else _number(clip, f"{name}.clip"),
        history=max(int(history), 1),  # Isaac Lab's history_length 0 means one frame, like 1
        noise=None if noise is None else str(noise),
        constant=values,
    )


def parse_declaration(d: dict[str, Any]) -> Declaration:
    """The declaration's own form checked (keys, types, one value per joint); what it means for the
    robot and the model is :func:`plan`'s."""
    _unknown_keys(d, TOP_KEYS, "top level")
    robot = d.get("robot")
    if not robot:
        raise ImportRefused(f"{_where('robot')} is missing: name the robot it was trained for ({', '.join(ROBOTS)})")
    joints = d.get("joints")
    if not isinstance(joints, list) or not joints:
        raise ImportRefused(f"{_where('joints')} is missing: list the policy's joints in the trainer's order")
    names = tuple(str(j) for j in joints)
    observation = _mapping(d.get("observation"), "observation")
    _unknown_keys(observation, OBSERVATION_KEYS, "observation")
    terms = observation.get("terms")
    if not isinstance(terms, list) or not terms:
        raise ImportRefused(f"{_where('observation.terms')} is missing: list the terms in the order the network reads")
    action = _mapping(d.get("action"), "action")
    _unknown_keys(action, ACTION_KEYS, "action")
    model = _mapping(d.get("model"), "model")
    _unknown_keys(model, MODEL_KEYS, "model")
    default = per_joint(d.get("default_joint_pos"), names, "default_joint_pos", "the default pose (rad)")
    offset = action.get("offset", "default")
    clip = action.get("clip")
    command = d.get("command")
    gait = d.get("gait_period_s")
    try:
        command_spec = None if command is None else DiscreteCommandSpec.from_dict(_mapping(command, "command"))
    except (KeyError, ValueError) as e:
        raise ImportRefused(f"{_where('command')}: {e}") from None
    if "policy_hz" not in d:
        raise ImportRefused(f"{_where('policy_hz')} is missing: the trainer's control rate, 1 / (sim dt x decimation)")
    return Declaration(
        robot=str(robot),
        joints=names,
        default_joint_pos=default,
        terms=tuple(parse_term(t, i) for i, t in enumerate(terms)),
        order=str(observation.get("order", "as listed")),
        action_scale=per_joint(action.get("scale"), names, "action.scale", "the action scale"),
        action_offset=default if offset == "default" else per_joint(offset, names, "action.offset", "the offset"),
        action_clip=None if clip is None else _number(clip, "action.clip"),
        kp=per_joint(action.get("kp"), names, "action.kp", "the PD stiffness the policy was trained with"),
        kd=per_joint(action.get("kd"), names, "action.kd", "the PD damping the policy was trained with"),
        policy_hz=_number(d["policy_hz"], "policy_hz"),
        obs_input=str(model.get("input", "obs")),
        action_output=str(model.get("output", "actions")),
        gait_period_s=None if gait is None else _number(gait, "gait_period_s"),
        command=command_spec,
    )


# ---------------------------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class Plan:
    """How the runtime's observation and action map onto the trainer's.

    The trainer's observation is ``ext[index] * weight + bias`` where ``ext`` is the runtime's
    observation followed by the constants and the depth latent; its action ``a`` drives the robot
    joint ``j`` through ``out[j] = offset[j] + scale[j] * clip(a)[perm[j]]``, and the bundle's
    action_scale is 1 whenever ``scale``/``offset`` are folded into the model (``folded``).
    """

    robot: RobotSpec
    terms: tuple[ObsTerm, ...]
    n_runtime: int
    constants: np.ndarray
    latent_dim: int
    index: np.ndarray
    weight: np.ndarray
    bias: np.ndarray
    perm: np.ndarray
    out_scale: np.ndarray
    out_offset: np.ndarray
    trainer_clip: float | None
    folded: bool
    action_scale: float
    action_clip: float
    default_q: np.ndarray
    kp: np.ndarray
    kd: np.ndarray

    @property
    def adapts_input(self) -> bool:
        identity = np.array_equal(self.index, np.arange(self.index.size)) and self.index.size == self.n_runtime
        return not (identity and np.all(self.weight == 1.0) and np.all(self.bias == 0.0))

    @property
    def adapts_output(self) -> bool:
        return self.folded or not np.array_equal(self.perm, np.arange(self.perm.size))

    def trainer_obs(self, ext: np.ndarray) -> np.ndarray:
        return (ext[..., self.index] * self.weight + self.bias).astype(np.float32)

    def runtime_action(self, trainer_action: np.ndarray) -> np.ndarray:
        a = (
            trainer_action
            if self.trainer_clip is None or not self.folded
            else np.clip(trainer_action, -self.trainer_clip, self.trainer_clip)
        )
        return self.out_offset + self.out_scale * a[..., self.perm]


def check_robot(decl: Declaration, source: Source) -> RobotSpec:
    """Robot, DoF count, joint names and order; the refusals name the joint and what to supply."""
    if decl.robot not in ROBOTS:
        raise ImportRefused(
            f"robot {decl.robot!r} is not one this stack runs ({', '.join(sorted(ROBOTS))}); "
            "declare the robot the policy was trained for"
        )
    robot = ROBOTS[decl.robot]
    n = len(decl.joints)
    if n != robot.num_joints:
        raise ImportRefused(
            f"DoF count: the policy drives {n} joints, the {robot.name} has {robot.num_joints}; import a policy "
            f"trained on the {robot.num_joints}-joint {robot.name} (its SDK joints: {robot.joint_names[0]}, ...)"
        )
    duplicated = sorted({j for j in decl.joints if decl.joints.count(j) > 1})
    unknown = [j for j in decl.joints if j not in robot.joint_names]
    if duplicated or unknown:
        what = f"joint {unknown[0]!r} is not a {robot.name} joint" if unknown else f"joint {duplicated[0]!r} is twice"
        raise ImportRefused(
            f"joint order: {what}; list the policy's joints by the {robot.name}'s SDK names, in the trainer's order"
        )
    if source.file_joints is not None and tuple(source.file_joints) != decl.joints:
        i = next(
            (k for k, (a, b) in enumerate(zip(source.file_joints, decl.joints, strict=False)) if a != b),
            min(len(source.file_joints), n),
        )
        got = source.file_joints[i] if i < len(source.file_joints) else "nothing"
        want = decl.joints[i] if i < n else "nothing"
        raise ImportRefused(
            f"joint order: {source.policy.name} records {got!r} at position {i}, the declaration {want!r}; "
            "the file's order is the one its network was trained in: declare that order"
        )
    limits = (("action.scale", decl.action_scale, 0.0, "positive"), ("action.kp", decl.kp, -1.0, "non-negative"),
              ("action.kd", decl.kd, -1.0, "non-negative"))  # fmt: skip
    for key, values, floor, least in limits:
        for joint, v in zip(decl.joints, values, strict=True):
            if v < 0.0 or v <= floor:
                raise ImportRefused(f"{_where(key)} for joint {joint!r} is {v}: supply a {least} value")
    if not (0.0 < decl.policy_hz <= 1000.0):
        raise ImportRefused(f"{_where('policy_hz')} {decl.policy_hz} is outside (0, 1000]")
    return robot


def _term_refused(t: TermDecl, why: str) -> ImportRefused:
    known = ", ".join(sorted(TERMS))
    return ImportRefused(
        f"observation term {t.name!r} {why}; map it with maps_to: onto parkour_core's terms ({known}), "
        "pin it with constant:, or retrain without it"
    )


def plan(decl: Declaration, source: Source, obs_width: int | None, action_width: int | None) -> Plan:
    """Check the declaration against the robot, parkour_core's terms and the model's sizes, and map
    the runtime's layout onto the trainer's. Raises :class:`ImportRefused` at the first mismatch."""
    robot = check_robot(decl, source)
    n = robot.num_joints
    if action_width is not None and action_width != n:
        raise ImportRefused(
            f"DoF count: {source.policy.name} outputs {action_width} actions, the declaration lists {n} joints; "
            "import the file of a policy trained on these joints"
        )
    sdk = [robot.joint_names.index(j) for j in decl.joints]  # trainer joint i is SDK joint sdk[i]
    perm = np.array([decl.joints.index(name) for name in robot.joint_names], dtype=np.int64)
    scale = np.asarray(decl.action_scale)[perm]
    offset = np.asarray(decl.action_offset)[perm]
    default = np.asarray(decl.default_joint_pos)[perm]
    folded = not (np.all(scale == scale[0]) and np.array_equal(offset, default))
    out_scale = scale if folded else np.ones(n)
    out_offset = offset - default if folded else np.zeros(n)

    terms: list[ObsTerm] = []
    index: list[int] = []
    weight: list[float] = []
    bias: list[float] = []
    constants: list[float] = []
    latents: list[tuple[int, int]] = []  # (position in index, dims): filled once the runtime size is known
    n_runtime = 0
    for t in decl.terms:
        if t.history > 1:
            raise ImportRefused(
                f"observation term {t.name!r} stacks {t.history} frames of history; the runtime builds one frame "
                "per term: retrain with history 1 (Isaac Lab: history_length 0)"
            )
        if t.constant is not None:
            if t.dims != len(t.constant):
                raise _term_refused(t, f"declares {t.dims} values but its constant has {len(t.constant)}")
            index.extend(-1 - len(constants) - k for k in range(t.dims))  # resolved below
            constants.extend(t.constant)
            weight.extend([1.0] * t.dims)
            bias.extend([0.0] * t.dims)
            continue
        if not t.maps_to:
            raise _term_refused(t, "maps to no parkour_core term")
        if t.maps_to == (LATENT,):
            if source.backbone is None:
                raise _term_refused(t, "is a depth latent but the export has no depth backbone")
            if t.dims not in (-1, source.backbone.depth.latent_dim):
                latent = source.backbone.depth.latent_dim
                raise _term_refused(t, f"declares {t.dims} values, the backbone's latent has {latent}")
            latents.append((len(index), source.backbone.depth.latent_dim))
            index.extend([0] * source.backbone.depth.latent_dim)
            weight.extend([1.0] * source.backbone.depth.latent_dim)
            bias.extend([0.0] * source.backbone.depth.latent_dim)
            continue
        unknown = [m for m in t.maps_to if m not in TERMS]
        if unknown:
            raise _term_refused(t, f"maps to {unknown[0]!r}, which is not a parkour_core term")
        dims = [n if m in JOINT_TERMS else FIXED_DIMS[m] for m in t.maps_to]
        if t.dims not in (-1, sum(dims)):
            mapped = " + ".join(f"{m} ({d})" for m, d in zip(t.maps_to, dims, strict=True))
            raise _term_refused(t, f"has {t.dims} values but maps to {mapped}")
        if t.clip is not None and t.clip < 0.0:
            raise _term_refused(t, f"has a negative clip {t.clip}")
        for m, d in zip(t.maps_to, dims, strict=True):
            if m in GAIT_TERMS and decl.gait_period_s is None:
                raise ImportRefused(f"observation term {t.name!r} reads the gait phase: supply gait_period_s (s)")
            if m == "command_discrete" and decl.command is None:
                raise ImportRefused(
                    f"observation term {t.name!r} reads the discrete command: supply command: "
                    "{speed_levels_mps: [...], heading_sectors: N}"
                )
            runtime_clip = None if t.clip is None else t.clip * abs(t.scale)
            terms.append(ObsTerm(m, d, t.scale, runtime_clip))
            if m in JOINT_TERMS:
                index.extend(n_runtime + sdk[i] for i in range(n))
                if m == "actions" and folded:
                    if t.clip is not None:
                        raise _term_refused(t, "clips the previous action while the action scale or offset "
                                               "differs per joint, which the runtime cannot restate")  # fmt: skip
                    w = 1.0 / np.asarray(decl.action_scale)
                    weight.extend(w)
                    bias.extend(-t.scale * (np.asarray(decl.action_offset) - np.asarray(decl.default_joint_pos)) * w)
                else:
                    weight.extend([1.0] * n)
                    bias.extend([0.0] * n)
            else:
                index.extend(range(n_runtime, n_runtime + d))
                weight.extend([1.0] * d)
                bias.extend([0.0] * d)
            n_runtime += d
    if not terms:
        raise ImportRefused("the declaration maps no term onto the runtime's observation; map at least one")
    if obs_width is not None and obs_width != len(index):
        raise ImportRefused(
            f"the declared terms add up to {len(index)} values, {source.policy.name}'s input "
            f"{decl.obs_input!r} takes {obs_width}: a term is missing, or its dims are wrong"
        )
    idx = np.array(index, dtype=np.int64)
    idx[idx < 0] = n_runtime - 1 - idx[idx < 0]  # constants follow the runtime's observation
    for start, width in latents:
        idx[start : start + width] = np.arange(width) + n_runtime + len(constants)
    uniform = not folded
    return Plan(
        robot=robot,
        terms=tuple(terms),
        n_runtime=n_runtime,
        constants=np.asarray(constants, dtype=np.float32),
        latent_dim=0 if not latents else latents[0][1],
        index=idx,
        weight=np.asarray(weight, dtype=np.float32),
        bias=np.asarray(bias, dtype=np.float32),
        perm=perm,
        out_scale=out_scale,
        out_offset=out_offset,
        trainer_clip=decl.action_clip,
        folded=folded,
        action_scale=float(scale[0]) if uniform else 1.0,
        action_clip=(decl.action_clip or NO_ACTION_CLIP) if uniform else NO_ACTION_CLIP,
        default_q=default,
        kp=np.asarray(decl.kp)[perm],
        kd=np.asarray(decl.kd)[perm],
    )


def _width(shape: list[Any], what: str) -> int | None:
    """The last dimension of a [1, N] tensor, or None where the export leaves it symbolic."""
    if len(shape) != 2:
        raise ImportRefused(f"{what} has shape {shape}; the runtime feeds [1, N] (a batch of one)")
    return shape[1] if isinstance(shape[1], int) else None


# ---------------------------------------------------------------------------------------------- writing


def write_bundle(source: Source, out: Path, name: str | None = None) -> Path:
    """Check, adapt and write ``source`` as a bundle at ``out``; refused imports leave ``out`` as it was."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MANIFEST).is_file())):
        raise ImportRefused(f"--out {out} exists and is not a bundle folder; give a new folder (or an old bundle's)")
    decl = parse_declaration(source.declaration)
    inputs, outputs, _ = onnx_io(source.policy)
    if decl.obs_input not in inputs:
        raise ImportRefused(
            f"{source.policy.name} has no input {decl.obs_input!r} (it has {sorted(inputs)}); "
            "set model.input to the observation's input"
        )
    if decl.action_output not in outputs:
        raise ImportRefused(
            f"{source.policy.name} has no output {decl.action_output!r} (it has {sorted(outputs)}); "
            "set model.output to the action's output"
        )
    extra = sorted(set(inputs) - {decl.obs_input, *source.fixed_inputs})
    if extra:
        raise ImportRefused(
            f"{source.policy.name} has inputs {extra} the runtime does not feed (recurrent state?); "
            "export a feed-forward policy with the observation as its only input"
        )
    kinds = {decl.obs_input: inputs[decl.obs_input][1], decl.action_output: outputs[decl.action_output][1]}
    for tensor, kind in kinds.items():
        if kind != "tensor(float)":
            raise ImportRefused(f"{source.policy.name}: {tensor!r} is {kind}; the runtime feeds and reads float32")
    obs_width = _width(inputs[decl.obs_input][0], f"{source.policy.name}'s input {decl.obs_input!r}")
    action_width = _width(outputs[decl.action_output][0], f"{source.policy.name}'s output {decl.action_output!r}")
    p = plan(decl, source, obs_width, action_width)

    manifest_name = name or out.name
    made = [d for d in (out.parent, *out.parent.parents) if not d.exists()]  # removed again on failure
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / f".{out.name}.importing-{os.getpid()}-{secrets.token_hex(4)}"
    work.mkdir()  # beside out, so the finished bundle moves into place by a rename
    try:
        verified = list(source.verified)
        adapted = p.adapts_input or p.adapts_output or bool(source.fixed_inputs) or source.backbone is not None
        target = work / source.policy_file
        if adapted:
            from parkour_core.bundles.importers.adapter import adapt_policy

            adapt_policy(source.policy, target, decl.obs_input, decl.action_output, p, source.fixed_inputs,
                         LATENT if p.latent_dim else None)  # fmt: skip
        else:
            shutil.copyfile(source.policy, target)
            verified.append(f"{source.policy_file} is the trainer's file byte for byte (SHA-256 {sha256_file(target)})")
        files = [source.policy_file]
        backbone_io = None
        if source.backbone is not None:
            shutil.copyfile(source.backbone.path, work / BACKBONE_FILE)
            files.append(BACKBONE_FILE)
            backbone_io = ModelIO(
                BACKBONE_FILE, {"depth": source.backbone.depth_input}, {"latent": source.backbone.latent_output}
            )
        inputs_by_role = {"obs": decl.obs_input}
        if p.latent_dim:
            inputs_by_role["latent"] = LATENT
        manifest = Manifest(
            name=manifest_name,
            robot=p.robot.name,
            joint_names=p.robot.joint_names,
            default_joint_pos=tuple(float(x) for x in p.default_q),
            action_scale=p.action_scale,
            action_clip=p.action_clip,
            kp=tuple(float(x) for x in p.kp),
            kd=tuple(float(x) for x in p.kd),
            obs_terms=p.terms,
            policy_hz=decl.policy_hz,
            policy=ModelIO(source.policy_file, inputs_by_role, {"action": decl.action_output}),
            files={f: sha256_file(work / f) for f in files},
            gait_period_s=decl.gait_period_s,
            depth_backbone=backbone_io,
            depth=None if source.backbone is None else source.backbone.depth,
            command=decl.command,
            provenance=source.provenance,
        )
        write_manifest(work, manifest)
        runner_check = _run(work, p, source, decl, adapted)
        verified.extend(runner_check)
        record = _record(source, decl, p, verified, adapted)
        write_manifest(work, replace(manifest, provenance={**source.provenance, "import": record}))
        load_bundle(work)
        _replace(work, out)
    except BaseException as e:
        shutil.rmtree(work, ignore_errors=True)
        for d in made:  # deepest first
            with contextlib.suppress(OSError):
                d.rmdir()
        if isinstance(e, BundleError) and not isinstance(e, ImportRefused):  # the bundle failed to load or run
            raise ImportRefused(str(e).replace(f"bundle {manifest_name!r}: ", "", 1)) from None
        raise
    return out


def _run(work: Path, p: Plan, source: Source, decl: Declaration, adapted: bool) -> list[str]:
    """Load the bundle as the policy node does, warm it up, and compare an adapted model with the
    trainer's on random observations (the mapping restated in numpy, :meth:`Plan.trainer_obs`)."""
    from parkour_core.inference import make_session
    from parkour_core.runner import PolicyRunner

    runner = PolicyRunner(load_bundle(work))
    checks = ["the bundle loads as the policy node loads it and its warm-up outputs are finite"]
    if not adapted:
        return checks
    rng = np.random.default_rng(0)
    trainer = make_session(source.policy)
    worst = 0.0
    for _ in range(ADAPTER_SAMPLES):
        obs = rng.normal(0.0, 1.0, (1, p.n_runtime)).astype(np.float32)
        latent = rng.normal(0.0, 1.0, (1, p.latent_dim)).astype(np.float32)
        ext = np.concatenate([obs, p.constants[None, :], latent], axis=1)
        feeds = {decl.obs_input: p.trainer_obs(ext), **source.fixed_inputs}
        expected = p.runtime_action(trainer.run([decl.action_output], feeds)[0])
        ours = {decl.obs_input: obs}
        if p.latent_dim:
            ours[LATENT] = latent
        got = runner.session.run([decl.action_output], ours)[0]
        worst = max(worst, float(np.max(np.abs(got - expected))))
    if not worst <= ADAPTER_TOLERANCE:
        raise ImportRefused(
            f"the adapted {source.policy_file} differs from the trainer's model by {worst:.3g} "
            f"(> {ADAPTER_TOLERANCE}) on random observations; this is an importer fault: report it with the files"
        )
    checks.append(
        f"the adapted {source.policy_file} equals the trainer's model on {ADAPTER_SAMPLES} random observations "
        f"(max |difference| {worst:.2g})"
    )
    return checks


def _record(source: Source, decl: Declaration, p: Plan, verified: list[str], adapted: bool) -> dict[str, Any]:
    """The manifest's ``provenance.import``: the declaration as understood, and what was checked or assumed."""
    files = {"policy": {"from": source.origin or str(source.policy), "sha256": sha256_file(source.policy)}}
    if source.backbone is not None:
        files["depth_backbone"] = {"from": str(source.backbone.path), "sha256": sha256_file(source.backbone.path)}
    uniform = len(set(decl.action_scale)) == 1
    spec = source.spec_path
    adapter = []
    if adapted:
        if not np.array_equal(p.perm, np.arange(p.perm.size)):
            adapter.append("joints reordered from the trainer's order to the SDK order (observation and action)")
        if p.folded:
            adapter.append("per-joint action scale and offset folded into the model (manifest action_scale 1)")
        if p.constants.size:
            adapter.append("constant terms fed inside the model")
        if p.latent_dim:
            adapter.append("the depth latent concatenated after the observation inside the model")
        if source.fixed_inputs:
            adapter.append(f"inputs held fixed: {', '.join(sorted(source.fixed_inputs))}")
    return {
        "format": source.format,
        "files": files,
        "spec": None if spec is None else {"path": str(spec), "sha256": sha256_file(spec)},
        "robot": decl.robot,
        "trainer_joint_order": list(decl.joints),
        "observation": {"order": decl.order, "terms": [t.record(i) for i, t in enumerate(decl.terms)]},
        "action": {
            "scale": decl.action_scale[0] if uniform else list(decl.action_scale),
            "offset": "default_joint_pos" if decl.action_offset == decl.default_joint_pos else list(decl.action_offset),
            "clip": decl.action_clip,
            "joint_order": "the trainer's (trainer_joint_order); the manifest's arrays are in the SDK order",
        },
        "adapter": adapter,
        "verified": verified,
        "assumed": list(source.assumed),
    }


def _replace(work: Path, out: Path) -> None:
    """Move the finished bundle to ``out``, replacing an old bundle there only now."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.replaced-{work.name.rsplit('-', 1)[-1]}")
        out.rename(old)
    work.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def metadata_list(meta: dict[str, str], key: str, parse: Callable[[str], Any] = json.loads) -> Any:
    """A metadata value parsed, or None when the key is absent; a value that does not parse is refused."""
    if key not in meta:
        return None
    try:
        return parse(meta[key])
    except (ValueError, TypeError) as e:
        raise ImportRefused(f"metadata {key!r} does not parse ({e}): {meta[key][:80]!r}") from None
