"""The multi-process path on the CPU: 2 ranks over gloo, rank-specific seeds and data, and the
parameters stay identical after hybrid updates (and would not without the all-reduce)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from training.launch import multi_gpu

WORLD = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, port: int, out_dir: str) -> None:
    os.environ.update(
        {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank), "WORLD_SIZE": str(WORLD)}
    )
    os.environ["LOCAL_RANK"] = str(rank)
    torch.set_num_threads(1)
    info = multi_gpu.init_distributed("cpu")
    try:
        result = multi_gpu.selftest(info, seed=0, hidden=(32, 32), steps=2)
        # Control: the same per-rank data without the all-reduce drifts apart.
        multi_gpu.seed_everything(multi_gpu.rank_seed(7, rank))
        model = torch.nn.Linear(4, 1)
        multi_gpu.broadcast_parameters(model)
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        grads_unsynced = model.weight.grad.clone()
        multi_gpu.allreduce_gradients(model)
        mean = grads_unsynced.clone()
        dist.all_reduce(mean)
        mean /= WORLD
        result["flat_allreduce_is_mean"] = bool(torch.allclose(model.weight.grad, mean))
        torch.optim.SGD(model.parameters(), lr=0.1).step()
        result["flat_param_diff"] = multi_gpu.parameters_agree(model)
        with torch.no_grad():
            model.weight -= 0.1 * grads_unsynced  # an unsynced step on top: ranks must now disagree
        result["unsynced_param_diff"] = multi_gpu.parameters_agree(model)
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        multi_gpu.shutdown_distributed()


def test_two_ranks_stay_identical(tmp_path: Path) -> None:
    mp.spawn(_worker, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(WORLD)]
    for r in results:
        assert r["world_size"] == WORLD
        assert r["max_param_diff_at_start"] == 0.0  # broadcast from rank 0 despite different seeds
        assert r["max_param_diff_after"] == 0.0  # hybrid updates on different data, identical params
        assert r["flat_allreduce_is_mean"]
        assert r["flat_param_diff"] == 0.0
        assert r["unsynced_param_diff"] > 0.0
    assert results[0]["learning_rate"] == results[1]["learning_rate"]


def test_envs_split_evenly() -> None:
    assert multi_gpu.envs_per_rank(16384, 8) == 2048
    with pytest.raises(ValueError, match="does not split over 3 ranks"):
        multi_gpu.envs_per_rank(16384, 3)
    assert multi_gpu.rank_seed(10, 3) == 13


def test_single_process_is_a_no_op() -> None:
    model = torch.nn.Linear(3, 1)
    model(torch.ones(1, 3)).sum().backward()
    grad = model.weight.grad.clone()
    multi_gpu.allreduce_gradients(model)
    multi_gpu.sync_gradients_hooks(model)()
    assert torch.equal(model.weight.grad, grad)
    assert multi_gpu.parameters_agree(model) == 0.0
