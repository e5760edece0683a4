"""Env-steps/s of every CPU training task at this tree and at a baseline commit, side by side in one run.

    .venv/bin/python bench/training/tasks.py --baseline 0b95fe3 --out bench/results/training_tasks.json

For each task's CPU preset (:data:`TASKS`), alternating blocks of the two trees: ``parkour train run --config
PRESET --set run.max_iterations=N`` in a subprocess with the tree on its ``PYTHONPATH`` (the baseline in a
temporary git worktree of the commit), pinned to the same cores, so both pay the same start-up and share
the machine's noise. The rates are rsl_rl's per-iteration env-steps/s from each run's result file, its first
iteration (a warm-up) left out. ``php_student`` distils a ``php_teacher`` trained here for two iterations,
the same ``teacher.pt`` for both trees. Writes the command, the commit, per task and tree the median and
p1/p99 of the rates, the ratio this tree / baseline of the medians, and whether every run of both trees
trained the same rows (``same_rows``: every figure but the timings).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # env_steps.py beside this file

from env_steps import baseline_tree, per_step_us, percentiles  # noqa: E402

from training.rl.runner import TIMING_KEYS  # noqa: E402

# (task, its CPU preset); the presets' own environments and sizes.
TASKS = (
    ("php_teacher", "php_teacher"),
    ("php_student", "php_student"),
    ("student_walk", "student_walk"),
    ("student_step", "student_step"),
    ("climb_teacher", "climb_teacher"),
    ("h1_walk", "h1_walk"),
)


def python_path(tree: Path) -> str:
    """The tree's training package and its src/ packages, ahead of the editable installs of this checkout."""
    return os.pathsep.join([str(tree), *(str(p) for p in sorted((tree / "src").glob("parkour_*")) if p.is_dir())])


def run_block(
    tree: Path, preset: str, iterations: int, out: Path, overrides: list[str], cores: str
) -> tuple[list[float], str]:
    """One ``parkour train run`` of ``preset`` at ``tree``: its per-iteration env-steps/s past the first, and its
    rows without their timings (as JSON), which both trees must give alike."""
    env = os.environ | {"PYTHONPATH": python_path(tree)}
    cmd = ["taskset", "-c", cores, str(Path(sys.executable).parent / "parkour"), "train", "run", "--config", preset,
           "--out", str(out), "--set", "run.minutes=0", "--set", f"run.max_iterations={iterations}",
           "--set", f"run.save_interval={iterations}"]  # fmt: skip
    for pair in overrides:
        cmd += ["--set", pair]
    subprocess.run(cmd, env=env, cwd=tree, check=True, stdout=subprocess.DEVNULL)
    result = next(p for p in out.glob("*.json") if p.name != "run.json")
    rows = json.loads(result.read_text())["iterations"]
    figures = json.dumps([{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rows], sort_keys=True)
    return [r["env_steps_per_s"] for r in rows[1:]], figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the commit to compare with")
    parser.add_argument("--iterations", type=int, default=4, help="training iterations a block (the first: warm-up)")
    parser.add_argument("--blocks", type=int, default=3, help="blocks per tree and task, alternating")
    parser.add_argument("--tasks", nargs="*", default=[t for t, _ in TASKS], help="a subset of the tasks")
    parser.add_argument("--cores", default="0,1", help="taskset's core list for every run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "training_tasks.json")
    args = parser.parse_args(argv)

    from parkour_core.provenance import provenance
    from parkour_core.stats import write_json

    base = baseline_tree(args.baseline)
    trees = {"this tree": ROOT, f"baseline {args.baseline}": base}
    scratch = Path(tempfile.mkdtemp(prefix="bench_tasks_runs_"))
    teacher = scratch / "teacher"
    result: dict[str, Any] = {**provenance(), "baseline": args.baseline, "iterations": args.iterations,
                              "blocks": args.blocks, "cores": args.cores, "tasks": {}}  # fmt: skip
    try:
        for task, preset in TASKS:
            if task not in args.tasks:
                continue
            overrides = []
            if task == "php_student":
                if not (teacher / "teacher.pt").exists():
                    run_block(ROOT, "php_teacher", 2, teacher, [], args.cores)
                overrides = [f"distill.teacher_checkpoints=[{teacher / 'teacher.pt'}]"]
            rates: dict[str, list[float]] = {name: [] for name in trees}
            figures: dict[str, set[str]] = {name: set() for name in trees}
            for block in range(args.blocks):
                order = list(trees.items()) if block % 2 == 0 else list(trees.items())[::-1]
                for name, tree in order:
                    out = scratch / f"{task}_{name.split()[0]}_{block}"
                    block_rates, block_figures = run_block(tree, preset, args.iterations, out, overrides, args.cores)
                    rates[name] += block_rates
                    figures[name].add(block_figures)
            stats = {name: percentiles(r) for name, r in rates.items()}
            ours, theirs = stats["this tree"], stats[f"baseline {args.baseline}"]
            result["tasks"][task] = {"preset": preset, "env_steps_per_s": stats,
                                     "ratio_this_to_baseline_median": ours["median"] / theirs["median"],
                                     "same_rows": len(set.union(*figures.values())) == 1}  # fmt: skip
            ratio = ours["median"] / theirs["median"]
            print(f"{task:14s} this tree {ours['median']:7.0f} env-steps/s (p1 {ours['p1']:.0f}), baseline "
                  f"{theirs['median']:7.0f} (p1 {theirs['p1']:.0f}): ratio {ratio:.3f}")  # fmt: skip
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    baseline = f"baseline {args.baseline}"
    result["summary"] = [
        {"what": f"{task}: time per env-step (training run)", "unit": "µs",
         "ours": per_step_us(t["env_steps_per_s"]["this tree"]),
         "peer": {"name": f"the task at {args.baseline}", **per_step_us(t["env_steps_per_s"][baseline])}}
        for task, t in result["tasks"].items()
    ]  # fmt: skip
    write_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
