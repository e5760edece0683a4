"""Closed-loop replay: re-drive the simulated robot with a bag's command and mode stream.

The bag's operator inputs become a script for the sim graph (``parkour_teleop.script_node``,
:func:`plan_replay`): its requests, velocity commands, the band's changes and the gamepad's presence.
Everything else (stand-up completion, degradations, faults of the robot) is left to emerge from
the re-simulation: that is what the replay checks.

The graph starts at its own pace (DDS discovery takes seconds), so the two runs are aligned on the
operator requests (:func:`time_shift`) and compared on the recorded timeline (:func:`compare_runs`):
base trajectory, yaw, joint positions and the two mode sequences.

Not re-created: faults injected into the recorded run (their services are not recorded), and a live
model swap (the replay runs the bag's configured bundle throughout).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parkour_bringup.bag import messages
from parkour_bringup.bag.reader import BagError, StackBag
from parkour_bringup.bag.topics import (
    BAND_TOPIC,
    BASE_POSE_TOPIC,
    CMD_VEL_TOPIC,
    JOINT_STATES_TOPIC,
    JOY_TOPIC,
    TELEOP_CMD_VEL_TOPIC,
    TRANSITION_TOPIC,
    stamp_s,
)
from parkour_core.command_mux import AUTONOMY, TELEOP
from parkour_core.config import StackConfig
from parkour_core.math3d import yaw_of

# Transition reasons an operator causes, and the script request that causes them again.
REQUEST_FOR_REASON: dict[str, str] = {
    "stand up requested": "stand_up",
    "activate requested": "activate",
    "stand requested": "stand",
    "damp requested": "damp",
    "e-stop from the ROS service": "estop",
    "e-stop from the Unitree remote": "estop",
    "e-stop from the gamepad": "estop",
}
LEAD_S = 0.5  # script time before the first request: the graph's services settle
CMD_CHANGE = 1e-6  # a /cmd_vel differing by less than this from the last step is the same command
GAMEPAD_LOST_AFTER_S = 0.5  # /teleop/joy silent this long before the bag ends: the gamepad went away
# Sim time for the replay's graph to come up before its script starts (DDS discovery), with room to spare.
STARTUP_ALLOWANCE_S = 5.0


@dataclass
class Series:
    t: np.ndarray  # seconds on the bag's clock
    values: np.ndarray  # (len(t), k)

    @staticmethod
    def of(rows: list[tuple[float, Any]], width: int) -> Series:
        rows.sort(key=lambda r: r[0])
        t = np.array([r[0] for r in rows], dtype=np.float64)
        values = np.array([r[1] for r in rows], dtype=np.float64).reshape(len(rows), width)
        return Series(t, values)


@dataclass
class RecordedRun:
    """What a bag says the operator did and the robot did, on the bag's clock."""

    path: Path
    robot: str
    config_text: str
    transitions: list[dict[str, Any]]
    commands: Series  # (vx, vy, yaw rate)
    joy_times: np.ndarray
    band_released_t: float | None
    joint_names: tuple[str, ...]
    joints: Series  # positions
    base: Series | None  # (x, y, z, yaw); None in a robot bag
    end_t: float
    notes: list[str] = field(default_factory=list)
    band_later: list[tuple[float, bool]] = field(default_factory=list)  # (t, released) after the first release


