import numpy as np
import pytest

from training.tasks.student_walk.compare import command_at, labels_for, walk_metrics


def log(*rows):
    return [{"t": t, "cmd": list(c)} for t, c in rows]


def test_command_at_holds_the_last_command_and_counts_time_since_a_change():
    entries = log((1.0, (0.5, 0, 0)), (1.5, (0.5, 0, 0)), (3.0, (1.0, 0, 0)))
    cmd, since = command_at(entries, np.array([0.5, 1.2, 2.0, 3.5]))
    assert cmd[:, 0].tolist() == [0.0, 0.5, 0.5, 1.0]
    assert since[0] == np.inf
    assert since[2] == pytest.approx(1.0)  # the repeat at 1.5 s is not a change
    assert since[3] == pytest.approx(0.5)


def run_at(vx, vy, yaw=0.0, seconds=10.0, dt=0.02, fell_at=None):
    t = np.arange(dt, seconds + dt / 2, dt)
    x, y = vx * t, vy * t
    c, s = np.cos(yaw), np.sin(yaw)
    bridge = {
        "trajectory": {"t": t.tolist(), "x": (c * x - s * y).tolist(), "y": (s * x + c * y).tolist(),
                       "yaw": np.full_like(t, yaw).tolist(), "vx": np.full_like(t, c * vx - s * vy).tolist(),
                       "vy": np.full_like(t, s * vx + c * vy).tolist(), "z": [0.8] * len(t), "tilt": [0.0] * len(t)},
        "fell": fell_at is not None, "fell_at_s": fell_at,
    }  # fmt: skip
    return bridge


def test_a_perfect_tracker_has_zero_error_in_the_heading_frame():
    script = {"log": log((0.0, (0.5, 0.0, 0.0)))}
    m = walk_metrics(run_at(0.5, 0.0, yaw=0.7), script, {"active_from_s": 0.0})
    assert m["speed_rms_error_mps"] == pytest.approx(0.0, abs=1e-9)
    assert m["distance_m"] == pytest.approx(0.5 * 10.0, rel=0.01)
    assert not m["fell"]


def test_a_slow_drifting_walker_is_scored_by_its_errors():
    script = {"log": log((0.0, (0.5, 0.0, 0.0)))}
    m = walk_metrics(run_at(0.3, 0.1), script, {"active_from_s": 0.0})
    assert m["speed_rms_error_mps"] == pytest.approx(np.hypot(0.2, 0.1), rel=1e-6)
    assert m["lateral_drift_first_segment_m"] == pytest.approx(0.1 * (10.0 - 0.02), rel=0.01)
    assert m["segments"][0]["mean_vx"] == pytest.approx(0.3)


def test_a_fall_ends_the_scored_time():
    script = {"log": log((0.0, (0.5, 0.0, 0.0)))}
    m = walk_metrics(run_at(0.5, 0.0, fell_at=4.0), script, {"active_from_s": 0.0})
    assert m["fell"] and m["fell_at_s"] == 4.0
    assert m["scored_s"] == pytest.approx(4.0 - 1.5, abs=0.05)  # settle 1.5 s after the command


def test_labels_are_distinct_for_bundles_in_run_folders():
    assert labels_for(["g1_walk", "runs/a/bundle", "runs/b/bundle", "models/student_walk", "x/student_walk"]) == [
        "g1_walk",
        "a",
        "b",
        "student_walk",
        "student_walk_2",
    ]


def test_the_robot_is_the_one_the_bundles_name_and_a_mix_is_refused_by_name():
    from training.tasks.student_walk.compare import bundles_robot

    assert bundles_robot(["h1_walk", "models/h1_walk_run/bundle"]) == "h1"
    assert bundles_robot(["student_walk"]) == "g1"
    with pytest.raises(ValueError, match=r"mixes robots: student_walk \(g1\), h1_walk \(h1\)"):
        bundles_robot(["student_walk", "h1_walk"])
