"""The multi-process path on the CPU: 2 ranks over gloo through the one runner, rank-specific seeds and
data; after HybridPPO's updates every rank holds the same parameters (and one update without the
gradient all-reduce makes them differ)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch
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
    info = multi_gpu.rank_info("cpu")
    try:
        result = multi_gpu.selftest(info, seed=0, out=Path(out_dir) / f"run{rank}", hidden=(32, 32), steps=2)
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        multi_gpu.shutdown_distributed()


def test_two_ranks_stay_identical(tmp_path: Path) -> None:
    mp.spawn(_worker, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(WORLD)]
    for r in results:
        assert r["world_size"] == WORLD
        assert r["max_param_diff_before_broadcast"] > 0.0  # each rank built its own weights from its own seed
        assert r["max_param_diff_after"] == 0.0  # broadcast, then updates on different data: identical
        assert r["max_param_diff_after_an_unreduced_update"] > 0.0  # the ranks' gradients do differ
    assert results[0]["learning_rate"] == results[1]["learning_rate"]


def test_envs_split_evenly() -> None:
    assert multi_gpu.envs_per_rank(16384, 8) == 2048
    with pytest.raises(ValueError, match="does not split over 3 ranks"):
        multi_gpu.envs_per_rank(16384, 3)
    assert multi_gpu.rank_seed(10, 3) == 13


def test_single_process_is_not_distributed(tmp_path: Path) -> None:
    result = multi_gpu.selftest(multi_gpu.rank_info("cpu"), seed=0, out=tmp_path, hidden=(8,), steps=1)
    assert result["world_size"] == 1 and result["max_param_diff_after"] == 0.0
