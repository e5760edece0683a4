"""``parkour mm render``: play a synthesized motion kinematically in MuJoCo with its terrain and write
a PNG filmstrip (and an MP4 where ffmpeg is installed). Offscreen: set MUJOCO_GL=egl or osmesa."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from parkour_sim.filmstrip import FRAME_H, FRAME_W, ffmpeg, fit_offscreen, frame_strip, save_png, write_mp4
from training.motion_matching.kinematics import add_box, g1_spec


def _model(npz: dict[str, np.ndarray]) -> mujoco.MjModel:
    spec = g1_spec()
    spec.worldbody.add_light(pos=[0, 0, 4], dir=[0, 0, -1], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
    for i, (c, h, yaw, role) in enumerate(
        zip(
            npz["terrain_box_center"],
            npz["terrain_box_half_size"],
            npz["terrain_box_yaw"],
            npz["terrain_box_role"],
            strict=True,
        )
    ):
        add_box(spec, f"terrain_box{i}", c, h, float(yaw),
                rgba=[0.8, 0.55, 0.3, 1.0] if role == 0 else [0.5, 0.5, 0.55, 1.0])  # fmt: skip
    model = spec.compile()
    fit_offscreen(model, FRAME_W, FRAME_H)
    return model


def render_clip(path: Path, out_dir: Path, frames: int = 8, mp4: bool = True) -> dict[str, str]:
    """Filmstrip of ``frames`` evenly spaced frames (skill frames included) -> out_dir/<stem>.png."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (write one with `parkour mm synth`)")
    with np.load(path) as f:
        npz = {k: f[k] for k in f.files}
    missing = {"root_pos", "root_quat", "joint_pos", "terrain_box_center"} - set(npz)
    if missing:
        raise ValueError(f"{path} is not a synthesized motion (missing {sorted(missing)})")
    mp4 = mp4 and ffmpeg() is not None  # without ffmpeg only the strip's frames are rendered
    model = _model(npz)
    data = mujoco.MjData(model)
    out_dir.mkdir(parents=True, exist_ok=True)
    n = len(npz["root_pos"])
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.distance, cam.elevation, cam.azimuth = 3.2, -15.0, 135.0
    images: list[np.ndarray] = []
    wanted = set(np.linspace(0, n - 1, frames).round().astype(int).tolist())
    video = []
    with mujoco.Renderer(model, FRAME_H, FRAME_W) as renderer:
        for t in range(n):
            if t not in wanted and not mp4:
                continue
            data.qpos[:3] = npz["root_pos"][t]
            data.qpos[3:7] = npz["root_quat"][t]
            data.qpos[7:] = npz["joint_pos"][t]
            mujoco.mj_kinematics(model, data)
            cam.lookat[:] = [*npz["root_pos"][t][:2], npz["root_pos"][t][2] - 0.2]
            renderer.update_scene(data, cam)
            img = renderer.render()
            if t in wanted:
                images.append(img.copy())
            if mp4:
                video.append(img.copy())
    png = save_png(frame_strip(images), out_dir / f"{path.stem}.png")
    result = {"png": str(png)}
    if mp4 and video:
        fps = float(npz.get("fps", 50.0))
        result["mp4"] = str(write_mp4(video, out_dir / f"{path.stem}.mp4", fps))
    return result
