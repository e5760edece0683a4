"""Env-steps/s of the ``hpl_student`` task with its environments in N worker processes vs in one process.

    .venv/bin/python -m training.methods.hpl.bench [--workers 2 4] [--num-envs 8] [--iterations 6]

Each layout (:func:`bench_workers`) trains the task through the runner (``hpl_student_tiny`` unless
``--config``; the real student env, depth camera and recurrent student; an untrained scandot oracle
and two synthesized references with the curriculum's hurdles: throughput only) with the same
``--num-envs`` in all. The figures are the runner's, steady state (the first iteration, with the
workers' start, left out): env-steps/s of whole iterations (collect + update) and of the collection
alone. Writes ``bench/results/hpl_workers.json`` (``--out``). ``bench/results/hpl_collectors.json``
measures the asynchronous-collector layout (see training/methods/hpl/README.md).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

RESULTS = Path(__file__).resolve().parents[3] / "bench" / "results" / "hpl_workers.json"


def bench_inputs(workdir: Path, levels: int, seed: int = 0) -> dict[str, Any]:
    """The task's inputs: curriculum references from two synthesized motions cut to 1 s, an untrained oracle."""
    from training.envs.privileged import privileged_size
    from training.methods.hpl.oracle import untrained_oracle
    from training.methods.hpl.smoke import curriculum_references
    from training.motion_matching.synth import synthesize
    from training.php_teacher.task import TrackingTeacher
    from training.pipeline.teacher import toy_references

    synthesize(2, seed, workdir / "mm", None)
    references = curriculum_references(toy_references(workdir / "mm", 1.0), levels)
    return {"references": references, "teacher": TrackingTeacher(untrained_oracle(privileged_size(), 29, seed=seed))}


def steady(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Env-steps/s over the iterations after the first: whole iterations and collection alone."""
    rows = rows[1:] or rows
    samples = sum(r["env_steps_per_s"] * r["wall_s"] for r in rows)
    return {
        "env_steps_per_s": round(samples / sum(r["wall_s"] for r in rows), 1),
        "collect_env_steps_per_s": round(samples / sum(r["collect_s"] for r in rows), 1),
        "iterations_measured": len(rows),
    }


def bench_workers(
    out: Path = RESULTS,
    workers: Sequence[int] = (2,),
    num_envs: int = 8,
    iterations: int = 6,
    steps: int = 24,
    config: str = "hpl_student_tiny",
) -> dict[str, Any]:
    """One process, then each worker count, at the same ``num_envs``; writes ``out``.

    - one process: ``hpl.workers: 1``, ``hpl.processes: false``: the environments, the oracle and the
      learner in the trainer process (what ``php_student`` runs);
    - N worker processes: ``hpl.workers: N``: each process steps ``num_envs / N`` environments and labels
      them with its own oracle while the trainer waits, then the trainer updates.
    """
    from parkour_core.provenance import provenance
    from parkour_core.stats import write_json
    from training.configs.schema import load_train_config
    from training.rl.train import train

    for n in workers:
        if num_envs % n:
            raise ValueError(f"--num-envs {num_envs} does not split over {n} workers")
    levels = load_train_config("hpl_oracle_tiny").hpl.levels
    runs = []
    with tempfile.TemporaryDirectory(prefix="hpl_bench_") as tmp:
        inputs = bench_inputs(Path(tmp), levels)
        for n, processes in [(1, False), *((n, True) for n in workers)]:
            overrides = {"env.num_envs": num_envs, "hpl.workers": n, "hpl.processes": processes,
                         "ppo.num_steps_per_env": steps, "run.max_iterations": iterations,
                         "run.save_interval": iterations}  # fmt: skip
            result = train(config, Path(tmp) / f"run_{n}_{processes}", overrides, task_inputs=inputs)
            layout = f"{n} worker processes" if processes else "one process"
            runs.append({"layout": layout, "workers": n, "processes": processes, **steady(result["iterations"])})
    base = runs[0]["env_steps_per_s"]
    for r in runs:
        r["speedup_vs_one_process"] = round(r["env_steps_per_s"] / base, 2)
    data = {
        **provenance(),
        "what": "hpl_student through the one runner: env-steps/s (collect + update, and collection alone), "
        "steady state (the first iteration, with the workers' start, left out)",
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "task": {
            "config": config,
            "env": "training.envs.student.StudentEnv (G1 tracking + simulated depth) on curriculum references",
            "oracle": "HPL scandot oracle (untrained: throughput only), one per share",
            "num_envs": num_envs,
            "steps_per_iteration": steps,
            "iterations": iterations,
        },
        "runs": runs,
    }
    write_json(Path(out), data)
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.methods.hpl.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2], help="worker process counts to measure")
    parser.add_argument("--num-envs", type=int, default=8, help="environments in every layout")
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--steps", type=int, default=24, help="steps per environment and iteration")
    parser.add_argument("--config", default="hpl_student_tiny")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    data = bench_workers(args.out, args.workers, args.num_envs, args.iterations, args.steps, args.config)
    for r in data["runs"]:
        print(f"{r['layout']}: {r['env_steps_per_s']:.0f} env-steps/s, collection {r['collect_env_steps_per_s']:.0f} "
              f"(x{r['speedup_vs_one_process']})")  # fmt: skip
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
