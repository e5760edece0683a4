"""The ``h1_walk`` task: the H1 learns velocity-tracking walking from scratch by rsl_rl's PPO.

Config: ``training/tasks/h1_walk/presets/h1_walk.yaml`` (``h1_walk_tiny.yaml`` for tests); the environment is
:class:`training.tasks.h1_walk.env.H1WalkEnv` (its ``velocity`` section: command ranges and their curriculum,
gait period, pushes, falls, per-episode physics, observation noise, reward weights). After each iteration
the command curriculum moves on its tracking; the env's whole state goes into the runner's checkpoint, so
``--resume`` continues exactly. Actor and critic are rsl_rl's ``MLPModel`` with its empirical
normalization; the critic also reads the base's velocity and height. ``finish`` exports the actor as a model bundle
(``OUT/bundle``: ``policy.onnx`` + manifest for robot ``h1``, the deployers' gains, the gait clock),
checked against torch through parkour_core's ``PolicyRunner``, so ``parkour sim --robot h1`` and a
real H1 run it as trained.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from rsl_rl.models import MLPModel

from parkour_core.paths import repo_root
from training.configs.schema import TrainConfig
from training.envs.physics import Physics
from training.rl.runner import Runner
from training.rl.task_cfg import ppo_mlp_cfg
from training.tasks.h1_walk.bundle import export_bundle, load_actor_from_bundle
from training.tasks.h1_walk.config import H1WalkTrainConfig
from training.tasks.h1_walk.env import H1WalkEnv

BUNDLE_DIR = "bundle"
# Samples the observation normalizer of a bundle-initialised actor counts as seen: it adapts to the new run's
# observations over a few million env-steps instead of being replaced by the first batch's.
BUNDLE_NORMALIZER_COUNT = 1_000_000
REPO = repo_root()


class H1WalkTask:
    """A :class:`~training.rl.env.TaskEnv` over H1WalkEnv, and the runner's hooks."""

    name = "h1_walk"
    figures = ("episode_return", "episode_length_s", "speed_error_mps", "fell_fraction")

    def __init__(self, cfg: TrainConfig, num_envs: int | None = None) -> None:
        if not isinstance(cfg, H1WalkTrainConfig):
            raise TypeError(f"h1_walk trains from its own config, got {type(cfg).__name__}")
        if cfg.env.robot != "h1":
            raise ValueError(f"h1_walk trains the H1: env.robot must be 'h1', got {cfg.env.robot!r}")
        if num_envs is not None:
            cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, num_envs=num_envs))
        self.cfg = cfg
        self.env = H1WalkEnv(cfg)
        self.num_envs, self.num_actions, self.dt_s = self.env.num_envs, self.env.num_actions, self.env.dt_s
        self.max_episode_length = self.env.max_episode_length
        self._obs = self.env.last_obs
        self._returns = np.zeros(self.num_envs)
        self._clear_figures()

    @property
    def physics(self) -> Physics:
        return self.env.sim

    # -- TaskEnv -----------------------------------------------------------------------------

    def observe(self) -> dict[str, NDArray[np.floating]]:
        return self._obs

    def step(self, actions: NDArray[np.float64]) -> tuple[dict[str, NDArray[np.floating]], Any, Any, dict[str, Any]]:
        self._obs, reward, done, info = self.env.step(actions)
        self._returns += reward
        ids = np.flatnonzero(done)
        if len(ids):
            self._fell += int(info["fell"][ids].sum())
            self._refused += int(info["refused"][ids].sum())
            self._faulted += int(info["faulted"][ids].sum())
            self._finished_returns += self._returns[ids].tolist()
            self._returns[ids] = 0.0
        self._speed_errors.append(float(np.mean(np.linalg.norm(info["speed"] - info["command"][:, :2], axis=-1))))
        self._speeds.append(float(np.mean(info["speed"][:, 0])))
        self._commands.append(float(np.mean(info["command"][:, 0])))
        self._yaw_errors.append(float(np.mean(np.abs(info["yaw_rate"] - info["command"][:, 2]))))
        self._tracking.append(float(np.mean(info["terms"]["lin_vel"])))
        self._touchdowns += int(info["touchdowns"].sum())
        log = {f"reward_{k}": float(np.mean(v)) for k, v in info["terms"].items()}
        return self._obs, reward, done, {"time_outs": info["time_outs"], "log": log}

    def close(self) -> None:
        self.env.close()

    # -- hooks -------------------------------------------------------------------------------

    def _clear_figures(self) -> None:
        self._speed_errors: list[float] = []
        self._speeds: list[float] = []
        self._commands: list[float] = []
        self._finished_returns: list[float] = []
        self._yaw_errors: list[float] = []
        self._tracking: list[float] = []
        self._touchdowns = 0
        self._fell = 0
        self._refused = 0
        self._faulted = 0

    def before_iteration(self, runner: Runner, k: int, total: int | None, fraction: float) -> None:
        pass

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        ended = len(self._finished_returns)
        row |= {
            "episode_return": float(np.mean(self._finished_returns if ended else self._returns)),
            "episode_length_s": row.get("mean_episode_length", float("nan")) * self.dt_s,
            "episodes": ended,
            "fell_fraction": self._fell / ended if ended else 0.0,
            "refused_fraction": self._refused / ended if ended else 0.0,
            "speed_error_mps": float(np.mean(self._speed_errors)),
            "forward_speed_mps": float(np.mean(self._speeds)),
            "command_vx_mps": float(np.mean(self._commands)),
            "yaw_rate_error_radps": float(np.mean(self._yaw_errors)),
            "faulted_fraction": self._faulted / ended if ended else 0.0,
            "touchdowns_per_foot_s": self._touchdowns / (2 * self.num_envs * len(self._tracking) * self.dt_s),
            "command_level": self.env.level,
        }
        self.env.update_curriculum(float(np.mean(self._tracking)))
        self._clear_figures()
        return row

    # -- exact resume ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"env": self.env.state_dict(), "returns": self._returns.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.env.load_state_dict(state["env"])
        self._returns[:] = state["returns"]
        self._obs = self.env.last_obs
        self._clear_figures()

    # -- the run -----------------------------------------------------------------------------

    def train_cfg(self) -> dict[str, Any]:
        return ppo_mlp_cfg(self.cfg, ["policy"], ["critic"])

    def initialize(self, runner: Runner) -> None:
        torch.manual_seed(self.cfg.run.seed)
        init = REPO / self.cfg.run.init if self.cfg.run.init else None
        if init is not None and (init / "manifest.json").exists():  # an h1 bundle: its actor, a fresh critic
            actor = runner.alg.get_policy()
            assert isinstance(actor, MLPModel)
            load_actor_from_bundle(actor, init, self.env, normalizer_count=BUNDLE_NORMALIZER_COUNT)
        elif init is not None:  # an earlier h1_walk run's model_latest.pt: its weights, normalizers and optimizer
            runner.load(str(init))

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        actor = runner.alg.get_policy()
        assert isinstance(actor, MLPModel)
        bundle = export_bundle(actor, self.env, out / BUNDLE_DIR, name=size, config=size, totals=runner.run_totals())
        return {"bundle": str(bundle)}
