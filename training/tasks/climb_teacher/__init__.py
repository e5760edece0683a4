"""The ``climb_teacher`` task: the privileged climbing teacher, a residual on the walking policy learned
by PPO over box courses."""

from pathlib import Path

from training.registry import Task, register_task

register_task(
    Task(
        name="climb_teacher",
        summary="the privileged climbing teacher: a residual on the walking policy over box courses, PPO",
        presets=Path(__file__).parent / "presets",
        config="training.tasks.climb_teacher.config:ClimbTrainConfig",
        runner_task="training.tasks.climb_teacher.task:ClimbTask",
        backends=("mujoco_cpu", "mujoco_warp"),
        panels=(
            ("episode return", (("episode_return", "finished episodes"),)),
            ("curriculum", (("mean_level", "mean level (0: 5 cm)"), ("course_success", "courses passed"))),
            (
                "pace and falls",
                (("flat_speed_ratio", "flat-ground speed / command"), ("falls_per_1000_steps", "falls / 1000 steps")),
            ),
        ),
    )
)
