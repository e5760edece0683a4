"""One env contract: rsl_rl's ``VecEnv``. The CPU backend's tasks reach it through :class:`NumpyVecEnv`.

A ``mujoco_cpu`` task is written in numpy (batched MuJoCo, the ray-cast camera, parkour_core's
observation terms), as a :class:`TaskEnv`; :class:`NumpyVecEnv` turns it into rsl_rl's contract:
observation groups as a ``TensorDict`` on the learner's device, rewards, dones, and ``extras`` with
``time_outs`` (bootstrapped by PPO) and ``log`` (averaged into the curves by rsl_rl's logger). mjlab
tasks are ``VecEnv`` already (mjlab's ``RslRlVecEnvWrapper``), so the runner sees one contract.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch
from numpy.typing import NDArray
from rsl_rl.env import VecEnv
from tensordict import TensorDict


class TaskEnv(Protocol):
    """A batched numpy environment: what a ``mujoco_cpu`` task implements."""

    num_envs: int
    num_actions: int
    max_episode_length: int

    def observe(self) -> dict[str, NDArray[np.floating]]:
        """The current observation groups, each [num_envs, ...]."""
        ...

    def step(
        self, actions: NDArray[np.float64]
    ) -> tuple[dict[str, NDArray[np.floating]], NDArray[np.floating], NDArray[np.bool_], dict[str, Any]]:
        """Apply actions; the observation after (reset where done), reward, done, and an info dict with
        ``time_outs`` (done by the time limit, [num_envs] bool) and ``log`` (name -> scalar)."""
        ...

    def close(self) -> None: ...


class NumpyVecEnv(VecEnv):
    """See the module docstring."""

    def __init__(self, task: TaskEnv, device: str | torch.device = "cpu", cfg: dict | object | None = None) -> None:
        self.task = task
        self.num_envs = task.num_envs
        self.num_actions = task.num_actions
        self.max_episode_length = task.max_episode_length
        self.device = torch.device(device)
        self.cfg = cfg if cfg is not None else {}
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        self._obs = self._tensordict(task.observe())

    def _tensordict(self, groups: dict[str, NDArray[np.floating]]) -> TensorDict:
        data = {k: torch.as_tensor(np.asarray(v, dtype=np.float32), device=self.device) for k, v in groups.items()}
        return TensorDict(data, batch_size=[self.num_envs], device=self.device)

    def get_observations(self) -> TensorDict:
        return self._obs

    def refresh(self) -> None:
        """Read the task's observation again (after its state was restored)."""
        self._obs = self._tensordict(self.task.observe())

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        obs, reward, done, info = self.task.step(actions.detach().cpu().numpy().astype(np.float64))
        self._obs = self._tensordict(obs)
        dones = torch.as_tensor(np.asarray(done), device=self.device).long()
        self.episode_length_buf += 1
        self.episode_length_buf[dones.bool()] = 0
        extras: dict[str, Any] = {"log": {k: float(v) for k, v in info.get("log", {}).items()}}
        if "time_outs" in info:
            extras["time_outs"] = torch.as_tensor(np.asarray(info["time_outs"]), device=self.device).float()
        return self._obs, torch.as_tensor(np.asarray(reward, dtype=np.float32), device=self.device), dones, extras

    def close(self) -> None:
        self.task.close()
