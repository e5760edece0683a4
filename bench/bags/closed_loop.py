"""Closed-loop bag replay: how closely `parkour bag replay --sim` re-drives the simulated robot.

One `parkour sim` walk is recorded, then re-driven twice from its bag: with the simulated camera, and
with the bag's own depth frames (`--depth-from-bag`). Each replay's `divergence.json` gives the mode
sequences, the planar path divergence and the joint divergence against the recording; this file
collects both next to the recording's provenance. Runs are not bit-reproducible (the graph's processes
are scheduled by the host), so this is a measurement, not a test; the test is
tests/integration/test_bag_record_replay.py.

    python bench/bags/closed_loop.py --out bench/results/replay_closed_loop.json [--duration 12]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from parkour_core.paths import repo_root
from parkour_core.provenance import provenance
from parkour_core.stats import write_json

BUNDLE = "g1_walk_depth_gated"  # reads depth, so the depth source of a replay matters
DEPTH_SOURCES = {"sim_camera": [], "bag": ["--depth-from-bag"]}


def _parkour(args: list[str], domain: int) -> None:
    cli = [sys.executable, "-m", "parkour_bringup.cli", *args, "--domain", str(domain)]
    cli += ["--ros-domain-id", str(domain + 100)]
    done = subprocess.run(cli, cwd=repo_root(), capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        what = " ".join(args[:2])
        raise SystemExit(f"closed_loop bench: {what} failed (rc {done.returncode}):\n{done.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--duration", type=float, default=12.0, help="sim seconds of the recorded walk")
    args = parser.parse_args(argv)
    domain = random.randint(20, 90)  # Unitree DDS domain; ROS takes domain + 100
    replays: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="closed_loop_") as tmp:
        run = Path(tmp) / "recorded"
        _parkour(["sim", "--bundle", BUNDLE, "--duration", str(args.duration), "--out", str(run)], domain)
        for source, extra in DEPTH_SOURCES.items():
            out = Path(tmp) / source
            _parkour(["bag", "replay", str(run / "bag"), "--sim", "--out", str(out), *extra], domain)
            d = json.loads((out / "divergence.json").read_text())
            replays[source] = {
                "same_mode_sequence": d["modes"]["same_sequence"],
                "modes_recorded": [f"{m['from']}->{m['to']}" for m in d["modes"]["recorded"]],
                "modes_replayed": [f"{m['from']}->{m['to']}" for m in d["modes"]["replayed"]],
                "compared_s": round(d["compared_s"], 2),
                "path_m": d["base_planar_m"],
                "joint_rad": d["joint_position_rad"],
                "distance_m": d["distance_m"],
            }
    report = {
        **provenance(),
        "what": f"a {args.duration:g} s `parkour sim` walk of {BUNDLE}, re-driven from its bag by "
        "`parkour bag replay --sim`: with the simulated camera and with the bag's depth frames",
        "bundle": BUNDLE,
        "duration_s": args.duration,
        "replays": replays,
        "summary": [
            {
                "what": f"closed-loop replay, path divergence ({source.replace('_', ' ')} depth)",
                "unit": "m",
                "ours": {"p50": r["path_m"]["p50"], "p99": r["path_m"]["p99"]},
            }
            for source, r in replays.items()
        ],
    }
    write_json(args.out, report)
    print(json.dumps({s: {k: r[k] for k in ("same_mode_sequence", "path_m")} for s, r in replays.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
