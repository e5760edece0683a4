import numpy as np
import pytest

from training.tasks.h1_walk.report import script_segments


def _run(fell_at_s=None):
    t = np.arange(0.0, 10.0 + 1e-9, 0.01)
    x = np.clip(t - 4.0, 0.0, 4.0) * 0.5  # still until 4 s, 0.5 m/s to 8 s, still after
    bridge = {"trajectory": {"t": t, "x": x, "y": np.zeros_like(t), "z": np.where(t < 9.0, 1.0, 0.9)},
              "band_released_at_s": 2.0, "fell_at_s": fell_at_s}  # fmt: skip
    log = [{"t": 0.5, "cmd": [0.0, 0.0, 0.0]}, {"t": 4.0, "cmd": [0.5, 0.0, 0.0]}, {"t": 4.02, "cmd": [0.5, 0.0, 0.0]},
           {"t": 8.0, "cmd": [0.0, 0.0, 0.0]}]  # fmt: skip
    return bridge, {"log": log}


def test_each_command_after_the_release_is_a_segment_with_its_path_and_lowest_height():
    segments = script_segments(*_run())
    assert [s["command"] for s in segments] == [[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert [(s["from_s"], s["to_s"]) for s in segments] == [(2.0, 4.0), (4.0, 8.0), (8.0, 10.0)]
    assert [s["path_m"] for s in segments] == pytest.approx([0.0, 2.0, 0.0], abs=1e-6)
    assert [s["moved_m"] for s in segments] == pytest.approx([0.0, 2.0, 0.0], abs=1e-6)
    assert [s["base_height_min_m"] for s in segments] == [1.0, 1.0, 0.9]


def test_a_fall_ends_the_last_segment():
    segments = script_segments(*_run(fell_at_s=6.0))
    assert segments[-1]["to_s"] == 6.0 and segments[-1]["path_m"] == pytest.approx(1.0, abs=1e-6)
