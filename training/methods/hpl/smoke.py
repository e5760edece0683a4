"""`parkour train smoke --method hpl`: HPL's chain at toy size on the CPU, ending in the same bundle.

1. **Terrain**: the HPL terrain set (every kind at the curriculum's levels, fractal noise on top) as
   heightfields in ``DIR/terrain/terrains.npz`` + ``terrain.json``; the set is also compiled as MuJoCo
   hfield geoms (one tile per kind) to check the builder.
2. **References**: ``parkour mm synth`` into ``DIR/mm`` (the CPU envs are motion-tracking envs: the
   robot needs a reference to follow), cut as the PHP smoke cuts them.
3. **Curriculum terrains**: each reference gets one copy per level with a hurdle of that level's
   height (``terrain.parkour_terrain("hurdles", d)``) across its path at 60 % of its length: the
   box-only CPU env takes box-representable kinds.
4. **Oracle**: the ``hpl_oracle`` task through the runner (:mod:`.task`: rsl_rl's PPO on the tracking
   env with the scandot oracle of :mod:`.oracle`, ``configs/hpl_oracle[_tiny].yaml``); episodes start
   at the start of their terrain; each environment's reference copy is chosen by its curriculum level
   (:mod:`.curriculum`), moved after every episode by the distance covered along the path over the
   path's length.
5. **Distillation**: DAgger with one trainer and N collector processes (:mod:`.collectors`) into
   training/export's recurrent depth student.
6. **Export** (``training.export.export_student``) and **simulation**
   (``training.pipeline.smoke.stage_sim``), as the PHP smoke run.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training.configs.schema import load_train_config
from training.envs.reference import Reference, Terrain
from training.methods.hpl.task import path_of
from training.methods.hpl.terrain import HURDLE_THICKNESS_M, KINDS, TerrainSpec, add_hfield, level_value, terrain_set
from training.pipeline.smoke import DEFAULT_CONFIG, method_student_config, stage_mm, stage_sim, train_teacher_stage
from training.pipeline.smoke import SIZES as PHP_SIZES
from training.pipeline.teacher import Log, SkillReference

HURDLE_AT = 0.6  # fraction of the path where the curriculum hurdle stands
HURDLE_WIDTH_M = 1.0


@dataclass(frozen=True)
class HplSize:
    php: str  # the PHP smoke size whose references, student size, camera and sim time are reused
    oracle_config: str  # the hpl_oracle task's config (training/configs/): its hpl.levels set the curriculum
    collectors: int
    distill_iterations: int
    distill_steps: int
    distill_envs: int


SIZES: dict[str, HplSize] = {
    "tiny": HplSize("tiny", "hpl_oracle_tiny", 2, 3, 16, 2),
    "smoke": HplSize("smoke", "hpl_oracle", 2, 40, 24, 8),
}


def stage_terrain(out: Path, levels: int, seed: int, log: Log) -> dict[str, Any]:
    """Write the terrain set (heightfields + parameters) and compile it as MuJoCo hfields."""
    import mujoco

    from parkour_core.stats import write_json

    spec = TerrainSpec(noise_amplitude_m=0.02, seed=seed)
    tiles = terrain_set(levels, spec)
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out / "terrains.npz",
        **{f"{kind}_{i}": t.heights.astype(np.float32) for kind, ts in tiles.items() for i, t in enumerate(ts)},
    )
    mj = mujoco.MjSpec()
    for row, kind in enumerate(KINDS):
        add_hfield(mj, tiles[kind][len(tiles[kind]) // 2], name=f"{kind}", pos=(0.0, 3.0 * row))
    model = mj.compile()
    summary = {
        "dir": str(out),
        "spec": dataclasses.asdict(spec),
        "levels": levels,
        "tiles": {
            kind: [
                {"difficulty": t.difficulty, **t.params, "boxes": None if t.boxes is None else len(t.boxes)} for t in ts
            ]
            for kind, ts in tiles.items()
        },
        "mujoco_hfields": int(model.nhfield),
    }
    write_json(out / "terrain.json", summary)
    log(f"terrain: {len(KINDS)} kinds x {levels} levels to {out} ({model.nhfield} MuJoCo hfields compiled)")
    return summary


def with_hurdle(ref: Reference, difficulty: float) -> Reference:
    """``ref`` with a hurdle of ``difficulty`` across its path at :data:`HURDLE_AT` of its length."""
    start, direction, length = path_of(ref)
    height = level_value("hurdles", difficulty)
    xy = start + direction * HURDLE_AT * max(length, 0.5)
    t = ref.terrain
    terrain = Terrain(
        center=np.vstack([t.center, [[xy[0], xy[1], height / 2]]]),
        half_size=np.vstack([t.half_size, [[HURDLE_THICKNESS_M / 2, HURDLE_WIDTH_M / 2, height / 2]]]),
        yaw=np.append(t.yaw, np.arctan2(direction[1], direction[0])),
    )
    return dataclasses.replace(ref, terrain=terrain, name=f"{ref.name}_hurdle{difficulty:.2f}")


def curriculum_references(references: list[SkillReference], levels: int) -> list[SkillReference]:
    """Reference ``r`` at level ``l`` is entry ``r * levels + l``."""
    difficulties = np.linspace(0.0, 1.0, levels) if levels > 1 else np.zeros(1)
    return [SkillReference(r.skill, with_hurdle(r.reference, float(d))) for r in references for d in difficulties]


def plot(result: dict[str, Any], path: Path) -> Path:
    """Oracle return, curriculum mean level, DAgger loss."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    axes[0].plot(result["teacher_return"])
    axes[0].set(title="Oracle (PPO, scandots)", xlabel="oracle iteration", ylabel="episode return")
    axes[1].plot(result["curriculum_mean_level"], label="mean level")
    axes[1].plot(result["oracle"]["completion"], label="completion (finished episodes)")
    axes[1].set(title="Terrain curriculum", xlabel="oracle iteration")
    axes[1].legend(fontsize=8)
    axes[2].plot(result["student_loss"])
    axes[2].set(title=f"DAgger ({result['collectors']} collectors)", xlabel="trainer iteration", ylabel="masked MSE")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [row.get(key) for row in rows] for key in rows[0]} if rows else {}


