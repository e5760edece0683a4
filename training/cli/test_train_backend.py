"""`parkour train run --backend mjlab` refuses, by name and before starting anything, a task that has no mjlab
implementation, instead of training another task under its name. No .venv-mjlab needed."""

from __future__ import annotations

import pytest

from training.cli.train_cmd import _train_on_mjlab


@pytest.mark.parametrize(("config", "task"), [("climb_teacher_tiny", "climb_teacher"), ("php_student_gpu", "php")])
def test_a_task_without_an_mjlab_implementation_is_refused_by_name(tmp_path, config, task):
    with pytest.raises(ValueError, match=rf"{config} (is|trains) {task}, which (stays on|runs on) mujoco_cpu"):
        _train_on_mjlab(config, tmp_path / "out", {}, None)
    assert not (tmp_path / "out").exists()
