"""Turn the nodes' metrics files of one run into report.json and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.stats import write_json


def _load(run_dir: Path, name: str) -> dict[str, Any]:
    path = run_dir / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the {name} node did not finish cleanly (see {run_dir}/logs)")
    return json.loads(path.read_text())


def commanded_series(script: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Commanded (vx, vy, yaw rate) against the sim clock, the bridge trajectory's time base."""
    rows = [r for r in script["log"] if "cmd" in r]
    if not rows:
        return np.zeros(0), np.zeros((0, 3))
    t = np.array([r["t"] for r in rows])
    return t, np.array([r["cmd"] for r in rows])


def body_velocity(traj: dict[str, list[float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forward and lateral velocity in the heading frame, and yaw rate, from the ground-truth trajectory."""
    yaw = np.unwrap(np.array(traj["yaw"]))
    vx, vy = np.array(traj["vx"]), np.array(traj["vy"])
    forward = vx * np.cos(yaw) + vy * np.sin(yaw)
    lateral = -vx * np.sin(yaw) + vy * np.cos(yaw)
    t = np.array(traj["t"])
    yaw_rate = np.gradient(yaw, t) if len(t) > 1 else np.zeros_like(t)
    return forward, lateral, yaw_rate


def depth_summary(bridge: dict[str, Any], pol: dict[str, Any]) -> dict[str, Any]:
    """Depth age and rate: where the policy used the frames if it says, else as the bridge published them.

    The policy's ages (now - exposure stamp at use) include waiting for its next tick; the bridge's
    are sim time at publication - stamp, the camera's own latency.
    """
    used = pol.get("depth") or {}
    if used.get("frames"):
        return {
            "depth_age_ms": {k: used["age_ms"].get(k) for k in ("p50", "p99")},
            "depth_fps": used.get("fps"),
            "depth_frames": used["frames"],
            "depth_age_source": "policy",
        }
    camera = bridge.get("camera") or {}
    if camera.get("frames_published"):
        return {
            "depth_age_ms": {k: camera["published_age_ms"][k] for k in ("p50", "p99")},
            "depth_fps": camera["published_fps"],
            "depth_frames": camera["frames_published"],
            "depth_age_source": "bridge",
        }
    return {"depth_age_ms": None, "depth_fps": None, "depth_frames": 0, "depth_age_source": None}


ON_TOP_FRACTION = 0.5  # the base this much of a box's height above its level before it: on the box


def box_crossings(traj: dict[str, list[float]], boxes: list[dict[str, Any]], fell_at_s: float | None) -> list[dict]:
    """Which of a scene's boxes the base went over: for each box, whether the base came over its
    footprint (reached), rose onto it (on_top: half the box's height above the base's height just
    before), and left it across the far side from where it came, on top and before any fall (cleared)."""
    t = np.array(traj["t"])
    xyz = np.stack([traj["x"], traj["y"], traj["z"]], axis=1) if len(t) else np.zeros((0, 3))
    rows = []
    for box in boxes:
        hx, hy, hz = (float(v) for v in box["half_size"])
        yaw = np.deg2rad(float(box.get("yaw_deg", 0.0)))
        rel = xyz[:, :2] - np.asarray(box["pos"][:2], dtype=float)
        local_x = rel[:, 0] * np.cos(yaw) + rel[:, 1] * np.sin(yaw)
        local_y = -rel[:, 0] * np.sin(yaw) + rel[:, 1] * np.cos(yaw)
        over = (np.abs(local_x) <= hx) & (np.abs(local_y) <= hy)
        row: dict[str, Any] = {"box": box.get("name", ""), "height_m": round(2 * hz, 3), "reached": bool(over.any())}
        row.update(reached_at_s=None, on_top=False, cleared=False, cleared_at_s=None)
        if over.any():
            first = int(np.argmax(over))
            row["reached_at_s"] = round(float(t[first]), 3)
            before = xyz[(t >= t[first] - 1.0) & (t < t[first]), 2]
            level = float(np.median(before)) if len(before) else float(xyz[first, 2])
            row["on_top"] = bool(np.any(xyz[over, 2] >= level + ON_TOP_FRACTION * 2 * hz))
            side = np.sign(local_x[first]) or -1.0  # the side it came over from
            last = len(t) - 1 - int(np.argmax(over[::-1]))
            left_far = last + 1 < len(t) and np.sign(local_x[last + 1]) == -side and abs(local_y[last + 1]) <= hy
            if left_far and row["on_top"] and (fell_at_s is None or t[last + 1] < fell_at_s):
                row.update(cleared=True, cleared_at_s=round(float(t[last + 1]), 3))
        rows.append(row)
    return rows


def build_report(run_dir: Path) -> dict[str, Any]:
    bridge, sup, pol, _script = (_load(run_dir, n) for n in ("bridge", "supervisor", "policy", "script"))
    # recorder.json exists when the run was recorded (parkour sim without --no-bag).
    recorder = json.loads((run_dir / "recorder.json").read_text()) if (run_dir / "recorder.json").is_file() else None
    traj = bridge["trajectory"]
    t = np.array(traj["t"])
    xy = np.stack([traj["x"], traj["y"]], axis=1) if len(t) else np.zeros((0, 2))
    activations = [tr["t"] for tr in sup["supervisor_transitions"] if tr["to"] == "ACTIVE"]
    active_from = activations[0] if activations else None
    distance = 0.0
    forward_m = 0.0
    mean_speed = 0.0
    if active_from is not None and len(t) > 1:
        mask = t >= active_from
        seg = xy[mask]
        if len(seg) > 1:
            distance = float(np.sum(np.linalg.norm(np.diff(seg, axis=0), axis=1)))
            heading0 = traj["yaw"][int(np.argmax(mask))]
            forward_m = float(np.dot(seg[-1] - seg[0], [np.cos(heading0), np.sin(heading0)]))
            mean_speed = distance / float(t[mask][-1] - t[mask][0])
    return {
        "fell": bool(bridge["fell"]),
        "fell_at_s": bridge["fell_at_s"],
        "band_released_at_s": bridge.get("band_released_at_s"),
        "band_hung_at_s": bridge.get("band_hung_at_s", []),  # hooked back on after a release
        "distance_m": round(distance, 3),
        "forward_displacement_m": round(forward_m, 3),
        "mean_speed_mps": round(mean_speed, 3),
        "policy_period_ms": {k: pol["policy_period_ms"][k] for k in ("p50", "p99", "max")},
        "policy_period_wall_ms": {k: pol["policy_period_wall_ms"][k] for k in ("p50", "p99", "max")},
        "policy_inference_ms": pol["inference_ms"],
        "deadline_misses": pol["deadline_misses"],
        "lowstate_age_ms": {k: sup["lowstate_age_ms"][k] for k in ("p50", "p99")},
        "sim_real_time_factor": round(bridge["sim_real_time_factor"], 3) if bridge["sim_real_time_factor"] else None,
        "sim_time_s": round(bridge["sim_time_s"], 3),
        "wall_time_s": round(bridge["wall_time_s"], 3),
        "supervisor_transitions": sup["supervisor_transitions"],
        "final_mode": sup["final_mode"],
        "limit_clamps": sup["limit_clamps"],
        "limit_clamps_by_kind": sup.get("limit_clamps_by_kind", {}),
        "time_in_mode_s": sup.get("time_in_mode_s", {}),
        "supervisor_faults": {k: v for k, v in sup.get("faults", {}).items() if v.get("onsets")},
        "lowcmd_limit_violations": bridge.get("lowcmd_limit_violations"),
        "lowstate_sent": bridge["lowstate_sent"],
        "lowcmd_received": bridge["lowcmd_received"],
        "lockstep_waits": bridge["lockstep_waits"],
        "lockstep_wait_wall_s": bridge["lockstep_wait_wall_s"],
        "bundle": pol["bundle"],
        "manifest_verified": pol.get("manifest_verified"),  # False: unsealed; None: not recorded
        "bag": recorder["bag"] if recorder else None,
        "bag_messages": sum(recorder["messages"].values()) if recorder else 0,
        "scene": bridge["scene"],
        "active_from_s": active_from,
        **depth_summary(bridge, pol),
        "boxes": box_crossings(traj, _scene_boxes(bridge["scene"]), bridge["fell_at_s"]),
    }


def _scene_boxes(scene: str) -> list[dict[str, Any]]:
    """The boxes of the scene the run's bridge loaded."""
    from parkour_sim.scene import load_scene_file

    return list(load_scene_file(scene).get("boxes", []))


def plot_run(run_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bridge, pol, script = (_load(run_dir, n) for n in ("bridge", "policy", "script"))
    traj = bridge["trajectory"]
    out = []

    fig, ax = plt.subplots(figsize=(6, 6))
    ax.plot(traj["x"], traj["y"], lw=1.5)
    if traj["x"]:
        ax.plot(traj["x"][0], traj["y"][0], "go", label="start")
        ax.plot(traj["x"][-1], traj["y"][-1], "rs", label="end")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title("Base path from above")
    ax.legend()
    out.append(run_dir / "base_path.png")
    fig.savefig(out[-1], dpi=100)
    plt.close(fig)

    forward, lateral, yaw_rate = body_velocity(traj)
    t_cmd, cmd = commanded_series(script)
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    axes[0].plot(traj["t"], forward, label="measured forward")
    axes[0].plot(traj["t"], lateral, label="measured lateral", alpha=0.6)
    if len(t_cmd):
        axes[0].step(t_cmd, cmd[:, 0], where="post", label="commanded vx", color="k")
        axes[1].step(t_cmd, cmd[:, 2], where="post", label="commanded yaw rate", color="k")
    axes[0].set_ylabel("m/s")
    axes[0].legend(loc="lower left", fontsize=8)
    axes[1].plot(traj["t"], yaw_rate, label="measured yaw rate")
    axes[1].set_ylabel("rad/s")
    axes[1].set_xlabel("sim time (s)")
    axes[1].legend(loc="upper left", fontsize=8)
    fig.suptitle("Commanded vs measured velocity")
    out.append(run_dir / "velocity.png")
    fig.savefig(out[-1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    bins = np.linspace(0, 60, 61)
    ax.hist(np.clip(pol["periods_wall_ms"], 0, 60), bins=bins, alpha=0.7, label="wall clock")
    ax.hist(np.clip(pol["periods_ms"], 0, 60), bins=bins, alpha=0.7, label="sim clock")
    ax.axvline(20.0, color="k", ls="--", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("policy period (ms)")
    ax.set_ylabel("ticks")
    ax.set_title("Policy period (nominal 20 ms)")
    ax.legend()
    out.append(run_dir / "policy_period_hist.png")
    fig.savefig(out[-1], dpi=100)
    plt.close(fig)

    strip = plot_depth_strip(run_dir, bridge)
    if strip is not None:
        out.append(strip)
    return out


def plot_depth_strip(run_dir: Path, bridge: dict[str, Any]) -> Path | None:
    """The simulated camera's kept frames: noisy metric depth above, the policy image below."""
    import matplotlib.pyplot as plt

    name = (bridge.get("camera") or {}).get("strip_file")
    if not name or not (run_dir / name).is_file():
        return None
    with np.load(run_dir / name) as frames:
        t, metres, policy, far_m = frames["exposure_s"], frames["metres"], frames["policy"], float(frames["far_m"])
    n = len(t)
    fig, axes = plt.subplots(2, n, figsize=(1.6 * n + 1.0, 3.2), squeeze=False)
    for i in range(n):
        top = axes[0, i].imshow(metres[i], cmap="viridis", vmin=0.0, vmax=far_m * 1.5)
        bottom = axes[1, i].imshow(policy[i], cmap="gray", vmin=-0.5, vmax=0.5)
        axes[0, i].set_title(f"{t[i]:.1f} s", fontsize=8)
        for ax in axes[:, i]:
            ax.set_xticks([])
            ax.set_yticks([])
    axes[0, 0].set_ylabel("depth (m)", fontsize=8)
    axes[1, 0].set_ylabel("policy image", fontsize=8)
    fig.colorbar(top, ax=axes[0, :].tolist(), fraction=0.02, pad=0.01)
    fig.colorbar(bottom, ax=axes[1, :].tolist(), fraction=0.02, pad=0.01)
    fig.suptitle("Simulated D435i: noisy depth (0 = hole) and the policy's image", fontsize=9)
    path = run_dir / "depth_strip.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_report(run_dir: Path) -> dict[str, Any]:
    report = build_report(run_dir)
    report["plots"] = [p.name for p in plot_run(run_dir)]
    write_json(run_dir / "report.json", report)
    return report
