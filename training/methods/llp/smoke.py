"""`parkour train smoke --method llp --out DIR`: the PHP smoke chain with LLP's student, timing and prior.

Stages and outputs are those of :func:`training.pipeline.smoke.run_smoke` (``DIR/mm``,
``DIR/bundle``, ``DIR/smoke.json``, ``DIR/curves.png``, ``DIR/sim``), through the pipeline's own
functions (``configs``, ``stage_mm``, ``train_teacher_stage``: the php_teacher task through the runner,
``stage_sim``, ``plot_curves``) and sizes.
What LLP changes:

- references cut around each motion's skill (approach, skill and exit all present), with their phase;
- the student: MLP -> GRU -> MLP with the height-scan decoder (:mod:`.student`), LLP's camera timing
  (:mod:`.timing`), the conditional transition prior with the group label in the critic only
  (:mod:`.transition_prior`), trained by :func:`.distill.train_llp_student`;
- the export drops the decoder and writes LLP's trained depth latency into the manifest;
- an entry/exit evaluation of the trained student (:mod:`.entry_exit`).

smoke.json adds ``method: "llp"``, ``reconstruction_loss`` (one value per iteration), the prior's
per-iteration terms (inside ``student``), ``timing`` and ``entry_exit``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from training.methods.llp.student import SIZES as LLP_SIZES
from training.methods.llp.timing import LLPTiming
from training.pipeline.smoke import (
    COMMON_STUDENT,
    DEFAULT_CONFIG,
    SIZES,
    method_student_config,
    stage_mm,
    stage_sim,
    train_teacher_stage,
)
from training.pipeline.teacher import Log

# Seconds kept before the skill's first frame and after its last (the toy task's approach and exit).
AROUND_SKILL_S: dict[str, tuple[float, float]] = {"tiny": (0.4, 0.4), "smoke": (0.8, 0.8)}
RECONSTRUCTION_WEIGHT = 1.0


def run_method_smoke(out: Path, size: str, seed: int, sim: bool, log: Log = print) -> dict[str, Any]:
    """Every stage in order; writes DIR/smoke.json and DIR/curves.png and returns smoke.json's content."""
    import torch

    from parkour_core.stats import write_json
    from training.export.models import parameter_count
    from training.methods.llp.distill import evaluate_entry_exit, train_llp_student
    from training.methods.llp.references import skill_references
    from training.methods.llp.student import export_llp_student
    from training.methods.llp.transition_prior import GROUPS, PriorConfig
    from training.pipeline.curves import plot_curves

    if size not in SIZES:
        raise ValueError(f"size {size!r} is not one of {', '.join(SIZES)}")
    preset, llp_size, timing, prior_cfg = SIZES[size], LLP_SIZES[size], LLPTiming(), PriorConfig()
    before_s, after_s = AROUND_SKILL_S[size]
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    student_cfg = method_student_config(DEFAULT_CONFIG, preset, seed)
    torch.manual_seed(seed)
    wall: dict[str, float] = {}
    started = time.perf_counter()

    t = time.perf_counter()
    mm = stage_mm(out / "mm", preset.motions, seed, log)
    references = skill_references(out / "mm", before_s, after_s)
    wall["mm"] = time.perf_counter() - t

    t = time.perf_counter()
    teacher, teacher_model = train_teacher_stage(out, preset, seed, [r.skill_reference for r in references])
    wall["teacher"] = time.perf_counter() - t

    t = time.perf_counter()
    student = train_llp_student(
        references, teacher_model, student_cfg, llp_size, preset.camera, seed, timing, prior_cfg,
        RECONSTRUCTION_WEIGHT, preset.bptt_steps, log=log,
    )  # fmt: skip
    model = student.model
    torch.save(model.state_dict(), out / "student.pt")  # with the decoder and critic: training state
    wall["student"] = time.perf_counter() - t

    t = time.perf_counter()
    entry_exit = evaluate_entry_exit(model, references, student_cfg, preset.camera, seed, timing)
    wall["entry_exit"] = time.perf_counter() - t
    log(f"entry/exit: {entry_exit['summary']}")

    t = time.perf_counter()
    bundle = export_llp_student(
        model,
        out / "bundle",
        name=f"llp_smoke_student_{size}",
        provenance={
            "training": f"parkour train smoke --method llp --size {size} --seed {seed}",
            "teacher_iterations": len(teacher["iterations"]),
            "student_iterations": student_cfg.run.max_iterations,
            "references": [r.reference.name for r in references],
        },
        latency_s=timing.latency_s,
        camera_hz=timing.nominal_hz,
        calibration_frames=student.calibration_frames,
    )
    manifest = json.loads((bundle / "manifest.json").read_text())
    wall["export"] = time.perf_counter() - t
    log(f"export: wrote {bundle}")

    sim_summary: dict[str, Any] = {"ran": False, "skipped": True}
    if sim:
        t = time.perf_counter()
        sim_summary = stage_sim(bundle, out / "sim", preset.sim_active_s, log)
        wall["sim"] = time.perf_counter() - t
    wall["total"] = time.perf_counter() - started

    rows = student.iterations
    columns = lambda rs: {key: [r[key] for r in rs] for key in rs[0]} if rs else {}  # noqa: E731
    result: dict[str, Any] = {
        "method": "llp",
        "size": size,
        "seed": seed,
        "config": str(DEFAULT_CONFIG),
        "overrides": {
            "teacher": f"training/configs/{preset.teacher_config}.yaml",
            "student": {**COMMON_STUDENT, **preset.student},
        },
        "references": [
            {
                "name": r.reference.name,
                "skill": r.skill_reference.skill,
                "frames": r.reference.num_frames,
                "skill_entry_frame": r.entry_frame,
                "skill_end_frame": r.end_frame,
            }
            for r in references
        ],
        "mm": mm,
        "teacher_return": [row["episode_return"] for row in teacher["iterations"]],
        "teacher": columns(teacher["iterations"]),
        "teacher_start_sampler_probabilities": teacher["start_sampler_probabilities"],
        "student_loss": [row["total"] for row in rows],
        "reconstruction_loss": [row["reconstruction"] for row in rows],
        "student": columns(rows),
        "student_parameters": {
            "depth_backbone": parameter_count(model.backbone),
            "student": parameter_count(model.student),
            "height_scan_decoder (not exported)": parameter_count(model.decoder),
            "critic (not exported)": parameter_count(model.critic),
        },
        "llp": {
            "student_size": dataclasses.asdict(llp_size),
            "reconstruction_weight": RECONSTRUCTION_WEIGHT,
            "prior": {**dataclasses.asdict(prior_cfg), "groups": list(GROUPS)},
            "around_skill_s": [before_s, after_s],
        },
        "timing": {"camera_hz": list(timing.hz), "latency_s": list(timing.latency_s)},
        "entry_exit": entry_exit,
        "bundle": str(bundle),
        "export_checks": manifest["provenance"]["checks"],
        "sim": sim_summary,
        "stage_wall_s": {k: round(v, 1) for k, v in wall.items()},
        "curves": str(out / "curves.png"),
    }
    plot_curves(result, out / "curves.png")
    write_json(out / "smoke.json", result)
    return result
