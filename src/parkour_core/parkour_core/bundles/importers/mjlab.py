"""mjlab's ONNX export with the metadata its exporter attaches: ``obs`` in, ``actions`` out.

mjlab (``mjlab.rl.exporter_utils``: ``get_base_metadata``, ``attach_metadata_to_onnx``) records the
joint names (the order of the joint terms and actions), default pose, per-joint action scale, PD
stiffness and damping, and the actor's term names, scales, clips and history lengths, as CSV with
three decimals. The terms are mapped by mjlab's velocity-task names; the robot is the one whose SDK
joints the file names. Three decimals cost the exact action scale and gains: where they round to
mjlab's G1 constants (restated here) the import uses the constants, otherwise the rounded values,
and says so. Not recorded, so assumed: the rate (the velocity task's 50 Hz), that each term computes
what mjlab's velocity term of its name computes, the training noise, and no observation delay.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from parkour_core.bundles.importers.common import ImportRefused, Source, merge, metadata_list, onnx_io
from parkour_core.robots import ROBOTS

HELP = "mjlab's ONNX export (policy.onnx) with the metadata its exporter attaches"
DECIMALS = 3  # list_to_csv_str's precision
POLICY_HZ = 50.0  # mjlab's velocity task: timestep 0.005 s x decimation 4
TWIST = "twist"  # the velocity task's command term (vx, vy, yaw rate in the base frame)

# mjlab's velocity-task actor terms: parkour_core's term(s) and dims (None: one per joint). base_lin_vel
# and height_scan have none (the robot measures neither): they are refused, by name, as unmapped.
TERMS: dict[str, tuple[list[str] | None, int | None]] = {
    "base_ang_vel": (["base_ang_vel"], 3),
    "projected_gravity": (["projected_gravity"], 3),
    "joint_pos": (["dof_pos"], None),
    "joint_vel": (["dof_vel"], None),
    "actions": (["actions"], None),
    "command": (["command_lin_vel", "command_ang_vel"], 3),
    "base_lin_vel": (None, 3),
    "height_scan": (None, None),
}


def _armature(rotor: tuple[float, float, float], gears: tuple[float, float, float]) -> float:
    """mjlab's ``reflected_inertia_from_two_stage_planetary``."""
    return rotor[0] * (gears[1] * gears[2]) ** 2 + rotor[1] * gears[2] ** 2 + rotor[2]


def g1_constants() -> dict[str, tuple[float, float, float]]:
    """mjlab 1.6.0's G1 actuators (``asset_zoo/robots/unitree_g1/g1_constants.py``), restated: joint-name
    pattern -> (stiffness, damping, action scale), with action scale = 0.25 x effort limit / stiffness."""
    omega, ratio = 10 * 2.0 * 3.1415926535, 2.0  # NATURAL_FREQ (10 Hz, mjlab's digits), DAMPING_RATIO
    motors = {  # reflected inertia, effort limit (N m)
        "5020": (_armature((0.139e-4, 0.017e-4, 0.169e-4), (1, 1 + 46 / 18, 1 + 56 / 16)), 25.0),
        "7520_14": (_armature((0.489e-4, 0.098e-4, 0.533e-4), (1, 4.5, 1 + 48 / 22)), 88.0),
        "7520_22": (_armature((0.489e-4, 0.109e-4, 0.738e-4), (1, 4.5, 5)), 139.0),
        "4010": (_armature((0.068e-4, 0.0, 0.0), (1, 5, 5)), 5.0),
    }
    groups = {  # patterns -> motor, how many drive the joint (the 4-bar waist and ankles: two 5020s)
        (".*_elbow_joint", ".*_shoulder_pitch_joint", ".*_shoulder_roll_joint", ".*_shoulder_yaw_joint",
         ".*_wrist_roll_joint"): ("5020", 1),
        (".*_hip_pitch_joint", ".*_hip_yaw_joint", "waist_yaw_joint"): ("7520_14", 1),
        (".*_hip_roll_joint", ".*_knee_joint"): ("7520_22", 1),
        (".*_wrist_pitch_joint", ".*_wrist_yaw_joint"): ("4010", 1),
        ("waist_pitch_joint", "waist_roll_joint"): ("5020", 2),
        (".*_ankle_pitch_joint", ".*_ankle_roll_joint"): ("5020", 2),
    }  # fmt: skip
    out = {}
    for patterns, (motor, k) in groups.items():
        armature, effort = motors[motor]
        stiffness = armature * omega**2 * k
        damping = 2.0 * ratio * armature * omega * k
        for p in patterns:
            out[p] = (stiffness, damping, 0.25 * effort * k / stiffness)
    return out


