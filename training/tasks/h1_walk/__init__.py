"""The ``h1_walk`` task: the H1 learns velocity-tracking walking from scratch by PPO, exported as an h1 bundle."""

from pathlib import Path

from training.registry import Task, register_task

register_task(
    Task(
        name="h1_walk",
        summary="the H1 learns velocity-tracking walking from scratch by PPO, exported as an h1 bundle",
        presets=Path(__file__).parent / "presets",
        config="training.tasks.h1_walk.config:H1WalkTrainConfig",
        runner_task="training.tasks.h1_walk.task:H1WalkTask",
        backends=("mujoco_cpu", "mujoco_warp"),
        panels=(
            ("episode return", (("episode_return", "finished episodes"),)),
            (
                "episodes",
                (
                    ("episode_length_s", "length (s)"),
                    ("fell_fraction", "ended by a fall"),
                    ("refused_fraction", "ended at refused targets"),
                ),
            ),
            (
                "velocity (m/s)",
                (
                    ("speed_error_mps", "planar speed error"),
                    ("forward_speed_mps", "forward speed"),
                    ("command_vx_mps", "commanded vx"),
                ),
            ),
        ),
    )
)
