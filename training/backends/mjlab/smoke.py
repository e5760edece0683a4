"""The students on mjlab: a few iterations on the CPU (mjlab's ``--gpu-ids None`` path), or the
paper-scale run on a GPU. The config's ``task`` picks the mjlab task (see :func:`main`).

    .venv-mjlab/bin/python training/backends/mjlab/smoke.py [--config student_walk_tiny] [--out DIR]
    make mjlab-smoke
    parkour train run --config student_walk --backend mjlab --device cuda --num-envs 4096 --out DIR
    parkour train run --config student_step --backend mjlab --device cuda --num-envs 4096 --out DIR

Run with any Python: without mjlab it re-runs itself under .venv-mjlab, and without .venv-mjlab it
says how to create it and exits 0 (the environment is optional; CI does not depend on it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
VENV_PY = ROOT / ".venv-mjlab" / "bin" / "python"


# What the mjlab scripts import from the checkout: the training package, parkour_core, and parkour_sim
# (the depth camera; read with mujoco 3.11 there).
CHECKOUT_PATHS = [str(ROOT), str(ROOT / "src" / "parkour_core"), str(ROOT / "src" / "parkour_sim")]


SETUP = "bash training/backends/mjlab/setup.sh"  # creates .venv-mjlab


def mjlab_reachable() -> bool:
    """Whether mjlab can run from here: it imports in this interpreter, or .venv-mjlab is there to re-run in.
    ``parkour train run --backend mjlab`` refuses without it; these scripts run by hand skip."""
    return importlib.util.find_spec("mjlab") is not None or VENV_PY.exists()


def reexec_in_venv(script: str | Path = __file__, what: str = "mjlab smoke") -> None:
    """Re-run ``script`` under .venv-mjlab unless mjlab imports here; without .venv-mjlab say so and exit 0."""
    if importlib.util.find_spec("mjlab") is not None:
        return
    if not mjlab_reachable():
        print(f"{what}: skipped, no .venv-mjlab (create it with: {SETUP})")
        sys.exit(0)
    os.execv(str(VENV_PY), [str(VENV_PY), str(Path(script).resolve()), *sys.argv[1:]])


def main(argv: list[str] | None = None) -> int:
    """Train the config's task on mjlab.

    ``student_walk`` trains the walking depth student through our runner (:mod:`training.backends.mjlab.walk_task`),
    ``student_step`` the step-up student likewise (:mod:`training.backends.mjlab.step_task`); another task is
    refused. It writes what the CPU task writes (``curve.jsonl``,
    ``model_latest.pt``, ``<task>.json``, ``curves.png``; ``student_step`` also ``final_checkpoint.pt``)
    and ``student_mjlab.pt``, from which the runtime ``.venv`` writes the bundle (``parkour train run``
    does; :mod:`training.backends.mjlab.student_bundle`).
    """
    reexec_in_venv()
    sys.path[:0] = CHECKOUT_PATHS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="student_walk_tiny")
    parser.add_argument("--iterations", type=int, default=None, help="default: 2 (a student: the config's budget)")
    parser.add_argument(
        "--overrides", default="{}", help="config overrides as a JSON object (parkour train run's --set)"
    )
    parser.add_argument("--num-envs", type=int, default=None, help="default: the config's env.num_envs")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cuda: mjlab's first GPU")
    parser.add_argument("--out", default="runs/mjlab_smoke")
    args = parser.parse_args(argv)

    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # mjlab's train script reads this as "run on the CPU"
    else:
        os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")
    from training.configs import load_train_config

    overrides = {**json.loads(args.overrides), "run.device": args.device}
    if args.num_envs:
        overrides["env.num_envs"] = args.num_envs
    out = Path(args.out).resolve()
    if load_train_config(args.config, overrides).task in ("student_walk", "student_step"):
        from training.backends.mjlab import step_task, walk_task

        if args.iterations is not None:
            overrides["run.max_iterations"] = args.iterations
        cfg = load_train_config(args.config, overrides)
        module = walk_task if cfg.task == "student_walk" else step_task
        result = module.train(cfg, out, Path(str(args.config)).stem, args.device)
        rates = [r["env_steps_per_s"] for r in result["iterations"]]
        print(json.dumps({"task": cfg.task, "backend": "mjlab", "device": args.device, "num_envs": result["num_envs"],
                          "iterations": len(rates), "env_steps_per_s": summary(rates[1:] or rates)}))  # fmt: skip
        print(f"mjlab: wrote {out / (cfg.task + '.json')} and {out / walk_task.MJLAB_STUDENT}")
        return 0
    task = load_train_config(args.config).task
    raise ValueError(f"mjlab trains the students student_walk and student_step; {args.config} trains {task} "
                     "(a task's own MDP runs on MuJoCo-Warp with --backend mujoco_warp)")  # fmt: skip


def summary(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"median": None, "p1": None, "p99": None, "n": 0}
    import numpy as np

    p1, median, p99 = np.percentile(values, [1, 50, 99])
    return {"median": round(float(median), 1), "p1": round(float(p1), 1), "p99": round(float(p99), 1), "n": len(values)}


if __name__ == "__main__":
    sys.exit(main())