def _csv(text: str) -> list[str]:
    """``list_to_csv_str``'s entries (a sequence entry keeps its ';'-joined values)."""
    return [v.strip() for v in text.split(",") if v.strip()]


def _floats(text: str) -> list[float]:
    return [float(v) for v in _csv(text)]


def _exact(joints: list[str], rounded: list[float] | None, column: int) -> list[float] | None:
    """mjlab's G1 constant of each joint where every one rounds to the metadata's value, else None."""
    if rounded is None or len(rounded) != len(joints):
        return None
    table = g1_constants()
    exact = []
    for joint, value in zip(joints, rounded, strict=True):
        match = next((v[column] for p, v in table.items() if re.fullmatch(p, joint)), None)
        if match is None or abs(round(match, DECIMALS) - value) > 0.5 * 10.0**-DECIMALS:
            return None
        exact.append(match)
    return exact


def _robot(joints: list[str] | None) -> str | None:
    """The robot whose SDK joints the export names most of; None where it names none."""
    if not joints:
        return None
    best = max(ROBOTS.values(), key=lambda r: len(set(joints) & set(r.joint_names)))
    return best.name if set(joints) & set(best.joint_names) else None


def _term_values(meta: dict[str, str], key: str, n: int) -> list[str] | None:
    values = metadata_list(meta, key, _csv)
    if values is not None and len(values) != n:
        raise ImportRefused(f"metadata {key!r} has {len(values)} entries for {n} observation terms: re-export")
    return values


def _scale(name: str, text: str) -> float:
    values = {float(v) for v in text.split(";")}
    if len(values) != 1:
        raise ImportRefused(
            f"observation term {name!r} has a scale per value ({text}); the runtime scales a term by one number: "
            "retrain with one scale per term"
        )
    return values.pop()


def _clip(name: str, text: str) -> float | None:
    low, high = (float(v) for v in text.split(";"))
    if math.isinf(low) and math.isinf(high) and low < 0 < high:
        return None
    if low != -high:
        raise ImportRefused(
            f"observation term {name!r} is clipped to [{low}, {high}]; the runtime clips a term symmetrically: "
            "retrain with clip (-c, c) or none"
        )
    return high


def _terms(meta: dict[str, str], joints: list[str] | None) -> list[dict[str, Any]] | None:
    names = metadata_list(meta, "observation_names", _csv)
    if names is None:
        return None
    scales = _term_values(meta, "observation_terms_scale", len(names))
    clips = _term_values(meta, "observation_terms_clip", len(names))
    histories = _term_values(meta, "observation_terms_history_length", len(names))
    commands = metadata_list(meta, "command_names", _csv) or []
    terms = []
    for i, name in enumerate(names):
        entry: dict[str, Any] = {"name": name}
        maps_to, dims = TERMS.get(name, (None, None))
        if name == "command" and TWIST not in commands:
            maps_to = None  # another command than the velocity task's twist: no parkour_core term reads it
        if maps_to is not None:
            entry["maps_to"] = maps_to
        if dims is not None or (name in TERMS and joints):
            entry["dims"] = dims if dims is not None else len(joints or [])
        try:
            if scales is not None:
                entry["scale"] = _scale(name, scales[i])
            if clips is not None:
                entry["clip"] = _clip(name, clips[i])
            if histories is not None:
                entry["history"] = max(int(float(histories[i])), 1)  # mjlab's 0: no history, one frame
        except ValueError as e:
            raise ImportRefused(f"metadata of observation term {name!r} does not parse ({e}): re-export") from None
        terms.append(entry)
    return terms


