"""`parkour train smoke --method hpl`: HPL's chain at toy size on the CPU, ending in the same bundle.

1. **Terrain**: the HPL terrain set (every kind at the curriculum's levels, fractal noise on top) as
   heightfields in ``DIR/terrain/terrains.npz`` + ``terrain.json``; the set is also compiled as MuJoCo
   hfield geoms (one tile per kind) to check the builder.
2. **References**: ``parkour mm synth`` into ``DIR/mm`` (the CPU envs are motion-tracking envs: the
   robot needs a reference to follow), cut as the PHP smoke cuts them.
3. **Curriculum terrains**: each reference gets one copy per level with a hurdle of that level's
   height (``terrain.parkour_terrain("hurdles", d)``) across its path at 60 % of its length: the
   box-only CPU env takes box-representable kinds.
4. **Oracle**: PPO (``training.pipeline.teacher.ppo_update``) on the tracking env with the scandot
   oracle (:mod:`.oracle`); episodes start at the start of their terrain; each environment's
   reference copy is chosen by its curriculum level (:mod:`.curriculum`), moved after every episode
   by the distance covered along the path over the path's length.
5. **Distillation**: DAgger with one trainer and N collector processes (:mod:`.collectors`) into
   training/export's recurrent depth student.
6. **Export** (``training.export.export_student``) and **simulation**
   (``training.pipeline.smoke.stage_sim``), as the PHP smoke run.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training.envs.reference import Reference, Terrain
from training.methods.hpl.curriculum import Curriculum, CurriculumConfig
from training.methods.hpl.terrain import HURDLE_THICKNESS_M, KINDS, TerrainSpec, add_hfield, level_value, terrain_set
from training.pipeline.smoke import DEFAULT_CONFIG, configs, stage_mm, stage_sim
from training.pipeline.smoke import SIZES as PHP_SIZES
from training.pipeline.teacher import Log, SkillReference

HURDLE_AT = 0.6  # fraction of the path where the curriculum hurdle stands
HURDLE_WIDTH_M = 1.0


@dataclass(frozen=True)
class HplSize:
    php: str  # the PHP smoke size whose references, student size, camera and sim time are reused
    levels: int
    oracle_iterations: int
    oracle_envs: int
    oracle_steps: int
    collectors: int
    distill_iterations: int
    distill_steps: int
    distill_envs: int


SIZES: dict[str, HplSize] = {
    "tiny": HplSize("tiny", 3, 3, 8, 24, 2, 3, 16, 2),
    "smoke": HplSize("smoke", 5, 60, 32, 24, 2, 40, 24, 8),
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


def path_of(ref: Reference) -> tuple[np.ndarray, np.ndarray, float]:
    """Start xy, unit direction and length of the reference's root path (start to end)."""
    start, end = ref.root_pos[0, :2], ref.root_pos[-1, :2]
    length = float(np.linalg.norm(end - start))
    direction = (end - start) / length if length > 1e-6 else np.array([1.0, 0.0])
    return start, direction, length


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


def completion(ref: Reference, final_xy: np.ndarray) -> float:
    """Distance covered along the path over the path's length (episodes start at the path's start)."""
    start, direction, length = path_of(ref)
    return float(np.dot(final_xy - start, direction) / length) if length > 1e-6 else 1.0


