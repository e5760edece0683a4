"""The ``php_teacher`` task: PHP's motion-tracking teacher on ``parkour mm synth`` references, PPO with
adaptive start sampling; ``tracking.py`` holds the tracking env's pieces the smoke chain shares."""

from pathlib import Path

from training.registry import Task, register_task

register_task(
    Task(
        name="php_teacher",
        summary="PHP's motion-tracking teacher on `parkour mm synth` references: PPO with adaptive start sampling",
        presets=Path(__file__).parent / "presets",
        runner_task="training.tasks.php_teacher.task:TeacherTask",
        backends=("mujoco_cpu", "mujoco_warp"),
        panels=(
            ("episode return", (("episode_return", "finished episodes (rsl_rl)"),)),
            (
                "tracking",
                (("tracking_error_m", "mean body-position error (m)"), ("failed_fraction", "episodes failed")),
            ),
            ("reward per step", (("reward_per_step", "reward/step"),)),
        ),
    )
)
