"""Multi-GPU training through torchrun: one process per GPU, data-parallel, on rsl_rl's own path.

Every rank steps its own share of the environments (``env.num_envs / world_size``) with its own seed
(``run.seed + rank``), collects its own rollout and computes gradients on it. The rest is rsl_rl's
multi-GPU runner, which :class:`training.rl.runner.Runner` keeps: ``OnPolicyRunner._configure_multi_gpu``
joins the process group, ``broadcast_parameters`` starts every rank from rank 0's weights, and the
algorithm's ``reduce_parameters`` averages the gradients over ranks between ``backward`` and the
optimizer step (:class:`~training.rl.algorithms.HybridPPO` restates PPO's update and keeps both that
and the KL averaged over ranks before rank 0 sets the learning rate for all). So the parameters stay
identical everywhere. rsl_rl insists on ``cuda:LOCAL_RANK`` and NCCL; our Runner also lets CPU ranks
join over gloo, which is how the test checks the path on a CPU.

Launch (see training/launch/torchrun.md):

    torchrun --standalone --nproc_per_node 4 -m training.launch.multi_gpu --config php_student_gpu --selftest
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from dataclasses import asdict, dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from rsl_rl.models import MLPModel
from rsl_rl.modules.distribution import GaussianDistribution

from training.rl.algorithms import HybridPPO
from training.rl.env import NumpyVecEnv
from training.rl.models import TEACHER_GROUP
from training.rl.runner import Budget, Runner


@dataclass(frozen=True)
class DistInfo:
    rank: int
    world_size: int
    local_rank: int
    device: str

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def rank_info(device: str = "cuda") -> DistInfo:
    """This process's place in the group torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK); on CUDA its GPU
    is ``LOCAL_RANK``. The Runner joins the group when it is built."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("device cuda requested but torch sees no GPU (torch.cuda.is_available() is False)")
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    return DistInfo(rank=rank, world_size=world, local_rank=local_rank, device=device)


def shutdown_distributed() -> None:
    """Leave the process group together: a barrier first, so no rank tears down its gloo pairs
    (or rank 0 its TCP store) while a peer is still using them. Without it a rank that is slower
    to finish can abort in the C++ teardown ("terminate called without an active exception") on a
    loaded machine."""
    if not dist.is_initialized():
        return
    dist.barrier()
    dist.destroy_process_group()


def rank_seed(seed: int, rank: int) -> int:
    """Each rank explores differently: seed + rank (rsl-rl does the same)."""
    return seed + rank


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def envs_per_rank(total: int, world_size: int) -> int:
    """``env.num_envs`` is the total over ranks; it must split evenly."""
    if total % world_size:
        raise ValueError(f"env.num_envs {total} does not split over {world_size} ranks; use a multiple of {world_size}")
    return total // world_size


def parameters_agree(model: torch.nn.Module | list[torch.nn.Module]) -> float:
    """Largest difference between this rank's parameters and rank 0's (0.0 when not distributed)."""
    models = model if isinstance(model, list) else [model]
    flat = torch.cat([p.detach().reshape(-1) for p in chain(*(m.parameters() for m in models))])
    if not (dist.is_available() and dist.is_initialized()):
        return 0.0
    ref = flat.clone()
    dist.broadcast(ref, src=0)
    diff = (flat - ref).abs().max()
    dist.all_reduce(diff, op=dist.ReduceOp.MAX)
    return float(diff.item())


# ----------------------------------------------------------------------------- self-test


