"""Pictures of a simulated run: the bridge's recorded states posed again in MuJoCo and rendered offscreen.

During the run the bridge keeps the whole qpos at ``STATE_HZ`` (a copy per sample and no rendering,
so the graph keeps its timing) and saves it with what rebuilds its model (robot, scene, robot model,
physics step) as ``trajectory.npz``. ``render_run`` rebuilds that model, poses it at the kept states
and writes ``filmstrip.png`` (evenly spaced frames, each labelled with its sim time) and, where
ffmpeg is on PATH, ``run.mp4``. The camera stays behind and to the right of the robot's starting
heading and follows the base, smoothed so the gait's sway does not shake the picture.
Offscreen rendering needs MUJOCO_GL=egl or osmesa in the environment before mujoco is imported.

    python -m parkour_sim.render RUN_DIR [--no-mp4]    # prints what it wrote, as JSON
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from parkour_core.math3d import yaw_of
from parkour_core.robots import get_robot
from parkour_sim.filmstrip import FRAME_H, FRAME_W, ffmpeg, fit_offscreen, frame_strip, save_png, write_mp4

STATE_HZ = 25.0  # states kept for rendering (the video's smoothness; rendering needs no more)
TRAJECTORY_FILE = "trajectory.npz"
FILMSTRIP_FILE = "filmstrip.png"
MP4_FILE = "run.mp4"
FRAMES = 8
VIDEO_FPS = 12.5  # every second state: software GL (llvmpipe) renders about 10 frames a second
MAX_VIDEO_FRAMES = 1500  # a longer run (an operator's hour) plays faster than real time instead
# Behind and to the right of the starting heading, looking ahead and to the left: the robot in profile
# with the course ahead of it in view; steep enough that the frame's top is floor, not MuJoCo's black sky.
CAMERA_DISTANCE_M = 3.6
CAMERA_ELEVATION_DEG = -24.0
CAMERA_AZIMUTH_DEG = 35.0
LOOKAT_BELOW_BASE_M = 0.2
SMOOTH_S = 1.0


def save_trajectory(
    path: Path,
    t: list[float],
    qpos: list[np.ndarray],
    robot: str,
    scene: dict[str, Any],
    robot_model: str,
    physics_dt_s: float,
) -> None:
    """The recorded states and what rebuilds the model they belong to (the scene's content, not its
    name: a scene file edited later still renders the run as it was)."""
    np.savez_compressed(
        path,
        t=np.asarray(t, dtype=np.float64),
        qpos=np.asarray(qpos, dtype=np.float32) if qpos else np.zeros((0, 0), dtype=np.float32),
        robot=np.array(robot),
        scene=np.array(json.dumps(scene)),
        robot_model=np.array(robot_model),
        physics_dt_s=np.array(physics_dt_s),
        state_hz=np.array(STATE_HZ),
    )


def load_trajectory(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (the bridge writes it when the simulation ends)")
    with np.load(path, allow_pickle=False) as f:
        return {
            "t": f["t"],
            "qpos": f["qpos"].astype(np.float64),
            "robot": str(f["robot"]),
            "scene": json.loads(str(f["scene"])),
            "robot_model": str(f["robot_model"]),
            "physics_dt_s": float(f["physics_dt_s"]),
            "state_hz": float(f["state_hz"]),
        }


def model_for(log: dict[str, Any]) -> mujoco.MjModel:
    """The bridge's model of the run (band included: the same bodies, the same qpos layout)."""
    from parkour_sim.scene import build_model

    model = build_model(get_robot(log["robot"]), log["scene"], log["physics_dt_s"], log["robot_model"], band=True)
    if model.nq != log["qpos"].shape[1]:
        raise ValueError(f"the rebuilt model has nq={model.nq}, the recorded states {log['qpos'].shape[1]}")
    fit_offscreen(model, FRAME_W, FRAME_H)
    return model


def smoothed(x: np.ndarray, window: int) -> np.ndarray:
    """Moving average along the first axis over ``window`` samples, the ends held."""
    if window <= 1 or len(x) < 2:
        return x
    before = window // 2
    padded = np.pad(x, ((before, window - 1 - before), (0, 0)), mode="edge")
    kernel = np.ones(window) / window
    return np.stack([np.convolve(padded[:, k], kernel, mode="valid") for k in range(x.shape[1])], axis=1)


def render_run(run_dir: Path, frames: int = FRAMES, mp4: bool = True) -> dict[str, Any]:
    """Render ``run_dir``'s trajectory.npz into run_dir: the filmstrip, and the MP4 where ffmpeg is."""
    started = time.perf_counter()
    log = load_trajectory(run_dir / TRAJECTORY_FILE)
    t, qpos = log["t"], log["qpos"]
    n = len(t)
    if n == 0:
        raise ValueError(f"{run_dir / TRAJECTORY_FILE} holds no states (the run ended before its first sample)")
    model = model_for(log)
    data = mujoco.MjData(model)
    encoder = ffmpeg() if mp4 else None
    strip_at = np.linspace(0, n - 1, min(frames, n)).round().astype(int)
    stride = max(round(log["state_hz"] / VIDEO_FPS), math.ceil(n / MAX_VIDEO_FRAMES), 1)
    video_at = set(range(0, n, stride)) if encoder else set()
    lookat = smoothed(qpos[:, :3], round(SMOOTH_S * log["state_hz"]))
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.distance, cam.elevation = CAMERA_DISTANCE_M, CAMERA_ELEVATION_DEG
    cam.azimuth = math.degrees(yaw_of(qpos[0, 3:7])) + CAMERA_AZIMUTH_DEG
    strip: list[np.ndarray] = []
    video: list[np.ndarray] = []
    with mujoco.Renderer(model, FRAME_H, FRAME_W) as renderer:
        for i in sorted(video_at | set(strip_at.tolist())):
            data.qpos[:] = qpos[i]
            mujoco.mj_kinematics(model, data)
            cam.lookat[:] = [lookat[i, 0], lookat[i, 1], lookat[i, 2] - LOOKAT_BELOW_BASE_M]
            renderer.update_scene(data, cam)
            if i in video_at:
                # No shadows in the video: they double the time of a software-rendered frame.
                renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
                video.append(renderer.render().copy())
            if i in strip_at:
                renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = True
                strip.append(renderer.render().copy())
    save_png(frame_strip(strip, [f"{t[i]:.1f} s" for i in strip_at]), run_dir / FILMSTRIP_FILE)
    result: dict[str, Any] = {"filmstrip": FILMSTRIP_FILE, "frames": len(strip), "mp4": None}
    if encoder is not None:
        write_mp4(video, run_dir / MP4_FILE, VIDEO_FPS)
        result["mp4"] = MP4_FILE
    else:
        result["mp4_skipped"] = "not asked for" if not mp4 else "no ffmpeg on PATH"
    result["wall_s"] = round(time.perf_counter() - started, 2)
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--no-mp4", action="store_true", help="the filmstrip only")
    ap.add_argument("--frames", type=int, default=FRAMES, help=f"frames in the filmstrip (default {FRAMES})")
    args = ap.parse_args(argv)
    try:
        result = render_run(args.run_dir, args.frames, mp4=not args.no_mp4)
    except Exception as e:  # one line for the caller, not a traceback
        print(f"{type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
