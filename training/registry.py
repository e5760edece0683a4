"""Training tasks, each registered by its own folder.

A task is a folder under ``training/tasks/`` whose ``__init__.py`` calls :func:`register_task` with
what the library needs to train it: the class the runner steps (named ``"module:Class"``, imported
only when the task trains, so ``parkour --help`` stays light), the folder of its YAML presets (the
names ``--config`` takes), the panels of its ``curves.png`` and a line for ``parkour train run --help``.
Adding a task is adding a folder: :func:`tasks` imports every package under :data:`TASK_PACKAGES`,
the way mjlab imports its task packages, so the library never names a task.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# (title, [(row key, label)]): one panel of a task's curves.png.
Panel = tuple[str, tuple[tuple[str, str], ...]]

# The packages whose sub-packages are task folders.
TASK_PACKAGES = ("training.tasks",)


@dataclass(frozen=True)
class Task:
    """One registered task. ``runner_task``: ``"module:Class"`` of the runner's task (a
    :class:`~training.rl.env.TaskEnv` with the runner's hooks); empty for a chain of other tasks run by
    its own verb (``smoke``). ``presets``: the folder of its configs, one YAML per preset. ``config``:
    ``"module:Class"`` of its config, a ``training.configs.schema.TrainConfig`` with its own sections and
    checks (empty: the shared sections alone). ``backends``: the physics its MDP runs on; a task on
    ``mujoco_warp`` too is held to the CPU's numbers by ``training/envs/test_backends.py``. ``distils``: the task
    whose run's ``teacher.pt`` it learns from (``distill.teacher_checkpoints``), which its presets cannot name
    (tests train that task's tiny preset first)."""

    name: str
    summary: str
    presets: Path
    runner_task: str = ""
    config: str = ""
    panels: tuple[Panel, ...] = ()
    backends: tuple[str, ...] = ("mujoco_cpu",)  # the env.backend values its MDP runs on (training.envs.physics)
    distils: str = ""

    def preset_files(self) -> list[Path]:
        return sorted(self.presets.glob("*.yaml"))

    def config_class(self) -> type | None:
        return load_object(self.config) if self.config else None

    def runner_class(self) -> type:
        if not self.runner_task:
            raise ValueError(f"task {self.name!r} is a chain of other tasks, not one the runner trains")
        return load_object(self.runner_task)


def load_object(name: str) -> Any:
    """The object ``"module:attr"`` names, its module imported now."""
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


_REGISTRY: dict[str, Task] = {}


def register_task(task: Task) -> Task:
    """Called by a task folder's ``__init__.py``. A second folder taking a registered name is refused."""
    known = _REGISTRY.get(task.name)
    if known is not None and known.presets != task.presets:
        raise ValueError(f"task {task.name!r} is registered twice: by {known.presets.parent} and {task.presets.parent}")
    _REGISTRY[task.name] = task
    return task


def discover() -> None:
    """Import every task folder (each registers itself; a folder already imported costs nothing)."""
    for package_name in TASK_PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            if info.ispkg:
                importlib.import_module(f"{package_name}.{info.name}")


def tasks() -> dict[str, Task]:
    """Every registered task, by name."""
    discover()
    return dict(sorted(_REGISTRY.items()))


def get_task(name: str) -> Task:
    known = tasks()
    if name not in known:
        raise ValueError(f"task {name!r} is not registered; known: {', '.join(known)} (training/tasks/<name>/)")
    return known[name]


def presets() -> dict[str, tuple[Task, Path]]:
    """Every shipped preset by the name ``--config`` takes, with its task. A name two tasks ship is refused."""
    found: dict[str, tuple[Task, Path]] = {}
    for task in tasks().values():
        for path in task.preset_files():
            if path.stem in found:
                raise ValueError(f"preset {path.stem!r} is shipped twice: {found[path.stem][1]} and {path}")
            found[path.stem] = (task, path)
    return found
