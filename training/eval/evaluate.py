"""Run the protocol's grid (speed x height, N instances x M trials each) over worker processes.

Each trial's layout and noise come from ``trial_seed(seed, cell, instance, trial)``: the result does
not depend on how many processes ran it or in which order. Several bundles run the same jobs on one
pool (each worker loads a bundle on its first trial of it), so a comparison sees the same trials
under the same commit and processes. Each trial records its noise seed (``noise_seed``), so that can be checked.

A cell's headline is ``success_rate_student_alone``: the supervisor's fallback gait (BLIND) is
another policy, and a success it finished is not the student's.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from parkour_core.config import StackConfig
from training.eval.protocol import FAILURES, Protocol, sample_instance, trial_seed
from training.progress import RunProgress

COURSE_CELL = 1_000_000  # cell index of course trials in the seed tree (apart from the grid's cells)


@dataclass(frozen=True)
class Job:
    cell: int
    speed_mps: float
    height_m: float
    instance: int
    trial: int
    obstacles: int = 1  # > 1: a course of boxes with heights drawn from the protocol's
    heights: tuple[float, ...] = ()  # a course cell's boxes, in order (the protocol's course_heights_m)


_worker: dict[str, Any] = {}


def _init(cfg: StackConfig, depth_ablation: bool) -> None:
    # One BLAS/ORT thread per worker: the workers are the parallelism.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _worker.update(cfg=cfg, depth_ablation=depth_ablation, runners={})


def _runner(bundle: str) -> Any:
    """The worker's trial runner for ``bundle``, loaded on its first trial (a worker serves every bundle)."""
    from training.eval.episode import TrialRunner

    runners = _worker["runners"]
    if bundle not in runners:
        runners[bundle] = TrialRunner(bundle, _worker["cfg"], _worker["depth_ablation"])
    return runners[bundle]


def _run(args: tuple[str, Protocol, int, Job]) -> dict[str, Any]:
    bundle, p, seed, job = args
    instance_rng = np.random.default_rng(trial_seed(seed, job.cell, job.instance, 0))
    instance = sample_instance(
        p, job.speed_mps, job.height_m, instance_rng, obstacles=job.obstacles,
        heights=p.heights_m if job.obstacles > 1 else None,
        spacing_m=p.course_spacing_m if job.heights else (2.0, 4.0), ordered=job.heights,
    )  # fmt: skip
    noise_seed = trial_seed(seed, job.cell, job.instance, job.trial + 1)
    result = _runner(bundle).run(p, instance, noise_seed)
    return {
        "cell": job.cell,
        "speed_mps": job.speed_mps,
        "height_m": job.height_m,
        "instance": job.instance,
        "trial": job.trial,
        "obstacles": job.obstacles,
        "course_heights_m": list(job.heights),
        "noise_seed": noise_seed,
        "start_m": round(instance.start_m, 3),
        "yaw_deg": [round(float(np.rad2deg(b.yaw_rad)), 2) for b in instance.boxes],
        **result.to_dict(),
    }


def grid_jobs(p: Protocol, only_heights: tuple[float, ...] = ()) -> list[Job]:
    """Every trial of the grid, then of the course cells (one per speed, numbered after the grid's cells);
    ``only_heights``: those heights' cells only (no course cell), numbered (and so seeded) as in the whole
    grid, so a part of a committed grid reruns trial for trial."""
    jobs = []
    cells = [(v, h) for v in p.speeds_mps for h in p.heights_m]
    for cell, (speed, height) in enumerate(cells):
        if only_heights and height not in only_heights:
            continue
        jobs += [Job(cell, speed, height, i, t) for i in range(p.instances) for t in range(p.trials)]
    if p.course_heights_m and not only_heights:
        course = tuple(p.course_heights_m)
        for k, speed in enumerate(p.speeds_mps):
            jobs += [Job(len(cells) + k, speed, max(course), i, t, len(course), course)
                     for i in range(p.instances) for t in range(p.trials)]  # fmt: skip
    return jobs


def course_jobs(p: Protocol, courses: int, obstacles: tuple[int, int], seed: int) -> list[Job]:
    rng = np.random.default_rng(seed)
    speed = p.speeds_mps[0]
    return [Job(COURSE_CELL + k, speed, 0.0, 0, 0, int(rng.integers(obstacles[0], obstacles[1] + 1)))
            for k in range(courses)]  # fmt: skip


def run_jobs(
    bundle: str,
    cfg: StackConfig,
    p: Protocol,
    jobs: list[Job],
    seed: int,
    workers: int,
    depth_ablation: bool = False,
    progress: RunProgress | None = None,
) -> list[dict]:
    """Every job's trial, in the jobs' order; ``progress`` counts them and shows the success so far."""
    return run_bundles_jobs([bundle], cfg, p, jobs, seed, workers, depth_ablation, progress)[bundle]


