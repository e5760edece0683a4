"""`parkour train smoke --method hil`: PHP's smoke chain with HIL's teacher, at CPU scale.

The same stages and outputs as :func:`training.pipeline.smoke.run_smoke` (``DIR/mm``,
``DIR/bundle``, ``DIR/smoke.json``, ``DIR/curves.png``, the sim stage), with the tracking-only
teacher replaced by HIL's: the ``hil_teacher`` task through the runner (the size's
``smoke.hil_teacher``: ``configs/hil_teacher.yaml``, ``_tiny`` at the tiny size; PPO on the hybrid
env with the AMP style reward, the discriminator as a hook). The student stage is the pipeline's,
distilling the HIL policy through its tracking goal
(:class:`~training.methods.hil.task.HILTeacherAdapter`). smoke.json adds ``method: "hil"``,
``discriminator_accuracy`` per teacher iteration and the HIL settings; ``DIR/hil_curves.png`` plots
the discriminator and the adversarial envs' rewards.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from training.configs.schema import load_smoke_size
from training.methods.hil.task import HILTeacherAdapter
from training.pipeline.smoke import (
    StageClock,
    columns,
    finish_chain,
    stage_mm,
    train_student_stage,
    train_teacher_stage,
)
from training.pipeline.teacher import Log


def plot_hil_curves(result: dict[str, Any], path: Path) -> Path:
    """Discriminator accuracy and D(real)/D(generated); the adversarial envs' task and style rewards."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    teacher = result["teacher"]
    k = list(range(len(result["teacher_return"])))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    for key, label in (
        ("disc_accuracy", "accuracy"),
        ("disc_d_real", "mean D(real)"),
        ("disc_d_fake", "mean D(generated)"),
    ):
        if key in teacher:
            ax.plot(k, teacher[key], label=label)
    ax.set_xlabel("teacher iteration")
    ax.set_title("AMP discriminator")
    ax.legend(fontsize=8)
    ax = axes[1]
    for key, label in (
        ("task_reward", "task (adversarial envs)"),
        ("style_reward", "style (adversarial envs)"),
        ("tracking_reward", "tracking (tracking envs)"),
    ):
        ax.plot(k, teacher[key], label=label)
    ax.set_xlabel("teacher iteration")
    ax.set_title("Reward per step")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def run_method_smoke(out: Path, size: str = "smoke", seed: int = 0, sim: bool = True, log: Log = print) -> dict:
    """Every stage in order; writes DIR/smoke.json, DIR/curves.png, DIR/hil_curves.png; returns smoke.json."""
    import torch

    from parkour_core.stats import write_json
    from training.pipeline.curves import plot_curves
    from training.pipeline.teacher import toy_references

    preset = load_smoke_size(size)
    teacher_config = preset.hil_teacher
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    clock = StageClock()
    with clock("mm"):
        mm = stage_mm(out / "mm", preset.motions, seed, log)
        references = toy_references(out / "mm", preset.reference_s)
    with clock("teacher"):
        teacher, teacher_model = train_teacher_stage(out, preset, seed, references, config=teacher_config)
        shutil.copyfile(teacher["discriminator"], out / "discriminator.pt")
    with clock("student"):
        student = train_student_stage(
            out, preset.php_student, seed, references, HILTeacherAdapter(teacher_model), {"method": "hil"}
        )
    outputs = finish_chain(student, out, preset.sim_active_s, sim, clock, log)

    rows = teacher["iterations"]
    result: dict[str, Any] = {
        "method": "hil",
        "size": size,
        "seed": seed,
        "configs": {"teacher": teacher_config, "student": preset.php_student},
        "hil": {**teacher["config_values"]["hil"], "env": teacher["env"]},
        "references": [
            {"name": r.reference.name, "skill": r.skill, "frames": r.reference.num_frames} for r in references
        ],
        "mm": mm,
        "teacher_return": [row["episode_return"] for row in rows],
        "discriminator_accuracy": [row.get("disc_accuracy") for row in rows],
        "teacher": columns(rows),
        "teacher_start_sampler_probabilities": teacher["start_sampler_probabilities"],
        "student_loss": [row["total"] for row in student["iterations"]],
        "student": columns(student["iterations"]),
        "student_parameters": student["parameters"],
        **outputs,
        "hil_curves": str(out / "hil_curves.png"),
    }
    plot_curves(result, out / "curves.png")
    plot_hil_curves(result, out / "hil_curves.png")
    write_json(out / "smoke.json", result)
    return result
