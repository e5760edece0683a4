"""``train(config, out)``: any task, from its typed config, through the one runner.

The config (``training/configs/<name>.yaml``, read through ``training.configs.schema``) names its
task (``task:``); :data:`TASKS` maps a task to the class that builds its environment, its rsl_rl
train config and its hooks. Writes ``OUT/curve.jsonl`` as it goes (and ``OUT/model_latest.pt``),
then ``OUT/<task>.json`` (config, seed, every iteration's row, what the task reports),
``OUT/curves.png`` and one ``OUT/curve.NNNNNN.jsonl.gz`` per run (what a committed run folder keeps of the curve).
``OUT/run.json`` records the config and overrides, so :func:`resume` continues the run in ``OUT``
exactly from its ``model_latest.pt`` with a new budget.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any

import torch

from training.configs.schema import ConfigError, TrainConfig, load_train_config
from training.export.models import parameter_count
from training.rl.env import NumpyVecEnv
from training.rl.runner import LATEST, Budget, Runner, write_curve_parts
from training.student_walk.bundle import plot_curves

RUN_FILE = "run.json"
# What a resumed run may change: its budget. Anything else would make it another run.
RESUME_KEYS = ("run.minutes", "run.max_iterations")

TASKS = {
    "php_teacher": "training.php_teacher.task:TeacherTask",
    "php_student": "training.php_student.task:StudentTask",
    "student_walk": "training.student_walk.task:WalkTask",
    "student_step": "training.student_step.task:StepTask",
    "h1_walk": "training.h1_walk.task:H1WalkTask",
    "climb_teacher": "training.climb_teacher.task:ClimbTask",
    "hil_teacher": "training.methods.hil.task:HILTeacherTask",
    "hpl_oracle": "training.methods.hpl.task:HPLOracleTask",
    "hpl_student": "training.methods.hpl.student:HPLStudentTask",
    "llp_student": "training.methods.llp.task:LLPStudentTask",
}

# What each task's curves.png shows: (title, [(row key, label)]).
PANELS: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
    "php_teacher": [
        ("episode return", [("episode_return", "finished episodes (rsl_rl)")]),
        ("tracking", [("tracking_error_m", "mean body-position error (m)"), ("failed_fraction", "episodes failed")]),
        ("reward per step", [("reward_per_step", "reward/step")]),
    ],
    "hil_teacher": [
        ("episode return", [("episode_return", "finished episodes (rsl_rl)")]),
        (
            "AMP discriminator",
            [("disc_accuracy", "accuracy"), ("disc_d_real", "mean D(real)"), ("disc_d_fake", "mean D(generated)")],
        ),
        (
            "reward per step",
            [
                ("tracking_reward", "tracking (tracking envs)"),
                ("task_reward", "task (adversarial envs)"),
                ("style_reward", "style (adversarial envs)"),
            ],
        ),
    ],
    "hpl_oracle": [
        ("episode return", [("episode_return", "finished episodes (rsl_rl)")]),
        ("terrain curriculum", [("mean_level", "mean level"), ("completion", "completion (finished episodes)")]),
        ("tracking", [("tracking_error_m", "mean body-position error (m)"), ("failed_fraction", "episodes failed")]),
    ],
    "php_student": [
        ("losses", [("dagger", "L_D (masked MSE to the teacher)"), ("surrogate", "PPO surrogate")]),
        (
            "schedules",
            [("dagger_weight", "lambda_D"), ("ppo_weight", "lambda_PPO"), ("termination_m", "termination (m)")],
        ),
        (
            "imitation",
            [("imitated_fraction", "steps imitated (within 0.5 m)"), ("tracking_error_m", "tracking error (m)")],
        ),
    ],
    "hpl_student": [
        ("losses", [("dagger", "L_D (masked MSE to the oracle)"), ("value", "value loss")]),
        ("schedules", [("dagger_weight", "lambda_D"), ("termination_m", "termination (m)")]),
        (
            "imitation",
            [("imitated_fraction", "steps imitated (within 0.5 m)"), ("tracking_error_m", "tracking error (m)")],
        ),
    ],
    "llp_student": [
        (
            "losses",
            [("dagger", "L_D (masked MSE to the teacher)"), ("reconstruction", "height-scan reconstruction")],
        ),
        (
            "transition prior",
            [("prior_real_score", "D(reference)"), ("prior_fake_score", "D(policy)"), ("style_reward", "style")],
        ),
        ("tracking", [("tracking_error_m", "tracking error (m)"), ("imitated_fraction", "steps imitated")]),
    ],
    "student_walk": [
        ("DAgger loss (MSE to the teacher's actions)", [("behavior", "loss")]),
        ("episode length (s)", [("episode_length_s", "finished episodes"), ("running_length_s", "running episodes")]),
        (
            "forward speed (m/s)",
            [
                ("teacher_speed", "teacher envs"),
                ("student_speed", "student envs (beta-mixed)"),
                ("command_vx", "commanded vx"),
            ],
        ),
    ],
    "h1_walk": [
        ("episode return", [("episode_return", "finished episodes")]),
        (
            "episodes",
            [
                ("episode_length_s", "length (s)"),
                ("fell_fraction", "ended by a fall"),
                ("refused_fraction", "ended at refused targets"),
            ],
        ),
        (
            "velocity (m/s)",
            [
                ("speed_error_mps", "planar speed error"),
                ("forward_speed_mps", "forward speed"),
                ("command_vx_mps", "commanded vx"),
            ],
        ),
    ],
    "climb_teacher": [
        ("episode return", [("episode_return", "finished episodes")]),
        ("curriculum", [("mean_level", "mean level (0: 5 cm)"), ("course_success", "courses passed")]),
        (
            "pace and falls",
            [("flat_speed_ratio", "flat-ground speed / command"), ("falls_per_1000_steps", "falls / 1000 steps")],
        ),
    ],
    "student_step": [
        ("losses", [("dagger", "L_D (MSE to the teacher)"), ("value", "value loss")]),
        (
            "schedules",
            [("dagger_weight", "lambda_D"), ("ppo_weight", "lambda_PPO"), ("height_cap_m", "height cap (m)")],
        ),
        ("reward per second", [("reward_per_s", "reward/s")]),
        ("step-ups", [("step_up_rate_window", "trailing step-up rate (>= 7.5 cm)")]),
    ],
}


def task_class(name: str) -> type:
    if name not in TASKS:
        raise ValueError(f"task {name!r} has no runner task; known: {', '.join(TASKS)}")
    module, attr = TASKS[name].split(":")
    return getattr(importlib.import_module(module), attr)


def train(
    config: str | Path,
    out: str | Path,
    overrides: dict[str, Any] | None = None,
    num_envs: int | None = None,
    task_inputs: dict[str, Any] | None = None,
    resume_from: Path | None = None,
    note: str = "",
) -> dict[str, Any]:
    """Train ``config`` (a name under training/configs/ or a YAML path) into ``out``; returns ``<task>.json``.

    ``task_inputs``: what a caller hands the task beyond its config (a pipeline's references).
    ``resume_from``: a checkpoint of this run in ``out`` to continue from (see :func:`resume`).
    ``note``: a line about this run (why it ran, what differs), kept in its entry of ``runs``."""
    cfg: TrainConfig = load_train_config(config, overrides)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if resume_from is None:
        record = {"config": str(config), "overrides": overrides or {}, "num_envs": num_envs}
        (out / RUN_FILE).write_text(json.dumps(record, indent=1) + "\n")
    task = task_class(cfg.task)(cfg, num_envs, **(task_inputs or {}))
    env = NumpyVecEnv(task, cfg.run.device, cfg.as_dict())
    size = Path(str(config)).stem
    torch.manual_seed(cfg.run.seed)  # the models' initial weights: a run's, whatever ran before it in the process
    try:
        runner = Runner(
            env, task.train_cfg(), out, cfg.run.device, hooks=task, figures=task.figures,
            keep_curve=resume_from is not None, note=note,
        )  # fmt: skip
        task.initialize(runner)
        if resume_from is not None:
            runner.resume(resume_from)
        budget = Budget(minutes=cfg.run.minutes) if cfg.run.minutes else Budget(iterations=cfg.run.max_iterations)
        rows = runner.train(budget, name=cfg.task)
        report = task.finish(runner, out, size)  # before the env closes: a task may ask its workers
    finally:
        env.close()
    model = runner.alg.get_policy()
    result = {
        "task": cfg.task,
        "config": size,
        "config_values": dataclasses.asdict(cfg),
        "seed": cfg.run.seed,
        "device": cfg.run.device,
        "num_envs": task.num_envs,
        "parameters": parameter_count(model),
        "wall_s": round(sum(r["wall_s"] for r in rows), 1),
        "runs": runner.all_runs(),
        "iterations": rows,
        **report,
    }
    (out / f"{cfg.task}.json").write_text(json.dumps(result, indent=1))
    write_curve_parts(out, runner.all_runs())
    plot_curves(rows, PANELS[cfg.task], out / "curves.png")
    return result


def resume(run_dir: str | Path, overrides: dict[str, Any] | None = None, note: str = "") -> dict[str, Any]:
    """Continue the run in ``run_dir`` from its ``model_latest.pt``, exactly: the same config, overrides and
    environments (``run.json``), a new budget (``overrides`` may set only :data:`RESUME_KEYS`)."""
    run_dir = Path(run_dir)
    record_file, checkpoint = run_dir / RUN_FILE, run_dir / LATEST
    if not record_file.exists() or not checkpoint.exists():
        missing = record_file if not record_file.exists() else checkpoint
        raise ConfigError(f"--resume {run_dir}: no {missing.name} there; give the folder of a `parkour train run`")
    other = sorted(set(overrides or {}) - set(RESUME_KEYS))
    if other:
        raise ConfigError(f"--resume sets only {', '.join(RESUME_KEYS)} (the budget); not {', '.join(other)}")
    record = json.loads(record_file.read_text())
    merged = {**record["overrides"], **(overrides or {})}
    return train(record["config"], run_dir, merged, record["num_envs"], resume_from=checkpoint, note=note)
