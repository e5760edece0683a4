"""`parkour train smoke --method hpl`: HPL's chain at toy size on the CPU, ending in the same bundle.

1. Terrain: the HPL terrain set as heightfields in ``DIR/terrain`` (:func:`stage_terrain`).
2. References: ``parkour mm synth`` into ``DIR/mm`` (the CPU envs are motion-tracking envs: the
   robot needs a reference to follow), cut as the PHP smoke cuts them.
3. Curriculum terrains: one copy of each reference per level with a hurdle of that level's height
   (:func:`curriculum_references`): the box-only CPU env takes box-representable kinds.
4. Oracle: the ``hpl_oracle`` task through the runner (:mod:`.task`, the size's ``smoke.hpl_oracle``
   config), each environment's reference copy chosen by its curriculum level (:mod:`.curriculum`).
5. Student: the ``hpl_student`` task through the runner (:mod:`.student`, the size's
   ``smoke.hpl_student`` config); its end exports the bundle (``DIR/student/bundle``).
6. Simulation (``training.pipeline.smoke.stage_sim``), as the PHP smoke run.

Sizes: ``--size NAME`` reads ``training/configs/smoke[_tiny].yaml`` (``training.configs.schema.load_smoke_size``).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training.configs.schema import load_smoke_size, load_train_config
from training.envs.reference import Reference, Terrain
from training.methods.hpl.task import path_of
from training.methods.hpl.terrain import HURDLE_THICKNESS_M, KINDS, TerrainSpec, add_hfield, level_value, terrain_set
from training.pipeline.smoke import StageClock, columns, finish_chain, stage_mm, train_teacher_stage
from training.pipeline.teacher import Log, SkillReference

HURDLE_AT = 0.6  # fraction of the path where the curriculum hurdle stands
HURDLE_WIDTH_M = 1.0


def stage_terrain(out: Path, levels: int, seed: int, log: Log) -> dict[str, Any]:
    """Write the terrain set (heightfields + parameters) and compile it as MuJoCo hfields.

    Every kind at the curriculum's levels, fractal noise on top, in ``DIR/terrain/terrains.npz`` +
    ``terrain.json``; compiled as MuJoCo hfield geoms (one tile per kind) to check the builder.
    """
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
    """``ref`` with a hurdle of ``difficulty`` (``terrain.parkour_terrain("hurdles", d)``) across its path at
    :data:`HURDLE_AT` of its length."""
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
    where = "worker processes" if result["worker_processes"] else "shares in one process"
    axes[2].set(title=f"DAgger ({result['workers']} {where})", xlabel="student iteration", ylabel="masked MSE")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def steady_env_steps_per_s(rows: list[dict[str, Any]]) -> float:
    """The student's env-steps/s over its iterations after the first (which pays for the workers' start)."""
    rows = rows[1:] or rows
    return round(sum(r["env_steps_per_s"] * r["wall_s"] for r in rows) / sum(r["wall_s"] for r in rows), 1)


def run_method_smoke(out: Path, size: str, seed: int, sim: bool, log: Log = print) -> dict[str, Any]:
    """Every HPL stage in order; writes DIR/smoke.json and DIR/curves.png, returns smoke.json's content.

    The oracle is rsl_rl's PPO on the tracking env with the scandot oracle of :mod:`.oracle`; episodes
    start at the start of their terrain, and each environment's curriculum level moves after every
    episode by the distance covered along the path over the path's length. The student is DAgger from
    the oracle into the recurrent depth student, its environments in ``hpl.workers`` worker processes,
    each labelling its share with its own oracle; its bundle passes ``training.export.export_student``'s
    checks.
    """
    from parkour_core.stats import write_json
    from training.pipeline.teacher import toy_references
    from training.rl.train import train

    preset = load_smoke_size(size)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    levels = load_train_config(preset.hpl_oracle).hpl.levels
    torch.manual_seed(seed)
    clock = StageClock()
    with clock("terrain"):
        terrain = stage_terrain(out / "terrain", levels, seed, log)
    with clock("mm"):
        mm = stage_mm(out / "mm", preset.motions, seed, log)
        base = toy_references(out / "mm", preset.reference_s)
        references = curriculum_references(base, levels)
    with clock("oracle"):
        oracle, oracle_model = train_teacher_stage(out, preset, seed, references, config=preset.hpl_oracle)
        shutil.copyfile(oracle["teacher"], out / "oracle.pt")
    oracle_rows = oracle["iterations"]
    with clock("student"):
        provenance = {
            "training": f"parkour train smoke --method hpl --size {size} --seed {seed}",
            "method": "hpl",
            "oracle_iterations": len(oracle_rows),
        }
        inputs = {"references": references, "teacher": oracle_model, "provenance": provenance}
        student = train(preset.hpl_student, out / "student", {"run.seed": seed}, task_inputs=inputs)
    rows = student["iterations"]
    outputs = finish_chain(student, out, preset.sim_active_s, sim, clock, log)

    result: dict[str, Any] = {
        "method": "hpl",
        "size": size,
        "seed": seed,
        "configs": {"oracle": preset.hpl_oracle, "student": preset.hpl_student},
        "terrain": terrain,
        "mm": mm,
        "references": [{"name": r.reference.name, "skill": r.skill, "frames": r.reference.num_frames} for r in base],
        "teacher_return": [row["episode_return"] for row in oracle_rows],
        "oracle": columns(oracle_rows),
        "curriculum_mean_level": [row["mean_level"] for row in oracle_rows],
        "curriculum": {
            **oracle["curriculum"],
            "hurdle_heights_m": [level_value("hurdles", float(d)) for d in np.linspace(0, 1, levels)],
        },
        "student_loss": [row["dagger"] for row in rows],
        "student": columns(rows),
        "workers": student["workers"],
        "worker_processes": student["processes"],
        "student_env_steps_per_s": steady_env_steps_per_s(rows),
        "student_parameters": student["parameters"],
        **outputs,
    }
    plot(result, out / "curves.png")
    write_json(out / "smoke.json", result)
    return result
