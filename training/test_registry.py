"""A task is found by its folder alone: a new folder under a task package registers itself, its presets load
by name, and ``parkour train run --help`` lists it; names are taken once."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import training.tasks
from training import registry
from training.configs import ConfigError, load_train_config

NEW_TASK = "fold_laundry"


def _task_folder(root: Path, name: str, preset_task: str) -> Path:
    folder = root / name
    (folder / "presets").mkdir(parents=True)
    (folder / "__init__.py").write_text(
        textwrap.dedent(f'''
        """A task that lives only in this folder."""
        from pathlib import Path

        from training.registry import Task, register_task

        register_task(
            Task(
                name="{name}",
                summary="folds laundry from depth",
                presets=Path(__file__).parent / "presets",
                runner_task="{{}}.task:LaundryTask".format(__name__),
            )
        )
        ''')
    )
    (folder / "presets" / f"{name}_tiny.yaml").write_text(f"task: {preset_task}\nkind: teacher\n")
    return folder


@pytest.fixture
def extra_task_root(tmp_path, monkeypatch):
    """A second folder of task folders on training.tasks' path, as if the new folder sat beside the others."""
    root = tmp_path / "tasks"
    root.mkdir()
    monkeypatch.setattr(training.tasks, "__path__", [*training.tasks.__path__, str(root)])
    yield root
    for module in [m for m in sys.modules if m.startswith(f"training.tasks.{NEW_TASK}")]:
        del sys.modules[module]
    registry._REGISTRY.pop(NEW_TASK, None)


def test_the_shipped_tasks_are_registered_by_their_folders() -> None:
    tasks = registry.tasks()
    assert {"climb_teacher", "h1_walk", "php_student", "php_teacher", "smoke", "student_step", "student_walk"} <= set(
        tasks
    )
    for name, task in tasks.items():
        assert task.presets.parent == Path(training.tasks.__file__).parent / name
        assert task.preset_files(), name
        if task.runner_task:
            assert task.runner_task.startswith(f"training.tasks.{name}.")


def test_a_new_task_folder_is_listed_by_train_run_help(extra_task_root, capsys) -> None:
    from parkour_bringup.cli import main

    _task_folder(extra_task_root, NEW_TASK, NEW_TASK)
    with pytest.raises(SystemExit) as done:
        main(["train", "run", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"  {NEW_TASK}: folds laundry from depth" in out
    assert f"presets: {NEW_TASK}_tiny" in out
    assert registry.get_task(NEW_TASK).runner_task == f"training.tasks.{NEW_TASK}.task:LaundryTask"
    assert load_train_config(f"{NEW_TASK}_tiny").task == NEW_TASK


def test_a_preset_must_name_the_task_that_ships_it(extra_task_root) -> None:
    _task_folder(extra_task_root, NEW_TASK, "php_teacher")
    with pytest.raises(ConfigError, match=rf"task 'php_teacher', but the preset is shipped by task '{NEW_TASK}'"):
        load_train_config(f"{NEW_TASK}_tiny")


def test_an_unregistered_task_is_refused_by_name(tmp_path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("task: fold_laundry\n")
    with pytest.raises(ConfigError, match=r"task: 'fold_laundry' is not a registered task; known: climb_teacher"):
        load_train_config(path)


def test_a_second_folder_cannot_take_a_registered_name(extra_task_root) -> None:
    _task_folder(extra_task_root, NEW_TASK, NEW_TASK)
    registry.tasks()
    other = registry.Task(name=NEW_TASK, summary="", presets=extra_task_root / "elsewhere" / "presets")
    with pytest.raises(ValueError, match=f"task '{NEW_TASK}' is registered twice"):
        registry.register_task(other)
