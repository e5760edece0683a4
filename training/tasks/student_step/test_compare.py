"""The two-run comparison reads what the runs and evals wrote, and refuses evals of different cells."""

from __future__ import annotations

import json

import pytest

from training.tasks.student_step.compare import main


def write_run(path, ppo_weights):
    rows = [{"iteration": k, "ppo_weight": w, "dagger_weight": 1 - w, "step_up_rate_window": w / 2,
             "falls_per_1000_steps": 1.0, "left_lane_per_1000_steps": 0.0, "course_speed": 0.5}
            for k, w in enumerate(ppo_weights)]  # fmt: skip
    path.write_text(json.dumps({"iterations": rows, "cleared_by_height": [1, 2, 3, 4], "fell_by_height": [0] * 4}))


def write_eval(path, heights, seed=0):
    cells = [{"speed_mps": 1.0, "height_m": h, "trials": 10, "success_rate": 0.5, "success_rate_student_alone": 0.4,
              "blind_trials": 1, "failure_modes": {}} for h in heights]  # fmt: skip
    path.write_text(json.dumps({"bundle_path": "b", "seed": seed, "cells": cells}))


def test_each_run_s_lambda_ppo_and_the_eval_cells_side_by_side(tmp_path, capsys):
    write_run(tmp_path / "a.json", [0.0, 0.0, 0.01])
    write_run(tmp_path / "b.json", [0.0, 0.5, 0.9])
    write_eval(tmp_path / "ea.json", [0.1])
    write_eval(tmp_path / "eb.json", [0.1])
    args = ["--runs", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--evals", str(tmp_path / "ea.json"),
            str(tmp_path / "eb.json"), "--out", str(tmp_path / "out.json")]  # fmt: skip
    assert main(args) == 0
    result = json.loads((tmp_path / "out.json").read_text())
    assert [r["max_ppo_weight"] for r in result["runs"]] == [0.01, 0.9]
    assert result["runs"][1]["step_up_rate_best"] == pytest.approx(0.45)
    out = capsys.readouterr().out
    assert "| eval 1 m/s, 10 cm | 50% (alone 40%, BLIND in 1) | 50% (alone 40%, BLIND in 1) |" in out
    assert "| speed along the course (m/s), last 100 | 0.500 | 0.500 |" in out
    assert "targets refused" not in out  # neither run logged it: no row of blanks


def test_evals_of_other_cells_are_refused(tmp_path):
    write_run(tmp_path / "a.json", [0.0])
    write_eval(tmp_path / "ea.json", [0.1])
    write_eval(tmp_path / "eb.json", [0.15])
    args = ["--runs", str(tmp_path / "a.json"), str(tmp_path / "a.json"), "--evals", str(tmp_path / "ea.json"),
            str(tmp_path / "eb.json"), "--out", str(tmp_path / "out.json")]  # fmt: skip
    with pytest.raises(ValueError, match="same cells"):
        main(args)


def test_a_third_run_joins_and_a_missing_label_is_refused(tmp_path, capsys):
    for name, weights in (("a", [0.0]), ("b", [0.9]), ("c", [0.5])):
        write_run(tmp_path / f"{name}.json", weights)
        write_eval(tmp_path / f"e{name}.json", [0.1])
    runs = [str(tmp_path / f"{n}.json") for n in "abc"]
    evals = [str(tmp_path / f"e{n}.json") for n in "abc"]
    out = ["--out", str(tmp_path / "out.json")]
    assert main(["--runs", *runs, "--labels", "A", "B", "C", "--evals", *evals, *out]) == 0
    assert [r["label"] for r in json.loads((tmp_path / "out.json").read_text())["runs"]] == ["A", "B", "C"]
    assert "| lambda_PPO reached | 0.000 | 0.900 | 0.500 |" in capsys.readouterr().out
    with pytest.raises(ValueError, match="each with a label"):
        main(["--runs", *runs, "--evals", *evals, *out])  # the default labels name two runs
