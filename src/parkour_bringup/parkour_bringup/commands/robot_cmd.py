"""Run the graph on a real robot (supervisor + policy). Dry run unless --live.

The operator's procedure, from the gantry (chords: config/g1_robot.yaml's defaults):
  1. Hang the robot on the gantry, feet clear of the ground. Power it on and release its built-in
     locomotion service (MotionSwitcher; on a G1 the remote's L2+R2 enters debug mode).
  2. Dry run: parkour robot --robot g1 --iface eth0 --domain 0, and watch /supervisor/lowcmd_dry_run (nothing
     reaches rt/lowcmd; without rt/lowstate the supervisor says so every 5 s, naming the domain and the interface:
     check that the robot is on and that --iface is the port wired to it). Then the same with --live.
  3. Stand up on the gantry:  remote L1+Up,  gamepad Start+A   (STAND_UP, then STAND)
  4. Activate on the gantry:  remote R1+A,   gamepad Start+Y   (ACTIVE: the policy steps in place)
  5. Lower the gantry until the feet carry the robot, then unhook it.
  6. Walk: the gamepad's sticks, or /cmd_vel from any other node while nobody holds a stick.
  7. Stop walking: remote R1+X, gamepad Start+X (STAND). Hook it back on the gantry, then Damp: gamepad Back+B.
     E-stop at any time: remote L2+B, gamepad LB+RB (DAMP: the motors only resist motion).
Never release the robot in STAND to activate it on the ground: a stand is a PD pose, not a balance controller.
"""

from __future__ import annotations

import argparse
import datetime
import socket
from pathlib import Path

from parkour_bringup.graph import run_robot_graph, write_run_config
from parkour_core.config import load_config
from parkour_core.interfaces import namespace
from parkour_core.paths import config_dir, repo_root

HELP = "run supervisor + policy against a real robot (dry run unless --live)"


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--robot", default="g1", choices=("g1", "h1"))
    p.add_argument("--iface", required=True, help="network interface on the robot's network, e.g. eth0")
    p.add_argument(
        "--domain", type=int, default=None,
        help="Unitree DDS domain (default: the config's dds.domain; the robots use 0, Unitree's simulators 1)",
    )  # fmt: skip
    p.add_argument("--config", type=Path, default=None, help="stack config (default config/<robot>_robot.yaml)")
    p.add_argument("--live", action="store_true", help="write rt/lowcmd (default: dry run)")
    p.add_argument("--out", type=Path, default=None, help="run folder (default runs/robot-<timestamp>)")
    p.add_argument("--namespace", default="/", help="ROS namespace of every node and topic (default: the root)")
    p.add_argument(
        "--sim-clock", action="store_true",
        help="follow the /clock of a simulator standing in for the robot (bridge.clock: sim), not the wall clock",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    config_path = args.config or config_dir() / f"{args.robot}_robot.yaml"
    ns = namespace(getattr(args, "namespace", "/"))
    overrides: dict[str, object] = {"dds.interface": args.iface}
    if args.domain is not None:
        overrides["dds.domain"] = args.domain
    cfg = load_config(config_path, overrides)
    if cfg.robot != args.robot:
        raise ValueError(
            f"{config_path} is a config for the {cfg.robot}, not the {args.robot}; pass the right --config"
        )
    if cfg.mode != "robot":
        raise ValueError(f"{config_path} has mode {cfg.mode!r}; `parkour robot` needs a robot config")
    check_interface(args.iface)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = (args.out or repo_root() / "runs" / f"robot-{stamp}").resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    run_config = write_run_config(cfg, run_dir)  # validated once above; the nodes' params file comes from cfg
    clock = ", on the simulator's /clock" if args.sim_clock else ""
    print(f"parkour robot: {args.robot} on {args.iface}, DDS domain {cfg.dds.domain}, "
          f"{'LIVE: writing rt/lowcmd' if args.live else 'dry run'}{clock}")  # fmt: skip
    run_robot_graph(run_config, run_dir, args.live, sim_clock=args.sim_clock, namespace=ns, cfg=cfg)
    return 0


def check_interface(name: str) -> None:
    """Refuse, before any node starts, an --iface this machine does not have: Cyclone DDS would only say
    so in the supervisor's log, under a traceback ending in the SDK's `channel factory init error`."""
    names = [n for _, n in socket.if_nameindex()]
    if name not in names:
        raise ValueError(
            f"--iface {name}: no such network interface here; this machine has {', '.join(names) or 'none'} "
            "(the one wired to the robot; lo for a simulator on this machine)"
        )
