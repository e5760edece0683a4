"""The scripted walk under ``parkour sim``, scored per run, and the sim-to-sim report of one bundle.

One script (``WALK_SCRIPT``: stand up, activate on the band, release it, then 0.5 m/s, 1.0 m/s, a
turning walk and a stop) drives the whole simulated graph in a subprocess (:func:`run_walk`).
:func:`walk_metrics` scores a run from the bridge's ground-truth trajectory and the script's command
log; ``parkour train compare-walk`` tabulates it over bundles. ``parkour sim-to-sim`` runs one bundle
on each MuJoCo model of its robot and adds what the run's bag recorded (joint positions, velocities
and applied torques against the robot's limits: :func:`joint_margins`), every supervisor transition
with its cause and every clamp (:func:`interventions`), and what the bundle's manifest claims
(:func:`bundle_claims`) beside what the script commanded. No ROS and no torch are imported here: the
runtime installs without the training workspace.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from parkour_core.paths import config_dir, shown_path
from parkour_core.robots import RobotSpec

WALK_SCRIPT: list[dict[str, Any]] = [
    {"at_s": 0.2, "request": "stand_up"},
    {"at_s": 2.5, "request": "activate", "in_mode": "STAND"},  # on the band, as from the gantry
    {"at_s": 3.5, "request": "release_band", "in_mode": "ACTIVE"},
    {"at_s": 4.0, "cmd": [0.5, 0.0, 0.0]},
    {"at_s": 12.0, "cmd": [1.0, 0.0, 0.0]},
    {"at_s": 18.0, "cmd": [0.4, 0.0, 0.4]},
    {"at_s": 24.0, "cmd": [0.0, 0.0, 0.0]},
]
DURATION_S = 27.0
SETTLE_S = 1.5
# /robot/joint_states at every supervisor tick (the setting is a ceiling: the supervisor publishes at most once a tick).
JOINT_STATES_HZ = 1000.0
SATURATED = 0.99  # |torque| at this fraction of the effort limit or more counts as at the limit
REPORT = "sim_to_sim"
ROUTINE_REASONS = frozenset({"stand-up complete"})  # parkour_core.safety: a requested stand-up ending on its own


def walk_config(
    robot: str = "g1", robot_model: str = "", script: list[dict[str, Any]] | None = None, record_joints: bool = False
) -> dict[str, Any]:
    """``config/<robot>_sim.yaml`` with the walk script and the robot model; ``record_joints``: joint states
    in the bag at every supervisor tick."""
    config = yaml.safe_load((config_dir() / f"{robot}_sim.yaml").read_text()) or {}
    config["script"] = {"steps": WALK_SCRIPT if script is None else script}
    config.setdefault("bridge", {})["robot_model"] = robot_model
    if record_joints:
        config.setdefault("supervisor", {})["robot_state_hz"] = JOINT_STATES_HZ
    return config


def run_walk(
    bundle: str, run_dir: Path, config: dict[str, Any], duration_s: float, record: bool = False, render: bool = True
) -> None:
    """``parkour sim`` of ``bundle`` under ``config`` (written to ``run_dir``/walk_config.yaml) into ``run_dir``."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    config_path = run_dir / "walk_config.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--bundle", bundle, "--out", str(run_dir),
           "--config", str(config_path), "--duration", str(duration_s)]  # fmt: skip
    cmd += [] if record else ["--no-bag"]
    cmd += [] if render else ["--no-render"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not (run_dir / "report.json").is_file():
        lines = proc.stderr.strip().splitlines()
        why = lines[-1] if lines else f"exit code {proc.returncode}"
        raise RuntimeError(f"parkour sim --bundle {bundle} --out {run_dir} failed: {why} (logs in {run_dir}/logs)")


def load_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A finished run's bridge.json, script.json and report.json."""
    bridge, script, report = (
        json.loads((Path(run_dir) / f"{n}.json").read_text()) for n in ("bridge", "script", "report")
    )
    return bridge, script, report


def command_at(log: list[dict[str, Any]], t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The commanded (vx, vy, yaw rate) at times ``t`` from the script's log, and the time since it changed."""
    rows = sorted((float(e["t"]), tuple(e["cmd"])) for e in log if "cmd" in e)
    if not rows:
        return np.zeros((len(t), 3)), np.full(len(t), np.inf)
    times = np.array([r[0] for r in rows])
    cmds = np.array([r[1] for r in rows], dtype=np.float64)
    changed = np.concatenate([[True], np.any(np.abs(np.diff(cmds, axis=0)) > 1e-9, axis=1)])
    change_times = times[changed]
    index = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 1)
    last_change = change_times[np.clip(np.searchsorted(change_times, t, side="right") - 1, 0, len(change_times) - 1)]
    since = np.where(t >= times[0], t - last_change, np.inf)
    return np.where((t >= times[0])[:, None], cmds[index], 0.0), since


def walk_metrics(
    bridge: dict[str, Any], script: dict[str, Any], report: dict[str, Any], settle_s: float = SETTLE_S
) -> dict[str, Any]:
    """The walk's numbers for one run.

    - falls (the bridge's fall detector) and the supervisor's final mode and faults;
    - distance walked (path length) and forward displacement while ACTIVE;
    - speed tracking error: the base velocity in the heading frame (vx, vy) against the commanded one,
      RMS over the walking segments, skipping ``settle_s`` after every command change (the policies need
      a moment to reach a new speed); the yaw-rate error likewise;
    - drift: the lateral distance from the straight line during the first, straight segment.
    """
    tr = bridge["trajectory"]
    t = np.asarray(tr["t"], dtype=np.float64)
    x, y, yaw = (np.asarray(tr[k], dtype=np.float64) for k in ("x", "y", "yaw"))
    vx_w, vy_w = np.asarray(tr["vx"], dtype=np.float64), np.asarray(tr["vy"], dtype=np.float64)
    v_heading = np.stack([np.cos(yaw) * vx_w + np.sin(yaw) * vy_w, -np.sin(yaw) * vx_w + np.cos(yaw) * vy_w], axis=1)
    yaw_rate = np.gradient(np.unwrap(yaw), t) if len(t) > 1 else np.zeros_like(t)
    command, since = command_at(script.get("log", []), t)
    active_from = report.get("active_from_s")
    fell_at = bridge.get("fell_at_s")
    active = (t >= active_from) if active_from is not None else np.zeros(len(t), dtype=bool)
    if fell_at is not None:
        active &= t < fell_at
    moving = np.linalg.norm(command, axis=1) > 1e-6
    scored = active & moving & (since >= settle_s)
    err_xy = v_heading - command[:, :2]
    err_yaw = yaw_rate - command[:, 2]
    segments = []
    for cmd in np.unique(command[moving], axis=0):
        m = scored & np.all(np.isclose(command, cmd), axis=1)
        if m.any():
            segments.append({
                "command": [round(float(c), 3) for c in cmd],
                "seconds": round(float(m.sum() * np.median(np.diff(t))), 2),
                "mean_vx": float(v_heading[m, 0].mean()),
                "mean_vy": float(v_heading[m, 1].mean()),
                "mean_yaw_rate": float(yaw_rate[m].mean()),
                "speed_rms_error": float(np.sqrt(np.mean(np.sum(err_xy[m] ** 2, axis=1)))),
                "yaw_rate_rms_error": float(np.sqrt(np.mean(err_yaw[m] ** 2))),
            })  # fmt: skip
    step = np.hypot(np.diff(x), np.diff(y))
    distance = float(step[active[1:]].sum()) if len(step) else 0.0
    first = (
        active & moving & np.all(np.isclose(command, command[np.argmax(moving)]), axis=1) if moving.any() else active
    )
    drift = float(np.abs(y[first] - y[first][0]).max()) if first.any() else 0.0
    faults = report.get("supervisor_faults") or {}
    return {
        "fell": bool(bridge.get("fell")),
        "fell_at_s": fell_at,
        "final_mode": report.get("final_mode"),
        "supervisor_faults": faults,
        "distance_m": distance,
        "forward_displacement_m": float(x[active][-1] - x[active][0]) if active.any() else 0.0,
        "speed_rms_error_mps": float(np.sqrt(np.mean(np.sum(err_xy[scored] ** 2, axis=1)))) if scored.any() else None,
        "yaw_rate_rms_error": float(np.sqrt(np.mean(err_yaw[scored] ** 2))) if scored.any() else None,
        "lateral_drift_first_segment_m": drift,
        "scored_s": float(scored.sum() * np.median(np.diff(t))) if len(t) > 1 else 0.0,
        "segments": segments,
        "time_in_mode_s": report.get("time_in_mode_s"),
    }


def labels_for(bundles: list[str]) -> list[str]:
    """Distinct folder-safe labels: a bundle's name, or its run's name for ``.../<run>/bundle``."""
    labels: list[str] = []
    for bundle in bundles:
        path = Path(bundle)
        label = path.parent.name if path.name == "bundle" and path.parent.name else (path.name or bundle)
        base, k = label, 2
        while label in labels:
            label, k = f"{base}_{k}", k + 1
        labels.append(label)
    return labels


def plot_walks(runs: dict[str, Path], path: Path, duration_s: float = DURATION_S) -> None:
    """Each run's base path from above, and its forward speed and yaw rate against the commanded ones."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_path, ax_speed, ax_yaw) = plt.subplots(1, 3, figsize=(20, 5))
    for label, run in runs.items():
        tr = json.loads((run / "bridge.json").read_text())["trajectory"]
        t, yaw = np.asarray(tr["t"]), np.asarray(tr["yaw"])
        vx = np.cos(yaw) * np.asarray(tr["vx"]) + np.sin(yaw) * np.asarray(tr["vy"])
        ax_path.plot(tr["x"], tr["y"], label=label)
        ax_speed.plot(t, vx, label=f"{label} vx (heading frame)", alpha=0.8)
        if len(t) > 1:
            ax_yaw.plot(t, np.gradient(np.unwrap(yaw), t), label=f"{label} yaw rate", alpha=0.8)
    script = json.loads((next(iter(runs.values())) / "script.json").read_text())
    t = np.linspace(0.0, duration_s, 500)
    command, _ = command_at(script.get("log", []), t)
    ax_speed.plot(t, command[:, 0], "k--", label="commanded vx")
    ax_yaw.plot(t, command[:, 2], "k--", label="commanded yaw rate")
    ax_path.set_aspect("equal")
    ax_path.set_title("base path (m)")
    ax_path.legend()
    ax_speed.set_title("forward speed (m/s) against sim time (s)")
    ax_speed.legend()
    ax_yaw.set_title("yaw rate (rad/s) against sim time (s)")
    ax_yaw.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ---------------------------------------------------------------- joints, supervisor and claims


@dataclass(frozen=True)
class JointLog:
    """Joint states against sim time, in the robot's SDK order: position (rad), velocity (rad/s), torque (N m)."""

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    tau: np.ndarray


def read_joint_log(bag_dir: Path) -> JointLog:
    """``/robot/joint_states`` of a run's bag (the supervisor's view of lowstate; in simulation the effort is
    the torque the bridge applied, after its actuator's clamp)."""
    from parkour_bringup.bag.reader import open_bag
    from parkour_bringup.bag.topics import JOINT_STATES_TOPIC, stamp_s

    t, q, dq, tau = [], [], [], []
    with open_bag(bag_dir) as bag:
        bag.require_topics([JOINT_STATES_TOPIC], "the joint-margin report")
        for m in bag.messages([JOINT_STATES_TOPIC]):
            t.append(stamp_s(m.msg.header.stamp.sec, m.msg.header.stamp.nanosec))
            q.append(m.msg.position)
            dq.append(m.msg.velocity)
            tau.append(m.msg.effort)
    order = np.argsort(t, kind="stable")
    return JointLog(*(np.asarray(a, dtype=np.float64)[order] for a in (t, q, dq, tau)))


def mode_series(transitions: list[dict[str, Any]], t: np.ndarray, first: str = "DAMP") -> np.ndarray:
    """The supervisor's mode at each of ``t`` from its transitions (before the first: ``first``)."""
    rows = sorted(transitions, key=lambda r: float(r["t"]))
    modes = np.array([rows[0]["from"] if rows else first, *(r["to"] for r in rows)], dtype=object)
    times = np.array([float(r["t"]) for r in rows])
    return modes[np.searchsorted(times, t, side="right")]


def model_torque_limits(spec: RobotSpec, robot_model: str = "") -> np.ndarray:
    """The torque each joint's actuator is clamped to in the MuJoCo model (SDK order): the robot spec's
    effort limits, or lower where the model's file says so (holosoma's G1: the hip roll motors)."""
    import mujoco

    from parkour_sim.scene import build_model

    m = build_model(spec, "flat", 0.002, robot_model)
    actuator = {int(m.actuator_trnid[a, 0]): a for a in range(m.nu)}
    joints = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in spec.joint_names]
    return np.abs(np.array([m.actuator_ctrlrange[actuator[j], 1] for j in joints], dtype=np.float64))


