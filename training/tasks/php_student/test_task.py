"""The php_student task's own checks; its whole run is the PHP smoke's student stage (training/tasks/smoke)."""

from __future__ import annotations

import pytest

from training.configs.schema import load_train_config
from training.tasks.php_student.task import StudentTask


def test_a_student_without_a_teacher_says_which_key_names_one():
    cfg = load_train_config("php_student_tiny")
    with pytest.raises(ValueError, match=r"distill\.teacher_checkpoints"):
        StudentTask(cfg)


def test_a_teacher_config_is_refused_by_the_student_task():
    with pytest.raises(ValueError, match="kind must be 'student'"):
        StudentTask(load_train_config("php_teacher_tiny"))
