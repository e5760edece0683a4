from __future__ import annotations

import numpy as np
import pytest

from parkour_core.config import ScriptStep
from parkour_core.script import Script


def names(due: list[ScriptStep]) -> list[str]:
    return [step.request for step in due]


def steps() -> list[ScriptStep]:
    # Deliberately out of time order: Script sorts them.
    return [
        ScriptStep(at_s=4.0, cmd=[0.5, 0.0, 0.0]),
        ScriptStep(at_s=0.2, request="stand_up"),
        ScriptStep(at_s=3.5, request="activate"),
        ScriptStep(at_s=2.5, request="release_band"),
        ScriptStep(at_s=14.0, cmd=[0.3, 0.0, 0.5]),
        ScriptStep(at_s=18.0, cmd=[0.0, 0.0, 0.0]),
    ]


def test_requests_fire_once_in_time_order():
    s = Script(steps())
    fired = []
    for k in range(0, 2001):
        fired += names(s.advance(k * 0.01))
    assert fired == ["stand_up", "release_band", "activate"]
    assert s.done


def test_advance_returns_requests_due_exactly_at_time():
    s = Script(steps())
    assert names(s.advance(0.19)) == []
    assert names(s.advance(0.2)) == ["stand_up"]
    assert names(s.advance(0.2)) == []
    assert names(s.advance(3.5)) == ["release_band", "activate"]
    assert names(s.advance(100.0)) == []
    assert s.done


def test_command_is_held_until_replaced():
    s = Script(steps())
    np.testing.assert_array_equal(s.command, [0, 0, 0])
    s.advance(3.9)
    np.testing.assert_array_equal(s.command, [0, 0, 0])
    s.advance(4.0)
    np.testing.assert_array_equal(s.command, [0.5, 0, 0])
    s.advance(13.9)
    np.testing.assert_array_equal(s.command, [0.5, 0, 0])
    s.advance(14.0)
    np.testing.assert_array_equal(s.command, [0.3, 0, 0.5])
    s.advance(17.0)
    np.testing.assert_array_equal(s.command, [0.3, 0, 0.5])
    s.advance(18.0)
    np.testing.assert_array_equal(s.command, [0, 0, 0])
    assert s.command.dtype == np.float64


def test_big_jump_holds_the_latest_cmd():
    s = Script(steps())
    assert names(s.advance(15.0)) == ["stand_up", "release_band", "activate"]
    np.testing.assert_array_equal(s.command, [0.3, 0, 0.5])
    assert not s.done


def test_empty_script():
    s = Script([])
    assert s.done
    assert names(s.advance(10.0)) == []
    np.testing.assert_array_equal(s.command, [0, 0, 0])


def test_script_from_config_file(repo_root):
    from parkour_core.config import load_config

    s = Script(load_config(repo_root / "config" / "g1_sim.yaml").script_steps())
    assert names(s.advance(2.5, "STAND_UP")) == ["stand_up"]  # activate waits for the stand-up to finish
    assert names(s.advance(5.0, "STAND")) == ["activate"]  # 2.5 s late: later steps shift by 2.5 s
    assert names(s.advance(6.0, "STAND")) == []  # the band is lowered only once the policy walks
    assert names(s.advance(6.1, "ACTIVE")) == ["release_band"]
    s.advance(6.4, "ACTIVE")
    np.testing.assert_array_equal(s.command, [0, 0, 0])
    s.advance(6.6, "ACTIVE")
    np.testing.assert_array_equal(s.command, [0.5, 0, 0])


def test_a_step_waits_for_its_mode_and_later_steps_keep_their_spacing():
    s = Script(
        [
            ScriptStep(at_s=0.2, request="stand_up"),
            ScriptStep(at_s=3.5, request="activate", in_mode="STAND"),
            ScriptStep(at_s=4.0, cmd=[0.5, 0.0, 0.0]),
            ScriptStep(at_s=6.0, request="estop"),
        ]
    )
    assert names(s.advance(0.2, "DAMP")) == ["stand_up"]
    assert names(s.advance(3.6, "STAND_UP")) == []  # due, but the stand-up has not finished
    assert names(s.advance(5.0, "STAND_UP")) == []  # still holding: the walk does not start either
    np.testing.assert_array_equal(s.command, [0, 0, 0])
    assert names(s.advance(5.5, "STAND")) == ["activate"]  # fired 2.0 s late: the clock held 2.0 s
    assert s.held_s == pytest.approx(2.0)
    s.advance(5.9, "ACTIVE")
    np.testing.assert_array_equal(s.command, [0, 0, 0])
    s.advance(6.0, "ACTIVE")  # 4.0 + 2.0
    np.testing.assert_array_equal(s.command, [0.5, 0, 0])
    assert names(s.advance(7.9, "ACTIVE")) == []
    assert names(s.advance(8.0, "ACTIVE")) == ["estop"]  # 6.0 + 2.0


def test_a_step_whose_mode_is_already_there_does_not_hold():
    s = Script([ScriptStep(at_s=1.0, request="activate", in_mode="STAND"), ScriptStep(at_s=2.0, request="damp")])
    assert names(s.advance(1.0, "STAND")) == ["activate"]
    assert names(s.advance(2.0, "ACTIVE")) == ["damp"]
    assert s.held_s == 0.0


def test_a_step_that_holds_the_heading_steers_back_to_the_first_yaw():
    s = Script(
        [ScriptStep(at_s=0.0, cmd=[1.0, 0.0, 0.0], hold_heading=True), ScriptStep(at_s=5.0, cmd=[0.5, 0.0, 0.2])]
    )
    s.advance(0.0)
    assert s.velocity(0.3).tolist() == [1.0, 0.0, 0.0]  # the first yaw seen is the heading to hold
    assert s.velocity(0.2)[2] == pytest.approx(0.15)  # 0.1 rad right of it: steer left, gain 1.5/s
    assert s.velocity(-2.0)[2] == pytest.approx(0.5)  # clipped
    assert s.velocity(0.3 + 2 * np.pi - 0.1)[2] == pytest.approx(0.15)  # across +-pi: the short way
    assert s.velocity(None)[2] == 0.0  # no IMU reading: the step's own yaw rate
    s.advance(5.0)
    assert s.velocity(1.0).tolist() == [0.5, 0.0, 0.2]  # a step without it: as written
