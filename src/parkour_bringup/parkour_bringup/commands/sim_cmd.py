"""Run the whole graph on the simulated robot: bridge + supervisor + policy + scripted commands.

``--robot g1|h1`` picks ``config/<robot>_sim.yaml``. A config without a policy (``policy.bundle: ''``,
the H1 today) runs bridge + supervisor + script only and reports the stand (height, tilt, modes).
With ``--teleop keyboard|gamepad|joy`` an operator drives instead of the script (teleop_node);
the keyboard reads this terminal, the other nodes log into the run folder. Writes report.json,
PNG plots, every node's log and, rendered from the run's recorded states once the graph has stopped,
filmstrip.png (and run.mp4 where ffmpeg is on PATH; --no-render skips both) into the run folder.
With ``--namespace NS`` every node, topic, service and the simulator's clock are NS's: two simulated
robots share a ROS domain, each under its namespace and on a Unitree DDS domain of its own (--domain).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from parkour_bringup.graph import run_sim_graph, write_run_config
from parkour_bringup.report import write_report
from parkour_bringup.swap_report import write_swap_report
from parkour_core.config import ConfigError, ScriptConfig, StackConfig, load_config, parse, yaml_error_line
from parkour_core.domains import claim_domains
from parkour_core.interfaces import namespace
from parkour_core.paths import config_dir, repo_root
from parkour_core.stats import write_json

HELP = "run the graph in MuJoCo and write a report"


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--robot", choices=("g1", "h1"), default=None, help="robot (default: the config's, else g1)")
    p.add_argument("--config", type=Path, default=None, help="stack config (default config/<robot>_sim.yaml)")
    p.add_argument("--out", type=Path, default=None, help="run folder (default runs/<timestamp>)")
    p.add_argument("--duration", type=float, default=None, help="sim seconds (default run.duration_s)")
    p.add_argument("--scene", default=None, help="scene name under sim/scenes (default bridge.scene)")
    p.add_argument("--bundle", default=None, help="bundle name or folder (default policy.bundle)")
    p.add_argument(
        "--robot-model", default=None, help="the robot's MuJoCo model (default bridge.robot_model; G1: holosoma, mjlab)"
    )
    p.add_argument("--script", type=Path, default=None, help="YAML file of script steps (default script.steps)")
    p.add_argument("--domain", type=int, default=None, help="Unitree DDS domain (default dds.domain)")
    p.add_argument(
        "--ros-domain-id", type=int, default=None,
        help="ROS_DOMAIN_ID (default: one no other graph on this machine uses, in 100-199)",
    )  # fmt: skip
    p.add_argument(
        "--namespace", default="/",
        help="ROS namespace of every node and topic (default: the root); robots that share a ROS domain each "
        "take their own, and their own --domain",
    )  # fmt: skip
    p.add_argument("--viewer", action="store_true", help="open the MuJoCo viewer (needs a display)")
    p.add_argument("--no-bag", action="store_true", help="do not record the run's topics to DIR/bag")
    p.add_argument("--no-render", action="store_true", help="no filmstrip.png or run.mp4 of the run")
    p.add_argument(
        "--teleop",
        choices=("keyboard", "gamepad", "joy"),
        default=None,
        help="drive interactively instead of the scripted demo: keyboard (this terminal), gamepad (evdev, "
        "teleop.device), joy (a joy node publishing teleop.joy_topic); default duration then 1 h, Ctrl-C quits",
    )


TELEOP_DURATION_S = 3600.0  # interactive runs end when the operator quits


def run(args: argparse.Namespace) -> int:
    robot = getattr(args, "robot", None)
    config_path = args.config or config_dir() / f"{robot or 'g1'}_sim.yaml"
    ns = namespace(getattr(args, "namespace", "/"))
    teleop = getattr(args, "teleop", None)
    if teleop is not None and args.duration is None:
        args.duration = TELEOP_DURATION_S
    overrides = {
        k: v
        for k, v in {
            "bridge.scene": args.scene,
            "policy.bundle": args.bundle,
            "bridge.robot_model": args.robot_model,
            "script.steps": _script_steps(args.script) if args.script else None,
            "dds.domain": args.domain,
            "run.duration_s": args.duration,
        }.items()
        if v is not None
    }
    cfg = load_config(config_path, overrides)
    if cfg.mode != "sim":
        raise ValueError(f"{config_path} has mode {cfg.mode!r}; `parkour sim` needs a sim config")
    if cfg.bridge.peer == "unitree_sim":
        raise ValueError(
            f"{config_path}: bridge.peer unitree_sim sends lowstate without a tick, and parkour sim's nodes age "
            "lowstate by it; run the bridge as a stand-in and parkour robot --iface lo (--sim-clock on sim time) "
            "against it, or set bridge.peer: stack"
        )
    if robot is not None and cfg.robot != robot:
        raise ValueError(f"{config_path} is a {cfg.robot} config, not {robot}; drop --robot or --config")
    if teleop == "gamepad":
        _check_gamepad(cfg.teleop.device)
    if teleop == "keyboard" and not _stdin_is_terminal():
        raise ValueError(
            "--teleop keyboard reads the keys from this terminal, and stdin is not a terminal; run it in one, "
            "or drive with --teleop gamepad or --teleop joy"
        )
    _check_what_the_nodes_load(cfg, config_path, args)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = (args.out or repo_root() / "runs" / stamp).resolve()
    if run_dir.exists():
        # A rerun into the same folder replaces that run: its ready marks and its bag (the recorder
        # itself never overwrites a bag).
        shutil.rmtree(run_dir / "ready", ignore_errors=True)
        shutil.rmtree(run_dir / "bag", ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    # What ran, validated once above: the run's record (the nodes get their params file from the same cfg).
    run_config = write_run_config(cfg, run_dir)
    # Held while the graph runs, so that graphs started meanwhile (the tests') choose other domains.
    domains = claim_domains(cfg.dds.domain, args.ros_domain_id)
    swap = f"--ros-domain-id {domains.ros}" + (f" --namespace {ns}" if ns != "/" else "")
    print(
        f"parkour sim: {cfg.robot}, {cfg.run.duration_s:.1f} s of sim time, scene {cfg.bridge.scene}, "
        f"bundle {cfg.policy.bundle or '(none: no policy node)'}, DDS domain {domains.dds}, "
        f"ROS_DOMAIN_ID {domains.ros}{f', namespace {ns}' if ns != '/' else ''} "
        f"(parkour model swap {swap} <bundle>)"
    )
    run_sim_graph(
        run_config,
        run_dir,
        cfg.run.duration_s,
        domains.ros,
        args.viewer,
        teleop=teleop,
        record=not args.no_bag,
        namespace=ns,
        cfg=cfg,
    )
    if teleop is not None:
        # The report plots the commanded velocity from script.json; here the operator commanded.
        shutil.copyfile(run_dir / "teleop.json", run_dir / "script.json")
    if not cfg.policy.bundle:
        report = write_stand_report(run_dir)
        keys: tuple[str, ...] = ("fell_at_s", "modes", "base_height_m", "sim_real_time_factor")
    else:
        report = write_report(run_dir)
        write_swap_report(run_dir)
        keys = ("fell", "final_mode", "distance_m", "mean_speed_mps", "policy_period_ms", "sim_real_time_factor")
    if getattr(args, "no_render", False):
        report["render"] = {"filmstrip": None, "mp4": None, "skipped": "--no-render"}
    else:
        report["render"] = render_pictures(run_dir)
        print(f"parkour sim: {render_line(report['render'])}", flush=True)
    write_json(run_dir / "report.json", report)
    summary = {k: report[k] for k in keys}
    print(json.dumps(summary))
    for line in box_lines(report.get("boxes", [])):
        print(f"parkour sim: {line}")
    print(f"parkour sim: wrote {run_dir / 'report.json'}")
    return 0


RENDER_TIMEOUT_S = 600.0


def render_pictures(run_dir: Path) -> dict[str, Any]:
    """filmstrip.png, and run.mp4 where ffmpeg is, from the bridge's trajectory.npz (parkour_sim.render).

    In a process of its own: an offscreen GL context that fails, hangs or crashes costs the pictures,
    not the run or its report. What was written, or why nothing was, goes into report.json.
    """
    env = {**os.environ}
    env.setdefault("MUJOCO_GL", "egl")  # offscreen without a display
    cmd = [sys.executable, "-m", "parkour_sim.render", str(run_dir)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=RENDER_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return {"filmstrip": None, "mp4": None, "error": f"rendering took over {RENDER_TIMEOUT_S:.0f} s"}
    if done.returncode == 0:
        try:
            return json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            pass
    lines = done.stderr.strip().splitlines()
    reason = lines[-1] if lines else f"the renderer exited with code {done.returncode}"
    return {"filmstrip": None, "mp4": None, "error": reason}


def render_line(render: dict[str, Any]) -> str:
    if render.get("error"):
        return f"no pictures of the run (the report has the rest): {render['error']}"
    written = ", ".join(name for name in (render.get("filmstrip"), render.get("mp4")) if name)
    skipped = f"; no MP4: {render['mp4_skipped']}" if render.get("mp4_skipped") else ""
    return f"rendered {written} in {render.get('wall_s', 0.0):.1f} s{skipped}"


def box_lines(boxes: list[dict[str, Any]]) -> list[str]:
    """The scene's boxes the robot came to, each cleared or not and how far it got."""
    lines = []
    for b in boxes:
        if not b["reached"]:
            continue
        if b["cleared"]:
            verdict = f"cleared at {b['cleared_at_s']:.1f} s"
        else:
            verdict = "NOT cleared: " + ("got on top, did not get off" if b["on_top"] else "did not get on top")
        lines.append(f"{b['box']} ({b['height_m'] * 100:.0f} cm), reached at {b['reached_at_s']:.1f} s: {verdict}")
    unreached = [f"{b['box']} ({b['height_m'] * 100:.0f} cm)" for b in boxes if not b["reached"]]
    if unreached:
        lines.append("not reached: " + ", ".join(unreached))
    return lines


