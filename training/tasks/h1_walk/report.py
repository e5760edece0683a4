"""How far an h1_walk run got: its training curve, its bundle in the training env, its scripted walk in the graph.

    python -m training.tasks.h1_walk.report --run runs/h1_walk --sim runs/h1_walk_sim \\
        --out results/training/h1_walk/h1_walk.json

- **training**: the budget, iterations and env-steps, and the curve's first and last 50 iterations
  (episode length, share of episodes ended by a fall, planar speed error);
- **in the training env**: the bundle through parkour_core's ``PolicyRunner`` on ``ROBOTS`` H1s (nominal
  physics, no pushes) commanded 0.5 m/s for ``EVAL_S``, at the trained step and at 2 ms: falls, forward
  speed and gait (``--bundle DIR`` alone writes only these);
- **in the graph**: ``parkour sim --robot h1 --bundle RUN/bundle --script sim/scripts/h1_walk.yaml``'s
  report.json: falls, distance and the verdict (:func:`verdict`). ``--script-run SIM_DIR`` alone writes
  that walk's metrics (``parkour sim-to-sim``'s) and, per commanded segment after the band's release
  (the free stands too), the base's path, displacement and lowest height.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.provenance import provenance
from parkour_core.stats import write_json

ROBOTS = 32
EVAL_S = 10.0
EVAL_COMMAND = (0.5, 0.0, 0.0)
WINDOW = 50  # iterations at each end of the curve
SCRIPT_WALK_M = 5.0  # sim/scripts/h1_walk.yaml: 0.5 m/s for 10 s between two 20 s free stands, then a turn
WALKS_FRACTION = 0.5  # of the scripted walk's distance, without a fall
STEPS_M = 0.5  # moved this far forward: it stepped


def verdict(sim: dict[str, Any]) -> str:
    """falls (before moving), stands (ACTIVE, no fall, in place), steps (moved STEPS_M forward), walks."""
    moved = float(sim.get("forward_displacement_m") or 0.0)
    if not sim["fell"] and moved >= WALKS_FRACTION * SCRIPT_WALK_M:
        return "walks"
    if moved >= STEPS_M:
        return "steps"
    return "falls" if sim["fell"] else "stands"


def curve_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def window(part: list[dict[str, Any]]) -> dict[str, float]:
        keys = ("episode_length_s", "fell_fraction", "refused_fraction", "speed_error_mps", "forward_speed_mps",
                "episode_return")  # fmt: skip
        return {k: round(float(np.nanmean([r.get(k, np.nan) for r in part])), 4) for k in keys}

    return {"first_iterations": window(rows[:WINDOW]), "last_iterations": window(rows[-WINDOW:])}


def in_training_env(bundle_dir: Path, seed: int = 0, physics_dt_s: float | None = None) -> dict[str, Any]:
    """The bundle on ROBOTS training-env H1s at EVAL_COMMAND for EVAL_S (PolicyRunner per robot), nominal
    physics, at the bundle's physics step (or ``physics_dt_s``): falls, speed, and how it steps."""
    from parkour_core.bundle import load_bundle
    from parkour_core.runner import PolicyRunner, RobotState
    from training.motion_matching import quat
    from training.tasks.h1_walk.config import nominal_config
    from training.tasks.h1_walk.env import H1WalkEnv
    from training.tasks.h1_walk.rewards import swinging

    bundle = load_bundle(bundle_dir)
    m = bundle.manifest
    vx, vy, yaw_rate = EVAL_COMMAND
    cfg = nominal_config({
        "env.num_envs": ROBOTS, "run.seed": seed, "env.episode_length_s": EVAL_S + 1.0,
        "env.physics_dt_s": physics_dt_s or float(m.provenance.get("physics_dt_s", 0.005)),
        "velocity.gait_period_s": float(m.gait_period_s or 0.8), "velocity.push_interval_s": 1e9,
        "velocity.vx": [vx, vx], "velocity.vy": [vy, vy], "velocity.yaw_rate": [yaw_rate, yaw_rate],
        "velocity.zero_fraction": 0.0,
    })  # fmt: skip
    env = H1WalkEnv(cfg)
    runners = [PolicyRunner(bundle) for _ in range(ROBOTS)]
    fell = np.zeros(ROBOTS, dtype=bool)
    start = env.sim.root_pos[:, :2].copy()
    yaw0 = quat.yaw(env.sim.root_quat)
    heading = np.stack([np.cos(yaw0), np.sin(yaw0)], axis=-1)
    contact, swing, height, slip, yaw, torso = [], [], [], [], [], []
    torso_joint = env.robot.joint_names.index("torso_joint")
    try:
        for _ in range(round(EVAL_S / env.dt_s)):
            st = env.state()
            actions = np.zeros((ROBOTS, env.num_actions))
            for i, runner in enumerate(runners):
                targets = runner.step(RobotState(st.q[i], st.dq[i], st.root_quat[i], st.base_ang_vel[i]),
                                      np.asarray(EVAL_COMMAND))  # fmt: skip
                actions[i] = (targets - env.default_q) / m.action_scale
            swing.append(swinging(env.gait.phase))  # the phase this action was chosen on
            _, _, _, info = env.step(actions)
            fell |= info["fell"] | info["refused"]  # a fallen robot is reset by the env and counted as fallen
            after = env.state()
            contact.append(after.foot_contact)
            height.append(after.foot_height_m)
            slip.append(np.linalg.norm(after.foot_vel_xy, axis=-1))
            yaw.append(after.base_ang_vel[:, 2])
            torso.append(after.q[:, torso_joint] - env.default_q[torso_joint])
        forward = np.sum((env.sim.root_pos[:, :2] - start) * heading, axis=-1)
    finally:
        env.close()
    up = ~fell
    if not up.any():
        return {"robots": ROBOTS, "seconds": EVAL_S, "command": list(EVAL_COMMAND), "physics_dt_s": cfg.physics_dt_s,
                "fell": int(fell.sum()), "forward_speed_mps_of_those_up": None}  # fmt: skip
    c, w, h = np.array(contact)[:, up], np.array(swing)[:, up], np.array(height)[:, up]
    touchdowns = np.sum(c[1:] & ~c[:-1]) / (2 * up.sum() * EVAL_S)
    return {
        "robots": ROBOTS,
        "seconds": EVAL_S,
        "command": list(EVAL_COMMAND),
        "physics_dt_s": cfg.physics_dt_s,
        "fell": int(fell.sum()),
        "forward_speed_mps_of_those_up": round(float(np.mean(forward[up]) / EVAL_S), 3),
        "gait_of_those_up": {
            "touchdowns_per_foot_s": round(float(touchdowns), 2),
            "clock_touchdowns_per_foot_s": round(1.0 / cfg.gait_period_s, 2),
            "contact_matches_clock": round(float(np.mean(c == ~w)), 3),
            "both_feet_down": round(float(np.mean(c.all(axis=-1))), 3),
            "swing_sole_height_p90_m": round(float(np.percentile(h[w], 90)), 3),
            "stance_sole_speed_mps": round(float(np.mean(np.array(slip)[:, up][c])), 3),
            "yaw_rate_rms_radps": round(float(np.sqrt(np.mean(np.array(yaw)[:, up] ** 2))), 3),
            "torso_offset_rms_rad": round(float(np.sqrt(np.mean(np.array(torso)[:, up] ** 2))), 3),
        },
    }


