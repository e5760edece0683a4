"""What a longer physics step buys and costs on the CPU student tasks: physics time against the teacher's falls.

    .venv/bin/python bench/training/physics_step.py --out bench/results/training_physics_step.json

The ``student_walk`` task's environment (32 G1s, flat ground and gentle platforms, sampled velocity
commands, the walking policy's PD gains) driven by its teacher, the walking policy, at each
``--steps`` physics step (the policy ticks at 50 Hz throughout, so the decimation is 20 ms / step).
Rounds alternate over the steps, each round a fresh task seeded by its round, ``--seconds`` of
simulated time. Per step it reports the physics time per env-step (``BatchedMujoco.step``: median,
p1, p99 over policy steps) beside what the teacher does there: falls per env-minute (episodes ended
by a fall, not by time) and its mean forward speed against the mean commanded speed. A step that
halves the physics but makes the teacher fall is a different task, not a faster one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
import training  # noqa: E402, F401  (its OpenMP wait policy takes effect only before torch)
from parkour_core.provenance import provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402


def run_round(physics_dt_s: float, seed: int, num_envs: int, seconds: float) -> dict[str, Any]:
    from training.configs.schema import load_train_config
    from training.tasks.student_walk.task import WalkTask

    cfg = load_train_config("student_walk", {"env.physics_dt_s": physics_dt_s, "run.seed": seed})
    task = WalkTask(cfg, num_envs=num_envs)
    sim = task.env.tracking.sim
    step = sim.step
    physics_us: list[float] = []

    def timed(*args: object, **kwargs: object) -> None:
        started = time.perf_counter()
        step(*args, **kwargs)  # type: ignore[arg-type]
        physics_us.append(1e6 * (time.perf_counter() - started) / num_envs)

    sim.step = timed  # type: ignore[method-assign]
    falls, speed, command = 0, [], []
    try:
        for _ in range(round(seconds / task.dt_s)):
            _, _, done, info = task.step(task._label())
            falls += int((done & ~info["time_outs"]).sum())
            speed.append(float(task.env.forward_speed().mean()))
            command.append(float(task.env.walk_command[:, 0].mean()))
    finally:
        task.close()
    return {"physics_us": physics_us, "falls": falls, "speed": speed, "command": command, "decimation": sim.decimation}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default="0.002,0.004,0.005", help="physics steps (s), comma-separated")
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "training_physics_step.json")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    steps = [float(s) for s in args.steps.split(",")]
    runs: dict[float, list[dict]] = {dt: [] for dt in steps}
    for r in range(args.rounds):
        for dt in steps:
            runs[dt].append(run_round(dt, r, args.num_envs, args.seconds))
    rows = []
    env_minutes = args.num_envs * args.seconds * args.rounds / 60.0
    for dt in steps:
        physics = np.concatenate([x["physics_us"] for x in runs[dt]])
        falls = sum(x["falls"] for x in runs[dt])
        rows.append({
            "physics_dt_s": dt, "decimation": runs[dt][0]["decimation"],
            "physics_us_per_env_step": {"median": float(np.median(physics)), "p1": float(np.percentile(physics, 1)),
                                        "p99": float(np.percentile(physics, 99)), "n": int(physics.size)},
            "teacher_falls": falls, "env_minutes": env_minutes, "teacher_falls_per_env_minute": falls / env_minutes,
            "teacher_forward_speed_mps": float(np.mean([s for x in runs[dt] for s in x["speed"]])),
            "commanded_vx_mps": float(np.mean([c for x in runs[dt] for c in x["command"]])),
        })  # fmt: skip
    first, *others = rows

    def quantiles(row: dict) -> dict[str, float]:
        return {"p50": row["physics_us_per_env_step"]["median"], "p99": row["physics_us_per_env_step"]["p99"]}

    result = {
        **provenance(),
        "task": "student_walk (its environment, driven by its teacher)",
        "num_envs": args.num_envs, "seconds_per_round": args.seconds, "rounds": args.rounds,
        "rows": rows,
        "method": "rounds alternate over the physics steps, each a fresh WalkTask seeded by its round; physics "
        "time from a timer around BatchedMujoco.step per policy step; falls are episodes ended by a fall",
        "summary": [
            {"what": f"physics time per env-step, {1000 * first['physics_dt_s']:g} ms step (the tasks') vs "
             f"{1000 * o['physics_dt_s']:g} ms", "unit": "µs",
             "ours": quantiles(first), "peer": {"name": f"{1000 * o['physics_dt_s']:g} ms step", **quantiles(o)}}
            for o in others
        ],
    }  # fmt: skip
    write_json(args.out, result)
    for row in rows:
        physics = row["physics_us_per_env_step"]["median"]
        print(
            f"{1000 * row['physics_dt_s']:g} ms: physics {physics:.0f} us/env-step, "
            f"teacher falls {row['teacher_falls_per_env_minute']:.2f}/env-minute ({row['teacher_falls']}), "
            f"speed {row['teacher_forward_speed_mps']:.2f} m/s of {row['commanded_vx_mps']:.2f} commanded"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
