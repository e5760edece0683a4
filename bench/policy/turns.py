"""Where the runner's p99 excess over plain onnxruntime sits: at the start of its blocks or throughout.

``run.py``'s turns, its recordings and its implementations, on one shipped student: ``ours_fp32`` and
``plain_ort_fp32`` with and without ``torch_eager`` taking turns beside them. Per implementation, the
p99 over all timed ticks and over the ticks past the first ``--head`` of each block (a block starts on
the caches the implementation before it left), the median of those first ticks, and the share of the
slowest 1 % of ticks that are among them. Timing only; nothing here passes or fails.

    .venv/bin/python bench/policy/turns.py --out bench/results/policy_turns.json   (about 40 s)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run.py beside this file
import run as bench

from parkour_core.bundle import load_bundle
from parkour_core.provenance import provenance
from parkour_core.stats import write_json


def by_position(t_s: list[float], block: int, head: int) -> dict[str, Any]:
    t = np.asarray(t_s) * 1e3
    position = np.arange(len(t)) % block  # the timed ticks start at a block boundary (warm-up = one block)
    first, rest = t[position < head], t[position >= head]
    slowest = position[t >= np.percentile(t, 99)]
    return {
        "p50_ms": round(float(np.median(t)), 4),
        "p99_ms": round(float(np.percentile(t, 99)), 4),
        "p99_ms_past_block_head": round(float(np.percentile(rest, 99)), 4),
        "p50_ms_block_head": round(float(np.median(first)), 4),
        "share_of_slowest_1pct_in_block_head": round(float(np.mean(slowest < head)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="student_walk", choices=bench.SHIPPED)
    parser.add_argument("--head", type=int, default=3, help="ticks at the start of each block (default 3)")
    args = parser.parse_args()
    block, ticks = 50, 3000
    bundle = load_bundle(bench.ROOT / "models" / args.model)
    rollout = bench.recording(bundle, ticks + block, bench.BENCH_SEED, bench.CACHE).rollout
    pinned = bench.pin_to_cores(1, None)
    import torch

    torch.set_num_threads(1)
    result: dict[str, Any] = {**provenance(), "model": args.model, "pinned_cpus": pinned, "block_ticks": block,
                              "block_head_ticks": args.head, "variants": {}}  # fmt: skip
    for variant in ("with_torch_eager", "without_torch_eager"):
        impls: dict[str, Any] = {"ours_fp32": bench.Ours(bundle, 1), "plain_ort_fp32": bench.PlainOrt(bundle, 1)}
        if variant == "with_torch_eager":
            impls["torch_eager"] = bench.TorchEager(bundle, *bench.trained_torch_modules(bundle))
        measured = bench.measure(impls, rollout, block, block)
        rows = {k: by_position(measured.times[k], block, args.head) for k in ("ours_fp32", "plain_ort_fp32")}
        ours, plain = rows["ours_fp32"], rows["plain_ort_fp32"]
        result["variants"][variant] = {
            **rows,
            "p99_ratio": round(ours["p99_ms"] / plain["p99_ms"], 3),
            "p99_ratio_past_block_head": round(ours["p99_ms_past_block_head"] / plain["p99_ms_past_block_head"], 3),
            "blocks_after": measured.extra["blocks_after"],
        }
        row = result["variants"][variant]
        print(variant, "p99 ratio", row["p99_ratio"], "past the block head", row["p99_ratio_past_block_head"])
    write_json(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
