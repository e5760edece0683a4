"""The evaluation protocol's pure parts, one trial through the runtime code, the reports, and the command line."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from parkour_core.config import load_config
from parkour_core.paths import config_dir
from training.eval.evaluate import Job, grid_jobs, summarise_cells, summarise_course_cells, summarise_courses
from training.eval.protocol import (
    SEED_SETS,
    Box,
    Instance,
    Protocol,
    cleared,
    sample_instance,
    seed_root,
    trial_seed,
    verdict,
)
from training.eval.report import compare_markdown, markdown_table

P = Protocol()


def straight_box(height=0.36, yaw_deg=0.0, near=2.0):
    return Instance(1.0, (Box(near + 0.4, 0.0, height, np.deg2rad(yaw_deg), 0.8, 3.0),), near)


def path(*xs):
    return np.stack([np.array(xs, dtype=float), np.zeros(len(xs))], axis=1)


def test_starts_and_yaws_are_drawn_from_phps_ranges():
    rng = np.random.default_rng(0)
    for speed, (lo, hi) in ((1.0, (1.5, 3.0)), (2.0, (3.0, 4.5))):
        instances = [sample_instance(P, speed, 0.58, rng) for _ in range(300)]
        starts = np.array([i.start_m for i in instances])
        yaws = np.rad2deg([i.boxes[0].yaw_rad for i in instances])
        assert lo <= starts.min() and starts.max() <= hi and starts.max() - starts.min() > 0.9 * (hi - lo)
        assert np.abs(yaws).max() <= 20.0 and np.abs(yaws).max() > 18.0
        # The near face lies start_m ahead: the centre half a depth beyond it.
        assert all(i.boxes[0].x == pytest.approx(i.start_m + 0.4) for i in instances)


def test_a_course_spaces_its_boxes_and_draws_heights_from_the_protocol():
    inst = sample_instance(P, 1.0, 0.0, np.random.default_rng(3), obstacles=5, heights=P.heights_m)
    xs = [b.x for b in inst.boxes]
    gaps = np.diff(xs) - 0.8
    assert len(inst.boxes) == 5 and np.all(gaps >= 2.0) and np.all(gaps <= 4.0)
    assert {b.height_m for b in inst.boxes} <= set(P.heights_m)


def test_a_course_cell_places_its_boxes_in_order_spaced_as_asked_and_yawed_as_any_box():
    p = Protocol(course_heights_m=(0.2, 0.36, 0.58), course_spacing_m=(3.0, 5.0))
    for seed in range(20):
        inst = sample_instance(p, 1.0, 0.58, np.random.default_rng(seed), spacing_m=p.course_spacing_m,
                               ordered=p.course_heights_m)  # fmt: skip
        gaps = np.diff([b.x for b in inst.boxes]) - p.box_depth_m
        assert [b.height_m for b in inst.boxes] == [0.2, 0.36, 0.58]
        assert np.all(gaps >= 3.0) and np.all(gaps <= 5.0)
        assert all(abs(np.rad2deg(b.yaw_rad)) <= 20.0 for b in inst.boxes)
        assert 1.5 <= inst.start_m <= 3.0


def test_course_cells_follow_the_grid_s_cells_and_leave_their_seeds_alone():
    grid = Protocol(speeds_mps=(1.0, 2.0), heights_m=(0.36, 0.58), instances=2, trials=1)
    p = Protocol(speeds_mps=(1.0, 2.0), heights_m=(0.36, 0.58), instances=2, trials=1, course_heights_m=(0.2, 0.58))
    jobs = grid_jobs(p)
    assert jobs[: len(grid_jobs(grid))] == grid_jobs(grid)  # the grid's trials, numbered and seeded as without it
    course = jobs[len(grid_jobs(grid)) :]
    assert [(j.cell, j.speed_mps, j.obstacles, j.heights) for j in course] == [
        (4, 1.0, 2, (0.2, 0.58)), (4, 1.0, 2, (0.2, 0.58)), (5, 2.0, 2, (0.2, 0.58)), (5, 2.0, 2, (0.2, 0.58))
    ]  # fmt: skip
    assert grid_jobs(p, only_heights=(0.36,)) == grid_jobs(grid, only_heights=(0.36,))  # a part: no course cell
    # summarised apart from the grid and from the random courses: past each box, success only past the last
    ends = [("success", 2), ("falls", 1), ("stops_at_box", 0), ("falls", 1)]
    trials = [{"speed_mps": j.speed_mps, "height_m": j.height_m, "obstacles": j.obstacles, "progress_m": 1.0,
               "blind_s": 0.0, "course_heights_m": list(j.heights), "outcome": o, "boxes_cleared": b}
              for j, (o, b) in zip(course, ends, strict=True)]  # fmt: skip
    cells = summarise_course_cells(p, trials)
    assert [(c["speed_mps"], c["trials"], c["success_rate_student_alone"], c["cleared_per_box"]) for c in cells] == [
        (1.0, 2, 0.5, [2, 1]), (2.0, 2, 0.0, [1, 0])
    ]  # fmt: skip
    assert summarise_courses(trials) is None and summarise_cells(p, trials)[0]["trials"] == 0
    table = markdown_table({"bundle": "b", "trials_per_cell": 2, "cells": [], "course_cells": cells})
    assert "Course cell at 1 m/s (course 20-58 cm in that order, 2 trials): **50 %**" in table


def test_verdicts():
    inst = straight_box()  # near face at 2.0 m, far face at 2.8 m
    assert verdict(P, inst, path(0.0, 2.0, 3.0, 4.31), fell=False) == ("success", 1)
    assert verdict(P, inst, path(0.0, 2.0, 3.0, 4.29), fell=False) == ("times_out", 1)  # not 1.5 m beyond
    assert verdict(P, inst, path(0.0, 1.0, 1.6), fell=False) == ("stops_at_box", 0)
    assert verdict(P, inst, path(0.0, 1.0, 1.3), fell=False) == ("times_out", 0)  # 0.7 m short: not at the box
    assert verdict(P, inst, path(0.0, 2.0, 3.0, 4.5), fell=True) == ("falls", 1)  # a fall is never a success
    assert verdict(P, inst, path(0.0, 1.9), fell=True) == ("falls", 0)


def test_clearing_a_yawed_box_is_measured_along_its_own_axis():
    box = Box(2.4, 0.0, 0.36, np.deg2rad(20.0), 0.8, 3.0)
    # 1.5 m past the far face along the box's axis is further than 1.5 m along x off its centre line.
    along = np.array([[2.4 + 1.9 * np.cos(np.deg2rad(20)), 1.9 * np.sin(np.deg2rad(20))]])
    step = np.array([[0.01, 0.0]])
    assert cleared(box, along + step, 1.5)[0] and not cleared(box, along - 5 * step, 1.5)[0]


def test_trial_seeds_do_not_depend_on_the_order_trials_run_in():
    a = [trial_seed(0, c, i, t) for c in range(2) for i in range(3) for t in range(2)]
    assert len(set(a)) == len(a)
    assert trial_seed(0, 1, 2, 1) == trial_seed(0, 1, 2, 1) != trial_seed(1, 1, 2, 1)


def test_the_seed_sets_differ_and_a_root_given_by_hand_is_custom():
    """validation (the root every committed eval ran on) chooses; test, a root no committed eval used, reports."""
    assert SEED_SETS["validation"] == 0 and SEED_SETS["test"] != SEED_SETS["validation"]
    assert seed_root(None, None) == ("validation", 0)
    assert seed_root("test", None) == ("test", SEED_SETS["test"])
    assert seed_root(None, 5) == ("custom", 5) and seed_root(None, 0) == ("custom", 0)
    with pytest.raises(ValueError, match="not both"):
        seed_root("test", 5)
    # Different roots, different trials (cell, instance and trial alike).
    trials = [(c, i, t) for c in range(3) for i in range(3) for t in range(3)]
    validation = {trial_seed(SEED_SETS["validation"], *k) for k in trials}
    assert not validation & {trial_seed(SEED_SETS["test"], *k) for k in trials}
    # Committed evals: those under results/eval/validation chose among models; those under results/eval/test
    # report models already chosen, and only those ran the test set.
    results = Path(__file__).resolve().parents[2] / "results" / "eval"
    roots = {json.loads(path.read_text())["seed"] for path in (results / "validation").rglob("eval.json")}
    assert roots == {SEED_SETS["validation"]}
    reported = [json.loads(path.read_text()) for path in (results / "test").rglob("eval.json")]
    assert reported and {(r["seed_set"], r["seed"]) for r in reported} == {("test", SEED_SETS["test"])}


def cell(alone, blind_finished, blind_trials, failures=(1, 0, 0), n=4):
    return {"speed_mps": 1.0, "height_m": 0.1, "trials": n, "success_rate_student_alone": alone,
            "success_rate_blind_finished": blind_finished, "blind_trials": blind_trials,
            "success_rate": alone + blind_finished, "successes_student_alone": round(alone * n),
            "successes_with_blind": round(blind_finished * n),
            "failure_modes": dict(zip(("falls", "stops_at_box", "times_out"), failures, strict=True))}  # fmt: skip


def test_the_table_leads_with_the_student_alone_and_names_the_seed_set():
    result = {"bundle": "b", "trials_per_cell": 4, "seed_set": "test", "seed": SEED_SETS["test"],
              "cells": [cell(0.25, 0.5, 3)]}  # fmt: skip
    table = markdown_table(result)
    assert "| 1 m/s | **25 %** +50 % BLIND-finished (BLIND in 3); 1 / 0 / 0 |" in table
    assert "75 %" not in table  # the success with BLIND's help is never the headline
    assert "Seed set `test`" in table and "must not be used to choose" in table
    assert "Seed set `validation`" in markdown_table({**result, "seed_set": "validation", "seed": 0})
    assert "`custom`" in markdown_table({**result, "seed_set": "custom", "seed": 3})
    # An eval.json from before success_rate_blind_finished: the difference of the two rates.
    old = {k: v for k, v in cell(0.25, 0.5, 3).items() if k != "success_rate_blind_finished"}
    assert "**25 %** +50 % BLIND-finished" in markdown_table({**result, "cells": [old]})


def test_the_comparison_table_has_a_row_per_bundle_per_cell_headline_first():
    compare = {"bundles": [{"label": "a", "bundle_path": "models/a", "bundle_manifest_sha256": "ab" * 32}],
               "trials_per_cell": 4, "git_commit": "c0ffee", "command": "parkour eval --bundles a",
               "seed_set": "validation", "seed": 0,
               "rows": [{**cell(0.5, 0.25, 1), "label": "a", "bundle": "a"},
                        {**cell(0.25, 0.0, 0), "course_heights_m": [0.2, 0.58], "label": "a",
                         "bundle": "a"}]}  # fmt: skip
    table = compare_markdown(compare)
    lines = table.splitlines()
    header = next(line for line in lines if line.startswith("| speed"))
    row = next(line for line in lines if line.startswith("| 1 m/s"))
    assert header.split("|")[4].strip() == "alone (headline)" and header.split("|")[5].strip() == "+ BLIND-finished"
    assert row == "| 1 m/s | 10 cm | `a` | **50 %** | +25 % | 1 | 1 | 0 | 0 | 4 | n/a |"  # no pace in this file
    assert "| 1 m/s | course 20-58 cm | `a` | **25 %** |" in table
    assert "ab" * 32 in table and "parkour eval --bundles a" in table and "c0ffee" in table


def test_the_grid_and_its_summary():
    p = Protocol(speeds_mps=(1.0,), heights_m=(0.36, 0.58), instances=2, trials=3)
    jobs = grid_jobs(p)
    assert len(jobs) == 12 and {j.cell for j in jobs} == {0, 1}
    trials = [{"speed_mps": 1.0, "height_m": j.height_m, "obstacles": 1, "progress_m": 1.0, "blind_s": 0.0,
               "outcome": "success" if j.height_m == 0.36 and j.trial == 0 else "falls"} for j in jobs]  # fmt: skip
    cells = summarise_cells(p, trials)
    assert cells[0]["success_rate"] == pytest.approx(2 / 6) and cells[0]["failure_modes"]["falls"] == 4
    assert cells[1]["success_rate"] == 0.0 and cells[1]["trials"] == 6


def test_a_flat_cell_keeps_its_course_out_of_the_world_and_reports_the_pace_of_trials_that_stood():
    flat = Instance(1.0, (Box(2.0, 0.0, 0.0, 0.0, 0.8, 3.0),), 1.6)
    assert flat.world()["boxes"] == [] and len(straight_box(0.1, near=1.6).world()["boxes"]) == 1
    p = Protocol(speeds_mps=(1.0,), heights_m=(0.0,), instances=3, trials=1)
    paces = (("success", 0.8), ("success", 0.9), ("falls", 0.1))  # the fallen trial's pace is not counted
    trials = [{"speed_mps": 1.0, "height_m": 0.0, "obstacles": 1, "progress_m": 1.0, "blind_s": 0.0,
               "outcome": o, "pace_mps": pace} for o, pace in paces]  # fmt: skip
    (cell,) = summarise_cells(p, trials)
    assert cell["mean_pace_mps"] == pytest.approx(0.85) and cell["speed_mps"] == 1.0
    assert "pace 0.85 m/s" in markdown_table({"bundle": "b", "trials_per_cell": 3, "cells": [cell]})
    assert "| flat |" in markdown_table({"bundle": "b", "trials_per_cell": 3, "cells": [cell]})


def test_part_of_a_grid_runs_the_whole_grid_s_trials_of_those_cells():
    """Same cell numbers, so the same seeds: a 10 cm rerun of a committed grid compares trial for trial."""
    p = Protocol(speeds_mps=(0.5, 1.0), heights_m=(0.05, 0.1, 0.15), instances=2, trials=1)
    part = grid_jobs(p, only_heights=(0.1,))
    assert part == [j for j in grid_jobs(p) if j.height_m == 0.1] and {j.cell for j in part} == {1, 4}
    trials = [{"speed_mps": j.speed_mps, "height_m": j.height_m, "obstacles": 1, "progress_m": 1.0, "blind_s": 0.0,
               "outcome": "success"} for j in part]  # fmt: skip
    cells = summarise_cells(p, trials, only_heights=(0.1,))
    assert [(c["speed_mps"], c["height_m"], c["trials"]) for c in cells] == [(0.5, 0.1, 2), (1.0, 0.1, 2)]


def test_a_success_the_fallback_gait_helped_with_is_not_the_student_s_alone():
    p = Protocol(speeds_mps=(1.0,), heights_m=(0.1,), instances=4, trials=1)
    blind = (0.0, 1.2, 0.0, 0.02)  # BLIND drove in trials 1 and 3
    outcome = ("success", "success", "falls", "falls")
    trials = [{"speed_mps": 1.0, "height_m": 0.1, "obstacles": 1, "progress_m": 1.0, "blind_s": b, "outcome": o}
              for b, o in zip(blind, outcome, strict=True)]  # fmt: skip
    (cell,) = summarise_cells(p, trials)
    assert cell["success_rate"] == 0.5 and cell["success_rate_student_alone"] == 0.25
    assert (cell["student_alone_trials"], cell["blind_trials"]) == (2, 2)
    assert (cell["successes_student_alone"], cell["successes_with_blind"]) == (1, 1)
    assert cell["success_rate_blind_finished"] == 0.25
    assert next(k for k in cell if k.startswith("success")) == "success_rate_student_alone"  # the headline first


@pytest.fixture(scope="module")
def trial_runner():
    from training.eval.episode import TrialRunner

    return TrialRunner("g1_walk", load_config(config_dir() / "g1_sim.yaml"))


def test_the_walking_policy_steps_over_a_2cm_plank_but_not_onto_a_36cm_box(trial_runner):
    """Through the runtime code: stand-up, activation by the supervisor's rules, then the walk."""
    slow = Protocol(speeds_mps=(0.5,))
    plank = Instance(0.5, (Box(1.9, 0.0, 0.02, 0.0, 0.8, 3.0),), 1.5)
    result = trial_runner.run(slow, plank, seed=1)
    assert result.outcome == "success", result
    assert [t["to"] for t in result.transitions] == ["STAND_UP", "STAND", "ACTIVE"]
    assert result.pace_mps is not None and 0.1 < result.pace_mps < 0.7, result  # it walks, at about its command
    box = trial_runner.run(P, straight_box(0.36, near=1.5), seed=1)
    assert box.outcome != "success" and box.boxes_cleared == 0, box


