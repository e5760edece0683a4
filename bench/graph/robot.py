"""Robot mode on the wall clock: `parkour robot --iface lo --live` against the simulator as a stand-in robot.

The bridge runs with ``bridge.clock: wall`` (paced to wall time, no /clock, no lockstep: like a robot,
it does not wait for anyone), its simulated D435i publishing /camera/depth/policy with no emulated
latency (so exposure -> lowcmd is the stack's own latency after the camera publishes). `parkour robot`
runs the supervisor and the policy node (``g1_walk_depth_gated``) on wall time over DDS on ``lo``,
and the demo script stands the robot up, releases the band, activates and walks. Once without and
once with a process keeping one core busy. From the run folders, on the wall clock: the policy period,
the lowstate age at the supervisor (time since the newest sample reached it), the supervisor's tick
period, depth exposure -> lowcmd write per command, and each robot node's CPU.

    .venv/bin/python bench/graph/robot.py --out bench/results/graph_robot.json
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

from parkour_bringup.standin import StandIn, run_against_standin  # noqa: E402
from parkour_core.provenance import command_line, provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402

BUNDLE = "g1_walk_depth_gated"
TARGET_DEPTH_TO_LOWCMD_P99_MS = 45.0
MEASURES = (
    "policy_period_wall_ms",
    "lowstate_age_ms",
    "supervisor_tick_period_wall_ms",
    "depth_exposure_to_lowcmd_ms",
    "depth_exposure_to_first_lowcmd_ms",
)


def _summary(d: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if d is None else {k: d.get(k) for k in ("p50", "p99", "max", "n")}


def run_once(out: Path, duration_s: float, hog: bool) -> dict[str, Any]:
    run = run_against_standin(out, duration_s, BUNDLE, StandIn(camera=True), hog=hog)
    supervisor, policy = run.supervisor, run.policy
    return {
        "hog": hog,
        "fell": run.bridge["fell"],
        "transitions": [f"{a}->{b} ({why})" for a, b, why in run.moves()],
        "policy_period_wall_ms": _summary(policy["policy_period_wall_ms"]),
        "lowstate_age_ms": _summary(supervisor["lowstate_age_ms"]),
        "supervisor_tick_period_wall_ms": _summary(supervisor["tick_period_wall_ms"]),
        "depth_exposure_to_lowcmd_ms": _summary(supervisor["depth_exposure_to_lowcmd_ms"]),
        "depth_exposure_to_first_lowcmd_ms": _summary(supervisor.get("depth_exposure_to_first_lowcmd_ms")),
        "policy_state_age_ms": _summary(policy.get("state_age_ms")),
        # the stand-in shares the cores: a step period past the 50 ms lowstate timeout damps the robot
        "standin_step_period_wall_ms": _summary(run.bridge["periods_wall_ms"]["step"]),
        "standin_nice": run.bridge["cpu"].get("nice"),
        "cpu": run.cpu,
        "callbacks_ms": {"supervisor": supervisor.get("callbacks_ms"), "policy": policy.get("callbacks_ms")},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "graph_robot.json")
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "bench_robot")
    ap.add_argument("--duration", type=float, default=40.0, help="seconds of the stand-in robot's run")
    args = ap.parse_args()
    record = provenance(command_line())
    runs = {}
    for hog in (False, True):
        name = "one core busy" if hog else "quiet"
        print(f"{name}: {args.duration:g} s", flush=True)
        runs[name] = run_once((args.runs / name.replace(" ", "_")).resolve(), args.duration, hog)
        r = runs[name]
        p99 = {k: (r[k] or {}).get("p99") for k in MEASURES}
        print(f"  p99 (ms): {p99}, fell {r['fell']}", flush=True)
    result = {
        **record,
        "what": "parkour robot --iface lo --live (supervisor + policy, g1_walk_depth_gated, wall clock) against the "
        "bridge as a stand-in robot (bridge.clock: wall, sim camera without emulated latency), the demo script",
        "target_depth_to_lowcmd_p99_ms": TARGET_DEPTH_TO_LOWCMD_P99_MS,
        "runs": runs,
        "summary": [
            {"what": f"robot mode: {k} ({n})", "unit": "ms", "ours": r[k]} for n, r in runs.items() for k in MEASURES
        ],
    }
    write_json(args.out, result)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
