"""Env-steps/s of PHP's teacher on both physics backends side by side (``mujoco_cpu`` and ``mujoco_warp``, the
same MDP), and what the host's MDP costs per control step on MuJoCo-Warp at many environments.

    .venv/bin/python bench/training/teacher_backends.py --device cpu --num-envs 8 --iterations 4 \\
        --host-envs 1024 --host-steps 3 --out bench/results/training_teacher_backends_cpu.json

Each backend trains ``--config`` for ``--iterations`` through ``parkour train run`` in its own process,
alternating ``--repeats`` times; the rates are rsl_rl's per-iteration env-steps/s after each run's first
iteration (warp compiles its kernels there). Then each ``--host-configs`` task steps ``--host-envs``
environments on MuJoCo-Warp ``--host-steps`` times, each control step timed whole, inside
``Physics.step`` and inside ``Physics.depth_images``: the rest is the host's MDP, which a GPU does not
speed up. Writes medians with p1/p99, the ratio mujoco_warp / mujoco_cpu, the command and the commit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

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
    rows = json.loads((out / "php_teacher.json").read_text())["iterations"]
    return [float(r["env_steps_per_s"]) for r in rows][1:]


def stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"median": None, "p1": None, "p99": None, "n": 0}
    p1, median, p99 = np.percentile(values, [1, 50, 99])
    return {"median": round(float(median), 1), "p1": round(float(p1), 1), "p99": round(float(p99), 1), "n": len(values)}


def host_mdp_ms(config: str, num_envs: int, steps: int, device: str) -> dict[str, Any]:
    """Per control step on MuJoCo-Warp at ``num_envs``: the whole step, the part inside ``Physics.step`` and the
    part inside ``Physics.depth_images`` (the rays, device work); the rest is the host's."""
    import time

    sys.path[:0] = [str(ROOT)]
    from training.configs import load_train_config
    from training.registry import get_task

    cfg = load_train_config(config, {"env.backend": "mujoco_warp", "env.num_envs": num_envs, "run.device": device})
    task = get_task(cfg.task).runner_class()(cfg)
    physics = task.physics
    inside: dict[str, list[float]] = {"step": [], "depth_images": []}

    def timed(name: str) -> Any:
        method = getattr(physics, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            result = method(*args, **kwargs)
            inside[name][-1] += time.perf_counter() - t0
            return result

        return call

    physics.step, physics.depth_images = timed("step"), timed("depth_images")
    rng, whole = np.random.default_rng(0), []
    for _ in range(steps + 1):  # the first compiles warp's kernels
        for name in inside:
            inside[name].append(0.0)
        t0 = time.perf_counter()
        task.step(rng.normal(0.0, 0.5, (task.num_envs, task.num_actions)))
        whole.append(time.perf_counter() - t0)
    task.close()
    step, depth = np.array(inside["step"][1:]), np.array(inside["depth_images"][1:])
    host = np.array(whole[1:]) - step - depth
    return {"num_envs": num_envs, "steps": steps, "host_mdp_ms": stats(list(1e3 * host)),
            "physics_step_ms": stats(list(1e3 * step)), "depth_rays_ms": stats(list(1e3 * depth))}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="php_teacher_tiny")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--host-configs", nargs="*", default=["php_teacher_tiny", "h1_walk_tiny", "student_walk_tiny",
                                                                "student_step_tiny"])  # fmt: skip
    parser.add_argument("--host-envs", type=int, default=4096)
    parser.add_argument("--host-steps", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    backends = ("mujoco_cpu", "mujoco_warp")
    rates: dict[str, list[float]] = {b: [] for b in backends}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeats):
            for backend in backends:
                out = Path(tmp) / f"{backend}{k}"
                rates[backend] += run_backend(backend, args.config, args.device, args.num_envs, args.iterations, out)
    summary = {b: stats(v) for b, v in rates.items()}
    ours, theirs = summary["mujoco_cpu"]["median"], summary["mujoco_warp"]["median"]
    result = {
        **provenance(),
        "config": args.config,
        "device": args.device,
        "num_envs": args.num_envs,
        "iterations_per_run": args.iterations,
        "repeats": args.repeats,
        "env_steps_per_s": summary,
        "env_steps_per_s_each_iteration": rates,
        "mujoco_warp_over_mujoco_cpu": round(theirs / ours, 3) if ours and theirs else None,
        "rates": "rsl_rl's env-steps/s per iteration (collection + update), first iteration of each run left out",
        "host": {c: host_mdp_ms(c, args.host_envs, args.host_steps, args.device) for c in args.host_configs},
    }
    write_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("env_steps_per_s", "mujoco_warp_over_mujoco_cpu", "host")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
