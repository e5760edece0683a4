"""An h1_walk run folder's whole curve, over every resumed run, in windows of training time: has it flattened?

    python -m training.tasks.h1_walk.lineage --run models/h1_walk_run --out results/training/h1_walk/lineage

Reads the folder's curve (``training.rl.runner.run_curve_rows``: each run's rows) and ``provenance.json``
(each run's first iteration, env-steps and commit). Writes OUT/lineage.json and OUT/lineage.png: per window
of ``--window-min`` minutes of iterations (their own ``wall_s``), the minutes and env-steps so far, the run
it belongs to and the means of :data:`FIGURES`. ``trend`` fits a line to each figure over the last
``--trend-min`` minutes: how far it moved per hour. For the planar speed error it also gives the hours
that pace needs to reach :data:`SPEED_ERROR_TARGET_MPS` (None where it does not fall). The figures are
the training env's, under its sampled commands (zero commands included); the targets are judged in
the graph (``training.tasks.h1_walk.report``), so this says whether training still moves, not whether it walks.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from training.rl.runner import run_curve_rows

FIGURES = ("episode_return", "episode_length_s", "fell_fraction", "speed_error_mps", "forward_speed_mps",
           "command_vx_mps", "yaw_rate_error_radps", "touchdowns_per_foot_s", "mean_std", "command_level")  # fmt: skip
SPEED_ERROR_TARGET_MPS = 0.25  # the planar speed RMS error through the graph


def run_starts(runs: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(first iteration, env-steps per iteration) of each run in ``provenance.json``'s ``runs``."""
    return [(int(r["first_iteration"]), int(r["env_steps"]) // max(int(r["iterations"]), 1)) for r in runs]


def minutes_before(rows: list[dict[str, Any]]) -> np.ndarray:
    """Training minutes before each row and, last, after them all (the rows' own ``wall_s``)."""
    return np.concatenate([[0.0], np.cumsum([float(r["wall_s"]) for r in rows])]) / 60.0


def windows(rows: list[dict[str, Any]], runs: list[dict[str, Any]], window_min: float) -> list[dict[str, Any]]:
    """One entry per ``window_min`` minutes of iterations, in curve order; a last part under half a window
    joins the window before it (so the trend is not fitted to a stub)."""
    starts = run_starts(runs)
    firsts = np.array([first for first, _ in starts], dtype=np.int64)
    per_iteration = np.array([steps for _, steps in starts] or [0], dtype=np.int64)
    run_index = np.maximum(np.searchsorted(firsts, [r["iteration"] for r in rows], side="right") - 1, 0)
    env_steps = np.cumsum(per_iteration[run_index])
    minutes = minutes_before(rows)[1:]
    bounds: list[tuple[int, int]] = []
    begin = 0
    while begin < len(rows):
        end = begin
        while end < len(rows) and minutes[end] <= minutes[begin] + window_min - 1e-9:
            end += 1
        bounds.append((begin, end))
        begin = end
    if len(bounds) > 1 and minutes[-1] - minutes[bounds[-1][0]] < window_min / 2:  # a stub joins the window before
        bounds[-2:] = [(bounds[-2][0], len(rows))]
    out: list[dict[str, Any]] = []
    for begin, end in bounds:
        part = rows[begin:end]
        out.append({
            "minutes": round(float(minutes[end - 1]), 1),
            "env_steps": int(env_steps[end - 1]),
            "iterations": [part[0]["iteration"], part[-1]["iteration"]],
            "runs": sorted({int(k) + 1 for k in run_index[begin:end]}),
            **{key: mean_of([r.get(key) for r in part]) for key in FIGURES},
        })  # fmt: skip
    return out


def trend(wins: list[dict[str, Any]], trend_min: float) -> dict[str, Any]:
    """Least-squares slope per hour of each figure over the windows ending in the last ``trend_min`` minutes."""
    last = wins[-1]["minutes"]
    tail = [w for w in wins if w["minutes"] > last - trend_min]
    result: dict[str, Any] = {"minutes": [tail[0]["minutes"], last], "windows": len(tail), "per_hour": {}}
    for key in FIGURES:
        points = [(w["minutes"], w[key]) for w in tail if w[key] is not None]
        if len(points) >= 2:
            x, y = np.array(points).T
            result["per_hour"][key] = round(float(np.polyfit(x / 60.0, y, 1)[0]), 4)
    slope = result["per_hour"].get("speed_error_mps")
    now = tail[-1]["speed_error_mps"]
    result["speed_error_target_mps"] = SPEED_ERROR_TARGET_MPS
    result["hours_to_speed_error_target_at_this_pace"] = (
        round((now - SPEED_ERROR_TARGET_MPS) / -slope, 1)
        if slope is not None and slope < 0 and now is not None
        else None
    )
    return result


def mean_of(values: list[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None and np.isfinite(v)]
    return round(float(np.mean(kept)), 4) if kept else None


def plot(report: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = report["windows"]
    minutes = [x["minutes"] for x in w]
    panels = [
        ("episode", ["episode_return", "episode_length_s"]),
        ("falls", ["fell_fraction"]),
        ("speed (m/s)", ["speed_error_mps", "forward_speed_mps", "command_vx_mps"]),
        ("gait", ["touchdowns_per_foot_s", "yaw_rate_error_radps"]),
        ("policy", ["mean_std"]),
        ("commands", ["command_level"]),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(15, 7))
    for ax, (title, keys) in zip(axes.flat, panels, strict=True):
        for key in keys:
            ax.plot(minutes, [np.nan if x[key] is None else x[key] for x in w], label=key)
        if "speed_error_mps" in keys:
            ax.axhline(SPEED_ERROR_TARGET_MPS, color="k", lw=0.8, ls=":", label="speed error target")
        for start in report["run_start_minutes"][1:]:
            ax.axvline(start, color="grey", lw=0.6, ls="--")
        ax.set_title(title)
        ax.set_xlabel("training minutes (dashed: a resumed run starts)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"h1_walk: {report['run']}, {report['env_steps'] / 1e6:.1f} M env-steps")
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def build(run: Path, window_min: float, trend_min: float) -> dict[str, Any]:
    rows = run_curve_rows(run)
    if not rows:
        raise ValueError(f"{run}: the curve has no rows")
    runs = json.loads((run / "provenance.json").read_text())["runs"]
    wins = windows(rows, runs, window_min)
    before = minutes_before(rows)
    index = {r["iteration"]: k for k, r in enumerate(rows)}
    starts = [round(float(before[index[first]]), 1) for first, _ in run_starts(runs) if first in index]
    return {
        "run": str(run),
        "iterations": len(rows),
        "env_steps": wins[-1]["env_steps"],
        "minutes": wins[-1]["minutes"],
        "runs": [
            {k: r.get(k) for k in ("commit", "first_iteration", "iterations", "env_steps", "wall_s")} for r in runs
        ],
        "run_start_minutes": starts,
        "window_min": window_min,
        "windows": wins,
        "trend": trend(wins, trend_min),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="an h1_walk run folder (curve files, provenance.json)")
    parser.add_argument("--window-min", type=float, default=20.0, help="training minutes per window")
    parser.add_argument("--trend-min", type=float, default=100.0, help="the last minutes the trend is fitted on")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    args = parser.parse_args(argv)
    report = build(args.run, args.window_min, args.trend_min)
    from parkour_core.provenance import provenance
    from parkour_core.stats import write_json

    write_json(args.out / "lineage.json", {**provenance(), **report})
    plot(report, args.out / "lineage.png")
    for x in report["windows"]:
        print(f"{x['minutes']:6.1f} min {x['env_steps'] / 1e6:6.1f} M  run {x['runs']}  level {x['command_level']}  "
              f"speed error {x['speed_error_mps']}  forward {x['forward_speed_mps']}  falls {x['fell_fraction']}  "
              f"touchdowns {x['touchdowns_per_foot_s']}")  # fmt: skip
    print(json.dumps(report["trend"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
