"""Run one bundle, ours or imported, in our MuJoCo on each model of its robot, and report how it walked.

Every run is the whole simulated graph under ``parkour sim`` with the same scripted walk (stand up,
activate on the band, release it, 0.5 m/s, 1.0 m/s, a turning walk, a stop) and its bag. The report,
DIR/sim_to_sim.json and DIR/sim_to_sim.md (and DIR/sim_to_sim.png, the paths and forward speeds), gives
per robot model: falls, velocity and yaw-rate tracking per commanded segment, the joints' margins to
their position, speed and torque limits while the bundle was in command, every supervisor transition
with its cause and every clamp; and beside them what the bundle's manifest claims (what it was trained
with, its command ranges, what an import verified and assumed). A policy that walks in its trainer and
falls or drifts here shows it before a robot does. The runs stay in RUNS (default DIR/runs/<model>).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from parkour_bringup.sim_to_sim import DURATION_S, REPORT, sim_to_sim
from parkour_core.paths import repo_root
from parkour_core.robots import ROBOTS

HELP = "run a bundle under the scripted walk on each robot model and report falls, tracking, margins, interventions"

MAX_DURATION_S = 600.0


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="bundle folder or registered name")
    p.add_argument("--out", type=Path, default=None, help="report folder (default runs/sim_to_sim/<bundle name>)")
    p.add_argument("--runs", type=Path, default=None, help="where the sim runs go (default OUT/runs)")
    p.add_argument(
        "--robot", choices=sorted(ROBOTS), default=None, help="the robot (default: the one the bundle's manifest names)"
    )
    p.add_argument(
        "--robot-models", default="",
        help="comma-separated MuJoCo models of the robot (default: all; G1: holosoma,mjlab; H1: unitree,simplified)",
    )  # fmt: skip
    p.add_argument("--duration", type=float, default=DURATION_S, help=f"sim seconds per run (default {DURATION_S:g})")


def robot_models(robot: str, given: str) -> list[str]:
    """The models asked for, each checked by name (default: every model the robot has)."""
    from parkour_core.robots import get_robot
    from parkour_sim.models import MODELS, robot_model

    spec = get_robot(robot)
    names = [n.strip() for n in given.split(",") if n.strip()] if given else []
    if not names:
        return [robot_model(spec).name, *MODELS.get(robot, {})]
    for name in names:
        try:
            robot_model(spec, name)
        except ValueError as e:
            raise ValueError(f"--robot-models {name}: {e}") from None
    return list(dict.fromkeys(names))


def run(args: argparse.Namespace) -> int:
    from parkour_core.bundle import MANIFEST, BundleError
    from parkour_core.bundles import resolve_bundle, verify_bundle
    from parkour_core.provenance import provenance
    from parkour_core.robots import get_robot

    if not 0.0 < args.duration <= MAX_DURATION_S:
        raise ValueError(f"--duration {args.duration:g}: sim seconds per run must be in (0, {MAX_DURATION_S:g}]")
    try:
        path = resolve_bundle(args.bundle)
        manifest = json.loads((path / MANIFEST).read_text()) if (path / MANIFEST).is_file() else {}
        robot = args.robot or manifest.get("robot") or "g1"
        bundle, _ = verify_bundle(args.bundle, get_robot(robot) if robot in ROBOTS else None)
    except (BundleError, ValueError, OSError) as e:  # each names the bundle
        raise ValueError(str(e)) from None
    spec = bundle.robot
    models = robot_models(spec.name, args.robot_models)
    out = (args.out or repo_root() / "runs" / "sim_to_sim" / bundle.manifest.name).resolve()
    if (out / f"{REPORT}.json").exists():
        raise FileExistsError(f"{out / f'{REPORT}.json'} exists: pick a new --out, or remove it")
    print(f"parkour sim-to-sim: {bundle.manifest.name} ({path}) on the {spec.name}'s models {', '.join(models)}, "
          f"{args.duration:g} s each", flush=True)  # fmt: skip
    result = sim_to_sim(
        args.bundle,
        out,
        spec,
        models,
        runs_dir=args.runs.resolve() if args.runs else None,
        duration_s=args.duration,
        manifest=manifest,
        provenance=provenance(),
        progress=lambda line: print(f"parkour sim-to-sim: {line}", flush=True),
    )
    for model, r in result["runs"].items():
        print(f"parkour sim-to-sim: {model}: {summary_line(r)}", flush=True)
    print(f"parkour sim-to-sim: wrote {out / f'{REPORT}.json'}, {REPORT}.md and {REPORT}.png")
    return 0


def summary_line(run: dict) -> str:
    """One run's headline: fall, tracking, the tightest joint margins and the supervisor's interventions."""
    w, m, i = run["walk"], run["margins"] or {}, run["interventions"]
    tight = m.get("tightest") or {}
    pos, tq = tight.get("position"), tight.get("torque")
    speed = f"{w['speed_rms_error_mps']:.3f}" if w["speed_rms_error_mps"] is not None else "-"
    yaw = f"{w['yaw_rate_rms_error']:.3f}" if w["yaw_rate_rms_error"] is not None else "-"
    parts = [
        f"fell at {w['fell_at_s']:.1f} s" if w["fell"] else "did not fall",
        f"speed RMS error {speed} m/s",
        f"yaw-rate RMS error {yaw} rad/s",
        f"nearest joint limit {pos['position_margin_rad']:.3f} rad ({pos['joint']})" if pos else "no joint states",
        f"peak torque {tq['peak_torque_of_limit']:.0%} of its actuator limit ({tq['joint']})" if tq else "",
        f"{len(i['by_supervisor'])} supervisor interventions, {i['limit_clamps']} targets clamped",
    ]
    return ", ".join(p for p in parts if p)
