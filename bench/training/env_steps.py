"""Env-steps/s of a CPU training task through the one runner, beside bare MuJoCo stepping the same robot.

    .venv/bin/python bench/training/env_steps.py --config student_walk --iterations 12 \\
        --out bench/results/training_env_steps.json     # --config h1_walk: the H1 on Unitree's model

In one process, alternating blocks so both share the machine's noise: bare MuJoCo (:func:`bare_block`:
the task's robot, environment count, physics step, decimation and PD servos holding the default pose,
``--bare-steps`` policy steps a block) and the task (``training.rl.train``'s runner on the config,
``--iterations`` iterations a block after one warm-up), its time split by :class:`Timers`.
``--baseline COMMIT`` adds a third block kind: the same task's training loop as it was at COMMIT, for
``--baseline-minutes`` in a subprocess, run twice a block: as it ran (torch's OpenMP wait policy as
given to this bench: unset unless you set it) and under this tree's (``training/__init__.py``: PASSIVE
unless set), so the ratio can be read with and without that setting (:func:`baseline_block`).
Writes JSON with medians and p1/p99 of the per-iteration rates, the ratios task / bare and task /
baseline, the breakdown, the command and the commit.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
# Read before the training package sets its default (OMP_WAIT_POLICY=PASSIVE, training/__init__.py).
WAIT_POLICY_GIVEN = os.environ.get("OMP_WAIT_POLICY")
import training  # noqa: E402, F401  (its wait policy takes effect only if it comes before torch)
from parkour_core.provenance import provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402


class Timers:
    """Accumulated wall time of wrapped methods (class attributes, so every instance is timed).

    Where the task's time goes: physics (``BatchedMujoco.step``), ray-cast depth (``DepthPipeline``: ray
    casts, noise model, preprocessing), the student's and the teacher's observation terms (parkour_core,
    one environment at a time), the teacher's policy (onnxruntime), the privileged observation, the
    student's forward pass and the storage (``alg.act``, ``alg.process_env_step``), the update
    (``alg.update``) and the rest (Python glue). Reported per env-step (microseconds) and as fractions.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._restore: list[Callable[[], None]] = []

    def wrap(self, owner: Any, method: str, name: str) -> None:
        original = getattr(owner, method)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1

        setattr(owner, method, timed)
        self._restore.append(lambda: setattr(owner, method, original))

    def clear(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def restore(self) -> None:
        for undo in reversed(self._restore):
            undo()


def percentiles(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    return {"median": float(np.median(a)), "p1": float(np.percentile(a, 1)), "p99": float(np.percentile(a, 99)),
            "n": int(a.size)}  # fmt: skip


def per_step_us(rates: dict[str, float]) -> dict[str, float]:
    """A rate's percentiles as time per env-step in microseconds: p50 from the median, p99 from p1 (its slow tail)."""
    return {"p50": 1e6 / rates["median"], "p99": 1e6 / rates["p1"]}


def task_sim(task: Any) -> Any:
    """The task's BatchedMujoco: a student env's tracking env holds it, the climbing teacher's env itself."""
    env = task.env
    return env.sim if hasattr(env, "sim") else env.tracking.sim


def bare_block(task: Any, steps: int) -> list[float]:
    """Env-steps/s of each policy step of a BatchedMujoco like the task's, holding the default pose.

    The physics alone: ``mujoco.rollout`` over the environments plus the per-environment state refresh.
    A robot that PD cannot hold standing (the H1) is stood up again, untimed, once its base has sunk below
    half its standing height: the bare block times standing robots, not ones lying on the floor.
    """
    from training.envs.mujoco_cpu import BatchedMujoco

    sim = task_sim(task)
    bare = BatchedMujoco(
        sim.num_envs, sim.robot, sim.physics_dt_s, sim.decimation, kp=sim.kp, kd=sim.kd, nthread=len(sim._thread_data)
    )
    try:
        q = np.tile(sim.robot.default_q, (sim.num_envs, 1))
        height = max(0.8, sim.robot.standing_base_height_m)

        def stand(ids: Any) -> None:
            for i in ids:
                bare.set_state(int(i), [0.0, 0.0, height], [1.0, 0, 0, 0], sim.robot.default_q, np.zeros(3),
                               np.zeros(3), np.zeros(len(q[0])))  # fmt: skip

        stand(range(sim.num_envs))
        rates = []
        for _ in range(steps):
            started = time.perf_counter()
            bare.step(q)
            rates.append(sim.num_envs / (time.perf_counter() - started))
            stand(np.flatnonzero(bare.root_pos[:, 2] < 0.5 * height))
        return rates
    finally:
        bare.close()


BASELINE_WALK = """
import json, sys
sys.path.insert(0, sys.argv[1])
from training.student_walk.run import run_student_walk
r = run_student_walk(sys.argv[2], "walk", 0, "cpu", None, float(sys.argv[3]), log=lambda s: None)
"""


def baseline_block(tree: Path, minutes: float, out: Path, wait_policy: str | None) -> list[float]:
    """The training loop of ``tree`` (an earlier commit) for ``minutes``: its per-iteration env-steps/s.
    ``wait_policy``: torch's OpenMP wait policy for it (None: unset, libgomp's default, as that loop ran).

    ``tree`` is a temporary git worktree (:func:`baseline_tree`) with its generated walking-policy bundle
    linked to this checkout's; the rates are read from its own result file, the first iteration (a
    warm-up) left out."""
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | {"PYTHONPATH": str(tree)}
    if wait_policy is not None:
        env["OMP_WAIT_POLICY"] = wait_policy
    subprocess.run([sys.executable, "-c", BASELINE_WALK, str(tree), str(out), str(minutes)], env=env, check=True,
                   cwd=tree, stdout=subprocess.DEVNULL)  # fmt: skip
    rows = json.loads((out / "student_walk.json").read_text())["iterations"]
    return [r["env_steps_per_s"] for r in rows[1:]]


def baseline_tree(commit: str) -> Path:
    import subprocess
    import tempfile

    tree = Path(tempfile.mkdtemp(prefix="env_steps_baseline_")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    for bundle in ("g1_walk",):  # generated by make setup, not tracked
        link = tree / "models" / bundle
        if not link.exists():
            link.symlink_to(ROOT / "models" / bundle)
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="student_walk", help="training config (a CPU task)")
    parser.add_argument("--iterations", type=int, default=12, help="timed training iterations per block")
    parser.add_argument("--bare-steps", type=int, default=200, help="bare MuJoCo policy steps per block")
    parser.add_argument("--blocks", type=int, default=2, help="alternating bare / task blocks")
    parser.add_argument("--num-envs", type=int, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override, as parkour train's --set (e.g. env.physics_dt_s=0.005); "
                        "the baseline keeps its own config")  # fmt: skip
    parser.add_argument("--label", default="", help="what this tree is (e.g. 'before', 'after')")
    parser.add_argument("--baseline", default=None, help="a commit whose student-walk loop runs beside (see above)")
    parser.add_argument("--baseline-minutes", type=float, default=1.5, help="minutes of the baseline per block")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "training_env_steps.json")
    args = parser.parse_args(argv)

    import torch

    from training.cli.train_cmd import parse_overrides
    from training.configs.schema import load_train_config
    from training.envs import rewards
    from training.envs.mujoco_cpu import BatchedMujoco
    from training.envs.student import DepthPipeline, StudentEnv
    from training.envs.tracking import TrackingEnv
    from training.rl.env import NumpyVecEnv
    from training.rl.runner import Budget, Runner
    from training.rl.train import task_class
    from training.tasks.climb_teacher.env import ClimbEnv
    from training.tasks.h1_walk import rewards as h1_rewards
    from training.tasks.h1_walk.env import H1WalkEnv
    from training.tasks.student_walk.teacher import WalkTeacher

    torch.set_num_threads(2)
    overrides = parse_overrides(args.set)
    cfg = load_train_config(args.config, {**overrides, "run.save_interval": 1_000_000})
    task = task_class(cfg.task)(cfg, args.num_envs)
    env = NumpyVecEnv(task, "cpu", cfg.as_dict())
    out_dir = Path("/tmp") / f"env_steps_{cfg.task}"
    runner = Runner(env, task.train_cfg(), out_dir, "cpu", hooks=task, figures=())
    task.initialize(runner)

    timers = Timers()
    timers.wrap(BatchedMujoco, "step", "physics")
    timers.wrap(DepthPipeline, "_frame", "depth")  # after_physics is bound into a hook list before this
    timers.wrap(TrackingEnv, "_reward_input", "tracking_reward")
    timers.wrap(rewards, "reward_terms", "tracking_reward")
    timers.wrap(StudentEnv, "policy_observation", "student_observation")
    timers.wrap(TrackingEnv, "observe", "privileged_observation")
    timers.wrap(WalkTeacher, "act", "teacher")
    timers.wrap(ClimbEnv, "observe", "climb_observation")
    timers.wrap(H1WalkEnv, "_read", "h1_state")
    timers.wrap(H1WalkEnv, "observe", "h1_observation")
    timers.wrap(h1_rewards, "terms", "h1_reward")
    timers.wrap(type(task), "step", "env_step")
    timers.wrap(type(runner.alg), "act", "student_forward")
    timers.wrap(type(runner.alg), "process_env_step", "storage")
    timers.wrap(type(runner.alg), "update", "update")

    tree = baseline_tree(args.baseline) if args.baseline else None
    baseline_rates: list[float] = []  # as it ran: the wait policy given to this bench (default: unset)
    baseline_ours_policy: list[float] = []  # under this tree's wait policy
    bare_rates: list[float] = []
    task_rates: list[float] = []
    collect_rates: list[float] = []
    totals: dict[str, float] = defaultdict(float)
    env_steps = 0
    try:
        runner.train(Budget(iterations=1), name="warm-up")
        for _ in range(args.blocks):
            bare_rates += bare_block(task, args.bare_steps)
            timers.clear()
            rows = runner.train(Budget(iterations=args.iterations), name=args.config)[-args.iterations :]
            task_rates += [r["env_steps_per_s"] for r in rows]
            collect_rates += [r["collect_env_steps_per_s"] for r in rows]
            env_steps += sum(runner.cfg["num_steps_per_env"] * task.num_envs for _ in rows)
            for k, v in timers.seconds.items():
                totals[k] += v
            totals["iterations"] += sum(r["wall_s"] for r in rows)
            if tree is not None:
                baseline_rates += baseline_block(
                    tree, args.baseline_minutes, out_dir / f"baseline_{len(baseline_rates)}", WAIT_POLICY_GIVEN
                )
                baseline_ours_policy += baseline_block(
                    tree,
                    args.baseline_minutes,
                    out_dir / f"baseline_policy_{len(baseline_ours_policy)}",
                    os.environ["OMP_WAIT_POLICY"],
                )
    finally:
        timers.restore()
        env.close()
        if tree is not None:
            import subprocess

            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)

    wall = totals.pop("iterations")
    inside_env = ("physics", "depth", "student_observation", "privileged_observation", "teacher", "tracking_reward",
                  "climb_observation", "h1_state", "h1_observation", "h1_reward")  # fmt: skip
    env_rest = totals["env_step"] - sum(totals[k] for k in inside_env)
    learner_rest = wall - totals["env_step"] - totals["student_forward"] - totals["storage"] - totals["update"]
    parts = {
        "physics (mujoco rollout + state refresh)": totals["physics"],
        "ray-cast depth (rays, noise, preprocessing)": totals["depth"],
        "tracking reward terms (the teacher's reward, computed every step)": totals["tracking_reward"],
        "student observation terms (parkour_core, per env)": totals["student_observation"],
        "privileged observation (height scan, tracking terms)": totals["privileged_observation"],
        "teacher (its observation terms + onnxruntime, per env)": totals["teacher"],
        "climbing teacher's observation (the walking policy's terms + onnxruntime, height scan, next box)": totals[
            "climb_observation"
        ],
        "h1_walk's state read (one pass over the MuJoCo datas: joints, IMU, soles, contacts)": totals["h1_state"],
        "h1_walk's observation terms (parkour_core, over the batch)": totals["h1_observation"],
        "h1_walk's reward terms": totals["h1_reward"],
        "rest of the env step (Python: resets, terrain, frame schedules, bookkeeping)": env_rest,
        "student forward (torch, acting)": totals["student_forward"],
        "storage (rsl_rl process_env_step)": totals["storage"],
        "update (rsl_rl, torch)": totals["update"],
        "rest of the runner (tensordict conversion, logging)": learner_rest,
    }
    bare = percentiles(bare_rates)
    ours = percentiles(task_rates)
    result = {
        **provenance(),
        "label": args.label,
        "config": args.config,
        "overrides": overrides,
        "num_envs": task.num_envs,
        "steps_per_iteration": runner.cfg["num_steps_per_env"],
        "parameters": sum(p.numel() for p in runner.alg.get_policy().parameters()),
        "torch_threads": torch.get_num_threads(),
        "bare_mujoco_env_steps_per_s": bare,
        "task_env_steps_per_s": ours,
        "task_collect_env_steps_per_s": percentiles(collect_rates),
        "ratio_task_to_bare_median": ours["median"] / bare["median"],
        **(
            {
                "baseline_commit": args.baseline,
                "baseline_env_steps_per_s": percentiles(baseline_rates),
                "ratio_task_to_baseline_median": ours["median"] / percentiles(baseline_rates)["median"],
                "omp_wait_policy": {"ours": os.environ.get("OMP_WAIT_POLICY"), "baseline": WAIT_POLICY_GIVEN},
                "baseline_under_our_wait_policy_env_steps_per_s": percentiles(baseline_ours_policy),
                "ratio_task_to_baseline_under_our_wait_policy_median": ours["median"]
                / percentiles(baseline_ours_policy)["median"],
            }
            if baseline_rates
            else {}
        ),
        "time_per_env_step_us": {k: 1e6 * v / env_steps for k, v in parts.items()},
        "time_fraction": {k: v / wall for k, v in parts.items()},
        "method": "alternating blocks in one process: bare BatchedMujoco (same robot, envs, dt, decimation, "
        "PD servos) holding the default pose, then the task through training.rl's runner; per-iteration rates; "
        "the breakdown from timers wrapped around the methods named",
    }

    result["summary"] = [
        {"what": f"{args.config} training, time per env-step (runner, collect + update) vs bare MuJoCo",
         "unit": "µs", "ours": per_step_us(ours),
         "peer": {"name": "bare BatchedMujoco, same robot and envs", **per_step_us(bare)}},
    ]  # fmt: skip
    if baseline_rates:
        result["summary"].append(
            {"what": f"{args.config} training, time per env-step vs its loop before the library", "unit": "µs",
             "ours": per_step_us(ours),
             "peer": {"name": f"the loop at {args.baseline}", **per_step_us(result["baseline_env_steps_per_s"])}}
        )  # fmt: skip
    write_json(args.out, result)
    print(f"{args.config}: task {ours['median']:.0f} env-steps/s (p1 {ours['p1']:.0f}), bare MuJoCo "
          f"{bare['median']:.0f}: ratio {result['ratio_task_to_bare_median']:.2f}"
          + (f"; baseline {args.baseline} {result['baseline_env_steps_per_s']['median']:.0f}: ratio "
             f"{result['ratio_task_to_baseline_median']:.2f}" if baseline_rates else ""))  # fmt: skip
    for k, v in result["time_per_env_step_us"].items():
        print(f"  {v:8.0f} us/env-step  {100 * result['time_fraction'][k]:5.1f} %  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