def run_bundles_jobs(
    bundles: list[str],
    cfg: StackConfig,
    p: Protocol,
    jobs: list[Job],
    seed: int,
    workers: int,
    depth_ablation: bool = False,
    progress: RunProgress | None = None,
) -> dict[str, list[dict]]:
    """Every job's trial for each bundle, in the jobs' order: the same trials (seeds, layouts, noise)
    for every bundle, on one pool of workers that each serve every bundle. ``progress`` counts the
    trials and shows the success so far, driving alone first."""
    trials: dict[str, list[dict]] = {b: [] for b in bundles}
    if not jobs:
        return trials
    # Bundle-minor order: the bundles advance together, so the progress compares like with like.
    args = [(b, p, seed, job) for job in jobs for b in bundles]
    done_trials: list[dict] = []

    def done(bundle: str, trial: dict) -> None:
        trials[bundle].append(trial)
        done_trials.append(trial)
        if progress is not None:
            n = len(done_trials)
            alone = sum(t["outcome"] == "success" and t["blind_s"] == 0 for t in done_trials)
            progress.update({"alone": alone / n, "success": sum(t["outcome"] == "success" for t in done_trials) / n})

    if workers <= 1:
        _init(cfg, depth_ablation)
        for a in args:
            done(a[0], _run(a))
        return trials
    # spawn, not fork: onnxruntime and MuJoCo's renderer do not survive a fork of a process using them.
    with mp.get_context("spawn").Pool(workers, initializer=_init, initargs=(cfg, depth_ablation)) as pool:
        for a, trial in zip(args, pool.imap(_run, args, chunksize=1), strict=True):
            done(a[0], trial)
    return trials


def summarise_cells(p: Protocol, trials: list[dict], only_heights: tuple[float, ...] = ()) -> list[dict[str, Any]]:
    cells = []
    for speed in p.speeds_mps:
        for height in p.heights_m:
            if only_heights and height not in only_heights:
                continue
            rows = [t for t in trials if t["speed_mps"] == speed and t["height_m"] == height and t["obstacles"] == 1]
            cells.append({"speed_mps": speed, "height_m": height, **_cell_summary(rows)})
    return cells


def summarise_course_cells(p: Protocol, trials: list[dict]) -> list[dict[str, Any]]:
    """Each speed's course cell (the protocol's ``course_heights_m`` in order): a success clears every box and
    ends ``beyond_m`` past the last; ``cleared_per_box``: trials that got past each box."""
    course = [float(h) for h in p.course_heights_m]
    cells = []
    for speed in p.speeds_mps if course else ():
        rows = [t for t in trials if t["speed_mps"] == speed and t.get("course_heights_m") == course]
        cleared = [sum(t["boxes_cleared"] > k for t in rows) for k in range(len(course))]
        cells.append({"speed_mps": speed, "course_heights_m": course, **_cell_summary(rows),
                      "cleared_per_box": cleared})  # fmt: skip
    return cells


def _cell_summary(rows: list[dict]) -> dict[str, Any]:
    n = len(rows)
    successes = sum(t["outcome"] == "success" for t in rows)
    # The supervisor's fallback gait (BLIND) is another policy: a trial it drove any part of is
    # not the student's alone, so success is also given counting only the student's own trials.
    alone = [t for t in rows if t["blind_s"] == 0]
    successes_alone = sum(t["outcome"] == "success" for t in alone)
    # The headline first: success driving alone; then what BLIND finished (success_rate is their sum).
    return {
        "trials": n,
        "success_rate_student_alone": successes_alone / n if n else None,
        "success_rate_blind_finished": (successes - successes_alone) / n if n else None,
        "blind_trials": n - len(alone),
        "success_rate": successes / n if n else None,
        "student_alone_trials": len(alone),
        "successes_student_alone": successes_alone,
        "successes_with_blind": successes - successes_alone,
        "failure_modes": {f: sum(t["outcome"] == f for t in rows) for f in FAILURES},
        "mean_progress_m": float(np.mean([t["progress_m"] for t in rows])) if rows else None,
        # The pace kept, over the trials that did not fall (a 0 m cell: on flat ground).
        "mean_pace_mps": _mean([t.get("pace_mps") for t in rows if t["outcome"] != "falls"]),
    }


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def summarise_courses(trials: list[dict]) -> dict[str, Any] | None:
    """The random courses (``--courses``), apart from the course cells."""
    rows = [t for t in trials if t["obstacles"] > 1 and not t.get("course_heights_m")]
    if not rows:
        return None
    progress = np.array([t["progress_m"] for t in rows])
    return {
        "courses": len(rows),
        "obstacles": [int(t["obstacles"]) for t in rows],
        "success_rate": sum(t["outcome"] == "success" for t in rows) / len(rows),
        "failure_modes": {f: sum(t["outcome"] == f for t in rows) for f in FAILURES},
        "distance_m": {"p50": float(np.median(progress)), "mean": float(progress.mean()), "max": float(progress.max())},
        "obstacles_cleared_mean": float(np.mean([t["boxes_cleared"] for t in rows])),
    }
