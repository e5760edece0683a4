"""RealSense depth path: preprocessing cost against the usual bicubic resize, and inject-to-ready latency.

(a) ``preprocess_depth`` (crop, holes -> far, clip, area resize, normalise) against the same steps
with a bicubic anti-aliased resize instead, the common choice: torch
``interpolate(mode="bicubic", antialias=True)`` and PIL ``Image.resize(BICUBIC)`` on a float32
'F' image. Realistic z16 frames (floor, box, stereo noise, 3 % holes) at 480x270 and 848x480;
the three run on the same frame one after another, in rotating order, so machine load hits
them alike. torch runs on one thread, as the node would.

(b) Latency from ``on_video_frame`` on a librealsense software device, through the frame queue,
``CaptureLoop`` and ``DepthCapture`` (stamp, drop accounting, preprocessing), to the policy
image being ready: the node's path minus the ROS publish.

Run: ``.venv/bin/python bench/depth/capture.py [--frames N] [--out F]`` (writes bench/results/depth_capture.json).
"""

from __future__ import annotations

import os

# As depth_node does: one OpenBLAS thread (several spin against each other on a busy machine and
# multiply preprocess_depth's cost many times over). Only effective when this file is the entry point.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import platform
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import PIL
import pyrealsense2 as rs
import torch
from PIL import Image

from parkour_core.depth import DepthSpec, crop_pixels, preprocess_depth
from parkour_core.provenance import provenance
from parkour_core.stats import summary_ms, write_json
from parkour_perception.capture import CaptureLoop, DepthCapture, DepthFrame, StreamRequest
from parkour_perception.software_camera import (
    SoftwareCameraSource,
    SoftwareDepthCamera,
    synthetic_depth_mm,
)

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "depth_capture.json"
RESOLUTIONS = ((480, 270), (848, 480))
DEPTH_SCALE_M = 0.001
DISTINCT_FRAMES = 16  # cycled, so no method profits from one frame staying in cache


def _metres_clipped(z16: np.ndarray, spec: DepthSpec) -> np.ndarray:
    """The steps before the resize, as preprocess_depth does them (crop, scale, holes -> far, clip)."""
    rows, cols = crop_pixels((z16.shape[0], z16.shape[1]), spec.crop)
    metres = z16[rows, cols].astype(np.float32) * np.float32(DEPTH_SCALE_M)
    metres[~(metres > 0.0)] = spec.far_m
    np.clip(metres, spec.near_m, spec.far_m, out=metres)
    return metres


def _normalise(metres: np.ndarray, spec: DepthSpec) -> np.ndarray:
    return ((metres - np.float32(spec.near_m)) / np.float32(spec.far_m - spec.near_m) - np.float32(0.5)).astype(
        np.float32
    )


def bicubic_torch(z16: np.ndarray, spec: DepthSpec) -> np.ndarray:
    metres = torch.from_numpy(_metres_clipped(z16, spec))[None, None]
    resized = torch.nn.functional.interpolate(
        metres, size=(spec.height, spec.width), mode="bicubic", antialias=True, align_corners=False
    )
    return _normalise(resized[0, 0].numpy(), spec)


def bicubic_pil(z16: np.ndarray, spec: DepthSpec) -> np.ndarray:
    image = Image.fromarray(_metres_clipped(z16, spec), mode="F")
    resized = image.resize((spec.width, spec.height), Image.Resampling.BICUBIC)  # convolution: anti-aliased
    return _normalise(np.asarray(resized, dtype=np.float32), spec)