def script_segments(bridge: dict[str, Any], script: dict[str, Any]) -> list[dict[str, Any]]:
    """Each stretch of one command after the band's release: its command, when, the base's path length in
    it and how far it ended from where it began (m), and its lowest base height (m), up to a fall."""
    tr = bridge["trajectory"]
    t, x, y, z = (np.asarray(tr[k], dtype=np.float64) for k in ("t", "x", "y", "z"))
    released = bridge.get("band_released_at_s")
    end = min(float(t[-1]), bridge.get("fell_at_s") or np.inf)
    changes = [(float(e["t"]), tuple(e["cmd"])) for e in script.get("log", []) if "cmd" in e]
    starts = [(released, (0.0, 0.0, 0.0))] if released is not None else []
    for at, cmd in changes:
        if released is not None and at > released and cmd != starts[-1][1]:
            starts.append((at, cmd))
    segments = []
    for (begin, cmd), (stop, _) in zip(starts, [*starts[1:], (end, None)], strict=True):
        if begin >= end:
            break
        inside = (t >= begin) & (t <= min(stop, end))
        path = float(np.hypot(np.diff(x[inside]), np.diff(y[inside])).sum()) if inside.sum() > 1 else 0.0
        lowest = round(float(z[inside].min()), 3) if inside.any() else None
        moved = float(np.hypot(*(np.ptp(v[inside][[0, -1]]) for v in (x, y)))) if inside.any() else 0.0
        segments.append({"command": [round(c, 3) for c in cmd], "from_s": round(begin, 2),
                         "to_s": round(min(stop, end), 2), "path_m": round(path, 3), "moved_m": round(moved, 3),
                         "base_height_min_m": lowest})  # fmt: skip
    return segments


