"""The ``php_student`` task: PHP's depth student: hybrid DAgger + PPO from php_teacher runs, exported as a bundle."""

from pathlib import Path

from training.registry import Task, register_task

register_task(
    Task(
        name="php_student",
        summary="PHP's depth student: hybrid DAgger + PPO from php_teacher runs, exported as a bundle",
        presets=Path(__file__).parent / "presets",
        runner_task="training.tasks.php_student.task:StudentTask",
        backends=("mujoco_cpu", "mujoco_warp"),
        distils="php_teacher",
        panels=(
            ("losses", (("dagger", "L_D (masked MSE to the teacher)"), ("surrogate", "PPO surrogate"))),
            (
                "schedules",
                (("dagger_weight", "lambda_D"), ("ppo_weight", "lambda_PPO"), ("termination_m", "termination (m)")),
            ),
            (
                "imitation",
                (("imitated_fraction", "steps imitated (within 0.5 m)"), ("tracking_error_m", "tracking error (m)")),
            ),
        ),
    )
)
