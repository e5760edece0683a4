"""``parkour train smoke``: PHP's chain at toy size on the CPU (smoke.py): motion matching, the
``php_teacher`` task, the ``php_student`` task, the bundle and the simulated graph. Its sizes are presets
(``presets/smoke_tiny.yaml``, ``smoke.yaml``: ``task: smoke``); it is a chain, not a task the runner trains.
"""

from pathlib import Path

from training.registry import Task, register_task

register_task(
    Task(
        name="smoke",
        summary="PHP's chain at toy size, `parkour train smoke --size NAME`: mm, php_teacher, php_student, bundle, sim",
        presets=Path(__file__).parent / "presets",
        config="training.tasks.smoke.config:SmokeTrainConfig",
    )
)
