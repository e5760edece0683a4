"""Bag replay throughput: reading a stack bag, and the open-loop replay of a bundle over it.

Measures, on the same bag, side by side and repeated (medians and spread, never one timing):
- read + deserialise every message with rosbags (what `parkour bag replay` uses) vs mcap-ros2-support;
- `parkour bag replay --bundle` end to end: policy ticks/s and times real time (the bag's policy
  time span over the replay's wall time).
The bag is written as the graph records it (`parkour_bringup.bag.synthetic`), or give `--bag`.

    python bench/bags/replay.py --out bench/results/bags_replay.json [--bag runs/demo/bag] [--ticks 1500]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from parkour_bringup.bag.open_loop import replay_against_bundle
from parkour_bringup.bag.reader import open_bag
from parkour_bringup.bag.synthetic import write_synthetic_bag
from parkour_core.provenance import provenance
from parkour_core.stats import write_json


def _read_rosbags(bag_path: Path) -> int:
    with open_bag(bag_path) as bag:
        return sum(1 for _ in bag.messages(list(bag.topics)))


def _read_mcap_ros2(bag_path: Path) -> int:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    count = 0
    for mcap in bag_path.glob("*.mcap"):
        with mcap.open("rb") as f:
            for _ in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
                count += 1
    return count


def _replay(bag_path: Path, bundle: str) -> dict:
    with open_bag(bag_path) as bag:
        return replay_against_bundle(bag, bundle)


def _spread(values: list[float]) -> dict[str, float]:
    a = np.asarray(values)
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max()), "n": len(a)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--bag", type=Path, default=None, help="a recorded bag (default: a synthetic one)")
    parser.add_argument("--bundle", default="g1_walk_depth_gated")
    parser.add_argument("--ticks", type=int, default=1500, help="synthetic bag length in policy ticks")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        bag_path = args.bag or write_synthetic_bag(Path(tmp) / "bag", bundle=args.bundle, ticks=args.ticks)
        with open_bag(bag_path) as bag:
            messages = sum(bag.topics.values())
            ticks_in_bag = bag.topics.get("/policy/tick_inputs", 0)
            stamps = [m.log_time_ns for m in bag.messages(["/policy/tick_inputs"])]
        span_s = (stamps[-1] - stamps[0]) * 1e-9 if len(stamps) > 1 else float("nan")
        read: dict[str, list[float]] = {"rosbags": [], "mcap_ros2": []}
        replay_s: list[float] = []
        result: dict = {}
        for _ in range(args.repeats):  # interleaved, so load on the shared machine hits both alike
            for name, fn in (("rosbags", _read_rosbags), ("mcap_ros2", _read_mcap_ros2)):
                start = time.perf_counter()
                fn(bag_path)
                read[name].append(time.perf_counter() - start)
            start = time.perf_counter()
            result = _replay(bag_path, args.bundle)
            replay_s.append(time.perf_counter() - start)

    replay_median = float(np.median(replay_s))
    report = {
        **provenance(),
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine()},
        "bag": str(args.bag) if args.bag else f"synthetic ({args.ticks} ticks of {args.bundle})",
        "messages": messages,
        "policy_ticks": ticks_in_bag,
        "policy_time_span_s": span_s,
        "read_all_messages_s": {k: _spread(v) for k, v in read.items()},
        "read_messages_per_s_median": {k: messages / float(np.median(v)) for k, v in read.items()},
        "open_loop_replay_s": _spread(replay_s),
        "open_loop_ticks_per_s_median": ticks_in_bag / replay_median,
        "open_loop_times_real_time_median": span_s / replay_median,
        "open_loop_action_divergence": result.get("action_divergence"),
    }
    write_json(args.out, report)
    print(json.dumps({k: report[k] for k in ("read_messages_per_s_median", "open_loop_times_real_time_median")}))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
