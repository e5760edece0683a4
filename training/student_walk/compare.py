"""Side by side under ``parkour sim``: the same scripted walk for each bundle, compared on what the run recorded.

Every bundle runs the whole simulated graph (bridge, supervisor, policy node, script) with one
script (``WALK_SCRIPT``: stand up, release, activate, then 0.5 m/s, 1.0 m/s, a turning walk and a
stop). The comparison (:func:`walk_metrics`) reads each run's ``bridge.json`` trajectory (sim ground
truth) and the script's command log (``script.json``), both on the sim clock.

``parkour train compare-walk --bundles g1_walk,models/student_walk --out DIR`` writes DIR/<label>/
(the sim runs), DIR/compare.json, DIR/compare.md and DIR/compare.png.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from parkour_core.paths import config_dir

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


def compare_config(base: Path, script: list[dict[str, Any]], robot_model: str = "") -> dict[str, Any]:
    config = yaml.safe_load(base.read_text()) or {}
    config["script"] = {"steps": script}
    config.setdefault("bridge", {})["robot_model"] = robot_model
    return config


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


def walk_metrics(bridge: dict[str, Any], script: dict[str, Any], report: dict[str, Any], settle_s: float = SETTLE_S):
    """The comparison's numbers for one run.

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


def run_sim(bundle: str, out: Path, config: Path, duration_s: float) -> None:
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--bundle", bundle, "--out", str(out),
           "--config", str(config), "--duration", str(duration_s), "--no-bag"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not (out / "report.json").is_file():
        raise RuntimeError(f"parkour sim --bundle {bundle} failed ({proc.returncode}): {proc.stderr[-2000:]}")


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


def plot(runs: dict[str, Path], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_path, ax_speed) = plt.subplots(1, 2, figsize=(14, 5))
    for label, run in runs.items():
        tr = json.loads((run / "bridge.json").read_text())["trajectory"]
        t, yaw = np.asarray(tr["t"]), np.asarray(tr["yaw"])
        vx = np.cos(yaw) * np.asarray(tr["vx"]) + np.sin(yaw) * np.asarray(tr["vy"])
        ax_path.plot(tr["x"], tr["y"], label=label)
        ax_speed.plot(t, vx, label=f"{label} vx (heading frame)", alpha=0.8)
    script = json.loads((next(iter(runs.values())) / "script.json").read_text())
    t = np.linspace(0.0, DURATION_S, 500)
    command, _ = command_at(script.get("log", []), t)
    ax_speed.plot(t, command[:, 0], "k--", label="commanded vx")
    ax_path.set_aspect("equal")
    ax_path.set_title("base path (m)")
    ax_path.legend()
    ax_speed.set_title("forward speed (m/s) against sim time (s)")
    ax_speed.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def markdown(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| bundle | fell | distance (m) | speed RMS error (m/s) | yaw-rate RMS error (rad/s) | drift (m) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, r in results.items():
        fell = f"yes, at {r['fell_at_s']:.1f} s" if r["fell"] else "no"
        speed = f"{r['speed_rms_error_mps']:.3f}" if r["speed_rms_error_mps"] is not None else "-"
        turn = f"{r['yaw_rate_rms_error']:.3f}" if r["yaw_rate_rms_error"] is not None else "-"
        drift = r["lateral_drift_first_segment_m"]
        lines.append(f"| {label} | {fell} | {r['distance_m']:.2f} | {speed} | {turn} | {drift:.2f} |")
    lines.append("")
    lines.append("Per commanded segment (mean forward speed in the heading frame, m/s):")
    lines.append("")
    for label, r in results.items():
        parts = [f"{s['command']} -> {s['mean_vx']:.2f}" for s in r["segments"]]
        lines.append(f"- {label}: " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def compare_walk(
    bundles: list[str],
    out: Path,
    duration_s: float = DURATION_S,
    robot: str = "g1",
    robot_models: tuple[str, ...] = ("",),
) -> dict[str, Any]:
    """Each bundle on each robot model (``""``: the robot's default); labels ``<bundle>@<model>`` when
    more than one model runs."""
    from parkour_core.provenance import provenance

    out = Path(out)
    if (out / "compare.json").exists():
        raise FileExistsError(f"{out / 'compare.json'} exists: pick a new --out")
    out.mkdir(parents=True, exist_ok=True)
    record = provenance()
    runs: dict[str, Path] = {}
    results: dict[str, dict[str, Any]] = {}
    for model in robot_models:
        config_path = out / f"compare_config{'_' + model if model else ''}.yaml"
        config_path.write_text(yaml.safe_dump(compare_config(config_dir() / f"{robot}_sim.yaml", WALK_SCRIPT, model)))
        for bundle, label in zip(bundles, labels_for(bundles), strict=True):
            if len(robot_models) > 1:
                label = f"{label}@{model or 'default'}"
            run = out / label
            run_sim(bundle, run, config_path, duration_s)
            runs[label] = run
            results[label] = walk_metrics(
                json.loads((run / "bridge.json").read_text()),
                json.loads((run / "script.json").read_text()),
                json.loads((run / "report.json").read_text()),
            )
            results[label]["robot_model"] = model or "default"
    summary = {**record, "script": WALK_SCRIPT, "duration_s": duration_s, "settle_s": SETTLE_S, "bundles": results}
    (out / "compare.json").write_text(json.dumps(summary, indent=1))
    (out / "compare.md").write_text(markdown(results))
    plot(runs, out / "compare.png")
    return summary
