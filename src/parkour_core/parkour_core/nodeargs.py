"""Command-line arguments every node takes: where its config comes from, and the run folder.

``--params FILE``: a ROS params file (the bringup writes one per graph from the user's stack YAML,
validated once there). The node runs on its own section of it, and rclpy is given the same file, so
the node's declared parameters start from these values. ``--config FILE``: a stack YAML (``ros2 launch``,
a node started by hand); the node takes only its own keys from it, exactly what a params file would give.
Either way the node's config holds its declared keys and defaults elsewhere (``parkour_core.params``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from parkour_core import params
from parkour_core.config import ConfigError, StackConfig, load_config


@dataclass
class NodeArgs:
    config: StackConfig  # the node's config: its own keys (``node_key``'s parameters), defaults elsewhere
    config_path: Path | None  # the stack YAML given with --config, if one was (a recorder keeps its text)
    run_dir: Path | None
    live: bool
    ros_args: list[str]  # with ``--params-file FILE`` when --params gave one


def parse_node_args(description: str, argv: list[str] | None, node_key: str | None = None) -> NodeArgs:
    """``node_key``: the node's key in ``parkour_core.params.NODE_PARAMS`` (None: a tool without parameters)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", type=Path, default=None, help="ROS params file (the bringup's params.yaml)")
    parser.add_argument("--config", type=Path, default=None, help="stack config YAML (config/*.yaml)")
    parser.add_argument("--run-dir", type=Path, default=None, help="folder for this node's metrics JSON")
    parser.add_argument("--live", action="store_true", help="robot mode: write rt/lowcmd (default: dry run)")
    # From launch files (domain:=N iface:=IF); empty: the config's.
    parser.add_argument("--domain", default="", help="Unitree DDS domain over the config's dds.domain")
    parser.add_argument("--iface", default="", help="network interface over the config's dds.interface")
    args, ros_args = parser.parse_known_args(argv)
    if args.params is None and args.config is None and node_key is not None:
        parser.error("give --params FILE (a ROS params file) or --config FILE (a stack config)")
    overrides: dict[str, object] = {"dds.interface": args.iface} if args.iface else {}
    if args.domain != "":
        try:
            overrides["dds.domain"] = int(args.domain)
        except ValueError:
            raise SystemExit(f"{parser.prog}: --domain must be an integer, got {args.domain!r}") from None
    try:
        config = _node_config(args.params, args.config, node_key, overrides)
    except ConfigError as e:
        # Nothing has started yet: no command was sent, so the robot is as it was.
        raise SystemExit(f"{parser.prog}: bad config: {e}") from None
    if args.params is not None:
        ros_args = ["--params-file", str(args.params), *ros_args]
    return NodeArgs(config, args.config, args.run_dir, args.live, ros_args)


def _node_config(
    params_path: Path | None, config_path: Path | None, node_key: str | None, overrides: dict[str, object]
) -> StackConfig:
    if node_key is None:
        return load_config(config_path, overrides) if config_path is not None else StackConfig()
    if params_path is None:
        assert config_path is not None
        return params.restrict(load_config(config_path, overrides), node_key)
    cfg = params.read_params_file(params_path, node_key)
    declared = {s.name for s in params.specs(node_key)}
    return params.with_values(cfg, node_key, {k: v for k, v in overrides.items() if k in declared})


def mark_ready(run_dir: Path | None, node_name: str) -> None:
    """Tell the bringup this node finished its setup (it starts the simulator only then)."""
    if run_dir is not None:
        ready = run_dir / "ready"
        ready.mkdir(parents=True, exist_ok=True)
        (ready / node_name).touch()
