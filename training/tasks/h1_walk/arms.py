"""h1_walk run folders side by side at equal samples: the arms of an A/B, window by window of env-steps.

    python -m training.tasks.h1_walk.arms --runs runs/arm_a runs/arm_b --labels a b --out results/training/h1_walk/ab

Each arm's curve (``training.rl.runner.run_curve_rows``) is cut into ``--windows`` equal spans of iterations
(the arms of an A/B run the same iterations of the same size, so a window is the same env-steps in each);
a window holds the means of :data:`~training.tasks.h1_walk.lineage.FIGURES`. Writes OUT/arms.json (the
command, the commit, each arm's windows and its last window) and OUT/arms.png (the figures against env-steps,
one line per arm). The figures are the training env's, under its own sampled commands.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

from training.configs.schema import load_train_config
from training.rl.runner import run_curve_rows
from training.tasks.h1_walk.lineage import FIGURES, SPEED_ERROR_TARGET_MPS, mean_of


def arm_windows(rows: list[dict[str, Any]], windows: int, env_steps_per_iteration: int) -> list[dict[str, Any]]:
    """``windows`` equal spans of the rows (the last takes the remainder), each with its figures' means."""
    bounds = np.linspace(0, len(rows), windows + 1).round().astype(int)
    out = []
    for begin, end in itertools.pairwise(bounds):
        part = rows[begin:end]
        if not part:
            continue
        out.append({
            "iterations": [part[0]["iteration"], part[-1]["iteration"]],
            "env_steps": (part[-1]["iteration"] + 1) * env_steps_per_iteration,
            **{key: mean_of([r.get(key) for r in part]) for key in FIGURES},
        })  # fmt: skip
    return out


def build(runs: list[Path], labels: list[str], windows: int) -> dict[str, Any]:
    arms = []
    for run, label in zip(runs, labels, strict=True):
        rows = run_curve_rows(run)
        record = json.loads((run / "run.json").read_text())
        cfg = load_train_config(record["config"], record["overrides"])
        steps = (record["num_envs"] or cfg.env.num_envs) * cfg.ppo.num_steps_per_env
        wins = arm_windows(rows, windows, steps)
        arms.append({"label": label, "run": str(run), "overrides": record["overrides"], "iterations": len(rows),
                     "windows": wins, "last": wins[-1]})  # fmt: skip
    return {"windows": windows, "arms": arms}


def plot(report: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("episode_length_s", "episode length (s)"),
        ("fell_fraction", "episodes ended by a fall"),
        ("speed_error_mps", "planar speed error (m/s)"),
        ("forward_speed_mps", "forward speed (m/s)"),
        ("touchdowns_per_foot_s", "touchdowns per foot per s"),
        ("yaw_rate_error_radps", "yaw-rate error"),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(15, 7))
    for ax, (key, title) in zip(axes.flat, panels, strict=True):
        for arm in report["arms"]:
            w = arm["windows"]
            ax.plot([x["env_steps"] / 1e6 for x in w], [np.nan if x[key] is None else x[key] for x in w],
                    marker="o", ms=3, label=arm["label"])  # fmt: skip
        if key == "speed_error_mps":
            ax.axhline(SPEED_ERROR_TARGET_MPS, color="k", lw=0.8, ls=":", label="target (in the graph)")
        ax.set_title(title)
        ax.set_xlabel("M env-steps")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="h1_walk run folders, one per arm")
    parser.add_argument("--labels", nargs="+", required=True, help="one label per arm")
    parser.add_argument("--windows", type=int, default=10, help="equal spans of iterations per arm")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    args = parser.parse_args(argv)
    if len(args.labels) != len(args.runs):
        parser.error(f"--labels: {len(args.labels)} labels for {len(args.runs)} runs")
    report = build(args.runs, args.labels, args.windows)
    from parkour_core.provenance import provenance
    from parkour_core.stats import write_json

    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "arms.json", {**provenance(), **report})
    plot(report, args.out / "arms.png")
    for arm in report["arms"]:
        for x in arm["windows"]:
            print(f"{arm['label']:>12} {x['env_steps'] / 1e6:5.1f} M  length {x['episode_length_s']}  "
                  f"falls {x['fell_fraction']}  speed error {x['speed_error_mps']}  forward {x['forward_speed_mps']}  "
                  f"touchdowns {x['touchdowns_per_foot_s']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
