"""`parkour eval`: PHP's success-rate protocol in MuJoCo, through the deployed runtime code.

Commanded speed x obstacle height (default {1, 2} m/s x {36, 58, 76} cm), a box yawed +-20 deg,
start distance U[1.5, 3] m at 1 m/s and U[3, 4.5] m at 2 m/s; success = the robot clears the box and
advances 1.5 m past it without falling within the horizon. N instances x M trials per cell
(default 100 x 5; --quick: 2 x 1), over worker processes. Each trial runs the policy node's runner,
the supervisor's core (its rules, clamps and fallback gait) and the simulated camera in one
process; --graph also runs each cell's first instance through the full DDS graph. The headline is
the student driving alone; the fallback gait's (BLIND's) successes are counted beside it. Seeds:
--seed-set validation (the default) is for choosing among models, --seed-set test only to report
the model chosen. --bundles A B ... runs several bundles on the same trials and compares them.

Writes DIR/eval.json, DIR/trials.json, DIR/eval.md and DIR/eval_heatmap.png; with --bundles each
bundle's files under DIR/<label>/ and DIR/compare.json and DIR/compare.md.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from training.eval.protocol import SEED_SETS

HELP = "success rates of a bundle (or several, on the same trials) over obstacle heights and speeds (PHP's protocol)"


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
    p.add_argument(
        "--bundles", nargs="+", default=None, metavar="BUNDLE",
        help="several bundle names or folders, run over the same trials in one command; each bundle's outputs "
        "go to DIR/<its folder name>/, the comparison to DIR/compare.json and DIR/compare.md",
    )  # fmt: skip
    p.add_argument(
        "--teacher", type=Path, nargs="+", default=None, metavar="TEACHER_PT",
        help="also run trained climbing teachers (a climb_teacher run's teacher.pt) on the same trials, privileged "
        "(told the boxes), each as its own row beside the bundles: labelled climb_teacher, or by its run folder's "
        "name when several are given",
    )  # fmt: skip
    p.add_argument("--config", type=Path, default=None, help="stack config (default config/g1_sim.yaml)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default runs/eval-<bundle>-<time>, or runs/eval-compare-<time> with --bundles)",
    )
    p.add_argument(
        "--robot-model",
        default=None,
        help="the robot's MuJoCo model (default bridge.robot_model; G1: holosoma, mjlab; H1: unitree, simplified)",
    )
    p.add_argument("--quick", action="store_true", help="2 instances x 1 trial per cell (CI size)")
    p.add_argument("--instances", type=int, default=None, help="instances per cell (default 100)")
    p.add_argument("--trials", type=int, default=None, help="trials per instance (default 5)")
    p.add_argument("--speeds", type=_floats, default=None, help="commanded speeds, m/s (default 1,2)")
    p.add_argument(
        "--heights",
        type=_floats,
        default=None,
        help="obstacle heights, m (default 0.36,0.58,0.76; 0: flat ground)",
    )
    p.add_argument(
        "--only-heights", type=_floats, default=(),
        help="run only these of --heights, each cell seeded as in the whole grid (a part of a committed grid)",
    )  # fmt: skip
    p.add_argument("--courses", type=int, default=0, help="also run this many courses of 3-10 boxes")
    p.add_argument(
        "--course-heights", type=_floats, default=(),
        help="also a course cell at each speed: boxes of these heights in this order (m, e.g. 0.2,0.36,0.58), "
        "--instances x --trials trials; success: every box cleared and 1.5 m past the last",
    )  # fmt: skip
    p.add_argument(
        "--course-spacing", type=_floats, default=(3.0, 5.0),
        help="lo,hi: the course cell's near faces this far apart, drawn per gap (m; default 3,5)",
    )  # fmt: skip
    p.add_argument("--graph", action="store_true", help="also run each cell's first instance through the DDS graph")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: CPU count)")
    p.add_argument(
        "--seed-set", default=None, choices=list(SEED_SETS),
        help="the trials' seed root: validation (default; for choosing among models) or test (held out: only to "
        "report a model already chosen, never to choose)",
    )  # fmt: skip
    p.add_argument(
        "--seed", type=int, default=None,
        help="a seed root by hand, for experiments (recorded as the `custom` set; not with --seed-set)",
    )  # fmt: skip
    p.add_argument(
        "--depth-ablation", action="store_true",
        help="the camera sees flat ground from the same pose (same noise and latency): the student without its depth",
    )  # fmt: skip


def protocol_from_args(args: argparse.Namespace) -> Any:
    """The protocol with the command line's size and grid, checked."""
    from training.eval.protocol import Protocol

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
        if any(not 0.0 <= h <= 1.5 for h in args.heights):
            raise ValueError(f"--heights {args.heights}: each must lie in [0, 1.5] m (0: flat ground)")
        p = replace(p, heights_m=args.heights)
    missing = [h for h in args.only_heights if h not in p.heights_m]
    if missing:
        raise ValueError(f"--only-heights {missing}: not among the grid's heights {list(p.heights_m)}")
    if args.courses < 0:
        raise ValueError("--courses must be >= 0")
    if args.course_heights:
        if len(args.course_heights) < 2 or any(not 0.0 < h <= 1.5 for h in args.course_heights):
            raise ValueError(f"--course-heights {list(args.course_heights)}: two or more boxes, each in (0, 1.5] m")
        p = replace(p, course_heights_m=tuple(args.course_heights))
    spacing = tuple(args.course_spacing)
    if len(spacing) != 2 or not 0.5 <= spacing[0] <= spacing[1] <= 20.0:
        raise ValueError(f"--course-spacing {list(spacing)}: lo,hi with 0.5 <= lo <= hi <= 20 m")
    return replace(p, course_spacing_m=spacing)


