"""Multi-GPU training through torchrun: one process per GPU, data-parallel over rsl-rl style runners.

Every rank steps its own share of the environments (``env.num_envs / world_size``) with its own seed
(``run.seed + rank``), collects its own rollout and computes gradients on it; the gradients are
averaged over ranks (all-reduce) before every optimizer step, so the parameters, which start as rank
0's (broadcast), stay identical everywhere. This is what rsl-rl's multi-GPU PPO does; here it is
separate from the update so :class:`training.algorithms.hybrid.HybridPPODagger` runs unchanged:

- :func:`sync_gradients_hooks` all-reduces each parameter's gradient as backward produces it (a
  post-accumulate hook), so an update loop we do not own (``HybridPPODagger.update``) clips and
  steps on averaged gradients;
- :func:`allreduce_gradients` does the same in one flat all-reduce, for loops that call it between
  ``backward()`` and ``step()``;
- :class:`DistributedHybridPPODagger` also makes the KL-adaptive learning rate agree: every rank
  takes rank 0's (rsl-rl averages the KL over ranks instead; the update does not expose its KL).

Launch (see training/launch/torchrun.md):

    torchrun --standalone --nproc_per_node 4 -m training.launch.multi_gpu --config php_student_gpu --selftest
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from training.algorithms.hybrid import HybridPPODagger


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


def init_distributed(device: str = "cuda", backend: str | None = None) -> DistInfo:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_*).

    Without torchrun (no WORLD_SIZE) this is a single process and nothing is initialised. On CUDA
    each rank takes GPU ``LOCAL_RANK`` and NCCL; on the CPU, gloo.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("device cuda requested but torch sees no GPU (torch.cuda.is_available() is False)")
        torch.cuda.set_device(local_rank)
        dev = f"cuda:{local_rank}"
    else:
        dev = "cpu"
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend=backend or ("nccl" if device == "cuda" else "gloo"))
    return DistInfo(rank=rank, world_size=world, local_rank=local_rank, device=dev)


def shutdown_distributed() -> None:
    """Leave the process group together: a barrier first, so no rank tears down its gloo pairs
    (or rank 0 its TCP store) while a peer is still using them. Without it a rank that is slower
    to finish was seen to abort in the C++ teardown ("terminate called without an active
    exception") on a loaded 2-core machine."""
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


def broadcast_parameters(module: nn.Module, src: int = 0) -> None:
    """Every rank starts from rank ``src``'s parameters and buffers."""
    if not (dist.is_available() and dist.is_initialized()):
        return
    for tensor in [*module.parameters(), *module.buffers()]:
        dist.broadcast(tensor.data, src=src)


def allreduce_gradients(module: nn.Module) -> None:
    """Average the gradients over ranks in one flat all-reduce (call between backward and step)."""
    if not (dist.is_available() and dist.is_initialized()):
        return
    params = [p for p in module.parameters() if p.grad is not None]
    if not params:
        return
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= dist.get_world_size()
    offset = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[offset : offset + n].view_as(p.grad))
        offset += n


def sync_gradients_hooks(module: nn.Module) -> Callable[[], None]:
    """Average each parameter's gradient over ranks as soon as backward has produced it.

    Returns a function that removes the hooks. Every rank must run the same backward passes (same
    number of mini-batches), which a data-parallel PPO update does by construction.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return lambda: None
    world = dist.get_world_size()

    def hook(param: torch.Tensor) -> None:
        assert param.grad is not None
        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
        param.grad /= world

    handles = [p.register_post_accumulate_grad_hook(hook) for p in module.parameters() if p.requires_grad]

    def remove() -> None:
        for h in handles:
            h.remove()

    return remove


class DistributedHybridPPODagger(HybridPPODagger):
    """HybridPPODagger with averaged gradients and one learning rate over all ranks."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        broadcast_parameters(self.actor_critic)
        self._remove_hooks = sync_gradients_hooks(self.actor_critic)

    def _set_learning_rate(self, lr: float) -> None:
        if dist.is_available() and dist.is_initialized():
            value = torch.tensor([lr], dtype=torch.float64)
            if dist.get_backend() == "nccl":
                value = value.cuda()
            dist.broadcast(value, src=0)
            lr = float(value.item())
        super()._set_learning_rate(lr)

    def close(self) -> None:
        self._remove_hooks()


def parameters_agree(module: nn.Module) -> float:
    """Largest difference between this rank's parameters and rank 0's (0.0 when not distributed)."""
    flat = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
    if not (dist.is_available() and dist.is_initialized()):
        return 0.0
    ref = flat.clone()
    dist.broadcast(ref, src=0)
    diff = (flat - ref).abs().max()
    dist.all_reduce(diff, op=dist.ReduceOp.MAX)
    return float(diff.item())


# ----------------------------------------------------------------------------- self-test (GPU machines)


def selftest(info: DistInfo, seed: int, hidden: tuple[int, ...] = (256, 128), steps: int = 3) -> dict:
    """A toy hybrid update on every rank with rank-specific data; parameters must stay identical."""
    from training.algorithms.hybrid import MLPActorCritic, RolloutBatch

    seed_everything(rank_seed(seed, info.rank))  # different initial weights per rank on purpose
    model = MLPActorCritic(obs_dim=16, num_actions=4, hidden=hidden).to(info.device)
    algo = DistributedHybridPPODagger(model, total_iterations=10)
    before = parameters_agree(model)
    n = 256
    g = torch.Generator(device="cpu").manual_seed(rank_seed(seed, info.rank))

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g).to(info.device)

    for k in range(steps):
        with torch.no_grad():
            obs = rand(n, 16)
            dist_ = model.action_distribution(obs)
            actions = dist_.sample()
            batch = RolloutBatch(
                obs=obs,
                actions=actions,
                log_probs=dist_.log_prob(actions).sum(-1),
                advantages=rand(n),
                returns=rand(n),
                values=model.value(obs),
                action_mean=dist_.mean,
                action_std=dist_.stddev,
                teacher_actions=rand(n, 4),
                dagger_mask=torch.ones(n, dtype=torch.bool, device=info.device),
            )
        algo.update(batch, k)
    algo.close()
    return {
        "rank": info.rank,
        "world_size": info.world_size,
        "device": info.device,
        "max_param_diff_at_start": before,
        "max_param_diff_after": parameters_agree(model),
        "learning_rate": algo.learning_rate,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="php_student_gpu", help="training config name or YAML path")
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: the config's run.device")
    parser.add_argument("--selftest", action="store_true", help="toy distributed update; check the ranks agree")
    args = parser.parse_args(argv)

    from training.configs import load_train_config

    cfg = load_train_config(args.config)
    info = init_distributed(args.device or cfg.run.device)
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
        result = selftest(info, cfg.run.seed)
        plan.update(result)
        ok = result["max_param_diff_after"] == 0.0
    print(json.dumps(plan), flush=True)
    shutdown_distributed()
    if not ok:
        print(f"rank {info.rank}: parameters differ across ranks after the update", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