def test_the_depth_ablation_camera_sees_flat_ground_where_the_box_stands():
    """The ablated student's camera: the same pose, the box gone from its image."""
    from dataclasses import replace

    from training.eval.episode import TrialRunner

    cfg = load_config(config_dir() / "g1_sim.yaml")
    cfg = replace(cfg, sim_camera=replace(cfg.sim_camera, noise_sigma_m=0.0, offset_max_m=0.0, hole_fraction=0.0))
    box = straight_box(0.2, near=0.6)  # in the camera's view from the start pose
    seen = {}
    for ablation in (False, True):
        trials = TrialRunner("student_step", cfg, depth_ablation=ablation)
        policy = trials.runner
        frames: list[np.ndarray] = []

        def set_depth(image, stamp, frames=frames, set_depth=policy.set_depth):
            frames.append(image.copy())  # what the policy was given, then on as usual
            set_depth(image, stamp)

        policy.set_depth = set_depth
        trials.run(Protocol(speeds_mps=(0.5,)), box, seed=1)
        seen[ablation] = frames[0]
    # The box is nearer than the floor behind it: with it removed, some pixels read farther.
    assert np.max(seen[True] - seen[False]) > 0.05
    assert np.all(seen[True] >= seen[False] - 1e-6)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "parkour_bringup.cli", "eval", *args],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_cli_writes_eval_json_table_and_heatmap_and_never_overwrites(tmp_path):
    out = tmp_path / "eval"
    proc = run_cli("--quick", "--speeds", "0.5", "--heights", "0.02,0.36", "--instances", "1", "--workers", "1",
                   "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((out / "eval.json").read_text())
    assert [(c["speed_mps"], c["height_m"], c["trials"]) for c in result["cells"]] == [(0.5, 0.02, 1), (0.5, 0.36, 1)]
    assert set(result["cells"][0]["failure_modes"]) == {"falls", "stops_at_box", "times_out"}
    assert result["cells"][0]["success_rate"] == 1.0 and result["cells"][1]["success_rate"] == 0.0
    assert (result["seed_set"], result["seed"]) == ("validation", 0)
    table = (out / "eval.md").read_text()
    assert "| 0.5 m/s | **" in table and "Seed set `validation` (root 0)" in table
    assert (out / "eval_heatmap.png").stat().st_size > 1000
    again = run_cli("--quick", "--out", str(out))
    assert again.returncode == 1 and "never overwrites" in again.stderr
    assert json.loads((out / "eval.json").read_text()) == result


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--heights", "0.3,x"], "not a comma-separated list"),
        (["--heights", "2.0"], "must lie in [0, 1.5]"),
        (["--speeds", "9"], "must lie in 0.1..3.0"),
        (["--bundle", "no_such_bundle"], "no_such_bundle"),
        (["--instances", "0"], "at least 1"),
        (["--course-heights", "0.58"], "two or more boxes"),
        (["--course-heights", "0.2,2.0"], "each in (0, 1.5] m"),
        (["--course-spacing", "5,3"], "lo,hi with 0.5 <= lo <= hi <= 20 m"),
    ],
)
def test_cli_refuses_bad_input_with_one_line(args, message, tmp_path):
    proc = run_cli(*args, "--out", str(tmp_path / "eval"))
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "eval").exists()


