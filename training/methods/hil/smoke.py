"""`parkour train smoke --method hil`: PHP's smoke chain with HIL's teacher, at CPU scale.

The same stages and outputs as :func:`training.pipeline.smoke.run_smoke` (``DIR/mm``,
``DIR/bundle``, ``DIR/smoke.json``, ``DIR/curves.png``, the sim stage), with the tracking-only
teacher replaced by HIL's (:func:`training.methods.hil.teacher.train_hil_teacher`: PPO on the
hybrid env with the AMP style reward). The student stage is the pipeline's, distilling the HIL
policy through its tracking goal (:class:`~training.methods.hil.teacher.HILTeacherAdapter`).
smoke.json adds ``method: "hil"``, ``discriminator_accuracy`` per teacher iteration and the HIL
settings; ``DIR/hil_curves.png`` plots the discriminator and the adversarial envs' rewards.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from training.methods.hil.discriminator import DiscriminatorConfig
from training.methods.hil.teacher import HILConfig, HILTeacherAdapter, train_hil_teacher
from training.pipeline.smoke import (
    COMMON_TEACHER,
    DEFAULT_CONFIG,
    SIZES,
    configs,
    stage_mm,
    stage_sim,
    train_student_stage,
)
from training.pipeline.teacher import Log

HIL_SIZES: dict[str, HILConfig] = {
    "tiny": HILConfig(discriminator=DiscriminatorConfig(hidden=(64, 64), batch_size=128, steps_per_iteration=4)),
    "smoke": HILConfig(discriminator=DiscriminatorConfig(hidden=(256, 128), batch_size=512, steps_per_iteration=8)),
}


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

    if size not in SIZES or size not in HIL_SIZES:
        raise ValueError(f"size {size!r} is not one of {', '.join(HIL_SIZES)}")
    preset, hil = SIZES[size], HIL_SIZES[size]
    config = DEFAULT_CONFIG
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    teacher_cfg, _ = configs(config, preset, seed)
    torch.manual_seed(seed)
    wall: dict[str, float] = {}
    started = time.perf_counter()

    t = time.perf_counter()
    mm = stage_mm(out / "mm", preset.motions, seed, log)
    references = toy_references(out / "mm", preset.reference_s)
    wall["mm"] = time.perf_counter() - t

    t = time.perf_counter()
    teacher = train_hil_teacher(references, teacher_cfg, hil, seed, log)
    torch.save(teacher.model.state_dict(), out / "teacher.pt")
    torch.save(teacher.discriminator.state_dict(), out / "discriminator.pt")
    wall["teacher"] = time.perf_counter() - t

    t = time.perf_counter()
    student = train_student_stage(
        out, preset.student_config, seed, references, HILTeacherAdapter(teacher.model), {"method": "hil"}
    )
    bundle = Path(student["bundle"])
    manifest = json.loads((bundle / "manifest.json").read_text())
    wall["student"] = time.perf_counter() - t
    log(f"student: wrote {bundle}")

    sim_summary: dict[str, Any] = {"ran": False, "skipped": True}
    if sim:
        t = time.perf_counter()
        sim_summary = stage_sim(bundle, out / "sim", preset.sim_active_s, log)
        wall["sim"] = time.perf_counter() - t
    wall["total"] = time.perf_counter() - started

    columns = lambda rows: {key: [row.get(key) for row in rows] for key in rows[0]} if rows else {}  # noqa: E731
    rows = teacher.iterations
    result: dict[str, Any] = {
        "method": "hil",
        "size": size,
        "seed": seed,
        "config": str(config),
        "overrides": {
            "teacher": {**COMMON_TEACHER, **preset.teacher},
            "student": f"training/configs/{preset.student_config}.yaml",
        },
        "hil": {**asdict(hil), "env": asdict(hil.split(teacher_cfg.env.num_envs))},
        "references": [
            {"name": r.reference.name, "skill": r.skill, "frames": r.reference.num_frames} for r in references
        ],
        "mm": mm,
        "teacher_return": [row["episode_return"] for row in rows],
        "discriminator_accuracy": [row.get("disc_accuracy") for row in rows],
        "teacher": columns(rows),
        "teacher_start_sampler_probabilities": teacher.sampler_probabilities,
        "student_loss": [row["total"] for row in student["iterations"]],
        "student": columns(student["iterations"]),
        "student_parameters": student["parameters"],
        "bundle": str(bundle),
        "export_checks": manifest["provenance"]["checks"],
        "sim": sim_summary,
        "stage_wall_s": {k: round(v, 1) for k, v in wall.items()},
        "curves": str(out / "curves.png"),
        "hil_curves": str(out / "hil_curves.png"),
    }
    plot_curves(result, out / "curves.png")
    plot_hil_curves(result, out / "hil_curves.png")
    write_json(out / "smoke.json", result)
    return result
