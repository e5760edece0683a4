"""`parkour eval`: PHP's success-rate protocol in MuJoCo, through the deployed runtime code.

Commanded speed x obstacle height (default {1, 2} m/s x {36, 58, 76} cm), a box yawed +-20 deg,
start distance U[1.5, 3] m at 1 m/s and U[3, 4.5] m at 2 m/s; success = the robot clears the box and
advances 1.5 m past it without falling within the horizon. N instances x M trials per cell
(default 100 x 5; --quick: 2 x 1), over worker processes. Each trial runs the policy node's runner,
the supervisor's core (its rules, clamps and fallback gait) and the simulated camera in one
process; --graph also runs each cell's first instance through the full DDS graph. --courses K adds
K courses of 3-10 boxes (success rate and distance). --depth-ablation runs the same trials with the
camera seeing flat ground (no obstacles) from the same pose: how much the student's success owes
to its depth.

The supervisor's fallback gait (BLIND) is another policy: each cell counts the trials the student
drove alone and those in which BLIND drove at any time, and gives success both ways (all trials,
and only the student's own successes).

Writes DIR/eval.json (command, commit, date, the bundle's manifest SHA-256, seeds; cells: speed_mps,
height_m, trials, success_rate, success_rate_student_alone, student_alone_trials, blind_trials,
failure_modes), DIR/trials.json (every trial), DIR/eval.md and DIR/eval_heatmap.png.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

HELP = "success rates of a bundle over obstacle heights and speeds (PHP's protocol)"


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
    if not values:
        raise argparse.ArgumentTypeError("give at least one value")
    return values


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bundle", default=None, help="bundle name or folder (default: the config's policy.bundle)")
    p.add_argument("--config", type=Path, default=None, help="stack config (default config/g1_sim.yaml)")
    p.add_argument("--out", type=Path, default=None, help="output folder (default runs/eval-<bundle>-<time>)")
    p.add_argument(
        "--robot-model", default=None, help="the robot's MuJoCo model (default bridge.robot_model; G1: holosoma, mjlab)"
    )
    p.add_argument("--quick", action="store_true", help="2 instances x 1 trial per cell (CI size)")
    p.add_argument("--instances", type=int, default=None, help="instances per cell (default 100)")
    p.add_argument("--trials", type=int, default=None, help="trials per instance (default 5)")
    p.add_argument("--speeds", type=_floats, default=None, help="commanded speeds, m/s (default 1,2)")
    p.add_argument("--heights", type=_floats, default=None, help="obstacle heights, m (default 0.36,0.58,0.76)")
    p.add_argument(
        "--only-heights", type=_floats, default=(),
        help="run only these of --heights, each cell seeded as in the whole grid (a part of a committed grid)",
    )  # fmt: skip
    p.add_argument("--courses", type=int, default=0, help="also run this many courses of 3-10 boxes")
    p.add_argument("--graph", action="store_true", help="also run each cell's first instance through the DDS graph")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: CPU count)")
    p.add_argument("--seed", type=int, default=0, help="root of every trial's seed (seed, cell, instance, trial)")
    p.add_argument(
        "--depth-ablation", action="store_true",
        help="the camera sees flat ground from the same pose (same noise and latency): the student without its depth",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from parkour_core.bundle import MANIFEST, load_bundle
    from parkour_core.bundles import resolve_bundle
    from parkour_core.config import load_config
    from parkour_core.hashing import sha256_file
    from parkour_core.paths import config_dir, repo_root
    from parkour_core.provenance import provenance
    from parkour_core.stats import write_json
    from training.eval.evaluate import course_jobs, grid_jobs, run_jobs, summarise_cells, summarise_courses
    from training.eval.protocol import Protocol, sample_instance, trial_seed
    from training.eval.report import markdown_table, plot_heatmap
    from training.progress import RunProgress

    config_path = args.config or config_dir() / "g1_sim.yaml"
    cfg = load_config(config_path, {"bridge.robot_model": args.robot_model} if args.robot_model is not None else None)
    bundle = args.bundle or cfg.policy.bundle
    if not bundle:
        raise ValueError(f"{config_path} names no policy bundle; pass --bundle B")
    loaded = load_bundle(resolve_bundle(bundle))  # a bad bundle fails here, before any worker starts
    if loaded.manifest.robot != cfg.robot:
        raise ValueError(
            f"bundle {bundle!r} is for a {loaded.manifest.robot}, the config {config_path} for a {cfg.robot}"
        )
    p = Protocol()
    if args.quick:
        p = replace(p, instances=2, trials=1)
    for name in ("instances", "trials"):
        value = getattr(args, name)
        if value is not None:
            if value < 1:
                raise ValueError(f"--{name} must be at least 1, got {value}")
            p = replace(p, **{name: value})
    if args.speeds:
        if any(not 0.1 <= v <= 3.0 for v in args.speeds):
            raise ValueError(f"--speeds {args.speeds}: each must lie in 0.1..3.0 m/s")
        p = replace(p, speeds_mps=args.speeds)
    if args.heights:
        if any(not 0.0 < h <= 1.5 for h in args.heights):
            raise ValueError(f"--heights {args.heights}: each must lie in (0, 1.5] m")
        p = replace(p, heights_m=args.heights)
    missing = [h for h in args.only_heights if h not in p.heights_m]
    if missing:
        raise ValueError(f"--only-heights {missing}: not among the grid's heights {list(p.heights_m)}")
    if args.courses < 0:
        raise ValueError("--courses must be >= 0")
    if args.depth_ablation and not loaded.manifest.uses_depth:
        raise ValueError(f"--depth-ablation: bundle {bundle!r} reads no depth; there is nothing to take away")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    suffix = "-depth-ablation" if args.depth_ablation else ""
    out = (args.out or repo_root() / "runs" / f"eval-{loaded.manifest.name}{suffix}-{stamp}").resolve()
    if (out / "eval.json").exists():
        raise ValueError(f"{out / 'eval.json'} exists; an evaluation never overwrites one (choose another --out)")
    workers = args.workers or os.cpu_count() or 1
    jobs = grid_jobs(p, args.only_heights) + course_jobs(p, args.courses, (3, 10), args.seed)
    cells = len(p.speeds_mps) * len(args.only_heights or p.heights_m)
    print(f"parkour eval: {bundle}{' (depth ablation)' if args.depth_ablation else ''}: {cells} cells x "
          f"{p.instances} instances x {p.trials} trials + {args.courses} courses = {len(jobs)} trials on "
          f"{workers} processes", flush=True)  # fmt: skip
    record = provenance()
    started = time.perf_counter()
    with RunProgress("parkour eval", total=len(jobs), unit="trials", figures=("success",)) as progress:
        trials = run_jobs(bundle, cfg, p, jobs, args.seed, workers, args.depth_ablation, progress)
    wall = time.perf_counter() - started
    result = {
        **record,
        "bundle": loaded.manifest.name,
        "bundle_path": str(loaded.path),
        "bundle_manifest_sha256": sha256_file(loaded.path / MANIFEST),
        "robot": loaded.manifest.robot,
        "config": str(config_path),
        "robot_model": cfg.bridge.robot_model or "default",
        "depth_ablation": args.depth_ablation,
        "protocol": {**asdict(p), "start_range_m": {str(k): v for k, v in p.start_range_m.items()}},
        "seed": args.seed,
        "seeds": "trial_seed(seed, cell, instance, 0) places the obstacle; trial_seed(seed, cell, instance, trial + 1) "
        "draws the trial's noise (training/eval/protocol.py)",
        "trials_per_cell": p.instances * p.trials,
        "only_heights": list(args.only_heights),
        "cells": summarise_cells(p, trials, args.only_heights),
        "course": summarise_courses(trials),
        "wall_s": round(wall, 1),
        "sim_s": round(sum(t["sim_s"] for t in trials), 1),
        "runtime": "in process: PolicyRunner + SupervisorCore (build_core) + SimDepthSensor + RobotSim",
    }
    if args.graph:
        from training.eval.graph_check import graph_trial

        graph_rows = []
        for cell, (speed, height) in enumerate((v, h) for v in p.speeds_mps for h in p.heights_m):
            if args.only_heights and height not in args.only_heights:
                continue
            instance = sample_instance(p, speed, height, np.random.default_rng(trial_seed(args.seed, cell, 0, 0)))
            row = graph_trial(config_path, bundle, p, instance, out / "graph" / f"cell{cell}")
            in_process = next(t for t in trials if t["cell"] == cell and t["instance"] == 0 and t["trial"] == 0)
            graph_rows.append({"speed_mps": speed, "height_m": height, "graph": row["outcome"],
                               "in_process": in_process["outcome"], "run": row.get("run")})  # fmt: skip
        result["graph_subset"] = graph_rows
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "trials.json", {"trials": trials})
    write_json(out / "eval.json", result)
    (out / "eval.md").write_text(markdown_table(result))
    plot_heatmap(result, out / "eval_heatmap.png")
    print(markdown_table(result))
    summary = [{k: c[k] for k in ("speed_mps", "height_m", "success_rate")} for c in result["cells"]]
    print(json.dumps(summary))
    print(f"parkour eval: wrote {out / 'eval.json'} ({wall:.0f} s)")
    return 0
