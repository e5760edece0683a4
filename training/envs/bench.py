"""Environment steps per second of the CPU backend.

    .venv/bin/python -m training.envs.bench --out runs/envs_bench [--motion DIR/motion_00000.npz] [--envs 32]

Steps the teacher (and the student, with its raycast camera) with small random actions from
reference start states, auto-resetting, and writes ``envs_bench.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from training.envs.reference import Reference, load_reference, squat_reference
from training.envs.student import StudentConfig, StudentEnv
from training.envs.tracking import TrackingConfig, TrackingEnv


def _rate(env: TrackingEnv | StudentEnv, steps: int, rng: np.random.Generator) -> float:
    env.reset()
    actions = np.zeros((env.num_envs, env.num_actions))
    env.step(actions)  # warm-up
    started = time.perf_counter()
    for _ in range(steps):
        env.step(np.asarray(rng.normal(0.0, 0.1, size=actions.shape)))
    return env.num_envs * steps / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--motion", type=Path, help="a `parkour mm synth` motion (default: the synthetic squat)")
    parser.add_argument("--envs", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)
    reference: Reference = load_reference(args.motion) if args.motion else squat_reference()
    cfg = TrackingConfig(num_envs=args.envs, nthread=args.threads)
    rng = np.random.default_rng(0)
    teacher = TrackingEnv([reference], cfg)
    teacher_rate = _rate(teacher, args.steps, rng)
    teacher.close()
    student = StudentEnv([reference], StudentConfig(tracking=cfg))
    student_rate = _rate(student, args.steps, rng)
    student.close()
    result = {
        "reference": reference.name,
        "envs": args.envs,
        "threads": args.threads,
        "cpus": os.cpu_count(),
        "steps": args.steps,
        "teacher_env_steps_per_s": round(teacher_rate, 1),
        "student_env_steps_per_s": round(student_rate, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "envs_bench.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
