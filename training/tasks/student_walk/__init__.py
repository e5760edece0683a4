"""Stage 1 of the depth student: DAgger from the installed walking policy into the recurrent depth student (CPU)."""

from pathlib import Path

from training.registry import Task, register_task

register_task(
    Task(
        name="student_walk",
        summary="stage 1 of the depth student: DAgger from the installed walking policy",
        presets=Path(__file__).parent / "presets",
        config="training.tasks.student_walk.config:WalkTrainConfig",
        runner_task="training.tasks.student_walk.task:WalkTask",
        backends=("mujoco_cpu", "mujoco_warp"),
        panels=(
            ("DAgger loss (MSE to the teacher's actions)", (("behavior", "loss"),)),
            (
                "episode length (s)",
                (("episode_length_s", "finished episodes"), ("running_length_s", "running episodes")),
            ),
            (
                "forward speed (m/s)",
                (
                    ("teacher_speed", "teacher envs"),
                    ("student_speed", "student envs (beta-mixed)"),
                    ("command_vx", "commanded vx"),
                ),
            ),
        ),
    )
)