def script_report(sim_dir: Path) -> dict[str, Any]:
    from parkour_bringup.sim_to_sim import load_run, walk_metrics

    bridge, script, report = load_run(sim_dir)
    segments = script_segments(bridge, script)
    walking = [s for s in segments if any(abs(c) > 1e-9 for c in s["command"])]
    return {"sim_run": str(sim_dir), "bundle": report.get("bundle"), "final_mode": report.get("final_mode"),
            "walk_metrics": walk_metrics(bridge, script, report), "segments": segments,
            "walking_path_m": round(sum(s["path_m"] for s in walking), 3),
            "free_stand_path_m": round(sum(s["path_m"] for s in segments if s not in walking), 3),
            "policy_period_ms": report.get("policy_period_ms")}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", type=Path, help="the h1_walk run folder (h1_walk.json, bundle/)")
    p.add_argument("--sim", type=Path, help="the parkour sim run folder of its scripted walk")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--previous", type=Path, help="the report of the run this one continued from (run.init)")
    p.add_argument("--bundle", type=Path, help="only this bundle in the training env, at its step and at 2 ms")
    p.add_argument("--script-run", type=Path, help="only the scripted walk's numbers from this parkour sim run folder")
    args = p.parse_args(argv)
    if args.script_run is not None:
        figures = script_report(args.script_run)
        write_json(args.out, {**provenance(), **figures})
        print(
            json.dumps(
                {k: figures[k] for k in ("walking_path_m", "free_stand_path_m")} | {"segments": figures["segments"]}
            )
        )
        return 0
    if args.bundle is not None:
        figures = {"bundle": str(args.bundle), "in_training_env": in_training_env(args.bundle),
                   "in_training_env_2ms": in_training_env(args.bundle, physics_dt_s=0.002)}  # fmt: skip
        write_json(args.out, {**provenance(), **figures})
        print(json.dumps(figures))
        return 0
    if args.run is None or args.sim is None:
        p.error("--run and --sim (or --bundle)")
    run = json.loads((args.run / "h1_walk.json").read_text())
    sim = json.loads((args.sim / "report.json").read_text())
    rows = run["iterations"]
    modes = [t["to"] for t in sim["supervisor_transitions"]]
    graph = {
        "command": f"parkour sim --robot h1 --bundle {sim['bundle']} --script sim/scripts/h1_walk.yaml",
        "transitions": [[round(t["t"], 3), t["to"], t["reason"]] for t in sim["supervisor_transitions"]],
        "fell": sim["fell"],
        "fell_at_s": sim["fell_at_s"],
        "active_from_s": sim["active_from_s"],
        "distance_m": sim["distance_m"],
        "forward_displacement_m": sim["forward_displacement_m"],
        "modes": modes,
        "final_mode": sim["final_mode"],
        "sim_time_s": sim["sim_time_s"],
    }
    result = {
        **provenance(),
        "run": str(args.run),
        "training": {
            "config": run["config"],
            "minutes": run["config_values"]["run"]["minutes"],
            "wall_s": run["wall_s"],
            "iterations": len(rows),
            "env_steps": int(run["num_envs"] * run["config_values"]["ppo"]["num_steps_per_env"] * len(rows)),
            "env_steps_per_s_median": round(float(np.median([r["env_steps_per_s"] for r in rows])), 1),
            "parameters": run["parameters"],
            "init": run["config_values"]["run"]["init"] or None,
            **curve_summary(rows),
        },
        "in_training_env": in_training_env(args.run / "bundle"),
        "in_training_env_2ms": in_training_env(args.run / "bundle", physics_dt_s=0.002),
        "in_graph": {**graph, "verdict": verdict(sim)},
        "verdict_rule": f"walks: no fall and >= {WALKS_FRACTION:g} x {SCRIPT_WALK_M:g} m forward; steps: >= "
        f"{STEPS_M:g} m forward; stands: ACTIVE in place without a fall; falls: otherwise",
    }
    if args.previous is not None:
        before = json.loads(args.previous.read_text())["training"]
        result["training"]["previous"] = {"report": str(args.previous), **{k: before[k] for k in (
            "minutes", "iterations", "env_steps")}}  # fmt: skip
    write_json(args.out, result)
    print(json.dumps({"verdict": result["in_graph"]["verdict"], **result["in_training_env"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