def read(src: str, spec: dict[str, Any] | None) -> Source:
    path = Path(src)
    _, _, meta = onnx_io(path)
    if "observation_names" not in meta and "joint_names" not in meta:
        raise ImportRefused(
            f"{path.name} has no mjlab metadata (joint_names, observation_names): export it with mjlab's "
            "exporter (attach_metadata_to_onnx), or import it as rsl_rl with --spec"
        )
    joints = metadata_list(meta, "joint_names", _csv)
    if joints is None and not (spec or {}).get("joints"):
        raise ImportRefused(
            f"{path.name} has no joint_names metadata: re-export it with mjlab's exporter, or supply joints: "
            "(the trainer's joint order) with --spec"
        )
    robot = _robot(joints or [str(j) for j in (spec or {}).get("joints") or []])
    if robot is None and not (spec or {}).get("robot"):
        first = ", ".join((joints or [])[:3])
        raise ImportRefused(
            f"robot: {path.name}'s joints ({first}, ...) are none of a robot this stack runs "
            f"({', '.join(sorted(ROBOTS))}); import a policy trained on one of them"
        )
    scale = metadata_list(meta, "action_scale", _floats)
    kp = metadata_list(meta, "joint_stiffness", _floats)
    kd = metadata_list(meta, "joint_damping", _floats)
    verified = [
        "the joint order, default pose, action scale, PD gains and the actor's term names, scales, clips and "
        "history lengths are the file's metadata (mjlab's exporter)",
    ]
    assumed = []
    exact = {k: _exact(joints or [], v, c) if robot == "g1" else None for k, v, c in
             (("kp", kp, 0), ("kd", kd, 1), ("scale", scale, 2))}  # fmt: skip
    supplied = (spec or {}).get("action") or {}
    for key in ("scale", "kp", "kd"):
        what = {"scale": "action scale", "kp": "PD stiffness", "kd": "PD damping"}[key]
        if isinstance(supplied, dict) and key in supplied:
            assumed.append(f"the {what} as --spec supplies it (the metadata's is rounded to three decimals)")
        elif exact[key] is not None:
            verified.append(f"the {what} rounds, joint by joint, to mjlab 1.6.0's G1 constants: the exact "
                            "constants are used")  # fmt: skip
        elif {"scale": scale, "kp": kp, "kd": kd}[key] is not None:
            assumed.append(f"the {what} as the metadata rounds it (three decimals); supply exact values in --spec")
    default = metadata_list(meta, "default_joint_pos", _floats)
    base: dict[str, Any] = {
        "robot": robot,
        "policy_hz": POLICY_HZ,
        "joints": joints,
        "default_joint_pos": default,
        "observation": {"order": "as listed in the metadata's observation_names", "terms": _terms(meta, joints)},
        "action": {
            "scale": exact["scale"] or scale,
            "offset": "default",
            "kp": exact["kp"] or kp,
            "kd": exact["kd"] or kd,
        },
        "model": {"input": "obs", "output": "actions"},
    }
    assumed += [
        f"the policy rate, {POLICY_HZ:g} Hz (mjlab's velocity task; the metadata does not record it)",
        "each term computes what mjlab's velocity-task term of its name computes (joint_pos: the encoder "
        "reading minus the default pose; command: the twist command (vx, vy, yaw rate), base frame)",
        "the action is default + scale x action with no clip (JointPositionAction, use_default_offset)",
        "the default pose as the metadata records it (three decimals; mjlab's G1 keyframes have three)",
        "the training noise (not recorded) and no observation delay (mjlab's delay_* are not recorded)",
    ]
    return Source(
        format="mjlab",
        policy=path,
        declaration=merge(base, spec),
        verified=verified,
        assumed=assumed,
        provenance={
            "source": f"mjlab ONNX export {path.name}",
            "run_path": meta.get("run_path"),
            "command_names": meta.get("command_names"),
        },
        file_joints=None if joints is None else tuple(joints),
    )