def preprocessing_cost(frames: int, spec: DepthSpec) -> dict[str, Any]:
    out = np.empty((spec.height, spec.width), dtype=np.float32)
    methods = {
        "preprocess_depth_area": lambda z16: preprocess_depth(z16, spec, DEPTH_SCALE_M, out),
        "torch_bicubic_antialias": lambda z16: bicubic_torch(z16, spec),
        "pil_bicubic": lambda z16: bicubic_pil(z16, spec),
    }
    names = list(methods)
    results: dict[str, Any] = {}
    for width, height in RESOLUTIONS:
        scenes = [synthetic_depth_mm(width, height, seed=s) for s in range(DISTINCT_FRAMES)]
        for method in methods.values():  # warm-up: weight caches, torch kernels
            method(scenes[0])
        times: dict[str, list[float]] = {name: [] for name in names}
        for i in range(frames):
            z16 = scenes[i % DISTINCT_FRAMES]
            for k in range(len(names)):
                name = names[(i + k) % len(names)]  # rotate who goes first
                started = time.perf_counter()
                methods[name](z16)
                times[name].append(time.perf_counter() - started)
        ours = preprocess_depth(scenes[0], spec, DEPTH_SCALE_M)
        diff_m = np.abs(bicubic_torch(scenes[0], spec) - ours) * (spec.far_m - spec.near_m)
        base = float(np.median(times["preprocess_depth_area"]))
        results[f"{width}x{height}"] = {
            "cost_ms": {name: summary_ms(t) for name, t in times.items()},
            "median_over_preprocess_depth": {
                name: round(float(np.median(times[name])) / base, 2)
                for name in names
                if name != "preprocess_depth_area"
            },
            # Not the same filter: how far the bicubic image is from the area mean (metres).
            "torch_bicubic_vs_area_abs_diff_m": {
                "median": round(float(np.median(diff_m)), 4),
                "max": round(float(diff_m.max()), 4),
            },
        }
    return results


def inject_to_ready_latency(frames: int, spec: DepthSpec, fps: int = 60) -> dict[str, Any]:
    width, height = RESOLUTIONS[0]
    request = StreamRequest(width, height, fps)
    camera = SoftwareDepthCamera(modes=[(width, height, fps)])
    source = SoftwareCameraSource(request)
    source.plug(camera)
    injected_ns: dict[int, int] = {}
    latencies_s: list[float] = []
    done = threading.Event()

    def on_frame(frame: DepthFrame) -> None:
        latencies_s.append((frame.ready_ns - injected_ns[frame.frame_number]) * 1e-9)
        if len(latencies_s) >= frames:
            done.set()

    capture = DepthCapture(spec)
    loop = CaptureLoop(source, capture, 1.0, 0.1, on_frame, lambda level, msg: None)
    loop.start()
    try:
        deadline = time.monotonic() + 10.0
        while capture.stats.state != "streaming":
            if time.monotonic() > deadline or not loop.alive:
                raise RuntimeError(f"software camera did not start: {loop.error}")
            time.sleep(0.01)
        scenes = [synthetic_depth_mm(width, height, seed=s) for s in range(DISTINCT_FRAMES)]
        period_s = 1.0 / fps
        next_at = time.perf_counter()
        for n in range(1, frames + 1):
            next_at += period_s
            injected_ns[n] = now_ns = time.time_ns()
            camera.inject(scenes[n % DISTINCT_FRAMES], now_ns * 1e-6, rs.timestamp_domain.system_time, n)
            time.sleep(max(0.0, next_at - time.perf_counter()))
        done.wait(5.0)
    finally:
        loop.stop()
    return {
        "what": f"on_video_frame -> frame queue -> CaptureLoop/DepthCapture -> policy image ready, {width}x{height} "
        f"z16 injected at {fps} Hz",
        "latency_ms": summary_ms(latencies_s),
        "preprocess_ms": capture.stats.summary()["preprocess_ms"],
        "delivered": len(latencies_s),
        "injected": frames,
        "dropped_frames": capture.stats.dropped_frames,
    }


def measure(frames: int = 300) -> dict[str, Any]:
    torch.set_num_threads(1)
    spec = DepthSpec()
    return {
        **provenance(),
        "what": "RealSense depth path: preprocessing cost per frame and inject-to-ready latency (wall ms)",
        "frames": frames,
        "policy_image": [spec.height, spec.width],
        "preprocessing": preprocessing_cost(frames, spec),
        "inject_to_ready": inject_to_ready_latency(frames, spec),
        "env": {
            "numpy": np.__version__,
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
            "pillow": PIL.__version__,
            "pyrealsense2": rs.__version__,
            "cpu_count": os.cpu_count(),
            "load_avg_1min": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    result = measure(args.frames)
    write_json(args.out, result)
    print(json.dumps({"preprocessing": result["preprocessing"], "inject_to_ready": result["inject_to_ready"]}))
    print(f"capture bench: wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