def read_recorded_run(bag: StackBag) -> RecordedRun:
    """The operator's and the robot's streams of a bag, refusing bags a closed-loop replay cannot use."""
    if bag.robot is None:
        raise BagError(f"{bag.path} does not say which robot it recorded (no 'robot' in its custom_data)")
    config_text = bag.custom_data.get("config", "")
    if not config_text:
        raise BagError(f"{bag.path} has no 'config' in its custom_data: a closed-loop replay re-runs that config")
    bag.require_topics([TRANSITION_TOPIC, JOINT_STATES_TOPIC], "a closed-loop replay")
    transitions: list[dict[str, Any]] = []
    commands: list[tuple[float, Any]] = []
    joints: list[tuple[float, Any]] = []
    base: list[tuple[float, Any]] = []
    joy: list[float] = []
    band_changes: list[tuple[float, bool]] = []
    joint_names: tuple[str, ...] = ()
    end_t = 0.0
    topics = [TRANSITION_TOPIC, CMD_VEL_TOPIC, TELEOP_CMD_VEL_TOPIC, JOINT_STATES_TOPIC, BASE_POSE_TOPIC, JOY_TOPIC,
              BAND_TOPIC]  # fmt: skip
    # The command the robot followed: the operator's over autonomy's, as the policy node muxed them.
    mux = StackConfig().command_mux()
    for m in bag.messages(topics):
        log_t = m.log_time_ns * 1e-9
        end_t = max(end_t, log_t)
        if m.topic == TRANSITION_TOPIC:
            try:
                transitions.append(messages.transition(m))
            except ValueError as e:
                raise BagError(f"{bag.path}: {e}") from None
        elif m.topic in (CMD_VEL_TOPIC, TELEOP_CMD_VEL_TOPIC):
            source = TELEOP if m.topic == TELEOP_CMD_VEL_TOPIC else AUTONOMY
            mux.put(source, (m.msg.linear.x, m.msg.linear.y, m.msg.angular.z), log_t)
            commands.append((log_t, tuple(float(v) for v in mux.select(log_t).velocity)))
        elif m.topic == JOINT_STATES_TOPIC:
            if not joint_names:
                joint_names = tuple(m.msg.name)
            joints.append((stamp_s(m.msg.header.stamp.sec, m.msg.header.stamp.nanosec), tuple(m.msg.position)))
        elif m.topic == BASE_POSE_TOPIC:
            p, o = m.msg.pose.position, m.msg.pose.orientation
            t = stamp_s(m.msg.header.stamp.sec, m.msg.header.stamp.nanosec)
            base.append((t, (p.x, p.y, p.z, yaw_of(np.array([o.w, o.x, o.y, o.z])))))
        elif m.topic == JOY_TOPIC:
            joy.append(log_t)
        elif m.topic == BAND_TOPIC:
            try:
                released, t = messages.band(m)
            except ValueError:
                continue  # ground truth the replay can do without: the band is then never released
            band_changes.append((t, released))
    band_changes.sort()
    band_released_t = next((t for t, released in band_changes if released), None)
    band_later = [c for c in band_changes if band_released_t is not None and c[0] > band_released_t]
    # The latched history arrives in one burst when the recorder subscribes: order by the supervisor's t.
    unique = {(r["t"], r["from"], r["to"]): r for r in transitions}
    notes = []
    if not base:
        notes.append(f"no {BASE_POSE_TOPIC} (a robot bag or an older sim bag): the base trajectory is not compared")
    if not commands:
        notes.append(f"no {CMD_VEL_TOPIC}: the replay commands zero velocity throughout")
    return RecordedRun(
        path=bag.path,
        robot=bag.robot,
        config_text=config_text,
        transitions=sorted(unique.values(), key=lambda r: r["t"]),
        commands=Series.of(commands, 3),
        joy_times=np.array(sorted(joy)),
        band_released_t=band_released_t,
        joint_names=joint_names,
        joints=Series.of(joints, len(joint_names)),
        base=Series.of(base, 4) if base else None,
        end_t=end_t,
        notes=notes,
        band_later=band_later,
    )


