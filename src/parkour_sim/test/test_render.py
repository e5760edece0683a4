"""Pictures of a run from its recorded states: parkour_sim.render on a tiny trajectory, offscreen."""

import json
import os
import stat

import numpy as np
import pytest
from PIL import Image

from parkour_core.robots import get_robot
from parkour_sim.filmstrip import FRAME_H, FRAME_W
from parkour_sim.physics import RobotSim
from parkour_sim.render import FILMSTRIP_FILE, MP4_FILE, TRAJECTORY_FILE, render_run, save_trajectory, smoothed

SCENE = {"boxes": [{"name": "step", "pos": [1.2, 0.0, 0.05], "half_size": [0.3, 1.0, 0.05]}]}


def record(run_dir, samples: int, hz: float = 25.0) -> None:
    """The robot standing and sliding forward 0.5 m/s, kept as the bridge keeps its states."""
    sim = RobotSim(get_robot("g1"), SCENE, 0.002)
    t, qpos = [], []
    for k in range(samples):
        sim.data.qpos[0] = 0.5 * k / hz
        t.append(k / hz)
        qpos.append(sim.data.qpos.astype(np.float32))
    save_trajectory(run_dir / TRAJECTORY_FILE, t, qpos, "g1", SCENE, "", 0.002)


def test_the_filmstrip_shows_the_robot_and_the_box(tmp_path):
    record(tmp_path, samples=10)
    result = render_run(tmp_path, frames=3, mp4=False)
    assert result["filmstrip"] == FILMSTRIP_FILE and result["frames"] == 3 and result["mp4"] is None
    img = np.asarray(Image.open(tmp_path / FILMSTRIP_FILE).convert("RGB")).astype(int)
    assert img.shape == (FRAME_H, 3 * FRAME_W, 3)
    for k in range(3):
        frame = img[20:, k * FRAME_W : (k + 1) * FRAME_W]  # below the time label
        r, g, b = frame[..., 0], frame[..., 1], frame[..., 2]
        assert np.sum((r > g + 30) & (g > b + 20)) > 500, f"frame {k}: no box (orange) in view"
        assert np.sum((r > 150) & (abs(r - g) < 20) & (abs(g - b) < 20)) > 300, f"frame {k}: no robot (light grey)"


def test_the_mp4_gets_every_second_state_through_ffmpeg(tmp_path, monkeypatch):
    # A stand-in ffmpeg: counts the raw RGB bytes it is given and writes them where the MP4 would go.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ffmpeg"
    fake.write_text('#!/bin/sh\nfor last; do :; done\nwc -c > "$last"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    run = tmp_path / "run"
    run.mkdir()
    record(run, samples=6)
    result = render_run(run, frames=2)
    assert result["mp4"] == MP4_FILE
    assert int((run / MP4_FILE).read_text()) == 3 * FRAME_W * FRAME_H * 3  # states 0, 2, 4 at 12.5 fps


def test_a_run_without_states_is_an_error_not_an_empty_picture(tmp_path):
    save_trajectory(tmp_path / TRAJECTORY_FILE, [], [], "g1", SCENE, "", 0.002)
    with pytest.raises(ValueError, match="no states"):
        render_run(tmp_path)
    assert not (tmp_path / FILMSTRIP_FILE).exists()


def test_the_camera_path_is_smoothed_and_keeps_its_ends():
    x = np.zeros((11, 1))
    x[5] = 11.0
    out = smoothed(x, 11)
    assert out.shape == x.shape
    assert np.allclose(out[:, 0], 1.0)
    ramp = np.linspace(0.0, 1.0, 21)[:, None]
    assert np.allclose(smoothed(ramp, 5)[2:-2], ramp[2:-2])
    assert smoothed(ramp, 5)[0, 0] >= 0.0 and smoothed(ramp, 5)[-1, 0] <= 1.0


def test_the_cli_prints_what_it_wrote(tmp_path, capsys):
    from parkour_sim.render import main

    record(tmp_path, samples=2)
    assert main([str(tmp_path), "--no-mp4", "--frames", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["filmstrip"] == FILMSTRIP_FILE
    assert main([str(tmp_path / "missing")]) == 1
    assert "not found" in capsys.readouterr().err
