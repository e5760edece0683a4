import numpy as np
import pytest

from parkour_bringup.report import body_velocity, box_crossings, build_report
from parkour_core.stats import write_json


def _trajectory(yaw: float, speed: float, seconds: float = 4.0, hz: float = 50.0) -> dict:
    t = np.arange(0, seconds, 1 / hz)
    x, y = speed * t * np.cos(yaw), speed * t * np.sin(yaw)
    vx, vy = np.full_like(t, speed * np.cos(yaw)), np.full_like(t, speed * np.sin(yaw))
    return {"t": t.tolist(), "x": x.tolist(), "y": y.tolist(), "z": [0.78] * len(t), "yaw": [yaw] * len(t),
            "vx": vx.tolist(), "vy": vy.tolist(), "tilt": [0.0] * len(t)}  # fmt: skip


def test_body_velocity_rotates_into_the_heading_frame():
    forward, lateral, yaw_rate = body_velocity(_trajectory(yaw=np.pi / 2, speed=0.5))
    assert np.allclose(forward, 0.5) and np.allclose(lateral, 0.0, atol=1e-12) and np.allclose(yaw_rate, 0.0)


def test_report_measures_distance_from_activation(tmp_path):
    period = {"p50": 20.0, "p99": 21.0, "max": 22.0, "n": 3}
    write_json(tmp_path / "bridge.json", {
        "trajectory": _trajectory(yaw=0.3, speed=0.5), "fell": False, "fell_at_s": None, "sim_real_time_factor": 1.0,
        "sim_time_s": 4.0, "wall_time_s": 4.0, "lowstate_sent": 1, "lowcmd_received": 1, "lockstep_waits": 0,
        "lockstep_wait_wall_s": 0.0, "scene": "flat"})  # fmt: skip
    write_json(tmp_path / "supervisor.json", {
        "supervisor_transitions": [{"t": 1.0, "from": "STAND", "to": "ACTIVE", "reason": "r"}], "final_mode": "ACTIVE",
        "limit_clamps": 0, "lowstate_age_ms": period})  # fmt: skip
    write_json(tmp_path / "policy.json", {
        "policy_period_ms": period, "policy_period_wall_ms": period, "inference_ms": period, "deadline_misses": 0,
        "bundle": "b"})  # fmt: skip
    write_json(tmp_path / "script.json", {"start_s": 0.0, "log": []})
    report = build_report(tmp_path)
    assert report["distance_m"] == pytest.approx(0.5 * (4.0 - 0.02 - 1.0), abs=0.02)
    assert report["forward_displacement_m"] == pytest.approx(report["distance_m"], abs=0.01)
    assert report["mean_speed_mps"] == pytest.approx(0.5, abs=0.01)


CAMERA = {"enabled": True, "frames_published": 300, "published_fps": 30.0,
          "published_age_ms": {"p50": 70.0, "p99": 80.0, "max": 80.0, "n": 300}}  # fmt: skip


def test_depth_comes_from_the_policy_when_it_reports_frames():
    from parkour_bringup.report import depth_summary

    pol = {"depth": {"age_ms": {"p50": 85.0, "p99": 99.0, "max": 101.0, "n": 500}, "fps": 29.9, "frames": 290}}
    d = depth_summary({"camera": CAMERA}, pol)
    assert d == {"depth_age_ms": {"p50": 85.0, "p99": 99.0}, "depth_fps": 29.9, "depth_frames": 290,
                 "depth_age_source": "policy"}  # fmt: skip


def test_depth_falls_back_to_the_bridge_without_a_policy_section():
    from parkour_bringup.report import depth_summary

    for pol in ({}, {"depth": {"age_ms": {"p50": None, "p99": None}, "fps": 0.0, "frames": 0}}):
        d = depth_summary({"camera": CAMERA}, pol)
        assert d["depth_age_source"] == "bridge" and d["depth_age_ms"] == {"p50": 70.0, "p99": 80.0}
        assert d["depth_fps"] == 30.0


def test_no_camera_no_depth_numbers():
    from parkour_bringup.report import depth_summary

    d = depth_summary({"camera": {"enabled": False}}, {})
    assert d["depth_age_source"] is None and d["depth_fps"] is None


def _over_a_box(height: float, climbs: bool, fell_at_s: float | None = None) -> tuple[dict, list[dict]]:
    """A base walking +x at 1 m/s over a 1 m box centred at x = 2, rising onto it if ``climbs``."""
    traj = _trajectory(yaw=0.0, speed=1.0, seconds=4.0)
    x = np.array(traj["x"])
    traj["z"] = (0.78 + np.where(climbs & (np.abs(x - 2.0) <= 0.5), height, 0.0)).tolist()
    box = {"name": "platform", "pos": [2.0, 0.0, height / 2], "half_size": [0.5, 1.0, height / 2]}
    side = {"name": "aside", "pos": [2.0, 3.0, 0.4], "half_size": [0.5, 0.5, 0.4]}
    return traj, [box, side]


def test_a_box_walked_onto_and_off_is_cleared():
    traj, boxes = _over_a_box(0.1, climbs=True)
    platform, aside = box_crossings(traj, boxes, fell_at_s=None)
    assert platform["reached"] and platform["on_top"] and platform["cleared"]
    assert platform["cleared_at_s"] == pytest.approx(2.52, abs=0.03)
    assert not aside["reached"] and not aside["cleared"]


def test_a_box_walked_through_at_ground_level_is_not_cleared():
    """The base passing over the footprint without rising (beside it, or through a box it cannot see)."""
    traj, boxes = _over_a_box(0.1, climbs=False)
    platform, _ = box_crossings(traj, boxes, fell_at_s=None)
    assert platform["reached"] and not platform["on_top"] and not platform["cleared"]


def test_a_box_left_after_a_fall_is_not_cleared():
    traj, boxes = _over_a_box(0.1, climbs=True)
    platform, _ = box_crossings(traj, boxes, fell_at_s=2.0)
    assert platform["on_top"] and not platform["cleared"]