def train_oracle(
    references: list[SkillReference], base_count: int, levels: int, cfg: Any, seed: int, log: Log
) -> tuple[Any, list[dict[str, Any]], Curriculum]:
    """PPO on the tracking env with the scandot oracle and the terrain curriculum."""
    from training.algorithms.hybrid import RolloutBatch, compute_gae
    from training.envs.privileged import term_slices
    from training.envs.tracking import TrackingEnv
    from training.methods.hpl.oracle import tracking_oracle
    from training.pipeline.teacher import EpisodeTracker, gaussian_sample, ppo_update, tracking_config

    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    refs = [r.reference for r in references]
    track = dataclasses.replace(tracking_config(cfg, seed), max_boxes=max(len(r.terrain) for r in refs))
    curriculum = Curriculum(track.num_envs, CurriculumConfig(levels=levels), seed)
    rng = np.random.default_rng(seed)
    env = TrackingEnv(
        refs,
        track,
        start_sampler=lambda ids, ref_ids, _: np.zeros(len(ids), dtype=np.int64),
        ref_sampler=lambda ids, _: rng.integers(0, base_count, size=len(ids)) * levels + curriculum.levels[ids],
    )
    pelvis = term_slices()["pelvis_pos_w"]
    model = tracking_oracle(
        env.num_obs, env.num_actions, tuple(cfg.policy.actor_hidden), cfg.policy.init_noise_std, True
    )
    hybrid = cfg.hybrid_config()
    optimizer = torch.optim.Adam(model.parameters(), lr=hybrid.learning_rate)
    lr, gamma, lam = hybrid.learning_rate, cfg.ppo.gamma, cfg.ppo.lam
    steps, n, a = cfg.ppo.num_steps_per_env, env.num_envs, env.num_actions
    episodes = EpisodeTracker(n)
    rows: list[dict[str, Any]] = []
    try:
        obs = torch.from_numpy(env.reset())
        for k in range(cfg.run.max_iterations):
            started = time.perf_counter()
            keys = ("obs", "actions", "log_probs", "values", "rewards", "dones", "mean", "std")
            buf: dict[str, list[torch.Tensor]] = {key: [] for key in keys}
            completions: list[float] = []
            for _ in range(steps):
                model.normalizer.update(obs)
                with torch.no_grad():
                    dist = model.action_distribution(obs)
                    action = gaussian_sample(dist.mean, dist.stddev, generator)
                    value = model.value(obs)
                ref_ids = env.ref_id.copy()
                next_obs, reward, done, info = env.step(action.numpy().astype(np.float64))
                episodes.add(reward, done, info["terminated"])
                ids = np.flatnonzero(done)
                reward = reward.copy()
                if len(ids):
                    final_xy = info["final_obs"][:, pelvis][:, :2]
                    done_completion = np.array(
                        [completion(refs[ref_ids[i]], xy) for i, xy in zip(ids, final_xy, strict=True)]
                    )
                    completions += done_completion.tolist()
                    curriculum.record(ids, done_completion)
                    timed_out = info["truncated"][ids]
                    if timed_out.any():
                        with torch.no_grad():
                            final_values = model.value(torch.from_numpy(info["final_obs"][timed_out])).numpy()
                        reward[ids[timed_out]] += gamma * final_values
                for key, val in zip(
                    keys,
                    (obs, action, dist.log_prob(action).sum(-1), value, torch.from_numpy(reward).float(),
                     torch.from_numpy(done), dist.mean, dist.stddev),
                    strict=True,
                ):  # fmt: skip
                    buf[key].append(val)
                obs = torch.from_numpy(next_obs)
            b = {key: torch.stack(v) for key, v in buf.items()}
            with torch.no_grad():
                last_values = model.value(obs)
            advantages, returns = compute_gae(b["rewards"], b["values"], b["dones"], last_values, gamma, lam)
            flat = lambda x: x.reshape(steps * n, *x.shape[2:])  # noqa: E731
            batch = RolloutBatch(
                obs=flat(b["obs"]), actions=flat(b["actions"]), log_probs=flat(b["log_probs"]),
                advantages=flat(advantages), returns=flat(returns), values=flat(b["values"]),
                action_mean=flat(b["mean"]), action_std=flat(b["std"]),
                teacher_actions=torch.zeros(steps * n, a), dagger_mask=torch.zeros(steps * n, dtype=torch.bool),
            )  # fmt: skip
            collected = time.perf_counter()
            lr, losses = ppo_update(model, optimizer, batch, hybrid, lr, generator)
            row = {
                "iteration": k,
                **episodes.summary(env.dt_s),
                "reward_per_step": float(b["rewards"].mean()),
                "completion": float(np.mean(completions)) if completions else float("nan"),
                "mean_level": curriculum.mean_level(),
                **losses,
                "learning_rate": lr,
                "collect_s": collected - started,
                "update_s": time.perf_counter() - collected,
            }
            rows.append(row)
            log(
                f"oracle {k + 1}/{cfg.run.max_iterations}: return {row['episode_return']:.2f}, completion "
                f"{row['completion']:.2f}, mean level {row['mean_level']:.2f}"
            )
    finally:
        env.close()
    return model, rows, curriculum


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
    oracle_cfg, student_cfg = configs(
        DEFAULT_CONFIG,
        dataclasses.replace(
            php,
            teacher={
                **php.teacher,
                "env.num_envs": preset.oracle_envs,
                "ppo.num_steps_per_env": preset.oracle_steps,
                "run.max_iterations": preset.oracle_iterations,
                "run.save_interval": preset.oracle_iterations,
            },
            student={**php.student, "env.num_envs": preset.distill_envs},
        ),
        seed,
    )
    torch.manual_seed(seed)
    wall: dict[str, float] = {}
    started = time.perf_counter()

    t = time.perf_counter()
    terrain = stage_terrain(out / "terrain", preset.levels, seed, log)
    wall["terrain"] = time.perf_counter() - t

    t = time.perf_counter()
    mm = stage_mm(out / "mm", php.motions, seed, log)
    base = toy_references(out / "mm", php.reference_s)
    references = curriculum_references(base, preset.levels)
    wall["mm"] = time.perf_counter() - t

    t = time.perf_counter()
    oracle, oracle_rows, curriculum = train_oracle(references, len(base), preset.levels, oracle_cfg, seed, log)
    torch.save(oracle.state_dict(), out / "oracle.pt")
    wall["oracle"] = time.perf_counter() - t

    t = time.perf_counter()
    task = StudentTask(
        references,
        student_cfg,
        php.student_size,
        php.camera,
        {k: v.clone() for k, v in oracle.state_dict().items()},
        tuple(oracle_cfg.policy.actor_hidden),
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
            "oracle_iterations": preset.oracle_iterations,
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
        "config": str(DEFAULT_CONFIG),
        "terrain": terrain,
        "mm": mm,
        "references": [{"name": r.reference.name, "skill": r.skill, "frames": r.reference.num_frames} for r in base],
        "teacher_return": [row["episode_return"] for row in oracle_rows],
        "oracle": _columns(oracle_rows),
        "curriculum_mean_level": [row["mean_level"] for row in oracle_rows],
        "curriculum": {
            "levels": preset.levels,
            "final_levels": curriculum.levels.tolist(),
            "promotions": curriculum.promotions,
            "demotions": curriculum.demotions,
            "hurdle_heights_m": [level_value("hurdles", float(d)) for d in np.linspace(0, 1, preset.levels)],
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