def joint_margins(
    log: JointLog,
    spec: RobotSpec,
    transitions: list[dict[str, Any]],
    fell_at_s: float | None,
    torque_limits: np.ndarray | None = None,
) -> dict[str, Any]:
    """How close the joints came to their limits while the bundle was in command (mode ACTIVE, before any
    fall): per joint the smallest distance to a position limit, the peak speed as a fraction of the robot's
    speed limit, the peak torque as a fraction of ``torque_limits`` (what the simulated actuator is clamped
    to; default the robot's effort limits) and the share of samples at that limit; the tightest joint of each."""
    tau_max = spec.tau_max if torque_limits is None else np.asarray(torque_limits, dtype=np.float64)
    in_command = mode_series(transitions, log.t) == "ACTIVE"
    if fell_at_s is not None:
        in_command &= log.t < fell_at_s
    if not in_command.any():
        return {"samples": 0, "seconds": 0.0, "joints": [], "tightest": {}}
    q, dq, tau = log.q[in_command], log.dq[in_command], log.tau[in_command]
    lower, upper = q - spec.q_min, spec.q_max - q
    nearest = np.minimum(lower, upper)
    position_margin = nearest.min(axis=0)
    position_margin_at = log.t[in_command][np.argmin(nearest, axis=0)]
    near_upper = upper.min(axis=0) < lower.min(axis=0)
    speed = np.abs(dq).max(axis=0) / spec.dq_max
    torque = np.abs(tau).max(axis=0)
    at_limit = (np.abs(tau) >= SATURATED * tau_max).mean(axis=0)
    joints = [
        {
            "joint": name,
            "position_margin_rad": round(float(position_margin[j]), 4),
            "nearest_limit": "upper" if near_upper[j] else "lower",
            "position_margin_at_s": round(float(position_margin_at[j]), 3),
            "peak_speed_of_limit": round(float(speed[j]), 4),
            "peak_torque_nm": round(float(torque[j]), 3),
            "torque_limit_nm": float(tau_max[j]),
            "peak_torque_of_limit": round(float(torque[j] / tau_max[j]), 4),
            "torque_at_limit_share": round(float(at_limit[j]), 4),
        }
        for j, name in enumerate(spec.joint_names)
    ]
    # The mean period: the supervisor ticks on the physics step's grid (200 Hz on 2 ms steps: 4 and 6 ms apart).
    dt = float(log.t[-1] - log.t[0]) / (len(log.t) - 1) if len(log.t) > 1 else 0.0

    def tightest(key: str, smallest: bool) -> dict[str, Any]:
        row = (min if smallest else max)(joints, key=lambda r: r[key])
        return {"joint": row["joint"], key: row[key]}

    return {
        "samples": int(in_command.sum()),
        "seconds": round(float(in_command.sum() * dt), 2),
        "sample_hz": round(float(1.0 / dt), 1) if dt > 0 else None,
        "joints_outside_limits": sorted(r["joint"] for r in joints if r["position_margin_rad"] < 0.0),
        "joints_at_torque_limit": sorted(r["joint"] for r in joints if r["torque_at_limit_share"] > 0.0),
        "tightest": {
            "position": tightest("position_margin_rad", True),
            "speed": tightest("peak_speed_of_limit", False),
            "torque": tightest("peak_torque_of_limit", False),
        },
        "joints": joints,
    }


