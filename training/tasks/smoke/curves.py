"""The smoke run's curves as one PNG: teacher return, student loss terms, and the distillation schedule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def plot_curves(result: dict[str, Any], path: Path) -> Path:
    """Three panels from smoke.json's content: teacher return and reward per step; the student's
    hybrid loss and its terms; lambda_D, lambda_PPO and the relaxed termination per iteration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    teacher = result["teacher"]
    k = np.arange(len(result["teacher_return"]))
    ax = axes[0]
    ax.plot(k, result["teacher_return"], label="episode return (episodes ended this iteration)")
    ax.set_xlabel("teacher iteration")
    ax.set_ylabel("return")
    ax.set_title("Teacher (PPO, tracking env)")
    twin = ax.twinx()
    twin.plot(k, teacher["reward_per_step"], color="tab:orange", alpha=0.6, label="reward per step")
    twin.set_ylabel("reward per step")
    lines = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(lines, [line.get_label() for line in lines], fontsize=8, loc="lower right")

    student = result["student"]
    j = np.arange(len(result["student_loss"]))
    ax = axes[1]
    ax.plot(j, result["student_loss"], label="total L", color="black")
    for name, label in (
        ("dagger", "L_D (masked MSE)"),
        ("surrogate", "L_PPO surrogate"),
        ("value", "value loss"),
        ("teacher_student_mse", "rollout MSE to teacher"),
    ):
        if name in student:  # the php_student task reports L_D only
            ax.plot(j, student[name], label=label)
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_xlabel("student iteration")
    ax.set_title("Student (hybrid DAgger + PPO)")
    ax.legend(fontsize=8)

    ax = axes[2]
    ax.plot(j, student["dagger_weight"], label="lambda_D")
    ax.plot(j, student["ppo_weight"], label="lambda_PPO")
    ax.plot(j, student["termination_m"], label="termination (m)")
    ax.plot(j, student["imitated_fraction"], label="imitated fraction (DAgger mask)", linestyle="--")
    ax.set_xlabel("student iteration")
    ax.set_title("Schedule")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
