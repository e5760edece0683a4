"""Bags: `parkour bag record|info|replay`.

record   records every stack topic of a running graph (a robot, or a sim started elsewhere) into an MCAP bag in the
         rosbag2 layout (metadata.yaml + .mcap), until Ctrl-C or --duration.
info     prints a bag's topics, message counts and metadata (robot, bundle, manifest hash, commit).
replay   --bundle B: feeds the bag's recorded policy inputs through bundle B (open loop) and reports the per-joint
         action divergence from the recorded actions (p50, p99, max, first tick over --threshold; --out DIR writes
         DIR/divergence.json). The recorded bundle gives zero. --control shift-depth|shuffle-depth|drop-reset: a
         negative control, a deliberate error (each tick sees the previous frame, the frames shuffled, the
         activation's runner reset skipped) under which a bundle that uses its depth and memory must diverge.
         --sim: closed loop: re-drives the simulated robot with the bag's operator requests, velocity commands and
         gamepad presence (--depth-from-bag: the recorded depth frames, not the simulated camera) at --rate times the
         recorded rate into the run folder --out DIR (its own bag included); writes DIR/divergence.json and .png.
         A bad bag (missing, unfinished, truncated, corrupt, another robot, missing topics) is refused with one
         line and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from parkour_bringup.bag.open_loop import CONTROLS, DEFAULT_THRESHOLD, replay_against_bundle
from parkour_bringup.bag.reader import open_bag
from parkour_core.stats import write_json

HELP = "record bags, inspect them, replay them against a bundle"


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("record", "info", "replay"))
    p.add_argument("bag", type=Path, help="bag folder (record: created; it must not exist)")
    p.add_argument("--config", type=Path, default=None, help="record: stack config (default config/g1_robot.yaml)")
    p.add_argument("--ros-domain-id", type=int, default=None, help="record: the graph's ROS_DOMAIN_ID")
    p.add_argument("--duration", type=float, default=None, help="record: seconds to record (default: until Ctrl-C)")
    p.add_argument("--use-sim-time", action="store_true", help="record: stamp messages on /clock (a sim graph)")
    p.add_argument("--namespace", default="/", help="record: the graph's ROS namespace (parkour sim --namespace)")
    p.add_argument(
        "--bundle", default=None, help="replay: bundle to run open loop on the recorded inputs (--sim: instead of "
        "the bag's bundle)"
    )  # fmt: skip
    p.add_argument("--sim", action="store_true", help="replay: closed loop in simulation")
    p.add_argument("--rate", type=float, default=1.0, help="replay --sim: speed vs the recorded rate (sim/wall)")
    p.add_argument("--depth-from-bag", action="store_true", help="replay --sim: publish the recorded depth frames")
    p.add_argument("--domain", type=int, default=None, help="replay --sim: Unitree DDS domain (default: random)")
    p.add_argument("--out", type=Path, default=None, help="replay: folder for divergence.json (--sim: the run folder)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, help="replay: action divergence to flag")
    p.add_argument(
        "--control", choices=CONTROLS, default=None,
        help="replay --bundle: a negative control (a deliberate error the replay must show as divergence)",
    )  # fmt: skip
    p.add_argument(
        "--fail-above", type=float, default=None, help="replay: exit 3 if the max action divergence exceeds this"
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "record":
        return _record(args)
    if args.action == "info":
        return _info(args)
    return _replay(args)


def _record(args: argparse.Namespace) -> int:
    from parkour_bringup.graph import ros_env
    from parkour_core.interfaces import namespace, namespace_args, node
    from parkour_core.paths import config_dir

    bag = args.bag.resolve()
    if bag.exists():
        raise ValueError(f"{bag} exists; a recording never overwrites a bag (choose another folder)")
    config = args.config or config_dir() / "g1_robot.yaml"
    cmd = [sys.executable, "-m", node("recorder").module, "--config", str(config), "--bag", str(bag)]
    ros_args = namespace_args(namespace(args.namespace)) + (["-p", "use_sim_time:=true"] if args.use_sim_time else [])
    if ros_args:
        cmd += ["--ros-args", *ros_args]
    proc = subprocess.Popen(cmd, env=ros_env(args.ros_domain_id))
    try:
        if args.duration is None:
            proc.wait()
        else:
            deadline = time.monotonic() + args.duration
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
    except KeyboardInterrupt:
        pass  # the recorder got the same SIGINT; wait for it to close the bag
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(f"the recorder exited with code {proc.returncode}")
    print(f"parkour bag: wrote {bag}")
    return 0


def _info(args: argparse.Namespace) -> int:
    with open_bag(args.bag) as bag:
        bag.verify()  # every record read: a damaged bag is refused, saying where, not summarised from its metadata
        meta = {k: v for k, v in bag.custom_data.items() if k != "config"}
        print(json.dumps({"bag": str(bag.path), "metadata": meta, "topics": bag.topics}, indent=2))
    return 0


def _replay(args: argparse.Namespace) -> int:
    if args.sim:
        return _replay_sim(args)
    if args.bundle is None:
        raise ValueError("replay needs --bundle B (open loop against a model)")
    with open_bag(args.bag) as bag:
        result = replay_against_bundle(bag, args.bundle, args.threshold, control=args.control)
    keys = (
        "bundle_name",
        "control",
        "ticks_compared",
        "ticks_out_of_sync",
        "action_divergence",
        "first_tick_over_threshold",
    )
    summary = {k: result[k] for k in keys}
    print(json.dumps(summary))
    if args.out is not None:
        out = args.out.resolve()
        write_json(out / "divergence.json", result)
        print(f"parkour bag: wrote {out / 'divergence.json'}")
    worst = result["action_divergence"]["max"]
    if args.fail_above is not None and worst > args.fail_above:
        print(f"parkour bag: max action divergence {worst:.4g} exceeds --fail-above {args.fail_above}", file=sys.stderr)
        return 3
    return 0


def _replay_sim(args: argparse.Namespace) -> int:
    """`replay --sim`: re-simulate the bag's run into a `parkour sim` run folder, with its own bag.

    The folder's divergence.json holds the base trajectory, yaw and joint-state divergence on the
    recorded timeline and both mode sequences; divergence.png plots the paths.
    """
    from parkour_bringup.bag.closed_loop import run_closed_loop

    if not 0.05 <= args.rate <= 100.0:
        raise ValueError(f"--rate {args.rate} is out of range: 0.05..100 (1 = the recorded rate)")
    out = (args.out or _default_out(args.bag)).resolve()
    result = run_closed_loop(
        args.bag, out, rate=args.rate, depth_from_bag=args.depth_from_bag, bundle=args.bundle,
        dds_domain=args.domain, ros_domain_id=args.ros_domain_id,
    )  # fmt: skip
    keys = ("base_planar_m", "base_yaw_rad", "joint_position_rad", "compared_s")
    summary = {k: result.get(k) for k in keys}
    summary["same_mode_sequence"] = result["modes"]["same_sequence"]
    print(json.dumps(summary))
    print(f"parkour bag: wrote {out / 'divergence.json'}")
    return 0


def _default_out(bag: Path) -> Path:
    import datetime

    from parkour_core.paths import repo_root

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return repo_root() / "runs" / f"replay-{Path(bag).name}-{stamp}"
