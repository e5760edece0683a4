"""Entry and exit scored apart, on hand-made trajectories."""

from __future__ import annotations

import numpy as np
import pytest

from training.methods.llp.entry_exit import Trajectory, Window, aggregate, score_trial, skill_windows

FPS = 50.0
WINDOWS = skill_windows(entry_frame=50, end_frame=150, fps=FPS, before_s=0.2, after_s=0.2)  # [0.8, 1.2], [2.8, 3.2]
T = np.arange(1, 201) / FPS  # 4 s of samples


def test_windows_around_the_skills_first_and_last_frames() -> None:
    assert (WINDOWS.entry.start_s, WINDOWS.entry.end_s) == pytest.approx((0.8, 1.2))
    assert (WINDOWS.exit.start_s, WINDOWS.exit.end_s) == pytest.approx((2.8, 3.2))
    with pytest.raises(ValueError):
        Window(1.0, 1.0)
    with pytest.raises(ValueError):
        skill_windows(10, 5, FPS)


def test_a_clean_trial_passes_both() -> None:
    s = score_trial(Trajectory.of(T, np.full(200, 0.1)), WINDOWS)
    assert s.entry.passed and s.exit.passed and s.entry.max_error_m == pytest.approx(0.1)


def test_a_fall_at_entry_fails_the_entry_and_never_reaches_the_exit() -> None:
    s = score_trial(Trajectory.of(T[:50], np.full(50, 0.2), failed_at_s=1.0), WINDOWS)
    assert not s.entry.passed and s.entry.failed_inside and s.entry.reached
    assert not s.exit.reached and not s.exit.passed and s.exit.max_error_m is None


def test_a_good_entry_and_a_fall_at_the_exit_are_told_apart() -> None:
    s = score_trial(Trajectory.of(T[:150], np.full(150, 0.2), failed_at_s=3.0), WINDOWS)
    assert s.entry.passed and s.exit.reached and s.exit.failed_inside and not s.exit.passed


def test_a_large_error_inside_the_window_fails_it_without_a_fall() -> None:
    error = np.full(200, 0.1)
    error[(T > 2.9) & (T < 3.0)] = 0.7  # a stumble leaving the skill
    error[(T > 1.5) & (T < 2.0)] = 0.9  # mid-skill: in neither window
    s = score_trial(Trajectory.of(T, error), WINDOWS, max_error_m=0.5)
    assert s.entry.passed and not s.exit.passed and not s.exit.failed_inside
    assert s.exit.max_error_m == pytest.approx(0.7)


def test_a_trial_that_stops_inside_a_window_does_not_pass_it() -> None:
    s = score_trial(Trajectory.of(T[:55], np.full(55, 0.1)), WINDOWS)  # recording ends at 1.1 s, no failure
    assert s.entry.reached and not s.entry.passed and not s.entry.failed_inside


def test_aggregate_gives_entry_exit_and_exit_given_entry() -> None:
    clean = score_trial(Trajectory.of(T, np.full(200, 0.1)), WINDOWS)
    entry_fall = score_trial(Trajectory.of(T[:50], np.full(50, 0.2), failed_at_s=1.0), WINDOWS)
    exit_fall = score_trial(Trajectory.of(T[:150], np.full(150, 0.2), failed_at_s=3.0), WINDOWS)
    summary = aggregate([clean, clean, entry_fall, exit_fall])
    assert summary["trials"] == 4
    assert summary["entry_success"] == pytest.approx(0.75)
    assert summary["exit_success"] == pytest.approx(0.5)
    assert summary["exit_success_given_entry"] == pytest.approx(2 / 3)
    assert summary["entry_failed_inside"] == pytest.approx(0.25) and summary["exit_failed_inside"] == pytest.approx(
        0.25
    )
    assert aggregate([])["entry_success"] is None


def test_bad_trajectories_are_refused() -> None:
    with pytest.raises(ValueError):
        Trajectory.of([0.0, 0.0], [0.1, 0.1])
    with pytest.raises(ValueError):
        Trajectory.of([0.0, 0.1], [0.1])