def run_method_smoke(out: Path, size: str, seed: int, sim: bool, log: Log = print) -> dict[str, Any]:
    """Every HPL stage in order; writes DIR/smoke.json and DIR/curves.png, returns smoke.json's content."""
    from parkour_core.stats import write_json
    from training.export import export_student
    from training.export.models import parameter_count
    from training.methods.hpl.collectors import StudentTask, run_distributed
    from training.pipeline.teacher import toy_references

    if size not in SIZES:
        raise ValueError(f"size {size!r} is not one of {', '.join(SIZES)}")
    preset = SIZES[size]
    php = PHP_SIZES[preset.php]
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    levels = load_train_config(preset.oracle_config).hpl.levels
    student_cfg = method_student_config(
        DEFAULT_CONFIG, dataclasses.replace(php, student={**php.student, "env.num_envs": preset.distill_envs}), seed
    )
    torch.manual_seed(seed)
    wall: dict[str, float] = {}
    started = time.perf_counter()

    t = time.perf_counter()
    terrain = stage_terrain(out / "terrain", levels, seed, log)
    wall["terrain"] = time.perf_counter() - t

    t = time.perf_counter()
    mm = stage_mm(out / "mm", php.motions, seed, log)
    base = toy_references(out / "mm", php.reference_s)
    references = curriculum_references(base, levels)
    wall["mm"] = time.perf_counter() - t

    t = time.perf_counter()
    oracle, oracle_model = train_teacher_stage(out, php, seed, references, config=preset.oracle_config)
    shutil.copyfile(oracle["teacher"], out / "oracle.pt")
    oracle_rows = oracle["iterations"]
    wall["oracle"] = time.perf_counter() - t

    t = time.perf_counter()
    task = StudentTask(
        references,
        student_cfg,
        php.student_size,
        php.camera,
        oracle_model,
        bptt_steps=php.bptt_steps,
        max_boxes=max(len(r.reference.terrain) for r in references),
        seed=seed,
    )
    distill = run_distributed(
        task, preset.collectors, preset.distill_iterations, preset.distill_steps, seed=seed, keep=4, log=log
    )
    model = distill.student
    torch.save(model.state_dict(), out / "student.pt")
    wall["student"] = time.perf_counter() - t

    t = time.perf_counter()
    frames = [b["depth"].reshape(-1, *b["depth"].shape[2:]) for b in distill.samples]
    calibration = list(np.concatenate(frames)[:: max(1, sum(len(f) for f in frames) // 64)][:64]) if frames else []
    bundle = export_student(
        model.backbone.eval(),
        model.student.eval(),
        out / "bundle",
        name=f"hpl_smoke_student_{size}",
        provenance={
            "training": f"parkour train smoke --method hpl --size {size} --seed {seed}",
            "method": "hpl",
            "oracle_iterations": len(oracle_rows),
            "distill_iterations": preset.distill_iterations,
            "collectors": preset.collectors,
            "references": [r.reference.name for r in base],
        },
        calibration_frames=calibration,
    )
    manifest = json.loads((bundle / "manifest.json").read_text())
    wall["export"] = time.perf_counter() - t
    log(f"export: wrote {bundle}")

    sim_summary: dict[str, Any] = {"ran": False, "skipped": True}
    if sim:
        t = time.perf_counter()
        sim_summary = stage_sim(bundle, out / "sim", php.sim_active_s, log)
        wall["sim"] = time.perf_counter() - t
    wall["total"] = time.perf_counter() - started

    result: dict[str, Any] = {
        "method": "hpl",
        "size": size,
        "seed": seed,
        "configs": {"oracle": preset.oracle_config, "student": str(DEFAULT_CONFIG)},
        "terrain": terrain,
        "mm": mm,
        "references": [{"name": r.reference.name, "skill": r.skill, "frames": r.reference.num_frames} for r in base],
        "teacher_return": [row["episode_return"] for row in oracle_rows],
        "oracle": _columns(oracle_rows),
        "curriculum_mean_level": [row["mean_level"] for row in oracle_rows],
        "curriculum": {
            **oracle["curriculum"],
            "hurdle_heights_m": [level_value("hurdles", float(d)) for d in np.linspace(0, 1, levels)],
        },
        "student_loss": [row["loss"] for row in distill.iterations],
        "student": _columns(distill.iterations),
        "collectors": preset.collectors,
        "distill_transitions": distill.transitions,
        "distill_transitions_per_s": round(distill.transitions_per_s, 1),
        "student_parameters": {
            "depth_backbone": parameter_count(model.backbone),
            "student": parameter_count(model.student),
        },
        "bundle": str(bundle),
        "export_checks": manifest["provenance"]["checks"],
        "sim": sim_summary,
        "stage_wall_s": {k: round(v, 1) for k, v in wall.items()},
        "curves": str(out / "curves.png"),
    }
    plot(result, out / "curves.png")
    write_json(out / "smoke.json", result)
    return result
