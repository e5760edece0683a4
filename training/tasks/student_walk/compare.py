"""Side by side under ``parkour sim``: the same scripted walk for each bundle, compared on what the run recorded.

The walk, its runs and its scoring are the runtime's (:mod:`parkour_bringup.sim_to_sim`, which
``parkour sim-to-sim`` reports one bundle with): every bundle runs the whole simulated graph (bridge,
supervisor, policy node, script) under ``WALK_SCRIPT``, scored by ``walk_metrics`` from each run's
``bridge.json`` trajectory (sim ground truth) and the script's command log, both on the sim clock.
This module is the table over bundles.

``parkour train compare-walk --bundles g1_walk,models/student_walk --out DIR`` writes DIR/<label>/
(the sim runs), DIR/compare.json, DIR/compare.md and DIR/compare.png.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parkour_bringup.sim_to_sim import (
    DURATION_S,
    SETTLE_S,
    WALK_SCRIPT,
    command_at,
    labels_for,
    load_run,
    plot_walks,
    run_walk,
    walk_config,
    walk_metrics,
)

# The walk's names, as this module has always offered them.
__all__ = ["DURATION_S", "SETTLE_S", "WALK_SCRIPT", "command_at", "compare_walk", "labels_for", "walk_metrics"]


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


def bundles_robot(bundles: list[str]) -> str:
    """The robot every bundle's manifest names; a mix is refused by name."""
    from parkour_core.bundle import read_manifest
    from parkour_core.bundles import resolve_bundle

    robots = {bundle: read_manifest(resolve_bundle(bundle)).robot for bundle in bundles}
    if len(set(robots.values())) > 1:
        named = ", ".join(f"{b} ({r})" for b, r in robots.items())
        raise ValueError(f"--bundles mixes robots: {named}; compare one robot's bundles at a time")
    return next(iter(robots.values()))


def compare_walk(
    bundles: list[str],
    out: Path,
    duration_s: float = DURATION_S,
    robot: str | None = None,
    robot_models: tuple[str, ...] = ("",),
) -> dict[str, Any]:
    """Each bundle on each model of their robot (``""``: the robot's default; ``robot``: default the one
    the bundles' manifests name); labels ``<bundle>@<model>`` when more than one model runs."""
    from parkour_core.provenance import provenance

    robot = robot or bundles_robot(bundles)
    out = Path(out)
    if (out / "compare.json").exists():
        raise FileExistsError(f"{out / 'compare.json'} exists: pick a new --out")
    out.mkdir(parents=True, exist_ok=True)
    record = provenance()
    runs: dict[str, Path] = {}
    results: dict[str, dict[str, Any]] = {}
    for model in robot_models:
        config = walk_config(robot, model)
        for bundle, label in zip(bundles, labels_for(bundles), strict=True):
            if len(robot_models) > 1:
                label = f"{label}@{model or 'default'}"
            run = out / label
            run_walk(bundle, run, config, duration_s)
            runs[label] = run
            results[label] = {**walk_metrics(*load_run(run)), "robot_model": model or "default"}
    summary = {
        **record,
        "robot": robot,
        "script": WALK_SCRIPT,
        "duration_s": duration_s,
        "settle_s": SETTLE_S,
        "bundles": results,
    }
    (out / "compare.json").write_text(json.dumps(summary, indent=1))
    (out / "compare.md").write_text(markdown(results))
    plot_walks(runs, out / "compare.png", duration_s)
    return summary
