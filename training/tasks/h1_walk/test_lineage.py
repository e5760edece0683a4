"""training.tasks.h1_walk.lineage: windows of training minutes over resumed runs, and the trend that says flat."""

from __future__ import annotations

import gzip
import json

import pytest

from training.tasks.h1_walk import lineage


def _run_folder(tmp_path, speed_error):
    """Two runs of 60 one-minute iterations (3072 env-steps each); speed error per iteration from ``speed_error``."""
    rows = [{"iteration": i, "wall_s": 60.0, "speed_error_mps": speed_error(i), "fell_fraction": 0.5,
             "command_level": 1.0} for i in range(120)]  # fmt: skip
    for first in (0, 60):
        text = "".join(json.dumps(r) + "\n" for r in rows[first : first + 60])
        (tmp_path / f"curve.{first:06d}.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    runs = [{"commit": c, "first_iteration": f, "iterations": 60, "env_steps": 60 * 3072, "wall_s": 3600.0}
            for c, f in (("a", 0), ("b", 60))]  # fmt: skip
    (tmp_path / "provenance.json").write_text(json.dumps({"runs": runs}))
    return tmp_path


def test_windows_follow_the_minutes_and_name_each_run(tmp_path):
    report = lineage.build(_run_folder(tmp_path, lambda i: 0.5), window_min=20.0, trend_min=60.0)
    assert [w["minutes"] for w in report["windows"]] == [20.0, 40.0, 60.0, 80.0, 100.0, 120.0]
    assert [w["runs"] for w in report["windows"]] == [[1], [1], [1], [2], [2], [2]]
    assert report["env_steps"] == 120 * 3072 and report["run_start_minutes"] == [0.0, 60.0]
    assert report["trend"]["per_hour"]["speed_error_mps"] == pytest.approx(0.0, abs=1e-9)
    assert report["trend"]["hours_to_speed_error_target_at_this_pace"] is None  # flat: never
    stub = lineage.build(_run_folder(tmp_path, lambda i: 0.5), window_min=25.0, trend_min=60.0)
    assert [w["minutes"] for w in stub["windows"]] == [25.0, 50.0, 75.0, 100.0, 120.0]  # the last 20 min are not a stub
    joined = lineage.build(_run_folder(tmp_path, lambda i: 0.5), window_min=23.0, trend_min=60.0)
    assert [w["minutes"] for w in joined["windows"]] == [23.0, 46.0, 69.0, 92.0, 120.0]  # 5 min joined the last window


def test_a_falling_error_gives_the_hours_its_pace_needs(tmp_path):
    report = lineage.build(_run_folder(tmp_path, lambda i: 0.5 - 0.001 * i), window_min=20.0, trend_min=60.0)
    trend = report["trend"]
    assert trend["per_hour"]["speed_error_mps"] == pytest.approx(-0.06, abs=1e-3)
    # The last window's mean is 0.5 - 0.001 * 109.5; 0.25 is (0.3905 - 0.25) / 0.06 hours further.
    assert trend["hours_to_speed_error_target_at_this_pace"] == pytest.approx(2.3, abs=0.1)
