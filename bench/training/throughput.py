"""Learner throughput of the runner's algorithms at given env counts: rsl_rl's PPO (the teacher tasks) and
HybridPPO on the recurrent depth student (the student tasks).

    .venv/bin/python bench/training/throughput.py --device cpu --envs 8 \\
        --teacher-config php_teacher_tiny --student-config php_student_tiny --repeats 1        # a CPU check
    python bench/training/throughput.py --device cuda --envs 4096 16384                       # GPU machine

For every env count N it times one training iteration of the learner the way the one runner
(``training.rl.runner.Runner``) runs it, on random observations of the tasks' shapes
(:func:`time_learner`). The simulator is not in these numbers (the environments are timed by their
own backends: mjlab's smoke reports env-steps/s); ``env_steps_per_s`` is N x T over the learner's
time per iteration, the ceiling the learner puts on a training run. Widths and PPO settings are the
configs' (``--teacher-config``, ``--student-config``: the paper's by default).

Writes bench/results/training_throughput.json (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from tensordict import TensorDict

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from parkour_core.provenance import provenance  # noqa: E402
from training.configs import TrainConfig, load_train_config  # noqa: E402
from training.envs.privileged import privileged_size  # noqa: E402
from training.export.student import STUDENT_OBS_TERMS  # noqa: E402
from training.rl.algorithms import HybridPPO  # noqa: E402
from training.rl.models import DEPTH_GROUP, TEACHER_GROUP  # noqa: E402
from training.rl.task_cfg import hybrid_student_cfg, ppo_mlp_cfg  # noqa: E402
from training.tasks.php_student.task import MASK_GROUP  # noqa: E402

TEACHER_OBS = 449  # PHP code's actor: 160 proprioceptive/reference terms + 289 height-scan rays
DEPTH_HW = (58, 87)  # the bundle's policy image
ACTIONS = 29


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def observations(role: str, n: int, device: str, gen: torch.Generator) -> TensorDict:
    """Random observation groups of the role's task, as its environment hands them to the runner."""
    if role == "teacher_ppo":
        groups = {"policy": torch.randn(n, TEACHER_OBS, generator=gen)}
    else:
        groups = {
            "policy": torch.randn(n, sum(t.dims for t in STUDENT_OBS_TERMS), generator=gen),
            DEPTH_GROUP: torch.rand(n, *DEPTH_HW, generator=gen),
            "privileged": torch.randn(n, privileged_size(), generator=gen),
            TEACHER_GROUP: torch.randn(n, ACTIONS, generator=gen),
            MASK_GROUP: (torch.rand(n, 1, generator=gen) < 0.9).float(),
        }
    return TensorDict({k: v.to(device) for k, v in groups.items()}, batch_size=[n], device=device)


def build(role: str, cfg: TrainConfig, obs: TensorDict, device: str) -> Any:
    """The role's algorithm as rsl_rl's runner builds it from the task's train config.

    The train configs are those the tasks hand the runner (``training.rl.task_cfg``): the teacher is
    rsl_rl's ``PPO`` on the MLP actor and critic (``ppo_mlp_cfg``; no schedule: ``k_name`` K), the student
    ``HybridPPO`` on the depth student (``DepthRecurrentModel``: depth CNN + GRU + MLP, recurrent
    mini-batches) with an MLP critic on the privileged observation (``hybrid_student_cfg``).
    """
    if role == "teacher_ppo":
        train_cfg = ppo_mlp_cfg(cfg, ["policy"], ["policy"])
    else:
        train_cfg = hybrid_student_cfg(cfg, ["privileged"], mask_group=MASK_GROUP)
    train_cfg["multi_gpu"] = None
    env = SimpleNamespace(num_envs=obs.batch_size[0], num_actions=ACTIONS)
    alg_class = train_cfg["algorithm"]["class_name"]
    with contextlib.redirect_stdout(io.StringIO()):  # rsl_rl prints the models, as the Runner keeps quiet
        return alg_class.construct_algorithm(obs, env, train_cfg, device)


def time_learner(*, role: str, cfg: TrainConfig, num_envs: int, k: int, device: str, repeats: int, seed: int) -> dict:
    """One learner iteration at ``num_envs``, timed ``repeats`` times.

    ``num_steps_per_env`` times ``alg.act`` + ``alg.process_env_step`` over N observations (the acting
    cost per env step: actor sample, critic value, normalizers, storage), then ``compute_returns`` +
    ``update`` (``num_epochs`` x ``num_mini_batches`` over the N x T batch). The student runs at k = 0
    (pure DAgger) and k = K/4 (both terms).
    """
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    obs = observations(role, num_envs, device, gen)
    alg = build(role, cfg, obs, device)
    total = cfg.run.max_iterations
    if isinstance(alg, HybridPPO):
        alg.total_iterations, alg.schedule_iteration = total, k
    steps = cfg.ppo.num_steps_per_env
    rewards = torch.randn(num_envs, generator=gen).to(device)
    dones = torch.zeros(num_envs, dtype=torch.long, device=device)
    alg.train_mode()
    act_s, upd_s = [], []
    for rep in range(repeats + 1):  # the first round warms up (allocator, kernels) and is dropped
        _sync(device)
        t0 = time.perf_counter()
        with torch.inference_mode():
            for _ in range(steps):
                alg.act(obs)
                alg.process_env_step(obs, rewards, dones, {})
            _sync(device)
            t1 = time.perf_counter()
            alg.compute_returns(obs)
        alg.update()
        _sync(device)
        t2 = time.perf_counter()
        if rep:
            act_s.append(t1 - t0)
            upd_s.append(t2 - t1)
    act, upd = statistics.median(act_s), statistics.median(upd_s)
    params = sum(p.numel() for m in (alg.actor, alg.critic) for p in m.parameters())
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
    parser.add_argument("--teacher-config", default="php_teacher_gpu", help="the teacher's widths and PPO settings")
    parser.add_argument("--student-config", default="php_student_gpu", help="the student's widths and PPO settings")
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
        "configs": {"teacher": args.teacher_config, "student": args.student_config},
        "note": "learner only (acting + update) of the runner's algorithms; the simulator is timed by its backend",
        "runs": [],
    }
    for role, config, ks in (
        ("teacher_ppo", args.teacher_config, ("K",)),
        ("student_hybrid", args.student_config, ("0", "K/4")),
    ):
        cfg = load_train_config(config)
        hidden = list(cfg.policy.actor_hidden)
        for n in args.envs:
            # Recurrent mini-batches are groups of environments; flat ones, groups of samples.
            units = n if role == "student_hybrid" else n * cfg.ppo.num_steps_per_env
            if units < cfg.ppo.num_mini_batches:
                print(f"throughput: {role} skips {n} envs (fewer than {cfg.ppo.num_mini_batches} mini-batches)",
                      file=sys.stderr)  # fmt: skip
                continue
            for k_name in ks:
                total = cfg.run.max_iterations
                k = {"0": 0, "K/4": total // 4, "K": total}[k_name]
                row = time_learner(role=role, cfg=cfg, num_envs=n, k=k, device=device, repeats=args.repeats, seed=0)
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
