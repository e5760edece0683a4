"""Stand-up success on the peers a robot may meet, for the G1 and the H1, each on both its models.

Each trial is parkour_sim.standup.stand_up_trial: the supervisor's own core (config/<robot>_robot.yaml)
hangs the robot damped for 1 s, stands it up on the elastic band, holds the stand 1 s, releases it
and must keep it standing 3 s on its own; any move to DAMP or a fall fails it. Peers: 2 and 5 ms
physics steps x the PD torque every step or held from command to command (Unitree's simulators) x
command gaps of 0, 20 and 50 ms every 0.5 s (their phase drawn per seed); and, at 5 ms steps, 30 % and
50 % of the commands lost at random (a controller the host starves), both with the torque held and
with PD applied every 5 ms step from the last command received (a simulator's common 5 ms step, or a
slow motor bus). Stand gains, given as supervisor.stand_gains: G1 "now" (the spec's), "before" and
"old" (damping not bounded for lost commands, or for held torque at all); H1 "deployers" (the spec's,
unitree_rl_gym's) and "stiffened" (the legs stiffened as simulation alone once had them).

    .venv/bin/python bench/standup/run.py        # writes bench/results/standup.json
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from parkour_core.config import StackConfig, load_config
from parkour_core.paths import config_dir, repo_root
from parkour_core.provenance import provenance
from parkour_core.robots import RobotSpec, get_robot
from parkour_core.stats import write_json
from parkour_sim.models import MODELS, robot_model
from parkour_sim.standup import Peer, stand_up_trial

BEFORE_KD = {"knee": 10.0, "shoulder_yaw": 2.0, "elbow": 2.0, "wrist": 0.3}
OLD_KD = {"ankle": 10.0, "wrist": 2.0, "hip_yaw": 7.5, "waist_roll": 10.0, "waist_pitch": 10.0, "knee": 10.0,
          "shoulder_yaw": 2.0, "elbow": 2.0}  # fmt: skip
# The H1's legs as config/h1_sim.yaml stiffened them in simulation only, for the simplified model: (kp, kd).
H1_STIFFENED = {"hip_pitch": (600.0, 7.5), "knee": (1200.0, 15.0), "ankle": (800.0, 6.0)}
GAPS_S = (0.0, 0.02, 0.05)
LOST_FRACTIONS = (0.3, 0.5)
SUMMARY_KEYS = (("stood_up_on_band", "stand-up on the band"), ("stood_alone", "standing alone after release"))


def kd_gains(spec: RobotSpec, kd_by_part: dict[str, float]) -> dict[str, list[float]]:
    return {j.name: [j.kp_stand, kd] for j in spec.joints for part, kd in kd_by_part.items() if part in j.name}


def gain_variants(spec: RobotSpec, cfg: StackConfig) -> dict[str, StackConfig]:
    def with_gains(gains: dict[str, list[float]]) -> StackConfig:
        return replace(cfg, supervisor=replace(cfg.supervisor, stand_gains=gains))

    if spec.name == "h1":
        stiff = {j.name: list(g) for j in spec.joints for part, g in H1_STIFFENED.items() if part in j.name}
        return {"deployers": cfg, "stiffened": with_gains(stiff)}
    return {"now": cfg, "before": with_gains(kd_gains(spec, BEFORE_KD)), "old": with_gains(kd_gains(spec, OLD_KD))}


def peers(spec: RobotSpec) -> list[Peer]:
    models = ("", *MODELS.get(spec.name, {}))
    grid = itertools.product(models, (0.002, 0.005), ("every_step", "on_command"), GAPS_S)
    out = [Peer(dt, law, model, gap) for model, dt, law, gap in grid]
    out += [Peer(0.005, law, model, lost_fraction=f)
            for law in ("on_command", "every_step") for model in models for f in LOST_FRACTIONS]  # fmt: skip
    return out


def summary(robot: str, rows: list[dict[str, Any]], variants: list[str]) -> list[dict[str, str]]:
    """Totals per variant over the gap rows, the held-torque lost rows and the every-step lost rows. The G1's
    first two keep the wording docs/safety.md's table reads."""

    def total(name: str, key: str, subset: list[dict[str, Any]]) -> str:
        return f"{sum(r[name][key] for r in subset)}/{sum(r[name]['trials'] for r in subset)}"

    lost = [r for r in rows if r["lost_fraction"]]
    parts = (
        ("", [r for r in rows if not r["lost_fraction"]]),
        (", commands lost at random", [r for r in lost if r["pd_law"] == "on_command"]),
        (", commands lost at random, PD every 5 ms step", [r for r in lost if r["pd_law"] == "every_step"]),
    )
    prefix = "" if robot == "g1" else f"{robot.upper()} "
    return [
        {"what": f"{prefix}{label}, {name} stand gains{part}", "ours": total(name, key, subset)}
        for part, subset in parts
        if subset
        for key, label in SUMMARY_KEYS
        for name in variants
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=repo_root() / "bench" / "results" / "standup.json")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--robot", action="append", choices=("g1", "h1"), help="only this robot (repeatable)")
    ap.add_argument("--only", default="", help="only the peers whose label holds this text (a short run)")
    args = ap.parse_args()
    record = provenance()
    rows: list[dict[str, Any]] = []
    sums: list[dict[str, str]] = []
    started = time.perf_counter()
    for robot in args.robot or ("g1", "h1"):
        spec = get_robot(robot)
        variants = gain_variants(spec, load_config(config_dir() / f"{robot}_robot.yaml"))
        robot_rows: list[dict[str, Any]] = []
        for peer in (p for p in peers(spec) if args.only in p.label()):
            row: dict[str, Any] = {"robot": robot, "peer": peer.label(),
                                   "robot_model": robot_model(spec, peer.robot_model).name,
                                   "physics_dt_s": peer.physics_dt_s, "pd_law": peer.pd_law, "gap_s": peer.gap_s,
                                   "lost_fraction": peer.lost_fraction}  # fmt: skip
            for name, variant in variants.items():
                trials = [stand_up_trial(variant, peer, seed, release=True) for seed in range(args.seeds)]
                row[name] = {
                    "stood_up_on_band": sum(t["stood_on_band"] for t in trials),
                    "stood_alone": sum(bool(t["stood_alone"]) for t in trials),
                    "trials": len(trials),
                    "failures": sorted({t["damped"] or ("fell" if t["fell"] else "") for t in trials} - {""}),
                    "commands_dropped": sum(t["commands_dropped"] for t in trials),
                    "max_speed_ratio": max(t["max_speed_ratio"] for t in trials),
                }
            robot_rows.append(row)
            counts = (f"{name} {row[name]['stood_up_on_band']}/{row[name]['stood_alone']}" for name in variants)
            print(f"{robot} {peer.label()}: " + ", ".join(counts), flush=True)
        rows += robot_rows
        sums += summary(robot, robot_rows, list(variants))

    write_json(
        args.out,
        {
            **record,
            "what": "stand up on the band, then stand alone, G1 and H1 on both their models, 2/5 ms steps, PD every "
            "step or held, command gaps 0/20/50 ms; at 5 ms, 30/50 % of commands lost at random with the torque held "
            "or PD every step (parkour_sim.standup.stand_up_trial)",
            "seeds": args.seeds,
            "only": args.only,
            "before_stand_kd": BEFORE_KD,
            "old_stand_kd": OLD_KD,
            "h1_stiffened_stand_gains": {part: list(g) for part, g in H1_STIFFENED.items()},
            "rows": rows,
            "run_s": round(time.perf_counter() - started, 1),
            "summary": sums,
        },
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
