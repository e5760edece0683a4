"""Stage-2 runs side by side: what the PPO term's weight changed (training curves and `parkour eval`).

    python -m training.tasks.student_step.compare --runs DAGGER_RUN.json PPO_RUN.json \
        --evals DAGGER_EVAL.json PPO_EVAL.json --out OUT.json

Each run is a ``student_step.json`` (``parkour train student-step`` / ``train run``), each eval an
``eval.json`` of the exported bundle on the same cells and seeds. Writes OUT.json (and prints a
markdown table, a column per run): per run the lambda_PPO it reached, the trailing step-up rate over the last 100
iterations and its best, step-ups and falls per platform height over the whole run, falls, lane
exits, refused targets and the speed along the course over the last 100 iterations; per eval cell the
success rates and the trials the supervisor's fallback gait took over (BLIND). Only figures
computed from the files: no timing.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.provenance import provenance
from training.tasks.student_step.task import HEIGHT_BIN_NAMES_CM, HEIGHT_BINS_M

LAST = 100  # iterations the trailing figures are averaged over


def run_summary(path: Path) -> dict[str, Any]:
    """A run's trailing figures from its per-iteration log (``student_step.json``, or gzipped as committed)."""
    run = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
    rows = run["iterations"]
    tail = rows[-LAST:]
    rate = [r.get("step_up_rate_window", np.nan) for r in rows]
    return {
        "file": str(path),
        "gate_rate": run.get("gate_rate"),
        "iterations": len(rows),
        "max_ppo_weight": max(r.get("ppo_weight", 0.0) for r in rows),
        "final_dagger_weight": rows[-1].get("dagger_weight"),
        "step_up_rate_last": float(np.nanmean(rate[-LAST:])),
        "step_up_rate_best": float(np.nanmax(rate)),
        "exported_iteration": run.get("exported_iteration"),
        "height_bins_m": list(HEIGHT_BINS_M),
        "cleared_by_height": run.get("cleared_by_height"),
        "fell_by_height": run.get("fell_by_height"),
        "falls_per_1000_steps_last": float(np.mean([r.get("falls_per_1000_steps", np.nan) for r in tail])),
        "left_lane_per_1000_steps_last": float(np.mean([r.get("left_lane_per_1000_steps", np.nan) for r in tail])),
        "course_speed_last": float(np.mean([r.get("course_speed", np.nan) for r in tail])),
        "refused_per_1000_steps_last": float(np.mean([r.get("refused_per_1000_steps", np.nan) for r in tail])),
        "teacher_command_gain": run.get("teacher_command_gain", 1.0),
        "supervisor_limits": run.get("supervisor_limits", False),
    }


def eval_summary(path: Path) -> dict[str, Any]:
    result = json.loads(path.read_text())
    cells = [{k: c[k] for k in ("speed_mps", "height_m", "trials", "success_rate", "success_rate_student_alone",
                                "blind_trials", "failure_modes")} for c in result["cells"]]  # fmt: skip
    return {"file": str(path), "bundle": result["bundle_path"], "seed": result["seed"], "cells": cells}


def markdown(result: dict[str, Any]) -> str:
    lines = ["| | " + " | ".join(r["label"] for r in result["runs"]) + " |", "| --- |" + " --- |" * len(result["runs"])]
    for key, name in (("max_ppo_weight", "lambda_PPO reached"), ("step_up_rate_last", f"step-up rate, last {LAST}"),
                      ("step_up_rate_best", "step-up rate, best window"),
                      ("falls_per_1000_steps_last", f"falls / 1000 steps, last {LAST}"),
                      ("refused_per_1000_steps_last", f"targets refused / 1000 steps, last {LAST}"),
                      ("course_speed_last", f"speed along the course (m/s), last {LAST}")):  # fmt: skip
        values = [r.get(key, float("nan")) for r in result["runs"]]
        if all(np.isfinite(values)):  # a figure older runs did not log is left out
            lines.append(f"| {name} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    cleared = [" / ".join(str(n) for n in r["cleared_by_height"]) for r in result["runs"]]
    names = " / ".join(str(h) for h in HEIGHT_BIN_NAMES_CM[: min(len(r["cleared_by_height"]) for r in result["runs"])])
    lines.append(f"| platforms cleared in training, {names} cm | " + " | ".join(cleared) + " |")
    for i, cell in enumerate(result["evals"][0]["cells"]):
        rates = [f"{c['success_rate']:.0%} (alone {c['success_rate_student_alone']:.0%}, BLIND in "
                 f"{c['blind_trials']})" for c in (e["cells"][i] for e in result["evals"])]  # fmt: skip
        lines.append(f"| eval {cell['speed_mps']:g} m/s, {cell['height_m'] * 100:.0f} cm | " + " | ".join(rates) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="+", required=True)
    parser.add_argument("--labels", nargs="+", default=["DAgger only (gate 0.4)", "PPO weighted (gate 0)"])
    parser.add_argument("--evals", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if not 2 <= len(args.runs) == len(args.labels) == len(args.evals):
        raise ValueError(f"give two or more runs, each with a label and an eval: {len(args.runs)} runs, "
                         f"{len(args.labels)} labels, {len(args.evals)} evals")  # fmt: skip
    runs = [run_summary(p) | {"label": label} for p, label in zip(args.runs, args.labels, strict=True)]
    evals = [eval_summary(p) for p in args.evals]
    keys = [[(c["speed_mps"], c["height_m"]) for c in e["cells"]] for e in evals]
    if any(k != keys[0] for k in keys) or len({e["seed"] for e in evals}) > 1:
        raise ValueError(f"the evals must cover the same cells with the same seed: {keys} seeds "
                         f"{[e['seed'] for e in evals]}")  # fmt: skip
    result = {**provenance(), "runs": runs, "evals": evals}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
