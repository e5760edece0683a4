"""The ``student_step`` task: stage 2 of the depth student, hybrid DAgger + PPO onto platforms from a
terrain-aware teacher."""

from pathlib import Path

from training.registry import Task, register_task

register_task(
    Task(
        name="student_step",
        summary="stage 2 of the depth student: hybrid DAgger + PPO onto platforms from a terrain-aware teacher",
        presets=Path(__file__).parent / "presets",
        config="training.tasks.student_step.config:StepTrainConfig",
        runner_task="training.tasks.student_step.task:StepTask",
        backends=("mujoco_cpu", "mujoco_warp"),
        panels=(
            ("losses", (("dagger", "L_D (MSE to the teacher)"), ("value", "value loss"))),
            (
                "schedules",
                (("dagger_weight", "lambda_D"), ("ppo_weight", "lambda_PPO"), ("height_cap_m", "height cap (m)")),
            ),
            ("reward per second", (("reward_per_s", "reward/s"),)),
            ("step-ups", (("step_up_rate_window", "trailing step-up rate (>= 7.5 cm)"),)),
        ),
    )
)
