"""Stand-up success on the peers a G1 may meet, the stand gains of this tree beside the old ones.

Each trial is parkour_sim.standup.stand_up_trial: the supervisor's own core (config/g1_robot.yaml)
hangs the robot damped for 1 s, stands it up on the elastic band, holds the stand 1 s, releases it
and must keep it standing 3 s on its own; any move to DAMP or a fall fails it. Peers: both G1
models x 2 and 5 ms physics steps x the PD torque every step or held from command to command
(Unitree's simulators) x command gaps of 0, 20 and 50 ms every 0.5 s (their phase drawn per seed).
"old" is the stand damping before it was bounded for held torque (ankles kd 10, wrists 2, hip yaw
7.5, waist roll and pitch 10), given as supervisor.stand_gains.

    .venv/bin/python bench/standup/run.py        # writes bench/results/standup.json (about 10 min)
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

OLD_KD = {"ankle": 10.0, "wrist": 2.0, "hip_yaw": 7.5, "waist_roll": 10.0, "waist_pitch": 10.0}
GAPS_S = (0.0, 0.02, 0.05)


def old_gains() -> dict[str, list[float]]:
    gains = {}
    for j in G1.joints:
        for part, kd in OLD_KD.items():
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
    variants = {"now": cfg, "old": replace(cfg, supervisor=replace(cfg.supervisor, stand_gains=old_gains()))}
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for model, dt, law, gap in itertools.product(("", "mjlab"), (0.002, 0.005), ("every_step", "on_command"), GAPS_S):
        peer = Peer(dt, law, model, gap)
        row: dict[str, Any] = {"peer": peer.label(), "robot_model": model or "holosoma", "physics_dt_s": dt,
                               "pd_law": law, "gap_s": gap}  # fmt: skip
        for name, variant in variants.items():
            trials = [stand_up_trial(variant, peer, seed, release=True) for seed in range(args.seeds)]
            row[name] = {
                "stood_up_on_band": sum(t["stood_on_band"] for t in trials),
                "stood_alone": sum(bool(t["stood_alone"]) for t in trials),
                "trials": len(trials),
                "failures": sorted({t["damped"] or ("fell" if t["fell"] else "") for t in trials} - {""}),
            }
        rows.append(row)
        print(f"{peer.label()}: now {row['now']['stood_alone']}/{args.seeds}, old {row['old']['stood_alone']}/"
              f"{args.seeds} {row['old']['failures']}", flush=True)  # fmt: skip

    def total(name: str, key: str, rows: list[dict[str, Any]] = rows) -> str:
        return f"{sum(r[name][key] for r in rows)}/{sum(r[name]['trials'] for r in rows)}"

    write_json(
        args.out,
        {
            **record,
            "what": "stand up on the band, then stand alone, on both G1 models, 2/5 ms steps, PD every step or held, "
            "command gaps 0/20/50 ms (parkour_sim.standup.stand_up_trial)",
            "seeds": args.seeds,
            "old_stand_kd": OLD_KD,
            "rows": rows,
            "run_s": round(time.perf_counter() - started, 1),
            "summary": [
                {"what": f"stand-up on the band, {name} stand gains", "ours": total(name, "stood_up_on_band")}
                for name in variants
            ]
            + [
                {"what": f"standing alone after release, {name} stand gains", "ours": total(name, "stood_alone")}
                for name in variants
            ],
        },
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
