"""Frames rendered offscreen, kept: a PNG filmstrip and, where ffmpeg is on PATH, an MP4.

Shared by ``parkour sim``'s run rendering (parkour_sim.render) and ``parkour mm render``. No
rendering here: the callers own their models and cameras and hand over RGB frames.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import mujoco
import numpy as np

FRAME_W, FRAME_H = 320, 240


def fit_offscreen(model: mujoco.MjModel, width: int = FRAME_W, height: int = FRAME_H) -> None:
    """Grow the model's offscreen buffer to a frame's size and light it brighter than MuJoCo's default
    headlight (the robot's grey meshes are dark under a single top light)."""
    model.vis.headlight.ambient[:] = [0.45, 0.45, 0.45]
    model.vis.headlight.diffuse[:] = [0.6, 0.6, 0.6]
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)


def frame_strip(frames: Sequence[np.ndarray], labels: Sequence[str] | None = None) -> np.ndarray:
    """The frames side by side (H x sum(W) x 3 uint8), each with its label drawn in its top left corner."""
    if not frames:
        raise ValueError("no frames to put in a strip")
    if labels is None:
        return np.concatenate(frames, axis=1)
    from PIL import Image, ImageDraw

    labelled = []
    for frame, label in zip(frames, labels, strict=True):
        image = Image.fromarray(frame)
        draw = ImageDraw.Draw(image)
        box = draw.textbbox((6, 4), label)
        draw.rectangle((box[0] - 3, box[1] - 2, box[2] + 3, box[3] + 2), fill=(0, 0, 0))
        draw.text((6, 4), label, fill=(255, 255, 255))
        labelled.append(np.asarray(image))
    return np.concatenate(labelled, axis=1)


def save_png(strip: np.ndarray, path: Path) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(strip).save(path, optimize=True)
    return path


def ffmpeg() -> str | None:
    """The ffmpeg to encode MP4s with; None where there is none (the MP4 is then left out)."""
    return shutil.which("ffmpeg")


def write_mp4(frames: Sequence[np.ndarray], path: Path, fps: float, encoder: str | None = None) -> Path:
    """H.264 (yuv420p, so any player opens it) of equally sized RGB frames, through ffmpeg's stdin."""
    encoder = encoder or ffmpeg()
    if encoder is None:
        raise FileNotFoundError("ffmpeg is not on PATH")
    if not frames:
        raise ValueError("no frames to encode")
    h, w = frames[0].shape[:2]
    cmd = [encoder, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}",
           "-r", f"{fps:g}", "-i", "-", "-pix_fmt", "yuv420p", "-vcodec", "libx264", str(path)]  # fmt: skip
    subprocess.run(cmd, input=b"".join(np.ascontiguousarray(f).tobytes() for f in frames), check=True)
    return path
