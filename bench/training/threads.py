"""torch's OpenMP wait policy in a CPU training task, on a quiet machine and beside a busy core.

    .venv/bin/python bench/training/threads.py --config student_walk --iterations 6 --blocks 2 \\
        --out bench/results/training_threads.json

Each run is a fresh process (the policy is read when torch loads): ``OMP_WAIT_POLICY`` unset (GNU
OpenMP's default: an idle thread spins a while, then sleeps) or PASSIVE (idle threads sleep at once;
what ``import training`` sets unless the variable is set),
each quiet and beside a one-core hog (``yes > /dev/null``), the four kinds in alternating blocks so
they share the machine's drift. A run trains the config through the runner (``--iterations``
iterations after two warm-up ones) and reports its per-iteration env-steps/s and update seconds.

Writes JSON with the medians and p1/p99 (rates) or p99 (seconds) of each kind, the ratios PASSIVE /
default, the command and the commit.
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

from parkour_core.provenance import provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402

CHILD = """
import json, sys
from pathlib import Path
import torch  # first: the policy is the environment's as the run was given it, not a default of the package
from training.configs.schema import load_train_config
from training.rl.env import NumpyVecEnv
from training.rl.runner import Budget, Runner
from training.rl.train import task_class
torch.set_num_threads(2)
cfg = load_train_config(sys.argv[1], {"run.save_interval": 1_000_000})
task = task_class(cfg.task)(cfg, None)
runner = Runner(NumpyVecEnv(task, "cpu", cfg.as_dict()), task.train_cfg(), Path(sys.argv[3]), "cpu", hooks=task)
task.initialize(runner)
runner.train(Budget(iterations=2), name="warm-up")
rows = runner.train(Budget(iterations=int(sys.argv[2])), name="timed")[2:]
print(json.dumps([[r["env_steps_per_s"], r["learn_s"]] for r in rows]))
"""


def run(policy: str, hog: bool, config: str, iterations: int, out: Path) -> list[list[float]]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | {"MUJOCO_GL": "egl"}
    if policy != "default":
        env["OMP_WAIT_POLICY"] = policy
    hogger = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if hog else None
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, config, str(iterations), str(out)], env=env, cwd=ROOT,
                              check=True, capture_output=True, text=True)  # fmt: skip
    finally:
        if hogger is not None:
            hogger.kill()
            hogger.wait()
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="student_walk")
    parser.add_argument("--iterations", type=int, default=6, help="timed iterations per run")
    parser.add_argument("--blocks", type=int, default=2, help="rounds of the four kinds")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "training_threads.json")
    args = parser.parse_args(argv)

    kinds = [(policy, hog) for hog in (False, True) for policy in ("default", "PASSIVE")]
    rows: dict[str, list[list[float]]] = {f"{p} {'hog' if h else 'quiet'}": [] for p, h in kinds}
    for block in range(args.blocks):
        for policy, hog in kinds if block % 2 == 0 else kinds[::-1]:
            key = f"{policy} {'hog' if hog else 'quiet'}"
            rows[key] += run(policy, hog, args.config, args.iterations, Path("/tmp") / "training_threads")
            print(f"block {block}: {key}: {np.median([r[0] for r in rows[key]]):.0f} env-steps/s", flush=True)

    kinds_out = {}
    for key, values in rows.items():
        rates, learn = np.array([r[0] for r in values]), np.array([r[1] for r in values])
        kinds_out[key] = {
            "env_steps_per_s": {"median": float(np.median(rates)), "p1": float(np.percentile(rates, 1)),
                                "p99": float(np.percentile(rates, 99)), "n": int(rates.size)},
            "update_s": {"median": float(np.median(learn)), "p99": float(np.percentile(learn, 99)),
                         "max": float(learn.max())},
        }  # fmt: skip

    def ratio(where: str) -> float:
        return (kinds_out[f"PASSIVE {where}"]["env_steps_per_s"]["median"]
                / kinds_out[f"default {where}"]["env_steps_per_s"]["median"])  # fmt: skip

    result = {
        **provenance(),
        "config": args.config,
        "torch_threads": 2,
        "kinds": kinds_out,
        "ratio_passive_to_default_quiet": ratio("quiet"),
        "ratio_passive_to_default_hog": ratio("hog"),
        "method": "a fresh process per run (OMP_WAIT_POLICY set in its environment), the four kinds in "
        "alternating blocks; per-iteration env-steps/s and update seconds after two warm-up iterations; the hog "
        "is `yes > /dev/null` (one core) for the whole run",
    }
    result["summary"] = [
        {"what": f"{args.config} training, update seconds per iteration {where}", "unit": "s",
         "ours": {"p50": kinds_out[f"PASSIVE {where}"]["update_s"]["median"],
                  "p99": kinds_out[f"PASSIVE {where}"]["update_s"]["p99"]},
         "peer": {"name": "OMP_WAIT_POLICY unset (libgomp's default: spin, then sleep)",
                  "p50": kinds_out[f"default {where}"]["update_s"]["median"],
                  "p99": kinds_out[f"default {where}"]["update_s"]["p99"]}}
        for where in ("quiet", "hog")
    ]  # fmt: skip
    write_json(args.out, result)
    for key, k in kinds_out.items():
        rate, update = k["env_steps_per_s"], k["update_s"]
        print(
            f"{key:16s} {rate['median']:6.0f} env-steps/s (p1 {rate['p1']:.0f}); "
            f"update {update['median']:.2f} s (p99 {update['p99']:.2f}, max {update['max']:.2f})"
        )
    print(
        f"PASSIVE / default: quiet {result['ratio_passive_to_default_quiet']:.2f}, "
        f"beside a hog {result['ratio_passive_to_default_hog']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
