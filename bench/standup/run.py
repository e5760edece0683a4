"""Stand-up success on the peers a G1 may meet, the stand gains of this tree beside the old ones.

Each trial is parkour_sim.standup.stand_up_trial: the supervisor's own core (config/g1_robot.yaml)
hangs the robot damped for 1 s, stands it up on the elastic band, holds the stand 1 s, releases it
and must keep it standing 3 s on its own; any move to DAMP or a fall fails it. Peers: both G1
models x 2 and 5 ms physics steps x the PD torque every step or held from command to command
(Unitree's simulators) x command gaps of 0, 20 and 50 ms every 0.5 s (their phase drawn per seed);
and, held at 5 ms steps, 30 % and 50 % of the commands lost at random (a controller the host starves).
"before" is the stand damping not bounded for commands lost at random (knees kd 10, shoulder yaw
and elbows 2, wrists 0.3); "old" not bounded for held torque at all (ankles kd 10, wrists 2, hip yaw
7.5, waist roll and pitch 10). Both are given as supervisor.stand_gains.

    .venv/bin/python bench/standup/run.py        # writes bench/results/standup.json
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from parkour_core.config import load_config
from parkour_core.paths import config_dir, repo_root
from parkour_core.provenance import provenance
from parkour_core.robots import G1
from parkour_core.stats import write_json
from parkour_sim.standup import Peer, stand_up_trial

BEFORE_KD = {"knee": 10.0, "shoulder_yaw": 2.0, "elbow": 2.0, "wrist": 0.3}
OLD_KD = {"ankle": 10.0, "wrist": 2.0, "hip_yaw": 7.5, "waist_roll": 10.0, "waist_pitch": 10.0, "knee": 10.0,
          "shoulder_yaw": 2.0, "elbow": 2.0}  # fmt: skip
GAPS_S = (0.0, 0.02, 0.05)
LOST_FRACTIONS = (0.3, 0.5)
SUMMARY_KEYS = (("stood_up_on_band", "stand-up on the band"), ("stood_alone", "standing alone after release"))


def kd_gains(kd_by_part: dict[str, float]) -> dict[str, list[float]]:
    gains = {}
    for j in G1.joints:
        for part, kd in kd_by_part.items():
            if part in j.name:
                gains[j.name] = [j.kp_stand, kd]
    return gains


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=repo_root() / "bench" / "results" / "standup.json")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    record = provenance()
    cfg = load_config(config_dir() / "g1_robot.yaml")
    variants = {
        name: replace(cfg, supervisor=replace(cfg.supervisor, stand_gains=kd_gains(kd))) if kd else cfg
        for name, kd in (("now", {}), ("before", BEFORE_KD), ("old", OLD_KD))
    }
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    grid = itertools.product(("", "mjlab"), (0.002, 0.005), ("every_step", "on_command"), GAPS_S)
    peers = [Peer(dt, law, model, gap) for model, dt, law, gap in grid]
    peers += [Peer(0.005, "on_command", model, lost_fraction=f) for model in ("", "mjlab") for f in LOST_FRACTIONS]
    for peer in peers:
        row: dict[str, Any] = {"peer": peer.label(), "robot_model": peer.robot_model or "holosoma",
                               "physics_dt_s": peer.physics_dt_s, "pd_law": peer.pd_law, "gap_s": peer.gap_s,
                               "lost_fraction": peer.lost_fraction}  # fmt: skip
        for name, variant in variants.items():
            trials = [stand_up_trial(variant, peer, seed, release=True) for seed in range(args.seeds)]
            row[name] = {
                "stood_up_on_band": sum(t["stood_on_band"] for t in trials),
                "stood_alone": sum(bool(t["stood_alone"]) for t in trials),
                "trials": len(trials),
                "failures": sorted({t["damped"] or ("fell" if t["fell"] else "") for t in trials} - {""}),
            }
        rows.append(row)
        print(f"{peer.label()}: " + ", ".join(f"{name} {row[name]['stood_up_on_band']}/{row[name]['stood_alone']}"
                                             for name in variants), flush=True)  # fmt: skip

    def total(name: str, key: str, subset: list[dict[str, Any]]) -> str:
        return f"{sum(r[name][key] for r in subset)}/{sum(r[name]['trials'] for r in subset)}"

    gap_rows = [r for r in rows if not r["lost_fraction"]]
    lost_rows = [r for r in rows if r["lost_fraction"]]

    write_json(
        args.out,
        {
            **record,
            "what": "stand up on the band, then stand alone, on both G1 models, 2/5 ms steps, PD every step or held, "
            "command gaps 0/20/50 ms, 30/50 % of commands lost at random (parkour_sim.standup.stand_up_trial)",
            "seeds": args.seeds,
            "before_stand_kd": BEFORE_KD,
            "old_stand_kd": OLD_KD,
            "rows": rows,
            "run_s": round(time.perf_counter() - started, 1),
            "summary": [
                {"what": f"{label}, {name} stand gains{part}", "ours": total(name, key, subset)}
                for part, subset in (("", gap_rows), (", commands lost at random", lost_rows))
                for key, label in SUMMARY_KEYS
                for name in variants
            ],
        },
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
