"""How fast a CPU student task could train if collection and the update shared the two cores perfectly.

    .venv/bin/python bench/training/core_budget.py --config student_walk --iterations 6 --blocks 2 \\
        --baseline 758a838 --out bench/results/training_core_budget.json

The runner collects, then updates, each on both cores (MuJoCo's and torch's threads). An
actor-learner split (one core collecting while the other updates on the previous rollout, one
update of policy lag) could do better only if one of the two leaves a core idle. This bench measures
each part's cost on ONE core and on two, and from them two ceilings no schedule on two cores can beat
(pipelined and ideal packing, defined where :func:`main` computes them), as env-steps/s beside the
sequential runner's rate, in fp32 and with the depth CNN under bf16 autocast (fp32 weights, the same
model). ``--baseline`` adds an earlier commit's training loop (as ``env_steps.py`` runs it, under this
tree's OpenMP wait policy), so each ceiling is also a ratio to it. Each run is a fresh process (threads
are fixed when torch and the rollout start); the kinds alternate over ``--blocks`` so they share the
machine's drift. Writes JSON: per-iteration medians and p99, the ceilings, ratios, command and commit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import training  # noqa: E402, F401  (its OpenMP wait policy, PASSIVE unless set, goes to the children)
from parkour_core.provenance import provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402

CHILD = """
import inspect, json, sys
from pathlib import Path
import training
import torch
from training.configs.schema import load_train_config
from training.envs import mujoco_cpu
from training.rl import models
from training.rl.env import NumpyVecEnv
from training.rl.runner import Budget, Runner
from training.rl.train import task_class

config, iterations, out, threads, precision = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
torch.set_num_threads(threads)
rollout_init = mujoco_cpu.BatchedMujoco.__init__
def with_rollout_threads(self, *args, **kwargs):
    bound = inspect.signature(rollout_init).bind(self, *args, **kwargs)
    bound.arguments["nthread"] = threads
    rollout_init(*bound.args, **bound.kwargs)
mujoco_cpu.BatchedMujoco.__init__ = with_rollout_threads
if precision == "bf16":
    backbone = models.DepthRecurrentModel._backbone
    def bf16_backbone(self, depth):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return backbone(self, depth).float()
    models.DepthRecurrentModel._backbone = bf16_backbone
