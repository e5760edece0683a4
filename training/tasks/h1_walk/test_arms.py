"""arms.py: each arm's curve in equal spans of iterations, every span the means of its own rows."""

from __future__ import annotations

from training.tasks.h1_walk.arms import arm_windows


def test_windows_are_equal_spans_with_their_own_means() -> None:
    rows = [{"iteration": k, "speed_error_mps": float(k), "fell_fraction": None} for k in range(10)]
    wins = arm_windows(rows, windows=2, env_steps_per_iteration=100)
    assert [w["iterations"] for w in wins] == [[0, 4], [5, 9]]
    assert [w["env_steps"] for w in wins] == [500, 1000]
    assert [w["speed_error_mps"] for w in wins] == [2.0, 7.0]
    assert wins[0]["fell_fraction"] is None  # no value: no mean, not zero


def test_more_windows_than_rows_leaves_no_empty_window() -> None:
    rows = [{"iteration": k, "speed_error_mps": 1.0} for k in range(3)]
    assert [w["iterations"] for w in arm_windows(rows, windows=5, env_steps_per_iteration=1)] == [
        [0, 0],
        [1, 1],
        [2, 2],
    ]
