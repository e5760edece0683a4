"""Motion-matching search: our AABB index vs a plain numpy brute-force argmin, same database, same queries.

Writes bench/results/mm_query.json: query latency p50/p99 (microseconds) of both over the locomotion
database (with mirrors), whether they agree, end-to-end synthesis throughput (clips per second,
files not written), and the quality summary (quality.json) of `parkour mm synth --count 64 --seed 1`.
Timings never decide pass/fail.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from parkour_core.provenance import provenance
from training.motion_matching.search import brute_force_argmin
from training.motion_matching.skills import load_registry
from training.motion_matching.synth import Synthesizer, _query, synthesize


def _percentiles(us: list[float]) -> dict[str, float]:
    a = np.asarray(us)
    return {"p50_us": float(np.percentile(a, 50)), "p99_us": float(np.percentile(a, 99)), "mean_us": float(a.mean())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=Path("bench/results/mm_query.json"))
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--clips", type=int, default=10)
    p.add_argument("--quality-motions", type=int, default=64, help="motions synthesized for quality.json's summary")
    p.add_argument("--quality-seed", type=int, default=1)
    args = p.parse_args()

    synth = Synthesizer(list(load_registry().values()))
    db = synth.db
    index = db.loco_index
    assert index is not None
    rng = np.random.default_rng(0)
    # Real queries: spring trajectories from random database frames toward random commands.
    rows = index.ids[rng.integers(len(index.ids), size=args.queries)]
    queries = []
    for r in rows:
        heading = float(rng.uniform(-np.pi, np.pi))
        speed = float(rng.choice([0.0, 1.0, 2.0]))
        cmd = speed * np.array([np.cos(heading), np.sin(heading)])
        queries.append(_query(db, int(r), cmd, heading, float(rng.uniform(-np.pi, np.pi)), synth.cfg))
    feats = index.x
    ours, brute, agree = [], [], 0
    for q in queries:
        t0 = time.perf_counter()
        got, _ = index.query(q)
        t1 = time.perf_counter()
        k = brute_force_argmin(feats, q)
        t2 = time.perf_counter()
        ours.append((t1 - t0) * 1e6)
        brute.append((t2 - t1) * 1e6)
        agree += int(index.ids[k] == got) or int(
            np.isclose(((feats[k] - q) ** 2).sum(), ((db.features[got] - q) ** 2).sum())
        )
    t0 = time.perf_counter()
    frames = 0
    for i in range(args.clips):
        frames += len(synth.generate(0, i).arrays["root_pos"])
    clip_s = time.perf_counter() - t0
    ours_s, brute_s = _percentiles(ours), _percentiles(brute)
    result = {
        **provenance(),
        "database_rows": len(feats),
        "feature_dims": int(feats.shape[1]),
        "queries": len(queries),
        "aabb_index": ours_s,
        "numpy_brute_force_argmin": brute_s,
        "speedup_p50": brute_s["p50_us"] / ours_s["p50_us"],
        "agreement": agree / len(queries),
        "synth_clips_per_s": args.clips / clip_s,
        "synth_frames_per_s": frames / clip_s,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }
    with tempfile.TemporaryDirectory(prefix="mm_quality_") as tmp:
        # what `parkour mm synth --count N --seed S` writes as quality.json, for the README's quality figures
        quality = synthesize(args.quality_motions, args.quality_seed, Path(tmp))["quality"]
    result["quality"] = {"motions": args.quality_motions, "seed": args.quality_seed, **quality}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"wrote {args.out}: ours p50 {ours_s['p50_us']:.0f} us / p99 {ours_s['p99_us']:.0f} us, brute force "
        f"p50 {brute_s['p50_us']:.0f} us / p99 {brute_s['p99_us']:.0f} us, {result['synth_clips_per_s']:.2f} clips/s"
    )


if __name__ == "__main__":
    main()