def unique_labels(names: list[str]) -> list[str]:
    """Each name as it is; a name already taken gets -2, -3, ... (in the command's order)."""
    labels: list[str] = []
    for name in names:
        label, k = name, 1
        while label in labels:
            k += 1
            label = f"{name}-{k}"
        labels.append(label)
    return labels


BUNDLE_KEYS = ("bundle", "bundle_path", "bundle_manifest_sha256", "robot")


def bundle_record(loaded: Any, teacher: Path | None = None) -> dict[str, Any]:
    """What identifies the bundle an eval ran: its name, folder, robot and manifest SHA-256; for the privileged
    teacher, its file and SHA-256 too (``loaded`` is then the walking policy's bundle it acts under)."""
    from parkour_core.bundle import MANIFEST
    from parkour_core.hashing import sha256_file

    record = {
        "bundle": loaded.manifest.name if teacher is None else "climb_teacher (privileged)",
        "bundle_path": str(loaded.path),
        "bundle_manifest_sha256": sha256_file(loaded.path / MANIFEST),
        "robot": loaded.manifest.robot,
    }
    if teacher is not None:
        record |= {"teacher": str(teacher), "teacher_sha256": sha256_file(teacher)}
    return record


def trial_seeds_sha256(trials: list[dict]) -> str:
    """One hash of every trial's (cell, instance, trial, noise seed, start, yaws): equal hashes, the same trials."""
    keys = [[t["cell"], t["instance"], t["trial"], t["noise_seed"], t["start_m"], t["yaw_deg"]] for t in trials]
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()


