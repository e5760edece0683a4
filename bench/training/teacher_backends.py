"""Env-steps/s of PHP's teacher task on both backends, side by side: our runner on batched MuJoCo
(``mujoco_cpu``) and mjlab (MuJoCo-Warp, in ``.venv-mjlab``), at the same environment count.

    .venv/bin/python bench/training/teacher_backends.py --device cpu --num-envs 8 --iterations 4 \\
        --out bench/results/training_teacher_backends_cpu.json
    .venv/bin/python bench/training/teacher_backends.py --device cuda --num-envs 4096 --iterations 20 \\
        --out bench/results/training_teacher_backends_cuda.json      # on a GPU machine

Each backend trains ``--config`` (default ``php_teacher_tiny``: the synthetic squat, 16 steps per
env and iteration) for ``--iterations`` through ``parkour train run`` in its own process, blocks
alternating ``--repeats`` times so both see the machine's noise. The rates are rsl_rl's per-iteration
env-steps/s (collection + update: mjlab's ``Perf/total_fps``, our runner's ``env_steps_per_s``) after each run's
first iteration (warm-up: warp compiles its kernels there). Writes medians with p1/p99 per backend,
the ratio mjlab / mujoco_cpu of the medians, the command and the commit. Without ``.venv-mjlab``
the mjlab rows say so and the ratio is null.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src" / "parkour_core"))

from parkour_core.provenance import provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402

PARKOUR = [sys.executable, "-m", "parkour_bringup.cli"]


def run_backend(backend: str, config: str, device: str, num_envs: int, iterations: int, out: Path) -> list[float]:
    cmd = [*PARKOUR, "train", "run", "--config", config, "--backend", backend, "--device", device, "--num-envs",
           str(num_envs), "--set", f"run.max_iterations={iterations}", "--set", f"run.save_interval={iterations}",
           "--out", str(out)]  # fmt: skip
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    if backend == "mjlab":
        return json.loads((out / "mjlab_smoke.json").read_text())["env_steps_per_s_each_iteration"][1:]
    rows = json.loads((out / "php_teacher.json").read_text())["iterations"]
    return [float(r["env_steps_per_s"]) for r in rows][1:]


def stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"median": None, "p1": None, "p99": None, "n": 0}
    p1, median, p99 = np.percentile(values, [1, 50, 99])
    return {"median": round(float(median), 1), "p1": round(float(p1), 1), "p99": round(float(p99), 1), "n": len(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="php_teacher_tiny")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    has_mjlab = (ROOT / ".venv-mjlab" / "bin" / "python").exists()
    rates: dict[str, list[float]] = {"mujoco_cpu": [], "mjlab": []}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeats):
            for backend in ("mujoco_cpu", "mjlab"):
                if backend == "mjlab" and not has_mjlab:
                    continue
                out = Path(tmp) / f"{backend}{k}"
                rates[backend] += run_backend(backend, args.config, args.device, args.num_envs, args.iterations, out)
    summary = {b: stats(v) for b, v in rates.items()}
    ours, theirs = summary["mujoco_cpu"]["median"], summary["mjlab"]["median"]
    result = {
        **provenance(),
        "config": args.config,
        "device": args.device,
        "num_envs": args.num_envs,
        "iterations_per_run": args.iterations,
        "repeats": args.repeats,
        "env_steps_per_s": summary,
        "env_steps_per_s_each_iteration": rates,
        "mjlab_over_mujoco_cpu": round(theirs / ours, 3) if ours and theirs else None,
        "mjlab": "ran" if has_mjlab else "no .venv-mjlab (bash training/backends/mjlab/setup.sh)",
        "rates": "rsl_rl's env-steps/s per iteration (collection + update), first iteration of each run left out",
    }
    write_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("env_steps_per_s", "mjlab_over_mujoco_cpu")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
