"""The whole graph in simulation: policy loop period, real-time factor, lowstate age, depth-to-lowcmd latency.

One ``parkour sim`` run (bridge + supervisor + policy + script, one process each, no bag) of the G1 with
the depth bundle ``g1_walk_depth_gated`` and the simulated D435i on, ``--duration`` s of sim time, then
from the run folder's metrics (policy.json, supervisor.json, bridge.json, report.json):

- the policy loop period p50/p99 on the sim clock (what the policy sees) and on the wall clock;
- the simulation's real-time factor with the camera on (sim time / wall time of the bridge's loop);
- the lowstate age at the supervisor (sim ms, now - last rt/lowstate at each supervisor tick);
- the end-to-end latency from depth exposure to the lowcmd write, MEASURED per command by the
  supervisor (``depth_exposure_to_lowcmd_ms``: at every lowcmd write in ACTIVE, now - the exposure
  stamp of the frame behind the written targets, which the policy's /policy/tick_inputs names), and
  for comparison the same COMPOSED from the stages (``end_to_end``: the p50s (p99s) of three stages added).

Sim-clock ages come in steps of the 2 ms /clock period. The camera's exposure-to-publish latency is the
trained 60-80 ms, emulated by the bridge; the JSON also gives the latency without it.

    .venv/bin/python bench/graph/run.py --out bench/results/graph_sim.json   # about 60-90 s
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from parkour_bringup.cli import main as parkour
from parkour_core.paths import config_dir, repo_root
from parkour_core.stats import write_json

BUNDLE = "g1_walk_depth_gated"


def _load(run_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((run_dir / f"{name}.json").read_text())


def _pq(d: dict[str, Any] | None) -> dict[str, float | None]:
    d = d or {}
    return {"p50": d.get("p50"), "p99": d.get("p99")}


def _add(*stages: dict[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for q in ("p50", "p99"):
        values = [s.get(q) for s in stages]
        out[q] = None if any(v is None for v in values) else round(sum(values), 3)
    return out


def end_to_end(policy: dict[str, Any], supervisor: dict[str, Any], bridge: dict[str, Any]) -> dict[str, Any]:
    """Depth exposure -> lowcmd write, composed stage by stage from the nodes' summaries."""
    depth_at_use = _pq((policy.get("depth") or {}).get("age_ms"))
    step = _pq(policy.get("inference_ms"))
    target_at_write = _pq(supervisor.get("target_age_ms"))
    camera = _pq((bridge.get("camera") or {}).get("published_age_ms"))
    total = _add(depth_at_use, step, target_at_write)
    after_camera = _add(
        {q: None if depth_at_use[q] is None or camera[q] is None else depth_at_use[q] - camera[q] for q in camera},
        step,
        target_at_write,
    )
    return {
        "latency_ms": total,
        "latency_after_camera_publish_ms": after_camera,
        "stages_ms": {
            "depth_age_at_policy_tick": depth_at_use,
            "policy_step_wall": step,
            "target_age_at_lowcmd_write": target_at_write,
            "camera_exposure_to_publish_emulated": camera,
        },
        "composed_as": (
            "sum of per-stage quantiles, not the quantile of per-command latencies: "
            "(1) policy.json depth.age_ms: policy tick time - exposure stamp of the frame behind the depth "
            "latent it used (sim clock; includes the camera's emulated 60-80 ms exposure-to-publish latency "
            "and the wait for the next 50 Hz tick); "
            "(2) policy.json inference_ms: backbone (on a new frame) + student step, wall clock, the time from "
            "the tick start to the targets' header stamp, which the sim clock does not record; "
            "(3) supervisor.json target_age_ms: lowcmd write time - the targets' header stamp, at every "
            "supervisor tick that wrote a command from policy targets (sim clock). "
            "p99 = sum of the stage p99s: tails that never coincide make this an overestimate. "
            "latency_after_camera_publish_ms subtracts bridge.json camera.published_age_ms (the emulated "
            "camera latency) from stage 1."
        ),
        "node_change_for_an_exact_number": (
            "the policy node would put the exposure stamp of the frame behind the latent into each "
            "/policy/joint_targets message (e.g. a second stamp beside header.stamp), and the supervisor "
            "would record now - that stamp at every lowcmd write; then p50/p99 are of one per-command series"
        ),
    }


