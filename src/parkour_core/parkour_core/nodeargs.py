"""Command-line arguments every node takes: the stack config file and the run folder."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from parkour_core.config import ConfigError, StackConfig, load_config


@dataclass
class NodeArgs:
    config: StackConfig
    config_path: Path
    run_dir: Path | None
    live: bool
    ros_args: list[str]


def parse_node_args(description: str, argv: list[str] | None) -> NodeArgs:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", type=Path, required=True, help="stack config YAML (config/*.yaml)")
    parser.add_argument("--run-dir", type=Path, default=None, help="folder for this node's metrics JSON")
    parser.add_argument("--live", action="store_true", help="robot mode: write rt/lowcmd (default: dry run)")
    # From launch files (domain:=N iface:=IF); empty: the config's.
    parser.add_argument("--domain", default="", help="Unitree DDS domain over the config's dds.domain")
    parser.add_argument("--iface", default="", help="network interface over the config's dds.interface")
    args, ros_args = parser.parse_known_args(argv)
    overrides: dict[str, object] = {"dds.interface": args.iface} if args.iface else {}
    if args.domain != "":
        try:
            overrides["dds.domain"] = int(args.domain)
        except ValueError:
            raise SystemExit(f"{parser.prog}: --domain must be an integer, got {args.domain!r}") from None
    try:
        config = load_config(args.config, overrides)
    except ConfigError as e:
        # Nothing has started yet: no command was sent, so the robot is as it was.
        raise SystemExit(f"{parser.prog}: bad config: {e}") from None
    return NodeArgs(config, args.config, args.run_dir, args.live, ros_args)


def mark_ready(run_dir: Path | None, node_name: str) -> None:
    """Tell the bringup this node finished its setup (it starts the simulator only then)."""
    if run_dir is not None:
        ready = run_dir / "ready"
        ready.mkdir(parents=True, exist_ok=True)
        (ready / node_name).touch()
