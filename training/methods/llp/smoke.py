"""`parkour train smoke --method llp --out DIR`: the PHP smoke chain with LLP's student, timing and prior.

Stages and outputs are those of :func:`training.pipeline.smoke.run_smoke` (``DIR/mm``, ``DIR/teacher``,
``DIR/student`` with its ``bundle``, ``DIR/smoke.json``, ``DIR/curves.png``, ``DIR/sim``), through the
pipeline's own functions (``stage_mm``, ``train_teacher_stage``: the php_teacher task through the
runner, ``stage_sim``, ``plot_curves``) and sizes. What LLP changes: :func:`run_method_smoke`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from training.configs.schema import load_smoke_size
from training.pipeline.smoke import StageClock, columns, finish_chain, stage_mm, train_teacher_stage
from training.pipeline.teacher import Log


def run_method_smoke(out: Path, size: str, seed: int, sim: bool, log: Log = print) -> dict[str, Any]:
    """Every stage in order; writes DIR/smoke.json and DIR/curves.png and returns smoke.json's content.

    What LLP changes:

    - references cut around each motion's skill (approach, skill and exit all present), with their phase;
    - the student: the ``llp_student`` task through the runner (:mod:`.task`; the size's
      ``smoke.llp_student``): MLP -> GRU -> MLP with the height-scan decoder (:mod:`.student`), LLP's
      camera timing (:mod:`.timing`), the conditional transition prior with the group label in the critic
      only (:mod:`.transition_prior`);
    - the export drops the decoder and writes LLP's trained depth latency into the manifest;
    - an entry/exit evaluation of the trained student (:mod:`.evaluate`).

    smoke.json adds ``method: "llp"``, ``reconstruction_loss`` (one value per iteration), the prior's
    per-iteration terms (inside ``student``), ``timing`` and ``entry_exit``.
    """
    import torch

    from parkour_core.stats import write_json
    from training.configs.schema import load_train_config
    from training.methods.llp.references import skill_references
    from training.methods.llp.task import timing_of
    from training.methods.llp.transition_prior import GROUPS
    from training.pipeline.curves import plot_curves
    from training.rl.train import train

    preset = load_smoke_size(size)
    config = preset.llp_student
    student_cfg = load_train_config(config, {"run.seed": seed})
    timing, c = timing_of(student_cfg), student_cfg.llp
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    clock = StageClock()
    with clock("mm"):
        mm = stage_mm(out / "mm", preset.motions, seed, log)
        references = skill_references(out / "mm", *c.around_skill_s)
    with clock("teacher"):
        teacher, teacher_model = train_teacher_stage(out, preset, seed, [r.skill_reference for r in references])
    with clock("student"):
        provenance = {
            "training": f"parkour train smoke --method llp --size {size} --seed {seed}",
            "teacher_iterations": len(teacher["iterations"]),
        }
        inputs = {"references": references, "teacher": teacher_model, "provenance": provenance}
        student = train(config, out / "student", {"run.seed": seed}, task_inputs=inputs)
    entry_exit = student["entry_exit"]
    log(f"entry/exit: {entry_exit['summary']}")
    outputs = finish_chain(student, out, preset.sim_active_s, sim, clock, log)

    rows = student["iterations"]
    result: dict[str, Any] = {
        "method": "llp",
        "size": size,
        "seed": seed,
        "config": f"training/configs/{config}.yaml",
        "teacher_config": f"training/configs/{preset.php_teacher}.yaml",
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
        "student_parameters": student["student_parameters"],
        "llp": {**dataclasses.asdict(c), "groups": list(GROUPS)},
        "timing": {"camera_hz": list(timing.hz), "latency_s": list(timing.latency_s)},
        "entry_exit": entry_exit,
        **outputs,
    }
    plot_curves(result, out / "curves.png")
    write_json(out / "smoke.json", result)
    return result