def run_graph(run_dir: Path, duration_s: float) -> None:
    cfg = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    cfg.setdefault("sim_camera", {})["enabled"] = True
    cfg.setdefault("policy", {})["bundle"] = BUNDLE
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "g1_sim_bench.yaml"
        config.write_text(yaml.safe_dump(cfg, sort_keys=False))
        argv = ["sim", "--config", str(config), "--out", str(run_dir), "--duration", str(duration_s), "--no-bag"]
        code = parkour(argv)
    if code != 0:
        raise SystemExit(f"parkour sim exited with code {code}; see {run_dir / 'logs'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=repo_root() / "bench" / "results" / "graph_sim.json")
    parser.add_argument("--run-dir", type=Path, default=repo_root() / "runs" / "bench_graph")
    parser.add_argument("--duration", type=float, default=20.0, help="sim seconds")
    parser.add_argument("--reuse", action="store_true", help="summarise an existing --run-dir without running")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    started = time.perf_counter()
    if not args.reuse:
        run_graph(args.run_dir, args.duration)
    wall_s = None if args.reuse else round(time.perf_counter() - started, 1)
    policy, sup, bridge, report = (_load(args.run_dir, n) for n in ("policy", "supervisor", "bridge", "report"))
    camera = bridge.get("camera") or {}
    if not camera.get("enabled"):
        raise SystemExit("the sim camera was off in this run: the real-time factor is not the one asked for")
    e2e = end_to_end(policy, sup, bridge)
    measured = _pq(sup.get("depth_exposure_to_lowcmd_ms"))
    e2e["measured_per_command_ms"] = measured
    e2e.pop("node_change_for_an_exact_number", None)
    period, period_wall = _pq(policy["policy_period_ms"]), _pq(policy["policy_period_wall_ms"])
    lowstate = _pq(sup["lowstate_age_ms"])
    rtf = report.get("sim_real_time_factor")
    out = {
        "what": f"parkour sim, G1, bundle {BUNDLE}, sim camera on ({camera.get('method')}, {camera.get('hz')} Hz), "
        f"{bridge['sim_time_s']:.1f} s of sim time, one process per node, no bag",
        "policy_period_ms": period,
        "policy_period_wall_ms": period_wall,
        "policy_deadline_misses": policy.get("deadline_misses"),
        "policy_ticks": policy.get("ticks"),
        "sim_real_time_factor": rtf,
        "lockstep_waits": bridge.get("lockstep_waits"),
        "lockstep_wait_wall_s": bridge.get("lockstep_wait_wall_s"),
        "lowstate_age_ms": lowstate,
        "lowstate_sent": bridge.get("lowstate_sent"),
        "camera_frame_ms_wall": _pq(camera.get("frame_ms")),
        "depth_frames_used": (policy.get("depth") or {}).get("frames"),
        "end_to_end": e2e,
        "fell": report.get("fell"),
        "final_mode": report.get("final_mode"),
        "distance_m": report.get("distance_m"),
        "run_dir": os.path.relpath(args.run_dir.resolve(), repo_root()),
        "clock_note": "sim-clock ages and periods are quantised by the 2 ms /clock; wall-clock values are not",
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": wall_s,
        "bridge_wall_s": bridge.get("wall_time_s"),
        "summary": [
            {"what": "policy loop period, whole graph, sim clock", "unit": "ms", "ours": period},
            {"what": "policy loop period, whole graph, wall clock", "unit": "ms", "ours": period_wall},
            {"what": "sim real-time factor, camera on (one run)", "unit": "x", "ours": {"p50": rtf, "p99": None}},
            {"what": "lowstate age at the supervisor (sim clock)", "unit": "ms", "ours": lowstate},
            {
                "what": "depth exposure -> lowcmd write, per command (supervisor, sim clock; incl. 60-80 ms "
                "emulated camera latency)",
                "unit": "ms",
                "ours": measured,
            },
            {
                "what": "the same composed from stage quantiles (an overestimate at p99)",
                "unit": "ms",
                "ours": e2e["latency_ms"],
            },
            {
                "what": "the same after the camera publishes (camera latency removed)",
                "unit": "ms",
                "ours": e2e["latency_after_camera_publish_ms"],
            },
        ],
    }
    write_json(args.out, out)
    print(
        f"policy period p50 {period['p50']} p99 {period['p99']} ms (wall p50 {period_wall['p50']} p99 "
        f"{period_wall['p99']}) | RTF {rtf} | lowstate age p50 {lowstate['p50']} p99 {lowstate['p99']} ms | "
        f"depth->lowcmd p50 {measured['p50']} p99 {measured['p99']} ms per command "
        f"(composed: p50 {e2e['latency_ms']['p50']} p99 {e2e['latency_ms']['p99']})"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
