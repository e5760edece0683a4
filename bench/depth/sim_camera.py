"""Cost of one simulated D435i frame: raycast vs render, robot meshes excluded vs included.

All four variants run in the same process on the same scene (the G1 on the box course, the 5 cm
step, the 10 cm platform and the side block in view), interleaved frame by frame so machine load
hits them alike. Run: ``MUJOCO_GL=egl .venv/bin/python bench/depth/sim_camera.py [--frames N] [--out F]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from parkour_core.provenance import provenance
from parkour_core.robots import G1
from parkour_core.stats import summary_ms, write_json
from parkour_sim.depth_camera import TERRAIN_GEOM_GROUP, SimDepthCamera
from parkour_sim.physics import RobotSim

WIDTH, HEIGHT = 87, 58
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "depth_sim_camera.json"
# What a viewer shows of the robot: its visual meshes (holosoma's G1: group 1) beside the terrain.
ROBOT_VISUAL_GROUP = 1


def measure(frames: int = 200) -> dict[str, Any]:
    sim = RobotSim(G1, "box_course", 0.002)
    sim.reset(base_xy_yaw=(2.8, 0.0, 0.0))
    model, data = sim.model, sim.data
    mujoco.mj_forward(model, data)
    variants = {
        f"{method}_{seen}": SimDepthCamera(model, WIDTH, HEIGHT, method, geom_groups=groups)
        for method in ("raycast", "render")
        for seen, groups in (
            ("terrain", (TERRAIN_GEOM_GROUP,)),
            ("with_robot_meshes", (TERRAIN_GEOM_GROUP, ROBOT_VISUAL_GROUP)),
        )
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    images: dict[str, np.ndarray] = {}
    try:
        for name, camera in variants.items():  # warm-up: first render compiles shaders, allocates
            images[name] = camera.capture(data)
        for _ in range(frames):
            for name, camera in variants.items():
                started = time.perf_counter()
                camera.capture(data)
                times[name].append(time.perf_counter() - started)
    finally:
        for camera in variants.values():
            camera.close()
    cost = {name: summary_ms(t) for name, t in times.items()}

    def ratio(a: str, b: str) -> float:
        return round(float(np.median(times[a]) / np.median(times[b])), 2)

    ray, render = images["raycast_terrain"], images["render_terrain"]
    valid = (ray > 0) & (render > 0)
    robot_pixels = int(np.sum(np.abs(images["raycast_with_robot_meshes"] - ray) > 1e-3))
    return {
        **provenance(),
        "what": "one 87x58 z-depth frame of the simulated D435i (G1 on the box course), wall ms per frame",
        "frames": frames,
        "image": [HEIGHT, WIDTH],
        "cost_ms": cost,
        "render_over_raycast": ratio("render_terrain", "raycast_terrain"),
        "robot_meshes_over_terrain_only": {
            "raycast": ratio("raycast_with_robot_meshes", "raycast_terrain"),
            "render": ratio("render_with_robot_meshes", "render_terrain"),
        },
        "robot_pixels_in_view": robot_pixels,
        "raycast_vs_render_max_abs_diff_m": float(np.abs(ray - render)[valid].max()),
        "hole_mask_mismatch_pixels": int(np.sum((ray > 0) != (render > 0))),
        "env": {
            "mujoco": mujoco.__version__,
            "MUJOCO_GL": os.environ.get("MUJOCO_GL"),
            "cpu_count": os.cpu_count(),
            "load_avg_1min": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if not os.environ.get("MUJOCO_GL"):
        # mujoco picks its GL backend when imported; without this it tries a window (glfw).
        raise SystemExit("sim_camera bench: set MUJOCO_GL=egl (or osmesa) for offscreen rendering")
    result = measure(args.frames)
    write_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("cost_ms", "render_over_raycast", "robot_meshes_over_terrain_only")}))
    print(f"sim_camera bench: wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