def _script_steps(path: Path) -> list:
    """A script file: ``steps:`` as in a config's ``script`` section, checked here so that a bad step
    names the script file (load_config would name the stack config the steps are put into)."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"--script {path}: {e}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"--script {yaml_error_line(path, e)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ValueError(f"--script {path}: expected a mapping with a list under 'steps' (see sim/scripts/)")
    try:
        parse(ScriptConfig, {"steps": data["steps"]})
    except ConfigError as e:
        raise ValueError(f"--script {path}: {e}") from None
    return data["steps"]


def _stdin_is_terminal() -> bool:
    """Whether file descriptor 0, which the keyboard teleop node inherits, is a terminal."""
    try:
        return os.isatty(0)
    except OSError:
        return False


def _check_what_the_nodes_load(cfg: StackConfig, config_path: Path, args: argparse.Namespace) -> None:
    """Refuse, before a run folder or a node exists, what the bridge or the policy node would refuse at
    startup: the robot model, the scene, and the bundle (resolved, loaded for this robot and run as the
    policy node does; `parkour model verify` checks with the same function). Each names where it came from."""
    from parkour_core.bundle import BundleError
    from parkour_core.bundles import verify_bundle
    from parkour_core.inference import ProviderError, choose_providers
    from parkour_core.robots import get_robot
    from parkour_sim.models import robot_model
    from parkour_sim.scene import load_scene_file

    def source(option: str, given: object, key: str) -> str:
        return f"{option} {given}" if given is not None else f"{config_path}: {key}"

    spec = get_robot(cfg.robot)
    try:
        robot_model(spec, cfg.bridge.robot_model)
    except ValueError as e:
        raise ValueError(f"{source('--robot-model', args.robot_model, 'bridge.robot_model')}: {e}") from None
    load_scene_file(cfg.bridge.scene)  # its errors name the scene file
    try:
        choose_providers(cfg.policy.providers)
    except ProviderError as e:
        raise ValueError(f"{config_path}: {e}") from None
    if cfg.policy.bundle:
        try:
            verify_bundle(cfg.policy.bundle, spec)
        except (BundleError, ValueError, OSError) as e:
            raise ValueError(f"{source('--bundle', args.bundle, 'policy.bundle')}: {e}") from None


def write_stand_report(run_dir: Path) -> dict[str, Any]:
    """report.json of a run without a policy: the supervisor's modes and how the robot stood."""
    bridge = json.loads((run_dir / "bridge.json").read_text())
    sup = json.loads((run_dir / "supervisor.json").read_text())
    traj = bridge["trajectory"]
    t, z, tilt = (np.array(traj[k]) for k in ("t", "z", "tilt"))
    transitions = sup["supervisor_transitions"]
    released = bridge["band_released_at_s"]
    # On the floor and held by the supervisor: from the band's release until it left STAND or was hung again.
    ends = [tr["t"] for tr in transitions if tr["from"] == "STAND" and released and tr["t"] > released]
    end = min([*ends, *(bridge.get("band_hung_at_s") or [])], default=float("inf"))
    standing = (t >= released) & (t < end) if released is not None else np.zeros(len(t), dtype=bool)

    def stats(x: np.ndarray) -> dict[str, float] | None:
        if not len(x):
            return None
        return {k: round(float(f(x)), 4) for k, f in (("min", np.min), ("mean", np.mean), ("max", np.max))}

    report = {
        "robot": yaml.safe_load((run_dir / "config.yaml").read_text()).get("robot"),
        "fell": bool(bridge["fell"]),
        "fell_at_s": bridge["fell_at_s"],
        "modes": [transitions[0]["from"], *(tr["to"] for tr in transitions)] if transitions else [sup["final_mode"]],
        "supervisor_transitions": transitions,
        "final_mode": sup["final_mode"],
        "band_released_at_s": released,
        "standing_s": round(float(t[standing][-1] - t[standing][0]), 3) if standing.sum() > 1 else 0.0,
        "base_height_m": stats(z[standing]),
        "tilt_rad": stats(tilt[standing]),
        "lowstate_age_ms": {k: sup["lowstate_age_ms"][k] for k in ("p50", "p99")},
        "limit_clamps": sup["limit_clamps"],
        "lowcmd_limit_violations": bridge.get("lowcmd_limit_violations"),
        "lowstate_sent": bridge["lowstate_sent"],
        "lowcmd_received": bridge["lowcmd_received"],
        "sim_real_time_factor": round(bridge["sim_real_time_factor"], 3) if bridge["sim_real_time_factor"] else None,
        "sim_time_s": round(bridge["sim_time_s"], 3),
        "scene": bridge["scene"],
        "bundle": None,
    }
    write_json(run_dir / "report.json", report)
    return report


def _check_gamepad(device: str) -> None:
    """Fail before the graph starts, with the reason, where no gamepad can be opened."""
    from parkour_teleop.readers import GamepadUnavailable, open_evdev_device

    try:
        open_evdev_device(device).close()
    except GamepadUnavailable as e:
        raise SystemExit(f"parkour sim --teleop gamepad: {e}") from None
