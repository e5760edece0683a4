"""Closed-loop replay's pure parts: the script planned from a bag's streams, the alignment, the divergence."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from parkour_bringup.bag.closed_loop import (
    LEAD_S,
    RecordedRun,
    Series,
    compare_runs,
    mode_at,
    plan_replay,
    replay_config,
    run_closed_loop,
    time_shift,
)
from parkour_bringup.bag.reader import BagError
from parkour_bringup.bag.synthetic import write_synthetic_bag
from parkour_core.config import load_config
from parkour_core.paths import config_dir

JOINTS = ("a", "b")


def transition(t, src, dst, reason):
    return {"t": t, "from": src, "to": dst, "reason": reason}


def recorded_run(shift=0.0, walk_speed=0.5, band_t=5.0, joy_until=None, end_t=12.0, transitions=None) -> RecordedRun:
    """A sim run: stand up at 2 s, release at 5 s, activate at 6 s, walk from 7 s; times moved by ``shift``."""
    t = np.arange(0.0, end_t, 0.02) + shift
    x = np.where(t - shift > 7.0, walk_speed * (t - shift - 7.0), 0.0)
    base = np.stack([x, 0.01 * x, np.full_like(t, 0.78), np.zeros_like(t)], axis=1)
    q = np.stack([np.sin(t - shift), np.cos(t - shift)], axis=1)
    cmd_t = np.arange(1.0, end_t, 0.02) + shift
    cmd = np.zeros((len(cmd_t), 3))
    cmd[cmd_t - shift >= 7.0, 0] = walk_speed
    if transitions is None:
        transitions = [
            transition(2.0, "DAMP", "STAND_UP", "stand up requested"),
            transition(4.0, "STAND_UP", "STAND", "stand-up complete"),
            transition(6.0, "STAND", "ACTIVE", "activate requested"),
        ]
    joy = np.arange(1.0, joy_until, 0.02) + shift if joy_until is not None else np.zeros(0)
    return RecordedRun(
        path=Path("run"),
        robot="g1",
        config_text=(config_dir() / "g1_sim.yaml").read_text(),
        transitions=[{**r, "t": r["t"] + shift} for r in transitions],
        commands=Series(cmd_t, cmd),
        joy_times=joy,
        band_released_t=None if band_t is None else band_t + shift,
        joint_names=JOINTS,
        joints=Series(t, q),
        base=Series(t, base),
        end_t=float(end_t + shift),
    )


def test_operator_requests_become_steps_waiting_for_their_mode():
    plan = plan_replay(recorded_run())
    requests = [s for s in plan.steps if "request" in s]
    assert requests == [
        {"at_s": LEAD_S, "request": "stand_up", "in_mode": "DAMP"},
        {"at_s": LEAD_S + 3.0, "request": "release_band", "in_mode": "STAND"},
        {"at_s": LEAD_S + 4.0, "request": "activate", "in_mode": "STAND"},
    ]
    assert plan.anchor_t == 2.0 and not plan.publish_joy
    # 'stand-up complete' is the robot's own doing: it must emerge, not be requested.
    assert all(r["request"] != "stand" for r in requests)


def test_velocity_steps_only_where_the_command_changes():
    plan = plan_replay(recorded_run())
    cmds = [s for s in plan.steps if "cmd" in s]
    # Commands before the first request collapse into one step at script time 0.
    assert cmds[0] == {"at_s": 0.0, "cmd": [0.0, 0.0, 0.0]}
    assert cmds[1]["cmd"] == [0.5, 0.0, 0.0] and cmds[1]["at_s"] == pytest.approx(LEAD_S + 5.0, abs=0.021)
    assert len(cmds) == 2


def test_a_robot_bag_releases_the_band_once_the_replayed_robot_stands():
    plan = plan_replay(recorded_run(band_t=None))
    release = next(s for s in plan.steps if s.get("request") == "release_band")
    assert release == {"at_s": LEAD_S + 2.0, "request": "release_band", "in_mode": "STAND"}


def test_a_band_hooked_back_on_is_hooked_back_on_in_the_replay():
    run = recorded_run(
        transitions=[
            transition(2.0, "DAMP", "STAND_UP", "stand up requested"),
            transition(4.0, "STAND_UP", "STAND", "stand-up complete"),
            transition(6.0, "STAND", "ACTIVE", "activate requested"),
            transition(9.0, "ACTIVE", "STAND", "stand requested"),
            transition(10.5, "STAND", "DAMP", "damp requested"),
        ]
    )
    run.band_later = [(10.0, False)]
    requests = [s for s in plan_replay(run).steps if "request" in s]
    band = [s for s in requests if s["request"] in ("release_band", "hang_band")]
    assert band == [
        {"at_s": LEAD_S + 3.0, "request": "release_band", "in_mode": "STAND"},
        {"at_s": LEAD_S + 8.0, "request": "hang_band", "in_mode": "STAND"},
    ]
    assert {"at_s": LEAD_S + 8.5, "request": "damp", "in_mode": "STAND"} in requests


def test_a_gamepad_that_went_away_goes_away_again():
    plan = plan_replay(recorded_run(joy_until=9.0))
    assert plan.publish_joy
    lost = [s for s in plan.steps if s.get("request") == "gamepad_lost"]
    assert len(lost) == 1 and lost[0]["at_s"] == pytest.approx(LEAD_S + 9.0 - 2.0, abs=0.021)
    assert not [s for s in plan_replay(recorded_run(joy_until=12.0)).steps if s.get("request") == "gamepad_lost"]


def test_estop_stand_and_damp_requests_map_to_their_services():
    run = recorded_run(
        transitions=[
            transition(2.0, "DAMP", "STAND_UP", "stand up requested"),
            transition(4.0, "STAND_UP", "STAND", "stand-up complete"),
            transition(6.0, "STAND", "ACTIVE", "activate requested"),
            transition(8.0, "ACTIVE", "STAND", "stand requested"),
            transition(9.0, "STAND", "DAMP", "e-stop from the gamepad"),
        ]
    )
    requests = [(s["request"], s.get("in_mode")) for s in plan_replay(run).steps if "request" in s]
    assert ("stand", "ACTIVE") in requests and ("estop", "STAND") in requests
    assert mode_at(run.transitions, 8.5) == "STAND" and mode_at(run.transitions, 0.0) == "DAMP"


def test_a_bag_without_operator_requests_is_refused():
    with pytest.raises(BagError, match="never left DAMP"):
        plan_replay(recorded_run(transitions=[]))


def test_the_replay_config_loads_and_carries_the_script():
    run = recorded_run()
    plan = plan_replay(run)
    config = replay_config(run, plan, rate=2.0, depth_from_bag=True)
    assert config["bridge"]["real_time_factor"] == 2.0 and config["sim_camera"]["enabled"] is False
    path = Path(__file__).parent / "_replay_config.yaml"
    try:
        path.write_text(yaml.safe_dump(config))
        cfg = load_config(path)
    finally:
        path.unlink(missing_ok=True)
    assert [s.request for s in cfg.script_steps() if s.request] == ["stand_up", "release_band", "activate"]
    assert cfg.run.duration_s == pytest.approx(plan.duration_s, abs=1e-3)


def test_time_shift_is_piecewise_on_the_requests_both_runs_made():
    rec = [{"request": "stand_up", "t": 2.0}, {"request": "activate", "t": 6.0}, {"request": "damp", "t": 9.0}]
    rep = [{"request": "stand_up", "t": 3.0}, {"request": "activate", "t": 7.5}, {"request": "estop", "t": 9.5}]
    shift, pairs = time_shift(rec, rep)
    assert [p["request"] for p in pairs] == ["stand_up", "activate"]  # the pairing ends where they differ
    np.testing.assert_allclose(shift(np.array([0.0, 2.0, 5.9, 6.0, 11.0])), [1.0, 3.0, 6.9, 7.5, 12.5])
    with pytest.raises(BagError, match="none of the recorded operator requests"):
        time_shift(rec, [{"request": "activate", "t": 1.0}])


def test_a_faithful_replay_started_later_shows_no_divergence():
    result = compare_runs(recorded_run(), recorded_run(shift=1.3))
    assert result["modes"]["same_sequence"]
    assert [p["shift_s"] for p in result["alignment"]] == [1.3, 1.3]
    assert result["base_planar_m"]["max"] == pytest.approx(0.0, abs=1e-9)
    assert result["joint_position_rad"]["max"] == pytest.approx(0.0, abs=1e-9)
    assert result["first_over_threshold_s"] is None


def test_a_replay_that_walks_slower_diverges_by_the_distance_lost():
    result = compare_runs(recorded_run(walk_speed=0.5), recorded_run(walk_speed=0.4, shift=0.7))
    # 5 s of walking (7 s..12 s) at 0.1 m/s less, the path's 1 % lateral slope included.
    assert result["base_planar_m"]["final"] == pytest.approx(0.1 * 4.98 * np.hypot(1, 0.01), rel=0.02)
    assert result["first_over_threshold_s"] == pytest.approx(7.0 + 1.0 - 2.0, abs=0.05)  # 0.1 m after 1 s
    assert result["distance_m"]["recorded"] > result["distance_m"]["replayed"]


def test_modes_the_replay_reached_differently_are_reported():
    replay = recorded_run(shift=0.5)
    replay.transitions.append(transition(7.5, "ACTIVE", "BLIND", "depth stale"))
    result = compare_runs(recorded_run(), replay)
    assert not result["modes"]["same_sequence"]
    assert result["modes"]["replayed"][-1] == transition(7.0, "ACTIVE", "BLIND", "depth stale")


def test_transitions_after_the_recorded_span_are_not_compared():
    replay = recorded_run(shift=0.5, end_t=16.0)
    replay.transitions.append(transition(13.0, "ACTIVE", "BLIND", "depth stale"))  # frames ran out
    assert compare_runs(recorded_run(), replay)["modes"]["same_sequence"]


@pytest.fixture(scope="module")
def synthetic_bag(tmp_path_factory):
    return write_synthetic_bag(tmp_path_factory.mktemp("bags") / "walk", ticks=30)


def test_a_bag_without_its_config_is_refused_and_nothing_is_written(synthetic_bag, tmp_path):
    out = tmp_path / "replay"
    with pytest.raises(BagError, match="has no 'config' in its custom_data"):
        run_closed_loop(synthetic_bag, out)
    assert not out.exists()


def test_a_replay_never_overwrites_a_run(tmp_path):
    out = tmp_path / "replay"
    out.mkdir()
    (out / "divergence.json").write_text(json.dumps({"kept": True}))
    with pytest.raises(BagError, match="never overwrites"):
        run_closed_loop(tmp_path / "no_such_bag", out)
    assert json.loads((out / "divergence.json").read_text()) == {"kept": True}


def test_cli_refuses_a_bag_it_cannot_replay_with_one_line(synthetic_bag, tmp_path):
    out = tmp_path / "replay"
    proc = subprocess.run(
        [sys.executable, "-m", "parkour_bringup.cli", "bag", "replay", str(synthetic_bag), "--sim", "--out", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "has no 'config'" in proc.stderr, proc.stderr
    assert not out.exists()
    bad_rate = subprocess.run(
        [sys.executable, "-m", "parkour_bringup.cli", "bag", "replay", str(synthetic_bag), "--sim", "--rate", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad_rate.returncode == 1 and "--rate 0.0 is out of range" in bad_rate.stderr


def test_a_robot_bag_replays_its_behaviour_sections_on_the_robots_sim_config():
    import dataclasses

    from parkour_bringup.bag.closed_loop import _base_config

    robot_text = (config_dir() / "g1_robot.yaml").read_text()
    recorded = yaml.safe_load(robot_text)
    recorded["supervisor"]["max_tilt_rad"] = 0.61  # something the robot ran with
    run = dataclasses.replace(recorded_run(band_t=None), config_text=yaml.safe_dump(recorded))
    config = _base_config(run)
    sim = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    assert config["mode"] == "sim" and config["bridge"] == sim["bridge"] and config["dds"] == sim["dds"]
    assert config["supervisor"]["max_tilt_rad"] == 0.61  # the robot's own supervisor settings
    assert config["policy"] == recorded["policy"]