cfg = load_train_config(config, {"run.save_interval": 1_000_000})
task = task_class(cfg.task)(cfg, None)
runner = Runner(NumpyVecEnv(task, "cpu", cfg.as_dict()), task.train_cfg(), Path(out), "cpu", hooks=task, figures=())
task.initialize(runner)
runner.train(Budget(iterations=2), name="warm-up")
rows = runner.train(Budget(iterations=iterations), name="timed")[2:]
samples = runner.cfg["num_steps_per_env"] * task.num_envs
print(json.dumps({"samples": samples, "rows": [[r["collect_s"], r["learn_s"], r["wall_s"]] for r in rows]}))
"""


def run(config: str, iterations: int, threads: int, precision: str) -> dict:
    env = os.environ | {"MUJOCO_GL": "egl"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, config, str(iterations), "/tmp/training_core_budget", str(threads), precision],
        env=env, cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="student_walk")
    parser.add_argument("--iterations", type=int, default=6, help="timed iterations per run")
    parser.add_argument("--blocks", type=int, default=2, help="rounds of the kinds")
    parser.add_argument("--baseline", default=None, help="a commit whose student-walk loop runs beside")
    parser.add_argument("--baseline-minutes", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "training_core_budget.json")
    args = parser.parse_args(argv)

    from env_steps import baseline_block, baseline_tree, percentiles

    kinds = [(precision, threads) for precision in ("fp32", "bf16") for threads in (1, 2)]
    runs: dict[str, list[list[float]]] = {f"{p} {t} core": [] for p, t in kinds}
    samples = 0
    baseline_rates: list[float] = []
    tree = baseline_tree(args.baseline) if args.baseline else None
    try:
        for block in range(args.blocks):
            for precision, threads in kinds if block % 2 == 0 else kinds[::-1]:
                key = f"{precision} {threads} core"
                got = run(args.config, args.iterations, threads, precision)
                samples = got["samples"]
                runs[key] += got["rows"]
                print(f"block {block}: {key}: {samples / np.median([r[2] for r in runs[key]]):.0f} env-steps/s",
                      flush=True)  # fmt: skip
            if tree is not None:
                baseline_rates += baseline_block(
                    tree, args.baseline_minutes, Path("/tmp") / f"core_budget_baseline_{block}",
                    os.environ["OMP_WAIT_POLICY"],
                )  # fmt: skip
                print(f"block {block}: baseline {args.baseline}: {np.median(baseline_rates):.0f} env-steps/s")
    finally:
        if tree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)

    kinds_out: dict[str, dict] = {}
    for key, rows in runs.items():
        collect, update, wall = ([r[i] for r in rows] for i in range(3))
        kinds_out[key] = {"collect_s": percentiles(collect), "update_s": percentiles(update),
                          "iteration_s": percentiles(wall),
                          "env_steps_per_s_median": samples / float(np.median(wall))}  # fmt: skip
    baseline = float(np.median(baseline_rates)) if baseline_rates else None
    # pipelined: collection on one core and the update on the other, overlapped: max(collect_1, update_1)
    # per iteration. ideal packing: all the work of an iteration spread over both cores with no idle time
    # and no overhead: (collect_1 + update_1) / 2. bf16: torch.autocast("cpu", torch.bfloat16) around the
    # backbone in acting and in the update.
    ceilings = {}
    for precision in ("fp32", "bf16"):
        one = kinds_out[f"{precision} 1 core"]
        collect_1, update_1 = one["collect_s"]["median"], one["update_s"]["median"]
        rates = {
            "sequential_measured_two_cores": kinds_out[f"{precision} 2 core"]["env_steps_per_s_median"],
            "pipelined_one_core_each": samples / max(collect_1, update_1),
            "ideal_packing_two_cores": samples / ((collect_1 + update_1) / 2),
        }
        ceilings[precision] = {
            "env_steps_per_s": rates,
            **({"ratio_to_baseline": {k: v / baseline for k, v in rates.items()}} if baseline else {}),
        }
    baseline_out = {}
    if baseline_rates:
        baseline_out = {"baseline_commit": args.baseline, "baseline_env_steps_per_s": percentiles(baseline_rates),
                        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}  # fmt: skip
    result = {
        **provenance(),
        "config": args.config,
        "samples_per_iteration": samples,
        "kinds": kinds_out,
        "ceilings": ceilings,
        **baseline_out,
        "method": "a fresh process per run (torch threads = MuJoCo rollout threads = 1 or 2), the kinds in "
        "alternating blocks; per-iteration collect / update / wall seconds after two warm-up iterations; "
        "ceilings from the one-core medians: pipelined = max(collect, update), ideal packing = "
        "(collect + update) / 2; bf16 = the depth CNN under torch.autocast(cpu, bfloat16)",
    }
    result["summary"] = [
        {"what": f"{args.config} training, time per env-step: sequential runner ({precision}) vs the ideal "
         "two-core packing of the same work", "unit": "µs",
         "ours": {"p50": 1e6 * kinds_out[f"{precision} 2 core"]["iteration_s"]["median"] / samples,
                  "p99": 1e6 * kinds_out[f"{precision} 2 core"]["iteration_s"]["p99"] / samples},
         "peer": {"name": "ideal packing of the one-core work on two cores",
                  "p50": 1e6 / ceilings[precision]["env_steps_per_s"]["ideal_packing_two_cores"]}}
        for precision in ("fp32", "bf16")
    ]  # fmt: skip
    write_json(args.out, result)
    for key, k in kinds_out.items():
        print(f"{key:12s} collect {k['collect_s']['median']:.3f} s, update {k['update_s']['median']:.3f} s, "
              f"{k['env_steps_per_s_median']:.0f} env-steps/s")  # fmt: skip
    for precision, c in ceilings.items():
        line = ", ".join(f"{k} {v:.0f}" for k, v in c["env_steps_per_s"].items())
        ratios = ", ".join(f"{v:.2f}x" for v in c.get("ratio_to_baseline", {}).values())
        print(f"{precision}: {line}" + (f" (vs baseline {baseline:.0f}: {ratios})" if baseline else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
