"""How fast stage 2's teacher (the walking policy plus its step-up reflex) moves along the course.

    .venv/bin/python -m training.tasks.student_step.teacher_speed \\
        --out results/training/student_step/teacher_speed.json

DAgger's student learns the teacher's actions, so it cannot be asked to be faster than the teacher
is. ``parkour eval``'s 1 m/s cells give a trial distance / 1 m/s + 4 s, which on the 10 cm course
(start 1.5-3 m ahead, 0.8 m deep, 1.5 m beyond) needs about 0.6 m/s on average. This runs the teacher
on ``StepEnv``'s courses (every episode a course, every platform one height, the command held at one
speed) with the training's randomization (friction, torso mass offset, pushes) and without it (the
eval's conditions), and reports its speed along the course once each episode is ``--settle-s`` old,
its falls and the platforms it passed; with its targets as they reach the motors and with them clamped
where the supervisor clamps them (``course.supervisor_limits``, the labels' clamp).
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

from parkour_core.provenance import provenance
from parkour_core.stats import write_json
from training.envs.randomization import NOMINAL, RandomizationConfig
from training.envs.student import CameraConfig
from training.tasks.student_step.config import CourseSection
from training.tasks.student_step.env import StepEnv
from training.tasks.student_step.teacher import StepTeacher
from training.tasks.student_walk.env import WalkConfig, walk_student_manifest
from training.tasks.student_walk.teacher import WalkTeacher


def measure(
    speed_mps: float,
    height_m: float,
    num_envs: int,
    seconds: float,
    settle_s: float,
    seed: int,
    randomized: bool,
    supervisor_limits: bool = False,
) -> dict:
    manifest = walk_student_manifest("teacher_speed", 16, 16, WalkTeacher(1).manifest)
    course = CourseSection(walk_fraction=0.0, speed_mps=[speed_mps, speed_mps], min_height_m=height_m,
                          max_height_m=height_m, supervisor_limits=supervisor_limits)  # fmt: skip
    randomization = RandomizationConfig() if randomized else NOMINAL
    walk = WalkConfig(
        num_envs=num_envs, seed=seed, camera=CameraConfig(width=12, height=8), randomization=randomization
    )
    env = StepEnv(walk, manifest, course)
    try:
        env.reset()
        teacher = StepTeacher(num_envs, env.tracking.sim)
        last = np.zeros((num_envs, env.num_actions))
        dt = env.tracking.dt_s
        speeds, falls, passed = [], 0, 0
        age_s = np.zeros(num_envs)
        for _ in range(round(seconds / dt)):
            actions = env.supervised_actions(teacher.act(env.walk_command, last, env.gait_phase))
            _, _, done, info = env.step_course(actions)
            last = np.where(done[:, None], 0.0, actions)
            if done.any():
                teacher.reset(np.flatnonzero(done))
            falls += int(info["fell"].sum())
            passed += len(info["cleared_heights"])
            age_s = np.where(done, 0.0, age_s + dt)
            speeds.append(np.where(age_s >= settle_s, env.tracking.sim.root_lin_vel_w[:, 0], np.nan))
        v = np.array(speeds)
        return {
            "command_mps": speed_mps, "height_m": height_m, "randomized": randomized,
            "supervisor_limits": supervisor_limits, "envs": num_envs,
            "seconds": seconds,
            "speed_along_course_mps": {"mean": float(np.nanmean(v)), "median": float(np.nanmedian(v)),
                                       "p10": float(np.nanpercentile(v, 10)), "p90": float(np.nanpercentile(v, 90))},
            "falls": falls, "platforms_passed": passed,
        }  # fmt: skip
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speeds", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--heights", type=float, nargs="+", default=[0.02, 0.10])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--settle-s", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    cells = []
    for randomized, limits, speed, height in itertools.product((True, False), (False, True), args.speeds, args.heights):
        cell = measure(speed, height, args.envs, args.seconds, args.settle_s, args.seed, randomized, limits)
        cells.append(cell)
        s = cell["speed_along_course_mps"]
        print(
            f"{'randomized' if randomized else 'nominal'}{', supervisor limits' if limits else ''}: "
            f"command {speed} m/s, {100 * height:.0f} cm: "
            f"{s['mean']:.2f} m/s along the course (p10 {s['p10']:.2f}, p90 {s['p90']:.2f}), "
            f"{cell['falls']} falls, {cell['platforms_passed']} passed"
        )
    write_json(args.out, {**provenance(), "cells": cells, "method": __doc__.split("\n\n", 2)[2].strip()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
