"""``parkour eval --graph``: a few trials through the full DDS graph, judged like the in-process ones.

For each cell, the first instance runs as a `parkour sim` run (bridge, supervisor, policy node,
script over DDS) on a scene file holding its box, with the in-process trial's operator script:
stand up, release, activate, command the speed. The bridge's ground-truth trajectory after
activation goes through the same verdict. This checks that the in-process numbers are the graph's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from training.eval.protocol import Instance, Protocol, verdict

STAND_UP_AT_S = 0.2
ACTIVATE_AFTER_S = 3.0  # script time: stand-up (2 s) and settling on the ground


def graph_trial(config: Path, bundle: str, p: Protocol, instance: Instance, run_dir: Path) -> dict[str, Any]:
    from parkour_bringup.graph import run_sim_graph
    from parkour_core.domains import claim_domains

    run_dir.mkdir(parents=True, exist_ok=True)
    scene = run_dir / "scene.yaml"
    scene.write_text(yaml.safe_dump(instance.world(), sort_keys=False))
    data = yaml.safe_load(config.read_text()) or {}
    horizon = p.horizon_s(instance.speed_mps, instance.start_m, len(instance.boxes), 0.0)
    data.setdefault("bridge", {})["scene"] = str(scene)
    data.setdefault("policy", {})["bundle"] = bundle
    domains = claim_domains()  # held while this trial runs
    data.setdefault("dds", {})["domain"] = domains.dds
    data.setdefault("faults", {})["enabled"] = False
    data["script"] = {
        "steps": [
            {"at_s": STAND_UP_AT_S, "request": "stand_up"},
            {"at_s": ACTIVATE_AFTER_S - 0.5, "request": "release_band", "in_mode": "STAND"},
            {"at_s": ACTIVATE_AFTER_S, "request": "activate", "in_mode": "STAND"},
            {"at_s": ACTIVATE_AFTER_S, "cmd": [instance.speed_mps, 0.0, 0.0]},
        ]
    }
    duration = 3.0 + ACTIVATE_AFTER_S + horizon  # graph start-up (sim time before the script starts) included
    data.setdefault("run", {})["duration_s"] = duration
    run_config = run_dir / "config.yaml"
    run_config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_sim_graph(run_config, run_dir, duration, domains.ros)
    domains.release()
    bridge = json.loads((run_dir / "bridge.json").read_text())
    supervisor = json.loads((run_dir / "supervisor.json").read_text())
    transitions = supervisor["supervisor_transitions"]
    active = next((t["t"] for t in transitions if t["to"] == "ACTIVE"), None)
    if active is None:
        return {"outcome": "times_out", "activated": False, "transitions": transitions}
    traj = bridge["trajectory"]
    t = np.array(traj["t"])
    keep = (t >= active) & (t <= active + horizon)
    xy = np.stack([np.array(traj["x"])[keep], np.array(traj["y"])[keep]], axis=1)
    damped = any(tr["to"] == "DAMP" and tr["t"] > active for tr in transitions)
    fell_at = bridge.get("fell_at_s")
    fell = damped or (fell_at is not None and fell_at <= active + horizon)
    outcome, boxes = verdict(p, instance, xy, fell)
    return {
        "outcome": outcome,
        "boxes_cleared": boxes,
        "progress_m": float(xy[:, 0].max()) if len(xy) else 0.0,
        "activated": True,
        "run": str(run_dir),
        "transitions": transitions,
    }
