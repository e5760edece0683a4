"""`parkour train run --backend mjlab` refuses, by name and before starting anything, a task that has no mjlab
implementation, instead of training another task under its name; and, in one line that says how to create it,
a machine without .venv-mjlab. No .venv-mjlab needed."""

from __future__ import annotations

import pytest

from training.cli.train_cmd import _train_on_mjlab


@pytest.mark.parametrize(
    ("config", "task"),
    [("climb_teacher_tiny", "climb_teacher"), ("php_student_gpu", "php_student"), ("php_teacher_tiny", "php_teacher")],
)
def test_a_task_without_an_mjlab_implementation_is_refused_by_name(tmp_path, config, task):
    with pytest.raises(ValueError, match=rf"{config} (is|trains) {task}, which (stays on|runs on) mujoco_cpu"):
        _train_on_mjlab(config, tmp_path / "out", {}, None)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("config", ["student_step_tiny", "student_walk_tiny"])
def test_without_the_mjlab_venv_the_run_is_refused_in_one_line(tmp_path, monkeypatch, capsys, config):
    """Not `skipped` and exit 0, nor a missing student_mjlab.pt once the run is over."""
    from parkour_bringup.cli import main
    from training.backends.mjlab import smoke

    monkeypatch.setattr(smoke, "VENV_PY", tmp_path / "no-venv-mjlab" / "bin" / "python")
    assert not smoke.mjlab_reachable()  # mjlab never imports in the runtime venv
    out = tmp_path / "out"
    assert main(["train", "run", "--config", config, "--backend", "mjlab", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["parkour train: error: --backend mjlab runs in .venv-mjlab, which is missing; create it with: "
                   "bash training/backends/mjlab/setup.sh"]  # fmt: skip
    assert not out.exists()


def test_a_task_whose_mdp_runs_only_on_the_cpu_refuses_mujoco_warp_in_one_line(tmp_path, capsys):
    from parkour_bringup.cli import main

    out = tmp_path / "out"
    assert main(["train", "run", "--config", "climb_teacher_tiny", "--backend", "mujoco_warp", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["parkour train: error: climb_teacher runs on env.backend mujoco_cpu, not mujoco_warp"]
