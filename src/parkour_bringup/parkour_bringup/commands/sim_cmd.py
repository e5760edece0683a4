"""Run the whole graph on the simulated robot: bridge + supervisor + policy + scripted commands.

With ``--teleop keyboard|gamepad|joy`` an operator drives instead of the script (teleop_node);
the keyboard reads this terminal, the other nodes log into the run folder. Writes report.json,
PNG plots and every node's log into the run folder.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import shutil
from pathlib import Path

import yaml

from parkour_bringup.graph import run_sim_graph
from parkour_bringup.report import write_report
from parkour_bringup.swap_report import write_swap_report
from parkour_core.config import load_config
from parkour_core.paths import config_dir, repo_root

HELP = "run the graph in MuJoCo and write a report"


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=None, help="stack config (default config/g1_sim.yaml)")
    p.add_argument("--out", type=Path, default=None, help="run folder (default runs/<timestamp>)")
    p.add_argument("--duration", type=float, default=None, help="sim seconds (default run.duration_s)")
    p.add_argument("--scene", default=None, help="scene name under sim/scenes (default bridge.scene)")
    p.add_argument("--bundle", default=None, help="bundle name or folder (default policy.bundle)")
    p.add_argument("--domain", type=int, default=None, help="Unitree DDS domain (default dds.domain)")
    p.add_argument("--ros-domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: random 100-199)")
    p.add_argument("--viewer", action="store_true", help="open the MuJoCo viewer (needs a display)")
    p.add_argument("--no-bag", action="store_true", help="do not record the run's topics to DIR/bag")
    p.add_argument(
        "--teleop",
        choices=("keyboard", "gamepad", "joy"),
        default=None,
        help="drive interactively instead of the scripted demo: keyboard (this terminal), gamepad (evdev, "
        "teleop.device), joy (a joy node publishing teleop.joy_topic); default duration then 1 h, Ctrl-C quits",
    )


TELEOP_DURATION_S = 3600.0  # interactive runs end when the operator quits


def run(args: argparse.Namespace) -> int:
    config_path = args.config or config_dir() / "g1_sim.yaml"
    teleop = getattr(args, "teleop", None)
    if teleop is not None and args.duration is None:
        args.duration = TELEOP_DURATION_S
    overrides = {
        k: v
        for k, v in {
            "bridge.scene": args.scene,
            "policy.bundle": args.bundle,
            "dds.domain": args.domain,
            "run.duration_s": args.duration,
        }.items()
        if v is not None
    }
    cfg = load_config(config_path, overrides)
    if cfg.mode != "sim":
        raise ValueError(f"{config_path} has mode {cfg.mode!r}; `parkour sim` needs a sim config")
    if teleop == "gamepad":
        _check_gamepad(cfg.teleop.device)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = (args.out or repo_root() / "runs" / stamp).resolve()
    if run_dir.exists():
        # A rerun into the same folder replaces that run: its ready marks and its bag (the recorder
        # itself never overwrites a bag).
        shutil.rmtree(run_dir / "ready", ignore_errors=True)
        shutil.rmtree(run_dir / "bag", ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    # The nodes read exactly what ran: the config with overrides applied, saved in the run folder.
    merged = yaml.safe_load(Path(config_path).read_text()) or {}
    for dotted, value in overrides.items():
        section, key = dotted.split(".")
        merged.setdefault(section, {})[key] = value
    run_config = run_dir / "config.yaml"
    run_config.write_text(yaml.safe_dump(merged, sort_keys=False))
    ros_domain_id = args.ros_domain_id if args.ros_domain_id is not None else random.randint(100, 199)
    print(
        f"parkour sim: {cfg.run.duration_s:.1f} s of sim time, scene {cfg.bridge.scene}, bundle {cfg.policy.bundle}, "
        f"ROS_DOMAIN_ID {ros_domain_id} (parkour model swap --ros-domain-id {ros_domain_id} <bundle>)"
    )
    run_sim_graph(
        run_config, run_dir, cfg.run.duration_s, ros_domain_id, args.viewer, teleop=teleop, record=not args.no_bag
    )
    if teleop is not None:
        # The report plots the commanded velocity from script.json; here the operator commanded.
        shutil.copyfile(run_dir / "teleop.json", run_dir / "script.json")
    report = write_report(run_dir)
    write_swap_report(run_dir)
    summary = {
        k: report[k] for k in ("fell", "distance_m", "mean_speed_mps", "policy_period_ms", "sim_real_time_factor")
    }
    print(json.dumps(summary))
    print(f"parkour sim: wrote {run_dir / 'report.json'}")
    return 0


def _check_gamepad(device: str) -> None:
    """Fail before the graph starts, with the reason, where no gamepad can be opened."""
    from parkour_teleop.readers import GamepadUnavailable, open_evdev_device

    try:
        open_evdev_device(device).close()
    except GamepadUnavailable as e:
        raise SystemExit(f"parkour sim --teleop gamepad: {e}") from None