def interventions(supervisor: dict[str, Any], bridge: dict[str, Any]) -> dict[str, Any]:
    """What the supervisor did: every mode transition with its cause and who caused it (``operator``: a
    request the supervisor granted; ``routine``: the end of a requested stand-up; ``supervisor``: one of its
    own rules, an intervention), the faults it saw, the targets it clamped, by kind, and those it rejected;
    the fallback gait's steps; and commands that broke a limit at the bridge."""
    requests = supervisor.get("requests") or []

    def by(tr: dict[str, Any]) -> str:
        if any(abs(float(r["t"]) - float(tr["t"])) < 1e-6 and r.get("then") == tr["to"] for r in requests):
            return "operator"
        return "routine" if tr["reason"] in ROUTINE_REASONS else "supervisor"

    transitions = [
        {"t": tr["t"], "from": tr["from"], "to": tr["to"], "reason": tr["reason"], "by": by(tr)}
        for tr in sorted(supervisor.get("supervisor_transitions") or [], key=lambda r: float(r["t"]))
    ]  # fmt: skip
    clamps = {k: v for k, v in (supervisor.get("limit_clamps_by_kind") or {}).items() if k != "total" and v}
    faults = {k: v for k, v in (supervisor.get("faults") or {}).items() if v.get("onsets")}
    fallback = supervisor.get("fallback") or {}
    return {
        "transitions": transitions,
        "by_supervisor": [tr for tr in transitions if tr["by"] == "supervisor"],
        "final_mode": supervisor.get("final_mode"),
        "faults": faults,
        "limit_clamps": int(supervisor.get("limit_clamps") or 0),
        "limit_clamps_by_kind": clamps,
        "max_target_excess_rad": supervisor.get("max_target_excess_rad"),
        "targets_rejected": int(supervisor.get("targets_rejected") or 0),
        "fallback_steps": int(fallback.get("steps") or 0),
        "time_in_mode_s": supervisor.get("time_in_mode_s") or {},
        "lowcmd_limit_violations": bridge.get("lowcmd_limit_violations"),
    }


