"""Every committed run folder (``models/*/run.json``) resumes exactly in this workspace's layout: its config is
found by the name it recorded, and two resumed iterations equal one and one, weights and rows (timings aside)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from parkour_core.paths import repo_root
from training.rl.runner import LATEST, TIMING_KEYS
from training.rl.train import resume

COMMITTED_RUNS = sorted(p.parent for p in (repo_root() / "models").glob("*/run.json"))


def _rows(result: dict, first: int) -> str:
    rows = [r for r in result["iterations"] if r["iteration"] >= first]
    return json.dumps([{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rows], sort_keys=True)


def test_the_committed_runs_are_found() -> None:
    assert {"climb_teacher", "h1_walk_run"} <= {run.name for run in COMMITTED_RUNS}


@pytest.mark.parametrize("run", COMMITTED_RUNS, ids=lambda p: p.name)
def test_a_committed_run_resumes_exactly(run: Path, tmp_path: Path) -> None:
    whole, split = tmp_path / "whole", tmp_path / "split"
    for copy in (whole, split):
        shutil.copytree(run, copy, ignore=shutil.ignore_patterns("bundle"))
    first = torch.load(run / LATEST, weights_only=False)["iter"] + 1
    budget = {"run.minutes": 0, "run.save_interval": 1}
    two = resume(whole, {**budget, "run.max_iterations": 2})
    resume(split, {**budget, "run.max_iterations": 1})
    one_one = resume(split, {**budget, "run.max_iterations": 1})
    assert _rows(one_one, first) == _rows(two, first)
    assert [r["iteration"] for r in two["iterations"] if r["iteration"] >= first] == [first, first + 1]
    a, b = torch.load(whole / LATEST, weights_only=False), torch.load(split / LATEST, weights_only=False)
    assert a["iter"] == b["iter"] == first + 1
    for key in ("actor_state_dict", "critic_state_dict"):
        for name, value in a[key].items():
            torch.testing.assert_close(b[key][name], value, rtol=0, atol=0, msg=f"{key}.{name}")
