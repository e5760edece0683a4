"""The climbing teacher's training curve in windows of env-steps: is it still rising, and where?

    python -m training.tasks.climb_teacher.report --run models/climb_teacher [--window 200] [--out DIR]

Reads a run folder's ``curve.jsonl`` (or, committed, its ``curve.NNNNNN.jsonl.gz`` files) and
``provenance.json``, and writes ``DIR/report.json`` and ``DIR/report.png`` (default: the run folder):
per window of iterations, the env-steps so far, the mean curriculum level, the share of courses passed,
the boxes passed of those attempted at each level's height, falls per 1000 steps and the flat-ground
pace (speed over command).
The last windows are what "the curve has flattened" is judged on: a level share or pass rate that no
longer rises over several windows at the same height.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from training.rl.runner import run_curve_rows

FIGURES = ("mean_level", "course_success", "falls_per_1000_steps", "flat_speed_ratio")


def finite_mean(values: list[float]) -> float | None:
    kept = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(kept)) if kept else None


def windows(rows: list[dict[str, Any]], window: int, samples_per_iteration: int) -> list[dict[str, Any]]:
    """One entry per ``window`` iterations (the last one may be shorter)."""
    out = []
    for start in range(0, len(rows), window):
        part = rows[start : start + window]
        passed = np.sum([r["passed_by_level"] for r in part], axis=0)
        fell = np.sum([r["fell_by_level"] for r in part], axis=0)
        attempted = passed + fell
        rates = [round(float(p / a), 3) if a else None for p, a in zip(passed, attempted, strict=True)]
        out.append({
            "iterations": [part[0]["iteration"], part[-1]["iteration"]],
            "env_steps": (part[-1]["iteration"] + 1) * samples_per_iteration,
            **{key: finite_mean([r[key] for r in part]) for key in FIGURES},
            "boxes_passed_by_level": passed.tolist(),
            "boxes_attempted_by_level": attempted.tolist(),
            "pass_rate_by_level": rates,
        })  # fmt: skip
    return out


def plot(report: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = report["windows"]
    steps = np.array([x["env_steps"] for x in w]) / 1e6
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    axes[0].plot(steps, [x["mean_level"] for x in w], label="mean level (0: 5 cm)")
    axes[0].plot(steps, [x["course_success"] for x in w], label="courses passed")
    axes[1].set_title("boxes passed / attempted, by height")
    for k, height in enumerate(report["levels_m"]):
        rates = [x["pass_rate_by_level"][k] for x in w]
        if any(r is not None for r in rates):
            axes[1].plot(steps, [np.nan if r is None else r for r in rates], label=f"{100 * height:.0f} cm")
    axes[2].plot(steps, [x["flat_speed_ratio"] for x in w], label="flat-ground speed / command")
    axes[2].plot(steps, [x["falls_per_1000_steps"] for x in w], label="falls / 1000 steps")
    for ax in axes:
        ax.set_xlabel("env-steps (M)")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a tiny run may have passed no box yet
            ax.legend(fontsize=8)
    fig.suptitle(f"climb_teacher: {report['run']}")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def build(run: Path, window: int) -> dict[str, Any]:
    rows = run_curve_rows(run)
    if not rows:
        raise ValueError(f"{run}: the curve has no rows")
    provenance = json.loads((run / "provenance.json").read_text()) if (run / "provenance.json").exists() else {}
    record = json.loads((run / "run.json").read_text())
    from training.configs.schema import load_train_config

    cfg = load_train_config(record["config"], record["overrides"])
    samples = (record["num_envs"] or cfg.env.num_envs) * cfg.ppo.num_steps_per_env
    return {
        "run": str(run),
        "levels_m": list(cfg.climb.levels),
        "samples_per_iteration": samples,
        "iterations": len(rows),
        "env_steps": len(rows) * samples,
        "runs": provenance.get("provenance", {}).get("runs", []),
        "window": window,
        "windows": windows(rows, window, samples),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a climb_teacher run folder")
    parser.add_argument("--window", type=int, default=200, help="iterations per window")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: the run folder)")
    args = parser.parse_args(argv)
    report = build(args.run, args.window)
    out = args.out or args.run
    out.mkdir(parents=True, exist_ok=True)
    from parkour_core.provenance import provenance
    from parkour_core.stats import write_json

    write_json(out / "report.json", {**provenance(), **report})
    plot(report, out / "report.png")
    for x in report["windows"]:
        rates = " ".join("-" if r is None else f"{r:.2f}" for r in x["pass_rate_by_level"])
        print(f"{x['env_steps'] / 1e6:6.2f} M  level {x['mean_level']:.2f}  courses {x['course_success'] or 0:.2f}  "
              f"pass by level {rates}")  # fmt: skip
    print(f"climb_teacher report: wrote {out / 'report.json'} and {out / 'report.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
