"""Where the runner's p99 excess over plain onnxruntime sits: at the start of its blocks or throughout.

``run.py``'s turns, its recordings and its implementations, on one shipped student: ``ours_fp32`` and
``plain_ort_fp32`` with and without ``torch_eager`` taking turns beside them. Per implementation, the
p99 over all timed ticks and over the ticks past the first ``--head`` of each block (a block starts on
the caches the implementation before it left), the median of those first ticks, and the share of the
slowest 1 % of ticks that are among them. Each tick is split into its parts (:class:`Parts`): the
backbone on a new frame, the policy network and, for ours, the observation and what follows the network
(the clip, the targets, the recurrent state), so the excess can be charged to a part. Timing only;
nothing here passes or fails.

    .venv/bin/python bench/policy/turns.py --out bench/results/policy_turns.json   (about 40 s)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run.py beside this file
import run as bench

from parkour_core.bundle import load_bundle
from parkour_core.provenance import provenance
from parkour_core.stats import write_json


class Parts:
    """Times the calls an implementation makes inside its tick, by part, without changing what it runs.

    ``wrap(name, call)`` returns ``call`` timed into this tick's ``name``; ``tick`` runs the implementation's
    own tick and records its parts, with ``rest``: the tick's time not inside a wrapped call. Each wrapped
    call adds two clock reads and a Python call (well under a microsecond) to the tick it times: ours has
    three wrapped calls a tick, plain onnxruntime two.
    """

    def __init__(self, impl: Any, names: tuple[str, ...]) -> None:
        self.impl, self.names = impl, names
        self.current = dict.fromkeys(names, 0.0)
        self.rows: list[tuple[float, ...]] = []

    def wrap(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            out = call(*args, **kwargs)
            self.current[name] += time.perf_counter() - started
            return out

        return timed

    def reset(self) -> None:
        self.impl.reset()

    def tick(self, rollout: Any, k: int) -> tuple[float, Any]:
        self.current = dict.fromkeys(self.names, 0.0)
        elapsed, action = self.impl.tick(rollout, k)
        parts = [self.current[n] for n in self.names]
        self.rows.append((*parts, elapsed - sum(parts)))
        return elapsed, action


def ours_in_parts(bundle: Any) -> Parts:
    """``ours_fp32``: the runner's own step; its backbone, observation and policy network timed apart."""
    ours = bench.Ours(bundle, 1)
    parts = Parts(ours, ("backbone", "observation", "network"))
    runner = ours.runner
    runner.set_depth = parts.wrap("backbone", runner.set_depth)
    runner.observe = parts.wrap("observation", runner.observe)
    runner._run_policy = parts.wrap("network", runner._run_policy)
    return parts


def plain_in_parts(bundle: Any) -> Parts:
    """``plain_ort_fp32``: its backbone's and its policy's ``run`` timed apart (the rest: building feeds)."""
    plain = bench.PlainOrt(bundle, 1)
    parts = Parts(plain, ("backbone", "network"))
    if plain.backbone is not None:
        plain.backbone = SimpleNamespace(run=parts.wrap("backbone", plain.backbone.run))  # all its tick calls
    plain.student = SimpleNamespace(run=parts.wrap("network", plain.student.run))
    return parts


def parts_by_position(parts: Parts, warmup: int, block: int, head: int) -> dict[str, Any]:
    """Median ms of each part in the block heads and past them (``rest``: the tick outside those calls)."""
    rows = np.asarray(parts.rows[warmup:]) * 1e3
    position = np.arange(len(rows)) % block
    names = (*parts.names, "rest")
    return {
        where: {n: round(float(np.median(rows[pick, i])), 4) for i, n in enumerate(names)}
        for where, pick in (("block_head", position < head), ("past_block_head", position >= head))
    }


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
        impls: dict[str, Any] = {"ours_fp32": ours_in_parts(bundle), "plain_ort_fp32": plain_in_parts(bundle)}
        if variant == "with_torch_eager":
            impls["torch_eager"] = bench.TorchEager(bundle, *bench.trained_torch_modules(bundle))
        measured = bench.measure(impls, rollout, block, block)
        rows = {k: by_position(measured.times[k], block, args.head) for k in ("ours_fp32", "plain_ort_fp32")}
        ours, plain = rows["ours_fp32"], rows["plain_ort_fp32"]
        result["variants"][variant] = {
            **rows,
            "p99_ratio": round(ours["p99_ms"] / plain["p99_ms"], 3),
            "p99_ratio_past_block_head": round(ours["p99_ms_past_block_head"] / plain["p99_ms_past_block_head"], 3),
            "parts_p50_ms": {k: parts_by_position(impls[k], block, block, args.head) for k in rows},
            "blocks_after": measured.extra["blocks_after"],
        }
        row = result["variants"][variant]
        print(variant, "p99 ratio", row["p99_ratio"], "past the block head", row["p99_ratio_past_block_head"])
    write_json(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