def compare_rows(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per bundle per cell (cells in the grid's order, then the course cells; bundles in the command's),
    headline first."""
    keys = ("success_rate_student_alone", "success_rate_blind_finished", "blind_trials", "success_rate",
            "successes_student_alone", "successes_with_blind", "failure_modes", "trials", "mean_pace_mps")  # fmt: skip
    first = next(iter(results.values()))
    rows = []
    for k, cell in enumerate(first["cells"]):
        for label, result in results.items():
            c = result["cells"][k]
            assert (c["speed_mps"], c["height_m"]) == (cell["speed_mps"], cell["height_m"])
            rows.append({"speed_mps": c["speed_mps"], "height_m": c["height_m"], "label": label,
                         "bundle": result["bundle"], **{key: c.get(key) for key in keys}})  # fmt: skip
    for k in range(len(first.get("course_cells") or [])):
        for label, result in results.items():
            c = result["course_cells"][k]
            rows.append({"speed_mps": c["speed_mps"], "course_heights_m": c["course_heights_m"], "label": label,
                         "bundle": result["bundle"], **{key: c.get(key) for key in keys}})  # fmt: skip
    return rows


def run(args: argparse.Namespace) -> int:
    """Run the eval the command line asks for; an evaluation that cannot flatter.

    - The headline is the student driving alone. The supervisor's fallback gait (BLIND) is another
      policy: each cell gives the success of the trials the student drove alone first, and beside it
      the successes BLIND finished and the number of trials BLIND drove in.
    - Seeds come in named sets (training/eval/protocol.py, SEED_SETS): --seed-set validation (the
      default, the set every committed eval ran on) is for choosing among models; --seed-set test is
      held out, to report the model chosen, and must not be used to choose. --seed N is an experiment,
      recorded as the `custom` set.
    - --bundles A B ... runs several bundles over the same cells, instances, trials and seeds, in one
      command (one commit, one pool of workers), and writes a comparison beside each bundle's own
      outputs, so a choice between them is made on like trials.
    - --courses K adds K courses of 3-10 boxes (success rate and distance); --course-heights adds a course
      cell per speed (those boxes in order, trials like a cell's). --depth-ablation runs the
      same trials with the camera seeing flat ground (no obstacles) from the same pose: how much the
      student's success owes to its depth.

    DIR/eval.json holds the command, commit, date, the bundle's manifest SHA-256, seed_set and seed;
    cells: speed_mps, height_m, trials, success_rate_student_alone, success_rate_blind_finished,
    blind_trials, success_rate, student_alone_trials, failure_modes, ...; DIR/trials.json every trial,
    with its noise seed. With --bundles, each bundle's files go under DIR/<label>/ (the bundle's folder
    name, made unique), and DIR/compare.json and DIR/compare.md hold one row per bundle per cell, and
    each bundle's manifest SHA-256 and trial-seed hash.
    """
    import numpy as np

    from parkour_core.bundle import load_bundle
    from parkour_core.bundles import resolve_bundle
    from parkour_core.config import load_config
    from parkour_core.paths import config_dir, repo_root
    from parkour_core.provenance import provenance
    from parkour_core.stats import write_json
    from training.eval.evaluate import (
        course_jobs,
        grid_jobs,
        run_bundles_jobs,
        summarise_cells,
        summarise_course_cells,
        summarise_courses,
    )
    from training.eval.protocol import sample_instance, seed_root, trial_seed
    from training.eval.report import compare_markdown, markdown_table, plot_heatmap
    from training.progress import RunProgress

    seed_set, seed = seed_root(args.seed_set, args.seed)
    if args.bundle is not None and args.bundles is not None:
        raise ValueError("give --bundle B or --bundles A B ..., not both")
    teacher_files = [t.resolve() for t in args.teacher or []]
    for given, resolved in zip(args.teacher or [], teacher_files, strict=True):
        if not resolved.is_file():
            raise ValueError(f"--teacher {given}: no such file (a climb_teacher run's teacher.pt)")
    if teacher_files and (args.depth_ablation or args.graph):
        raise ValueError("--teacher runs in process only, privileged and without depth: not with --depth-ablation "
                         "or --graph")  # fmt: skip
    comparing = args.bundles is not None or bool(teacher_files)
    config_path = args.config or config_dir() / "g1_sim.yaml"
    cfg = load_config(config_path, {"bridge.robot_model": args.robot_model} if args.robot_model is not None else None)
    names = list(args.bundles) if args.bundles is not None else [args.bundle or cfg.policy.bundle]
    if not names[0]:
        raise ValueError(f"{config_path} names no policy bundle; pass --bundle B")
    loaded = [load_bundle(resolve_bundle(b)) for b in names]  # a bad bundle fails here, before any worker starts
    paths = [b.path.resolve() for b in loaded]
    teachers: list[Path | None] = [None] * len(names)
    for teacher in teacher_files:
        from training.eval.episode import privileged_policy
        from training.tasks.climb_teacher.policy import ClimbTeacherPolicy, TeacherFileError

        try:
            policy = ClimbTeacherPolicy(teacher)  # a file that is no teacher.pt fails here, before any worker starts
        except TeacherFileError as e:
            raise ValueError(f"--teacher {e}") from None
        names.append(privileged_policy("training.tasks.climb_teacher.policy:ClimbTeacherPolicy", teacher))
        loaded.append(policy.bundle)
        paths.append(teacher.parent / ("climb_teacher" if len(teacher_files) == 1 else teacher.parent.name))  # label
        teachers.append(teacher)
    twice = sorted({names[i] for i, path in enumerate(paths) if paths.count(path) > 1})
    if twice:
        raise ValueError(f"--bundles names one bundle more than once ({', '.join(twice)})")
    for bundle, b in zip(names, loaded, strict=True):
        if b.manifest.robot != cfg.robot:
            raise ValueError(
                f"bundle {bundle!r} is for a {b.manifest.robot}, the config {config_path} for a {cfg.robot}"
            )
        if args.depth_ablation and not b.manifest.uses_depth:
            raise ValueError(f"--depth-ablation: bundle {bundle!r} reads no depth; there is nothing to take away")
    p = protocol_from_args(args)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    suffix = "-depth-ablation" if args.depth_ablation else ""
    test = "-test" if seed_set == "test" else ""
    what = "compare" if comparing else loaded[0].manifest.name
    out = (args.out or repo_root() / "runs" / f"eval-{what}{suffix}{test}-{stamp}").resolve()
    labels = unique_labels([path.name for path in paths]) if comparing else [loaded[0].manifest.name]
    outs = {label: out / label for label in labels} if comparing else {labels[0]: out}
    existing = [d / "eval.json" for d in outs.values() if (d / "eval.json").exists()]
    existing += [out / "compare.json"] if comparing and (out / "compare.json").exists() else []
    if existing:
        raise ValueError(f"{existing[0]} exists; an evaluation never overwrites one (choose another --out)")
    workers = args.workers or os.cpu_count() or 1
    jobs = grid_jobs(p, args.only_heights) + course_jobs(p, args.courses, (3, 10), seed)
    cells = len(p.speeds_mps) * len(args.only_heights or p.heights_m)
    cells += len(p.speeds_mps) if p.course_heights_m and not args.only_heights else 0
    print(f"parkour eval: {', '.join(names)}{' (depth ablation)' if args.depth_ablation else ''}: {cells} cells x "
          f"{p.instances} instances x {p.trials} trials + {args.courses} courses = {len(jobs)} trials"
          f"{f' x {len(names)} bundles' if comparing else ''} on {workers} processes, seed set {seed_set} "
          f"(root {seed})", flush=True)  # fmt: skip
    record = provenance()
    started = time.perf_counter()
    total = len(jobs) * len(names)
    with RunProgress("parkour eval", total=total, unit="trials", figures=("alone", "success")) as progress:
        by_bundle = run_bundles_jobs(names, cfg, p, jobs, seed, workers, args.depth_ablation, progress)
    wall = time.perf_counter() - started
    results: dict[str, dict[str, Any]] = {}
    for bundle, b, label, teacher_file in zip(names, loaded, labels, teachers, strict=True):
        trials = by_bundle[bundle]
        result = {
            **record,
            **bundle_record(b, teacher_file),
            "config": str(config_path),
            "robot_model": cfg.bridge.robot_model or "default",
            "depth_ablation": args.depth_ablation,
            "protocol": {**asdict(p), "start_range_m": {str(k): v for k, v in p.start_range_m.items()}},
            "seed_set": seed_set,
            "seed": seed,
            "seeds": "trial_seed(seed, cell, instance, 0) places the obstacle; trial_seed(seed, cell, instance, "
            "trial + 1) draws the trial's noise (training/eval/protocol.py; seed_set names the root: validation "
            "to choose, test to report a choice, custom by hand)",
            "trials_per_cell": p.instances * p.trials,
            "only_heights": list(args.only_heights),
            "cells": summarise_cells(p, trials, args.only_heights),
            "course": summarise_courses(trials),
            "course_cells": summarise_course_cells(p, trials),
            "wall_s": round(wall, 1),
            "sim_s": round(sum(t["sim_s"] for t in trials), 1),
            "runtime": "in process: PolicyRunner + SupervisorCore (build_core) + SimDepthSensor + RobotSim",
        }
        if comparing:
            result["compared_in"] = {"compare": str(out / "compare.json"), "bundles": labels,
                                     "wall_s": "the whole command's, every bundle's trials together"}  # fmt: skip
        dest = outs[label]
        if args.graph:
            from training.eval.graph_check import graph_trial

            graph_rows = []
            for cell, (speed, height) in enumerate((v, h) for v in p.speeds_mps for h in p.heights_m):
                if args.only_heights and height not in args.only_heights:
                    continue
                instance = sample_instance(p, speed, height, np.random.default_rng(trial_seed(seed, cell, 0, 0)))
                row = graph_trial(config_path, bundle, p, instance, dest / "graph" / f"cell{cell}")
                in_process = next(t for t in trials if t["cell"] == cell and t["instance"] == 0 and t["trial"] == 0)
                graph_rows.append({"speed_mps": speed, "height_m": height, "graph": row["outcome"],
                                   "in_process": in_process["outcome"], "run": row.get("run")})  # fmt: skip
            result["graph_subset"] = graph_rows
        dest.mkdir(parents=True, exist_ok=True)
        write_json(dest / "trials.json", {"trials": trials})
        write_json(dest / "eval.json", result)
        (dest / "eval.md").write_text(markdown_table(result))
        plot_heatmap(result, dest / "eval_heatmap.png")
        results[label] = result
        print(markdown_table(result))
        headline = ("speed_mps", "height_m", "success_rate_student_alone", "success_rate_blind_finished",
                    "blind_trials", "success_rate")  # fmt: skip
        print(json.dumps([{k: c[k] for k in headline} for c in result["cells"]]))
        print(f"parkour eval: wrote {dest / 'eval.json'}")
    if comparing:
        keep = ("config", "robot_model", "depth_ablation", "protocol", "seed_set", "seed", "seeds", "trials_per_cell",
                "only_heights")  # fmt: skip
        first = next(iter(results.values()))
        compare = {
            **record,
            **{k: first[k] for k in keep},
            "bundles": [
                {
                    "label": label,
                    **{k: results[label][k] for k in (*BUNDLE_KEYS, "seed_set", "seed")},
                    **{k: results[label][k] for k in ("teacher", "teacher_sha256") if k in results[label]},
                    "eval": f"{label}/eval.json",
                    "trial_seeds_sha256": trial_seeds_sha256(by_bundle[bundle]),
                }
                for bundle, label in zip(names, labels, strict=True)
            ],
            "rows": compare_rows(results),
            "course": {label: r["course"] for label, r in results.items()} if args.courses else None,
            "wall_s": round(wall, 1),
        }
        write_json(out / "compare.json", compare)
        (out / "compare.md").write_text(compare_markdown(compare))
        print(compare_markdown(compare))
        print(f"parkour eval: wrote {out / 'compare.json'}")
    print(f"parkour eval: {wall:.0f} s")
    return 0