REPO = Path(__file__).resolve().parents[2]
SMALLEST = ("--quick", "--speeds", "0.5", "--heights", "0.05", "--workers", "1")  # if a refusal is missed: 2 trials


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "3", "--seed-set", "test"], "give --seed-set or --seed, not both"),
        (["--bundle", "g1_walk", "--bundles", "g1_walk", "student_walk"], "give --bundle B or --bundles A B ..."),
        (["--bundles", "g1_walk", "models/g1_walk"], "more than once"),
    ],
)  # fmt: skip
def test_cli_refuses_conflicting_choices_with_one_line(args, message, tmp_path):
    args = [str(REPO / a) if a.startswith("models/") else a for a in args]
    proc = run_cli(*SMALLEST, *args, "--out", str(tmp_path / "eval"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and message in lines[0], proc.stdout + proc.stderr
    assert not (tmp_path / "eval").exists()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "the file is empty"),
        (b"not a checkpoint\n", "torch cannot load it ("),
        (None, "it holds no actor_state_dict, activation, env"),  # a torch file of something else
    ],
)
def test_cli_refuses_a_teacher_file_that_is_no_teacher_checkpoint_in_one_line(tmp_path, content, reason):
    teacher = tmp_path / "teacher.pt"
    if content is None:
        import torch

        torch.save({"model_state_dict": {}}, teacher)
    else:
        teacher.write_bytes(content)
    proc = run_cli(*SMALLEST, "--bundle", "g1_walk", "--teacher", str(teacher), "--out", str(tmp_path / "eval"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].startswith(f"parkour eval: error: --teacher {teacher}: not a climb_teacher checkpoint (a "
                               f"climb_teacher run's teacher.pt): {reason}"), lines[0]  # fmt: skip
    assert not (tmp_path / "eval").exists()


def test_cli_compares_bundles_on_the_same_trials_in_one_command(tmp_path):
    """--bundles: each bundle's usual outputs, and one comparison, from the same seed set and trial seeds."""
    from parkour_core.hashing import sha256_file

    out = tmp_path / "cmp"
    proc = run_cli("--quick", "--speeds", "0.5", "--heights", "0.05", "--workers", "2", "--seed-set", "test",
                   "--bundles", "g1_walk", "student_walk", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    compare = json.loads((out / "compare.json").read_text())
    labels = ["g1_walk", "student_walk"]
    assert [b["label"] for b in compare["bundles"]] == labels
    assert [(r["label"], r["speed_mps"], r["height_m"], r["trials"]) for r in compare["rows"]] == [
        ("g1_walk", 0.5, 0.05, 2), ("student_walk", 0.5, 0.05, 2)]  # fmt: skip
    assert next(k for k in compare["rows"][0] if k.startswith("success")) == "success_rate_student_alone"
    assert (compare["seed_set"], compare["seed"]) == ("test", SEED_SETS["test"])
    assert {(b["seed_set"], b["seed"]) for b in compare["bundles"]} == {("test", SEED_SETS["test"])}
    assert len({b["trial_seeds_sha256"] for b in compare["bundles"]}) == 1
    trials = {}
    for b in compare["bundles"]:
        result = json.loads((out / b["eval"]).read_text())
        assert (result["seed_set"], result["seed"], result["git_commit"]) == ("test", SEED_SETS["test"],
                                                                              compare["git_commit"])  # fmt: skip
        manifest = sha256_file(REPO / "models" / b["label"] / "manifest.json")
        assert b["bundle_manifest_sha256"] == result["bundle_manifest_sha256"] == manifest
        assert (out / b["label"] / "eval.md").exists() and (out / b["label"] / "eval_heatmap.png").exists()
        rows = json.loads((out / b["label"] / "trials.json").read_text())["trials"]
        trials[b["label"]] = [(t["cell"], t["instance"], t["trial"], t["noise_seed"], t["start_m"]) for t in rows]
    assert trials["g1_walk"] == trials["student_walk"] and len(trials["g1_walk"]) == 2
    assert all(seed == trial_seed(SEED_SETS["test"], c, i, t + 1) for c, i, t, seed, _ in trials["g1_walk"])
    table = (out / "compare.md").read_text()
    assert "must not be used to choose" in table and "| 0.5 m/s | 5 cm | `student_walk` | **" in table


def test_cli_runs_the_privileged_teacher_as_its_own_row_on_the_same_trials(tmp_path):
    """--teacher: each climbing teacher's row beside the bundle's, on the same trials, named by its file's hash."""
    from parkour_core.hashing import sha256_file
    from training.rl.train import train

    train("climb_teacher_tiny", tmp_path / "teacher", {"run.max_iterations": 1, "run.save_interval": 1})
    teacher = tmp_path / "teacher" / "teacher.pt"
    out = tmp_path / "cmp"
    proc = run_cli(*SMALLEST, "--bundle", "g1_walk", "--teacher", str(teacher), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    compare = json.loads((out / "compare.json").read_text())
    assert [b["label"] for b in compare["bundles"]] == ["g1_walk", "climb_teacher"]
    row = compare["bundles"][1]
    assert row["bundle"] == "climb_teacher (privileged)" and row["teacher_sha256"] == sha256_file(teacher)
    assert len({b["trial_seeds_sha256"] for b in compare["bundles"]}) == 1
    assert "(privileged)" in (out / "compare.md").read_text()
    other = tmp_path / "other" / "teacher.pt"  # several teachers: one row each, named by its run folder
    other.parent.mkdir()
    shutil.copy(teacher, other)
    two_out = tmp_path / "two"
    two = run_cli(*SMALLEST, "--bundle", "g1_walk", "--teacher", str(teacher), str(other), "--out", str(two_out))
    assert two.returncode == 0, two.stdout + two.stderr
    rows = json.loads((two_out / "compare.json").read_text())["bundles"]
    expected = [("g1_walk", None), ("teacher", str(teacher)), ("other", str(other))]
    assert [(b["label"], b.get("teacher")) for b in rows] == expected
    assert len({b["trial_seeds_sha256"] for b in rows}) == 1
    refused = run_cli(*SMALLEST, "--teacher", str(teacher), "--depth-ablation", "--out", str(tmp_path / "x"))
    assert refused.returncode == 1 and "--teacher runs in process only" in refused.stderr


def test_job_is_hashable_and_ordered_by_cell():
    assert Job(0, 1.0, 0.36, 0, 0) == Job(0, 1.0, 0.36, 0, 0)
