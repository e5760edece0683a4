"""``train(config, out)``: any task, from its typed config, through the one runner.

The config (a task's preset, ``training/tasks/<task>/presets/<name>.yaml``, read through
``training.configs.schema``) names its task (``task:``); the task's folder registers the class that
builds its environment, its rsl_rl train config and its hooks, and the panels of its curves
(``training.registry``). Writes ``OUT/curve.jsonl`` as it goes (and ``OUT/model_latest.pt``),
then ``OUT/<task>.json`` (config, seed, every iteration's row, what the task reports),
``OUT/curves.png`` and one ``OUT/curve.NNNNNN.jsonl.gz`` per run (what a committed run folder keeps of the curve).
``OUT/run.json`` records the config and overrides, so :func:`resume` continues the run in ``OUT``
exactly from its ``model_latest.pt`` with a new budget.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch

from training import registry
from training.configs.schema import ConfigError, TrainConfig, load_train_config
from training.export.models import parameter_count
from training.progress import plot_curves
from training.rl.env import NumpyVecEnv
from training.rl.runner import LATEST, Budget, Runner, write_curve_parts

RUN_FILE = "run.json"
# What a resumed run may change: its budget and how often it saves (it always saves its last iteration).
# Anything else would make it another run.
RESUME_KEYS = ("run.minutes", "run.max_iterations", "run.save_interval")


def task_class(name: str) -> type:
    """The runner task class of the registered task ``name`` (training.registry)."""
    return registry.get_task(name).runner_class()


def train(
    config: str | Path,
    out: str | Path,
    overrides: dict[str, Any] | None = None,
    num_envs: int | None = None,
    task_inputs: dict[str, Any] | None = None,
    resume_from: Path | None = None,
    note: str = "",
) -> dict[str, Any]:
    """Train ``config`` (a preset's name or a YAML path) into ``out``; returns ``<task>.json``.

    ``task_inputs``: what a caller hands the task beyond its config (a pipeline's references).
    ``resume_from``: a checkpoint of this run in ``out`` to continue from (see :func:`resume`).
    ``note``: a line about this run (why it ran, what differs), kept in its entry of ``runs``."""
    cfg: TrainConfig = load_train_config(config, overrides)
    backends = registry.get_task(cfg.task).backends
    if cfg.env.backend not in backends:
        raise ValueError(f"{cfg.task} runs on env.backend {' or '.join(backends)}, not {cfg.env.backend}")
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
    plot_curves(rows, registry.get_task(cfg.task).panels, out / "curves.png")
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
