"""The ``climb_teacher`` task: a terrain-aware teacher trained by rsl_rl's PPO, starting from the walking policy.

Config: ``training/tasks/climb_teacher/presets/climb_teacher.yaml`` (``climb_teacher_tiny.yaml`` for tests); the
environment is :class:`training.tasks.climb_teacher.env.ClimbEnv`. The actor (rsl_rl's ``MLPModel``;
``policy.obs_normalization`` is off in climb_teacher.yaml, see docs/decisions.md) outputs a residual
on the walking policy's action; its output layer starts scaled by ``climb.residual_init_gain``, so the
first policy is the walking policy plus the exploration noise. The critic reads the actor's
observation and the base's velocity and height.

The run resumes exactly (``parkour train run --resume DIR``): the env's state and the figures' window
go into the runner's checkpoint (:meth:`ClimbTask.state_dict`). ``finish`` writes ``OUT/teacher.pt``:
the actor's weights with what rebuilds the teacher (observation size, widths, residual scale, the env
config) and its provenance.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from rsl_rl.models import MLPModel

from parkour_core.paths import repo_root
from parkour_core.provenance import provenance as provenance_record
from training.configs.schema import TrainConfig
from training.envs.physics import Physics, warp_device
from training.rl.runner import Runner
from training.rl.task_cfg import ppo_mlp_cfg
from training.tasks.climb_teacher import rewards
from training.tasks.climb_teacher.env import ClimbConfig, ClimbEnv
from training.tasks.student_walk.teacher import TEACHER_PROVENANCE

F = NDArray[np.float64]
REPO = repo_root()
TEACHER_FILE = "teacher.pt"
SPEED_AFTER_S = 2.0  # flat-ground pace counts once an episode is this old (the start is an acceleration)


def env_config(cfg: TrainConfig, num_envs: int | None = None) -> ClimbConfig:
    c = cfg.climb
    return ClimbConfig(
        num_envs=num_envs or cfg.env.num_envs, physics_dt_s=cfg.env.physics_dt_s, decimation=cfg.env.decimation,
        seed=cfg.run.seed, backend=cfg.env.backend, device=warp_device(cfg.run.device), boxes=c.boxes,
        flat_fraction=c.flat_fraction, first_m=tuple(c.first_m),
        spacing_m=tuple(c.spacing_m), levels=tuple(c.levels), height_jitter_m=c.height_jitter_m,
        start_level=c.start_level, speed_mps=tuple(c.speed_mps), max_episode_s=cfg.env.episode_length_s,
        residual_scale=c.residual_scale, residual_on=c.residual_on, refusal_ends_episode=c.refusal_ends_episode,
        weights=dataclasses.replace(rewards.Weights(), **{k: float(w) for k, w in c.reward_weights.items()}),
    )  # fmt: skip


class ClimbTask:
    """A :class:`~training.rl.env.TaskEnv` over ClimbEnv, and the runner's hooks."""

    name = "climb_teacher"
    figures = ("episode_return", "mean_level", "course_success", "flat_speed_ratio")

    def __init__(self, cfg: TrainConfig, num_envs: int | None = None) -> None:
        if cfg.env.robot != "g1":
            raise ValueError(f"climb_teacher trains the G1 (the walking policy it starts from): env.robot is "
                             f"{cfg.env.robot!r}")  # fmt: skip
        self.cfg = cfg
        self.env = ClimbEnv(env_config(cfg, num_envs))
        self.num_envs, self.num_actions, self.dt_s = self.env.num_envs, self.env.num_actions, self.env.dt_s
        self.max_episode_length = self.env.max_episode_length
        self._obs = self.env.observe()
        self._returns = np.zeros(self.num_envs)
        self._clear_figures()

    @property
    def physics(self) -> Physics:
        return self.env.sim

    # -- TaskEnv -----------------------------------------------------------------------------

    def observe(self) -> dict[str, NDArray[np.floating]]:
        return self._obs

    def step(self, actions: F) -> tuple[dict[str, NDArray[np.floating]], Any, Any, dict[str, Any]]:
        self._obs, reward, done, info = self.env.step(actions)
        self._returns += reward
        ids = np.flatnonzero(done)
        if len(ids):
            self._fell += int((info["fell"] | info["refused"] | info["left_lane"])[ids].sum())
            self._courses += int(info["course_done"].sum())
            self._successes += int(info["course_success"].sum())
            self._finished_returns += self._returns[ids].tolist()
            self._returns[ids] = 0.0
        self._refused += int(info["would_refuse"].sum())
        self._passed += info["newly_passed_heights"].tolist()
        self._fell_heights += info["fell_heights"].tolist()
        pace = info["flat"] & (info["episode_s"] >= SPEED_AFTER_S)
        self._flat_speed += info["speed_along"][pace].tolist()
        self._flat_command += info["command"][pace, 0].tolist()
        self._levels.append(float(np.mean(self.env.level)))
        log = {f"reward_{k}": float(np.mean(v)) for k, v in info["terms"].items()}
        return self._obs, reward, done, {"time_outs": info["time_outs"], "log": log}

    def close(self) -> None:
        self.env.close()

    # -- hooks -------------------------------------------------------------------------------

    def _clear_figures(self) -> None:
        self._finished_returns: list[float] = []
        self._passed: list[float] = []
        self._fell_heights: list[float] = []
        self._flat_speed: list[float] = []
        self._flat_command: list[float] = []
        self._levels: list[float] = []
        self._fell = self._refused = self._courses = self._successes = 0

    def before_iteration(self, runner: Runner, k: int, total: int | None, fraction: float) -> None:
        pass

    def height_bins(self) -> NDArray[np.float64]:
        """Edges halfway between the levels' heights: each bin counts one level's boxes."""
        h = np.asarray(self.env.cfg.levels)
        mid = (h[1:] + h[:-1]) / 2
        return np.concatenate([[0.0], mid, [h[-1] + 1.0]])

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        ended = len(self._finished_returns)
        samples = runner.cfg["num_steps_per_env"] * self.num_envs
        speed = float(np.mean(self._flat_speed)) if self._flat_speed else float("nan")
        command = float(np.mean(self._flat_command)) if self._flat_command else float("nan")
        bins = self.height_bins()
        row |= {
            "episode_return": float(np.mean(self._finished_returns if ended else self._returns)),
            "episodes": ended,
            "mean_level": float(np.mean(self._levels)),
            "level_counts": np.bincount(self.env.level, minlength=len(self.env.cfg.levels)).tolist(),
            "course_success": self._successes / self._courses if self._courses else float("nan"),
            "courses": self._courses,
            "falls_per_1000_steps": 1000.0 * self._fell / samples,
            "refused_per_1000_steps": 1000.0 * self._refused / samples,  # steps whose targets would be refused
            "passed_by_level": np.histogram(self._passed, bins)[0].tolist(),
            "fell_by_level": np.histogram(self._fell_heights, bins)[0].tolist(),
            "flat_speed_mps": speed,
            "flat_command_mps": command,
            "flat_speed_ratio": speed / command if self._flat_command else float("nan"),
        }
        self._clear_figures()
        return row

    # -- exact resume ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"env": self.env.state_dict(), "returns": self._returns.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.env.load_state_dict(state["env"])
        self._returns[:] = state["returns"]
        self._obs = self.env.observe()
        self._clear_figures()

    # -- the run -----------------------------------------------------------------------------

    def train_cfg(self) -> dict[str, Any]:
        return ppo_mlp_cfg(self.cfg, ["policy"], ["critic"])

    def initialize(self, runner: Runner) -> None:
        torch.manual_seed(self.cfg.run.seed)
        actor = runner.alg.get_policy()
        assert isinstance(actor, MLPModel)
        last = [m for m in actor.mlp.modules() if isinstance(m, torch.nn.Linear)][-1]
        with torch.no_grad():  # the residual starts near zero: the walking policy drives
            last.weight.mul_(self.cfg.climb.residual_init_gain)
            last.bias.zero_()
        if self.cfg.run.init:  # an earlier climb_teacher run's model_latest.pt: weights, normalizer, optimizer
            runner.load(str(REPO / self.cfg.run.init))

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        actor = runner.alg.get_policy()
        assert isinstance(actor, MLPModel)
        provenance = {
            "walking_policy": TEACHER_PROVENANCE,
            "training": f"training.tasks.climb_teacher task (rsl_rl PPO, a residual on the walking policy), config "
            f"{size}, seed {self.cfg.run.seed}, {len(runner.rows)} iterations, {self.num_envs} envs",
            **runner.run_totals(),
        }
        teacher = {
            "actor_state_dict": {k: v.detach().cpu().clone() for k, v in actor.state_dict().items()},
            "obs_size": int(self._obs["policy"].shape[1]),
            "hidden_dims": list(self.cfg.policy.actor_hidden),
            "activation": self.cfg.policy.activation,
            "env": dataclasses.asdict(self.env.cfg),
            "provenance": provenance,
        }
        torch.save(teacher, out / TEACHER_FILE)
        rows = runner.rows
        last = rows[-50:]

        def mean(key: str) -> float:
            values = [r[key] for r in last if np.isfinite(r[key])]
            return float(np.mean(values)) if values else float("nan")

        report = {
            "teacher": str(out / TEACHER_FILE),
            "provenance": provenance,
            "passed_by_level": np.sum([r["passed_by_level"] for r in rows], axis=0).tolist(),
            "fell_by_level": np.sum([r["fell_by_level"] for r in rows], axis=0).tolist(),
            "last_50": {
                key: mean(key) for key in ("mean_level", "course_success", "falls_per_1000_steps", "flat_speed_ratio")
            },
        }
        # The run's provenance and figures without the rows (those are in the curve.NNNNNN.jsonl.gz files): what a
        # committed run folder shows at a glance.
        made = provenance_record()  # this run's command and commit (each run's are in provenance.runs)
        (out / "provenance.json").write_text(json.dumps({**made, **report, "teacher": TEACHER_FILE}, indent=1) + "\n")
        return report
