"""Learner throughput of teacher PPO and the student's hybrid DAgger + PPO update at given env counts.

    .venv/bin/python bench/training/throughput.py --device cpu --envs 16 64 --size tiny      # here
    python bench/training/throughput.py --device cuda --envs 4096 16384 --size php            # GPU machine

For every env count N it times one training iteration of the learner the way rsl-rl runs it:
``num_steps_per_env`` policy steps over N observations (actor sample + critic value, no gradient:
the acting cost per env step) and the update (``num_epochs`` x ``num_mini_batches`` over the
N x T batch) with ``training.algorithms.hybrid.HybridPPODagger``: the teacher at k = K (lambda_PPO
0.9, DAgger masked off), the student at k = 0 (pure DAgger) and k = K/4 (both terms). The simulator
is not in these numbers (the environments are timed by their own backends: mjlab's smoke reports
env-steps/s); ``env_steps_per_s`` is N x T over the learner's time per iteration, the ceiling the
learner puts on a training run. PPO settings and widths come from a training config
(``--config``); ``--size tiny`` shrinks the MLPs for a CPU run. The student here is the MLP head on a
flat observation (proprioception + a 32-d depth latent): the recurrent GRU and the depth CNN are
not in the hybrid update yet (training/algorithms/README.md "Not wired yet").

Writes bench/results/training_throughput.json (``--out``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from parkour_core.provenance import provenance  # noqa: E402
from training.algorithms.hybrid import MLPActorCritic, RolloutBatch  # noqa: E402
from training.configs import load_train_config  # noqa: E402
from training.launch.multi_gpu import DistributedHybridPPODagger  # noqa: E402

TEACHER_OBS = 449  # PHP code's actor: 160 proprioceptive/reference terms + 289 height-scan rays
STUDENT_OBS = 100 + 32  # proprioception + velocity command (~100) and the depth latent (32)
ACTIONS = 29


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _batch(model: MLPActorCritic, n: int, obs_dim: int, device: str, gen: torch.Generator) -> RolloutBatch:
    obs = torch.randn(n, obs_dim, generator=gen).to(device)
    with torch.no_grad():
        d = model.action_distribution(obs)
        actions = d.sample()
        return RolloutBatch(
            obs=obs,
            actions=actions,
            log_probs=d.log_prob(actions).sum(-1),
            advantages=torch.randn(n, generator=gen).to(device),
            returns=torch.randn(n, generator=gen).to(device),
            values=model.value(obs),
            action_mean=d.mean,
            action_std=d.stddev,
            teacher_actions=torch.randn(n, ACTIONS, generator=gen).to(device),
            dagger_mask=torch.rand(n, generator=gen).to(device) < 0.9,
        )


def time_learner(
    *, cfg, obs_dim: int, hidden: list[int], num_envs: int, k: int, device: str, repeats: int, seed: int
) -> dict:
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = MLPActorCritic(obs_dim, ACTIONS, hidden=hidden, init_std=cfg.policy.init_noise_std).to(device)
    total = cfg.run.max_iterations
    algo = DistributedHybridPPODagger(model, total_iterations=total, config=cfg.hybrid_config())
    steps = cfg.ppo.num_steps_per_env
    obs = torch.randn(num_envs, obs_dim, generator=gen).to(device)
    batch = _batch(model, num_envs * steps, obs_dim, device, gen)
    act_s, upd_s = [], []
    for rep in range(repeats + 1):  # the first round warms up (allocator, kernels) and is dropped
        _sync(device)
        t0 = time.perf_counter()
        with torch.no_grad():
            for _ in range(steps):
                model.action_distribution(obs).sample()
                model.value(obs)
        _sync(device)
        t1 = time.perf_counter()
        algo.update(batch, k)
        _sync(device)
        t2 = time.perf_counter()
        if rep:
            act_s.append(t1 - t0)
            upd_s.append(t2 - t1)
    act, upd = statistics.median(act_s), statistics.median(upd_s)
    params = sum(p.numel() for p in model.parameters())
    return {
        "num_envs": num_envs,
        "k": k,
        "total_iterations": total,
        "batch": num_envs * steps,
        "mini_batch": num_envs * steps // cfg.ppo.num_mini_batches,
        "parameters": params,
        "act_s_per_iteration": round(act, 5),
        "update_s_per_iteration": round(upd, 5),
        "iterations_per_s": round(1.0 / (act + upd), 3),
        "env_steps_per_s": round(num_envs * steps / (act + upd), 1),
        "act_env_steps_per_s": round(num_envs * steps / act, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--envs", type=int, nargs="+", default=[16, 64])
    parser.add_argument(
        "--size", choices=("tiny", "php"), default="tiny", help="tiny: [64, 64] MLPs; php: config widths"
    )
    parser.add_argument("--teacher-config", default="php_teacher_gpu")
    parser.add_argument("--student-config", default="php_student_gpu")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "training_throughput.json"))
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("throughput: --device cuda but torch sees no GPU", file=sys.stderr)
        return 1
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda:0" if args.device == "cuda" else "cpu"

    results: dict = {
        **provenance(),
        "device": torch.cuda.get_device_name(0) if args.device == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "size": args.size,
        "note": "learner only (acting + update); the simulator is timed by its backend",
        "runs": [],
    }
    for role, config, obs_dim, ks in (
        ("teacher_ppo", args.teacher_config, TEACHER_OBS, ("K",)),
        ("student_hybrid", args.student_config, STUDENT_OBS, ("0", "K/4")),
    ):
        cfg = load_train_config(config)
        hidden = [64, 64] if args.size == "tiny" else list(cfg.policy.actor_hidden)
        for n in args.envs:
            if n * cfg.ppo.num_steps_per_env < cfg.ppo.num_mini_batches:
                print(f"throughput: {role} skips {n} envs (fewer samples than mini-batches)", file=sys.stderr)
                continue
            for k_name in ks:
                total = cfg.run.max_iterations
                k = {"0": 0, "K/4": total // 4, "K": total}[k_name]
                row = time_learner(
                    cfg=cfg,
                    obs_dim=obs_dim,
                    hidden=hidden,
                    num_envs=n,
                    k=k,
                    device=device,
                    repeats=args.repeats,
                    seed=0,
                )
                row = {"role": role, "config": config, "k_name": k_name, "hidden": hidden, **row}
                results["runs"].append(row)
                print(
                    f"{role:15s} k={k_name:4s} envs={n:6d} batch={row['batch']:8d} "
                    f"it/s={row['iterations_per_s']:8.3f} env-steps/s={row['env_steps_per_s']:11.1f} "
                    f"(act {row['act_s_per_iteration']:.4f} s, update {row['update_s_per_iteration']:.4f} s)",
                    flush=True,
                )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"throughput: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