def operator_requests(transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transitions an operator caused, each with the request that causes it again."""
    return [{**t, "request": REQUEST_FOR_REASON[t["reason"]]} for t in transitions if t["reason"] in REQUEST_FOR_REASON]


def mode_at(transitions: list[dict[str, Any]], t: float) -> str:
    """The supervisor's mode at time ``t`` of a run (DAMP before its first transition)."""
    mode = "DAMP"
    for record in transitions:
        if record["t"] > t:
            break
        mode = record["to"]
    return mode


@dataclass
class ReplayPlan:
    steps: list[dict[str, Any]]  # script.steps of the replay's config
    publish_joy: bool
    anchor_t: float  # the recorded time of the first operator request (script time LEAD_S)
    requests: list[dict[str, Any]]
    duration_s: float  # sim seconds the replay runs


def plan_replay(run: RecordedRun) -> ReplayPlan:
    """The script that re-creates the run's operator inputs (pure: a bag's streams in, steps out).

    Every transition an operator caused (stand up, activate, stand, damp, e-stop) becomes the same
    request, waiting for the mode it was made in; every change of the velocity command (``/cmd_vel`` and
    the operator's ``/cmd_vel/teleop``, muxed as the policy node muxes them) a velocity step; the
    elastic band is released, and hung again, when the bag's ``/sim/band`` says it was (a robot bag:
    released when the robot first stood). A gamepad that was connected is connected again, and lost
    where it was lost.
    """
    requests = operator_requests(run.transitions)
    if not requests:
        raise BagError(
            f"{run.path}: no operator request in its {TRANSITION_TOPIC} (the robot never left DAMP): nothing to replay"
        )
    anchor = requests[0]["t"]

    def at(t: float) -> float:
        return round(max(0.0, LEAD_S + float(t) - anchor), 4)

    steps: list[dict[str, Any]] = [
        {"at_s": at(r["t"]), "request": r["request"], "in_mode": r["from"]} for r in requests
    ]
    release_t = run.band_released_t
    release_mode = mode_at(run.transitions, release_t) if release_t is not None else ""
    if release_t is None:
        # A robot stands on the ground: release the band once the replayed robot first stands.
        stood = next((t for t in run.transitions if t["to"] == "STAND"), None)
        release_t, release_mode = (stood["t"], "STAND") if stood else (anchor, "")
    steps.append(
        {"at_s": at(release_t), "request": "release_band", **({"in_mode": release_mode} if release_mode else {})}
    )
    for t, released in run.band_later:
        request = "release_band" if released else "hang_band"
        steps.append({"at_s": at(t), "request": request, "in_mode": mode_at(run.transitions, t)})
    last: np.ndarray | None = None
    cmd_steps: list[dict[str, Any]] = []
    for t, cmd in zip(run.commands.t, run.commands.values, strict=True):
        if last is not None and np.max(np.abs(cmd - last)) < CMD_CHANGE:
            continue
        step = {"at_s": at(t), "cmd": [float(v) for v in cmd]}
        if cmd_steps and cmd_steps[-1]["at_s"] == step["at_s"]:
            cmd_steps[-1] = step  # commands before the anchor collapse into the newest one
        else:
            cmd_steps.append(step)
        last = cmd
    steps += cmd_steps
    publish_joy = len(run.joy_times) > 0
    if publish_joy and run.end_t - run.joy_times[-1] > GAMEPAD_LOST_AFTER_S:
        steps.append({"at_s": at(float(run.joy_times[-1])), "request": "gamepad_lost"})
    steps.sort(key=lambda s: s["at_s"])  # stable: at equal times requests keep their recorded order
    duration = STARTUP_ALLOWANCE_S + LEAD_S + (run.end_t - anchor)
    return ReplayPlan(steps, publish_joy, anchor, requests, duration)


def replay_config(run: RecordedRun, plan: ReplayPlan, rate: float, depth_from_bag: bool) -> dict[str, Any]:
    """The recorded config with the replay's script, rate and camera."""
    import yaml

    config = yaml.safe_load(run.config_text) or {}
    if config.get("mode") != "sim":
        # A robot bag: run the same stack on the simulated robot.
        config["mode"] = "sim"
    config["script"] = {"steps": plan.steps, "publish_joy": plan.publish_joy}
    config.setdefault("bridge", {})["real_time_factor"] = rate
    config.setdefault("run", {})["duration_s"] = round(plan.duration_s, 3)
    config.setdefault("sim_camera", {})["enabled"] = not depth_from_bag
    return config


def time_shift(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> tuple[Callable, list[dict]]:
    """Recorded time -> replay time, anchored on the operator requests both runs made, in order.

    From each operator request on, replay time = recorded time + (replayed request time - recorded
    request time); before the first request the robot hangs damped in both runs. A request the replay
    did not reproduce (its mode was never reached) ends the pairing there.
    """
    pairs = []
    for rec, rep in zip(recorded, replayed, strict=False):
        if rec["request"] != rep["request"]:
            break
        pairs.append({"request": rec["request"], "recorded_t": rec["t"], "replayed_t": rep["t"],
                      "shift_s": round(rep["t"] - rec["t"], 4)})  # fmt: skip
    if not pairs:
        raise BagError("the replay made none of the recorded operator requests: nothing to align on")
    anchors = np.array([p["recorded_t"] for p in pairs])
    shifts = np.array([p["replayed_t"] - p["recorded_t"] for p in pairs])

    def shift(t: np.ndarray) -> np.ndarray:
        index = np.clip(np.searchsorted(anchors, t, side="right") - 1, 0, len(anchors) - 1)
        return np.asarray(t, dtype=np.float64) + shifts[index]

    return shift, pairs


def _summary(values: np.ndarray) -> dict[str, float | None]:
    if values.size == 0:
        return {"p50": None, "p99": None, "max": None, "final": None}
    return {
        "p50": float(np.percentile(values, 50)),
        "p99": float(np.percentile(values, 99)),
        "max": float(values.max()),
        "final": float(values[-1]),
    }


def resample(series: Series, t: np.ndarray, unwrap_column: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``series`` at times ``t`` (linear), and which of ``t`` lie inside its span."""
    inside = (t >= series.t[0]) & (t <= series.t[-1]) if len(series.t) else np.zeros(len(t), dtype=bool)
    values = series.values.copy()
    if unwrap_column is not None:
        values[:, unwrap_column] = np.unwrap(values[:, unwrap_column])
    out = np.stack([np.interp(t, series.t, values[:, j]) for j in range(values.shape[1])], axis=1)
    return out, inside


def compare_runs(recorded: RecordedRun, replayed: RecordedRun, threshold_m: float = 0.1) -> dict[str, Any]:
    """Divergence of the replayed run from the recorded one, on the recorded timeline.

    Compared: the base trajectory (``/sim/base_pose``, in sim bags only: a robot has no ground truth;
    its bags compare joint states), base yaw and every joint's position (``/robot/joint_states``), and
    the two mode sequences.
    """
    rec_requests = operator_requests(recorded.transitions)
    rep_requests = operator_requests(replayed.transitions)
    shift, pairs = time_shift(rec_requests, rep_requests)
    start = rec_requests[0]["t"]
    # The replay runs on past the recorded span (its graph may come up later): compare within that span.
    replay_end = float(shift(np.array([recorded.end_t]))[0])
    replayed_modes = [t for t in replayed.transitions if t["t"] <= replay_end]
    result: dict[str, Any] = {
        "alignment": pairs,
        "modes": {
            "recorded": [_mode_row(t) for t in recorded.transitions],
            "replayed": [_mode_row(t, shift_back=pairs[-1]["shift_s"]) for t in replayed_modes],
            "same_sequence": [(t["from"], t["to"]) for t in recorded.transitions]
            == [(t["from"], t["to"]) for t in replayed_modes],
        },
        "notes": list(recorded.notes),
    }
    if recorded.joint_names != replayed.joint_names:
        raise BagError(f"{replayed.path}: its joint states name other joints than {recorded.path}")
    keep = recorded.joints.t >= start
    t_rec = recorded.joints.t[keep]
    q_rep, inside = resample(replayed.joints, shift(t_rec))
    err = np.abs(q_rep[inside] - recorded.joints.values[keep][inside])
    result["compared_s"] = float(t_rec[inside][-1] - t_rec[inside][0]) if inside.any() else 0.0
    result["joint_position_rad"] = _summary(err.max(axis=1) if err.size else err)
    result["per_joint_rad"] = {n: _summary(err[:, j]) for j, n in enumerate(recorded.joint_names)} if err.size else {}
    result["base_position_m"] = None
    result["base_yaw_rad"] = None
    if recorded.base is not None and replayed.base is not None:
        keep = recorded.base.t >= start
        t_rec = recorded.base.t[keep]
        rec = recorded.base.values[keep]
        rec[:, 3] = np.unwrap(rec[:, 3])
        rep, inside = resample(replayed.base, shift(t_rec), unwrap_column=3)
        rec, rep, t_in = rec[inside], rep[inside], t_rec[inside]
        planar = np.linalg.norm(rep[:, :2] - rec[:, :2], axis=1)
        yaw = np.abs((rep[:, 3] - rec[:, 3] + np.pi) % (2 * np.pi) - np.pi)
        result["base_position_m"] = _summary(np.linalg.norm(rep[:, :3] - rec[:, :3], axis=1))
        result["base_planar_m"] = _summary(planar)
        result["base_yaw_rad"] = _summary(yaw)
        over = np.flatnonzero(planar > threshold_m)
        result["threshold_m"] = threshold_m
        result["first_over_threshold_s"] = float(t_in[over[0]] - start) if len(over) else None
        result["distance_m"] = {
            "recorded": float(np.linalg.norm(rec[-1, :2] - rec[0, :2])) if len(rec) else None,
            "replayed": float(np.linalg.norm(rep[-1, :2] - rep[0, :2])) if len(rep) else None,
        }
        result["_paths"] = {
            "t": (t_in - start).tolist(),
            "recorded": rec[:, :2].tolist(),
            "replayed": rep[:, :2].tolist(),
            "planar_error_m": planar.tolist(),
        }
    return result


def _mode_row(t: dict[str, Any], shift_back: float = 0.0) -> dict[str, Any]:
    return {"t": round(t["t"] - shift_back, 4), "from": t["from"], "to": t["to"], "reason": t["reason"]}


def plot_divergence(paths: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec, rep = np.array(paths["recorded"]), np.array(paths["replayed"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    if len(rec):
        axes[0].plot(rec[:, 0], rec[:, 1], label="recorded", lw=2)
        axes[0].plot(rep[:, 0], rep[:, 1], label="re-simulated", lw=1.5, ls="--")
    axes[0].set_aspect("equal", adjustable="datalim")
    axes[0].set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    axes[0].set_title("Base path from above")
    axes[0].legend()
    axes[1].plot(paths["t"], paths["planar_error_m"])
    axes[1].set_xlabel("time since the first operator request (s)")
    axes[1].set_ylabel("planar base divergence (m)")
    axes[1].set_title("Recorded vs re-simulated")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


# Sections that define how the stack behaves: a robot bag's replay runs them on the robot's sim config.
BEHAVIOUR_SECTIONS = ("policy", "supervisor", "depth", "teleop")
PLAN_FILE = "replay_plan.json"


def _base_config(run: RecordedRun) -> dict[str, Any]:
    import yaml

    from parkour_core.paths import config_dir

    recorded = yaml.safe_load(run.config_text) or {}
    if recorded.get("mode") == "sim":
        return recorded
    sim_file = config_dir() / f"{run.robot}_sim.yaml"
    if not sim_file.is_file():
        raise BagError(f"{run.path} was recorded on a {run.robot}, which has no simulation config ({sim_file})")
    config = yaml.safe_load(sim_file.read_text()) or {}
    for section in BEHAVIOUR_SECTIONS:
        if section in recorded:
            config[section] = recorded[section]
    return config


def run_closed_loop(
    bag_path: Path,
    out: Path,
    rate: float = 1.0,
    depth_from_bag: bool = False,
    bundle: str | None = None,
    dds_domain: int | None = None,
    ros_domain_id: int | None = None,
) -> dict[str, Any]:
    """Re-simulate the bag's run into the run folder ``out`` and write ``out/divergence.json``.

    Everything is checked before anything is written: a bad bag, a robot without a simulation, a
    bundle that is missing or made for another robot, an ``out`` that already holds something.
    """
    import tempfile

    import yaml

    from parkour_bringup.bag.reader import open_bag
    from parkour_bringup.bag.topics import DEPTH_TOPIC
    from parkour_bringup.graph import run_sim_graph
    from parkour_bringup.report import write_report
    from parkour_core.bundle import BundleError, load_bundle
    from parkour_core.bundles import resolve_bundle
    from parkour_core.config import load_config
    from parkour_core.domains import claim_domains
    from parkour_core.robots import get_robot
    from parkour_core.stats import write_json

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BagError(f"{out} exists and is not empty; a replay never overwrites a run (choose another --out)")
    with open_bag(bag_path) as bag:
        recorded = read_recorded_run(bag)
        if depth_from_bag:
            bag.require_topics([DEPTH_TOPIC], "--depth-from-bag")
    try:
        spec = get_robot(recorded.robot)
    except ValueError as e:
        raise BagError(f"{recorded.path}: {e}") from None
    plan = plan_replay(recorded)
    config = _base_config(recorded)
    config.update({k: v for k, v in replay_config(recorded, plan, rate, depth_from_bag).items() if k in
                   ("script", "bridge", "run", "sim_camera", "mode")})  # fmt: skip
    if bundle is not None:
        config.setdefault("policy", {})["bundle"] = bundle
    domains = claim_domains(dds_domain, ros_domain_id)  # held while this replay runs
    config.setdefault("dds", {})["domain"] = domains.dds
    config.setdefault("faults", {})["enabled"] = False
    text = yaml.safe_dump(config, sort_keys=False)
    with tempfile.TemporaryDirectory() as scratch:
        check = Path(scratch) / "config.yaml"
        check.write_text(text)
        try:
            cfg = load_config(check)
        except Exception as e:
            raise BagError(f"{recorded.path}: its config does not load with this version of the stack: {e}") from None
    try:
        load_bundle(resolve_bundle(cfg.policy.bundle), robot=spec)
    except (BundleError, ValueError) as e:
        raise BagError(f"bundle {cfg.policy.bundle!r}: {e} (pass --bundle B to replay with another)") from None

    out.mkdir(parents=True, exist_ok=True)
    config_path = out / "config.yaml"
    config_path.write_text(text)
    write_json(out / PLAN_FILE, {"bag": str(recorded.path), "anchor_t": plan.anchor_t, "lead_s": LEAD_S,
                                 "requests": plan.requests, "steps": plan.steps})  # fmt: skip
    extra: tuple[tuple[str, list[str]], ...] = ()
    if depth_from_bag:
        extra = (("depth_player", ["--bag", str(recorded.path), "--plan", str(out / PLAN_FILE)]),)
    velocity_steps = sum("cmd" in s for s in plan.steps)
    depth_source = "the bag" if depth_from_bag else "the simulated camera"
    print(f"parkour bag: re-simulating {recorded.path.name} ({len(plan.requests)} operator requests, "
          f"{velocity_steps} velocity steps) into {out}, {cfg.run.duration_s:.1f} s of sim time, "
          f"rate {rate:g}, depth from {depth_source}", flush=True)  # fmt: skip
    run_sim_graph(config_path, out, cfg.run.duration_s, domains.ros, record=True, extra_nodes=extra, cfg=cfg)
    write_report(out)
    with open_bag(out / "bag") as replay_bag:
        replayed = read_recorded_run(replay_bag)
    result = compare_runs(recorded, replayed)
    paths = result.pop("_paths", None)
    result = {
        "bag": str(recorded.path),
        "replay_run": str(out),
        "replay_bag": str(out / "bag"),
        "bundle": cfg.policy.bundle,
        "rate": rate,
        "depth_source": "bag" if depth_from_bag else "simulated camera",
        **result,
    }
    if paths is not None:
        result["plot"] = plot_divergence(paths, out / "divergence.png").name
    write_json(out / "divergence.json", result)
    return result