class RankData:
    """The self-test's environment: observations, teacher labels and rewards from this rank's own
    generator, so every rank's rollout, and so its gradients, differ."""

    num_actions = 4
    max_episode_length = 8
    obs_dim = 16

    def __init__(self, num_envs: int, seed: int) -> None:
        self.num_envs = num_envs
        self.rng = np.random.default_rng(seed)
        self.t = 0
        self._draw()

    def _draw(self) -> None:
        obs = self.rng.normal(size=(self.num_envs, self.obs_dim))
        self.groups = {"policy": obs, TEACHER_GROUP: self.rng.normal(size=(self.num_envs, self.num_actions))}

    def observe(self) -> dict[str, np.ndarray]:
        return self.groups

    def step(self, actions: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, dict[str, Any]]:
        self.t += 1
        done = np.full(self.num_envs, self.t % self.max_episode_length == 0)
        self._draw()
        return self.groups, self.rng.normal(size=self.num_envs), done, {"time_outs": done, "log": {}}

    def close(self) -> None:
        pass


def selftest_cfg(hidden: tuple[int, ...]) -> dict[str, Any]:
    """HybridPPO with the KL-adaptive rate on an MLP actor and critic."""
    mlp = {"class_name": MLPModel, "hidden_dims": list(hidden), "obs_normalization": True}
    return {
        "num_steps_per_env": 8, "save_interval": 1000, "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {"class_name": HybridPPO, "num_learning_epochs": 2, "num_mini_batches": 2,
                      "learning_rate": 1e-3, "schedule": "adaptive", "desired_kl": 0.01},
        "actor": mlp | {"distribution_cfg": {"class_name": GaussianDistribution, "init_std": 1.0}},
        "critic": dict(mlp),
    }  # fmt: skip


def selftest(info: DistInfo, seed: int, out: Path, hidden: tuple[int, ...] = (256, 128), steps: int = 3) -> dict:
    """The runner with HybridPPO on every rank, each rank on its own data and from its own initial weights:
    after ``steps`` updates the parameters must be identical; one more update without the gradient
    all-reduce (the control) must make them differ."""
    seed_everything(rank_seed(seed, info.rank))  # different initial weights per rank on purpose
    env = NumpyVecEnv(RankData(num_envs=16, seed=rank_seed(seed, info.rank)), info.device)
    runner = Runner(env, selftest_cfg(hidden), out, info.device)
    alg = runner.alg
    assert isinstance(alg, HybridPPO)
    models = [alg.actor, alg.critic]
    # k = K/2: both terms and the KL rule at work
    alg.total_iterations, alg.schedule_iteration = 2 * steps, steps
    before = parameters_agree(models)
    runner.train(Budget(iterations=steps))
    after = parameters_agree(models)
    learning_rate = alg.learning_rate
    alg.is_multi_gpu = False
    runner.train(Budget(iterations=1))
    return {
        "rank": info.rank,
        "world_size": info.world_size,
        "device": info.device,
        "max_param_diff_before_broadcast": before,
        "max_param_diff_after": after,
        "max_param_diff_after_an_unreduced_update": parameters_agree(models),
        "learning_rate": learning_rate,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="php_student_gpu", help="training config name or YAML path")
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: the config's run.device")
    parser.add_argument(
        "--selftest", action="store_true", help="the runner's distributed update; check the ranks agree"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="--selftest: each rank's run folder (default: a temp dir)"
    )
    args = parser.parse_args(argv)

    from training.configs import load_train_config

    cfg = load_train_config(args.config)
    info = rank_info(args.device or cfg.run.device)
    plan = {
        **asdict(info),
        "seed": rank_seed(cfg.run.seed, info.rank),
        "num_envs_this_rank": envs_per_rank(cfg.env.num_envs, info.world_size),
        "mini_batch_size_this_rank": envs_per_rank(cfg.env.num_envs, info.world_size)
        * cfg.ppo.num_steps_per_env
        // cfg.ppo.num_mini_batches,
    }
    ok = True
    if args.selftest:
        out = args.out or Path(tempfile.mkdtemp(prefix="multi_gpu_selftest_"))
        result = selftest(info, cfg.run.seed, out / f"rank{info.rank}")
        plan.update(result)
        ok = result["max_param_diff_after"] == 0.0
    print(json.dumps(plan), flush=True)
    shutdown_distributed()
    if not ok:
        print(f"rank {info.rank}: parameters differ across ranks after the update", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