# Command-range keys as trainers name them, onto (vx, vy, yaw rate).
_RANGE_KEYS = {
    "lin_vel_x": 0, "vx": 0, "lin_vel_y": 1, "vy": 1, "ang_vel_yaw": 2, "ang_vel_z": 2, "yaw_rate": 2, "wz": 2,
}  # fmt: skip
_AXES = ("vx", "vy", "yaw_rate")


def bundle_claims(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a bundle says of itself: where it came from and what it was trained with, the command ranges
    it was trained on (as its provenance names them, and as (vx, vy, yaw rate)), its rates and action, and
    for an imported bundle what the import verified and what it took on trust."""
    prov = manifest.get("provenance") or {}
    imported = prov.get("import") or {}
    source_keys = ("source", "source_repository", "trained_with", "trained_by", "training", "task", "teacher",
                   "built_from", "command", "git_commit", "physics_dt_s", "gains")  # fmt: skip
    ranges_given = prov.get("command_ranges") or {}
    ranges: dict[str, list[float]] = {}
    for key, value in ranges_given.items():
        axis = _RANGE_KEYS.get(key)
        if axis is not None and isinstance(value, list | tuple) and len(value) == 2:
            ranges[_AXES[axis]] = [float(value[0]), float(value[1])]
    return {
        "name": manifest.get("name"),
        "robot": manifest.get("robot"),
        "provenance": {k: prov[k] for k in source_keys if k in prov},
        "command_ranges": ranges_given,
        "command_ranges_vx_vy_yaw": ranges,
        "discrete_command": manifest.get("command"),
        "policy_hz": (manifest.get("rates") or {}).get("policy_hz"),
        "gait_period_s": (manifest.get("gait") or {}).get("period_s"),
        "action_scale": manifest.get("action_scale"),
        "depth": manifest.get("depth") is not None,
        "recurrent": manifest.get("recurrent") is not None,
        "imported_from": imported.get("format"),
        "import_verified": list(imported.get("verified") or []),
        "import_assumed": list(imported.get("assumed") or []),
    }


def command_within_claims(command: list[float], claims: dict[str, Any]) -> bool | None:
    """Whether a commanded (vx, vy, yaw rate) lies in the ranges the bundle claims (None: it claims none).
    A bundle with a discrete command claims its fastest speed level."""
    ranges = claims.get("command_ranges_vx_vy_yaw") or {}
    if ranges:
        bounds = [(command[i], ranges[axis]) for i, axis in enumerate(_AXES) if axis in ranges]
        return all(lo - 1e-9 <= value <= hi + 1e-9 for value, (lo, hi) in bounds)
    levels = (claims.get("discrete_command") or {}).get("speed_levels_mps")
    if levels:
        return float(np.hypot(command[0], command[1])) <= max(levels) + 1e-9
    return None


def run_summary(
    bridge: dict[str, Any], script: dict[str, Any], report: dict[str, Any], supervisor: dict[str, Any],
    log: JointLog | None, spec: RobotSpec, torque_limits: np.ndarray | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One run's part of the report: the walk's metrics, the joint margins and the supervisor's interventions."""
    transitions = supervisor.get("supervisor_transitions") or []
    fell_at = bridge.get("fell_at_s")
    return {
        "robot_model": bridge.get("robot_model") or "default",
        "walk": walk_metrics(bridge, script, report),
        "margins": joint_margins(log, spec, transitions, fell_at, torque_limits) if log is not None else None,
        "interventions": interventions(supervisor, bridge),
    }


def build_report(claims: dict[str, Any], runs: dict[str, dict[str, Any]], script: list[dict[str, Any]]) -> dict:
    """The report over a bundle's runs (by robot model): per scripted command, what the bundle claims and
    what each model measured; and each run's summary."""
    commands = [step["cmd"] for step in script if "cmd" in step and any(abs(c) > 1e-9 for c in step["cmd"])]
    tracking = []
    for cmd in commands:
        row: dict[str, Any] = {"command": cmd, "within_claimed_ranges": command_within_claims(cmd, claims)}
        for model, run in runs.items():
            seg = next((s for s in run["walk"]["segments"] if np.allclose(s["command"], cmd)), None)
            row[model] = None if seg is None else {k: seg[k] for k in (
                "mean_vx", "mean_vy", "mean_yaw_rate", "speed_rms_error", "yaw_rate_rms_error", "seconds")}  # fmt: skip
        tracking.append(row)
    return {"bundle": claims.get("name"), "claims": claims, "tracking": tracking, "runs": runs}


def _f(value: float | None, fmt: str = ".3f") -> str:
    return "-" if value is None else format(value, fmt)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _claims_lines(c: dict[str, Any]) -> list[str]:
    rows = [[key, str(value)] for key, value in c["provenance"].items()]
    ranges = c["command_ranges"] or c["discrete_command"]
    rows.append(["command ranges", json.dumps(ranges) if ranges else "none recorded"])
    rows.append(["policy rate (Hz), gait period (s), action scale", f"{c['policy_hz']}, {c['gait_period_s']}, "
                 f"{c['action_scale']}"])  # fmt: skip
    if c["imported_from"]:
        checks = f"{len(c['import_verified'])} checks verified, {len(c['import_assumed'])} assumed"
        rows.append(["imported from", f"{c['imported_from']}: {checks}"])
        rows += [["assumed", a] for a in c["import_assumed"]]
    return _table(["claim", "value"], rows)


def _walk_row(model: str, run: dict[str, Any]) -> list[str]:
    w, m, i = run["walk"], run["margins"] or {}, run["interventions"]
    tight = m.get("tightest") or {}
    pos, tq = tight.get("position"), tight.get("torque")
    return [
        model,
        f"yes, at {w['fell_at_s']:.1f} s" if w["fell"] else "no",
        f"{w['distance_m']:.2f}",
        _f(w["speed_rms_error_mps"]),
        _f(w["yaw_rate_rms_error"]),
        f"{w['lateral_drift_first_segment_m']:.2f}",
        f"{pos['position_margin_rad']:.3f} ({pos['joint']})" if pos else "-",
        f"{tq['peak_torque_of_limit']:.0%} ({tq['joint']})" if tq else "-",
        ", ".join(m.get("joints_at_torque_limit") or []) or ("none" if m else "-"),
        str(len(i["by_supervisor"])),
        str(i["limit_clamps"]),
    ]


def _segment_cell(s: dict[str, Any] | None) -> str:
    if s is None:
        return "not reached"
    means = f"{s['mean_vx']:.2f}, {s['mean_vy']:.2f}, {s['mean_yaw_rate']:.2f}"
    return f"{means} (RMS error {s['speed_rms_error']:.2f} m/s, {s['yaw_rate_rms_error']:.2f} rad/s)"


def _interventions_lines(model: str, i: dict[str, Any]) -> list[str]:
    clamps = json.dumps(i["limit_clamps_by_kind"]) if i["limit_clamps_by_kind"] else "none"
    faults = json.dumps(i["faults"]) if i["faults"] else "none"
    lines = [
        f"**{model}**: final mode {i['final_mode']}; targets clamped {i['limit_clamps']} times (by kind: {clamps}); "
        f"targets rejected {i['targets_rejected']}; faults {faults}; fallback gait steps {i['fallback_steps']}; "
        f"commands over a limit at the bridge {i['lowcmd_limit_violations']}.",
        "",
    ]
    lines += [f"- {tr['t']:.2f} s {tr['from']} -> {tr['to']}: {tr['reason']} ({tr['by']})" for tr in i["transitions"]]
    return [*lines, ""]


def _margin_lines(model: str, m: dict[str, Any] | None) -> list[str]:
    if not m or not m["joints"]:
        return [f"**{model}**: no joint states recorded while the bundle was in command.", ""]
    by_position = sorted(m["joints"], key=lambda r: r["position_margin_rad"])[:5]
    by_torque = sorted(m["joints"], key=lambda r: -r["peak_torque_of_limit"])[:5]
    rows = [
        [
            r["joint"],
            f"{r['position_margin_rad']:.3f} ({r['nearest_limit']}, at {r['position_margin_at_s']:.1f} s)",
            f"{r['peak_speed_of_limit']:.0%}",
            f"{r['peak_torque_nm']:.1f} ({r['peak_torque_of_limit']:.0%})",
            f"{r['torque_at_limit_share']:.1%}",
        ]
        for r in by_position + [r for r in by_torque if r not in by_position]
    ]
    header = [
        "joint",
        "position margin (rad)",
        "peak speed (of limit)",
        "peak torque (N m, of its actuator limit)",
        "at torque limit",
    ]
    return [f"**{model}** ({m['seconds']} s at {m['sample_hz']} Hz):", "", *_table(header, rows), ""]


def markdown(report: dict[str, Any]) -> str:
    """The report as a page: the bundle's claims, the walk per robot model, tracking per commanded segment
    beside the claimed ranges, the supervisor's interventions and the joint margins."""
    runs = report["runs"]
    models = list(runs)
    lines = [f"# Sim-to-sim: {report['bundle']}", ""]
    if report.get("command"):
        lines += [f"`{report['command']}` at {report.get('git_commit', '?')}, {report.get('date', '')}.", ""]
    lines += ["## What the bundle claims", "", *_claims_lines(report["claims"]), ""]
    header = ["robot model", "fell", "distance (m)", "speed RMS error (m/s)", "yaw-rate RMS error (rad/s)",
              "drift (m)", "nearest joint limit (rad)", "peak torque (of actuator limit)", "joints at a torque limit",
              "supervisor interventions", "targets clamped"]  # fmt: skip
    lines += ["## The walk on each robot model", "", *_table(header, [_walk_row(k, r) for k, r in runs.items()]), ""]
    tracking = [
        [str(row["command"]), {True: "yes", False: "NO", None: "no claim"}[row["within_claimed_ranges"]]]
        + [_segment_cell(row[model]) for model in models]
        for row in report["tracking"]
    ]
    lines += ["## Tracking per commanded segment", "",
              f"Mean velocity in the heading frame over each segment, {report.get('settle_s', SETTLE_S)} s after "
              "the command changed (vx, vy in m/s, yaw rate in rad/s).", "",
              *_table(["command (vx, vy, yaw rate)", "within the claimed ranges", *models], tracking), ""]  # fmt: skip
    lines += ["## Supervisor interventions", ""]
    for model, run in runs.items():
        lines += _interventions_lines(model, run["interventions"])
    lines += ["## Joint margins", "",
              "While the bundle was in command (ACTIVE, before any fall): the five joints nearest a position "
              "limit, and the five with the highest peak torque. Position and speed limits are the robot's; the "
              "torque limit is what the MuJoCo model clamps each actuator to.", ""]  # fmt: skip
    for model, run in runs.items():
        lines += _margin_lines(model, run["margins"])
    return "\n".join(lines).rstrip() + "\n"


def sim_to_sim(
    bundle: str,
    out: Path,
    spec: RobotSpec,
    robot_models: list[str],
    runs_dir: Path | None = None,
    duration_s: float = DURATION_S,
    manifest: dict[str, Any] | None = None,
    provenance: dict[str, Any] | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Run ``bundle`` under the walk on each of ``robot_models`` into ``runs_dir`` (default ``out``/runs) and
    write ``out``/sim_to_sim.json, .md and .png."""
    out, runs_dir = Path(out), Path(runs_dir) if runs_dir is not None else Path(out) / "runs"
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, Any]] = {}
    folders: dict[str, Path] = {}
    for model in robot_models:
        run_dir = runs_dir / model
        if progress is not None:
            progress(f"{model}: parkour sim --out {run_dir}")
        run_walk(bundle, run_dir, walk_config(spec.name, model, record_joints=True), duration_s, record=True,
                 render=False)  # fmt: skip
        bridge, script, report = load_run(run_dir)
        supervisor = json.loads((run_dir / "supervisor.json").read_text())
        log = read_joint_log(run_dir / "bag")
        limits = model_torque_limits(spec, model)
        runs[model] = {**run_summary(bridge, script, report, supervisor, log, spec, limits), "run": shown_path(run_dir)}
        folders[model] = run_dir
    claims = bundle_claims(manifest or {})
    result = {**(provenance or {}), "robot": spec.name, "script": WALK_SCRIPT, "duration_s": duration_s,
              "settle_s": SETTLE_S, **build_report(claims, runs, WALK_SCRIPT)}  # fmt: skip
    (out / f"{REPORT}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / f"{REPORT}.md").write_text(markdown(result))
    plot_walks(folders, out / f"{REPORT}.png", duration_s)
    return result
