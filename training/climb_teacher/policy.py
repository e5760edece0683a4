"""The trained climbing teacher as one robot runs it: the walking policy plus the actor's residual.

:class:`ClimbTeacherPolicy` loads ``teacher.pt`` (written by the ``climb_teacher`` task) and ticks like the
runtime's ``PolicyRunner``: ``reset()`` on activation, then each ``step`` advances the gait clock on the
command in force and acts on the state it is given. It is privileged: before a trial it is told the
course's boxes, and each step reads the base's world position (``bind``), so it runs only where those
are known (the evaluation in MuJoCo, DAgger labels in training), never on a robot. Its observation is
``training.climb_teacher.env.teacher_observation``, the training env's own function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from numpy.typing import NDArray

from parkour_core.bundle import Bundle, load_bundle
from parkour_core.gait import GaitClock
from training.climb_teacher.env import RESIDUAL_JOINTS, teacher_observation
from training.student_walk.teacher import WALK_BUNDLE, WalkTeacher

F = NDArray[np.float64]
ACTIVATIONS = {"elu": torch.nn.ELU, "relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "silu": torch.nn.SiLU}


def actor_from_state(state: dict[str, torch.Tensor], activation: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The deterministic actor (its mean) from an rsl_rl ``MLPModel`` state dict, normalizer included."""
    linear = sorted(int(k.split(".")[1]) for k in state if k.startswith("mlp.") and k.endswith(".weight"))
    layers: list[torch.nn.Module] = []
    for i, index in enumerate(linear):
        w = state[f"mlp.{index}.weight"]
        layer = torch.nn.Linear(w.shape[1], w.shape[0])
        layer.load_state_dict({"weight": w, "bias": state[f"mlp.{index}.bias"]})
        layers.append(layer)
        if i < len(linear) - 1:
            layers.append(ACTIVATIONS[activation]())
    mlp = torch.nn.Sequential(*layers).eval()
    mean, std = state.get("obs_normalizer._mean"), state.get("obs_normalizer._std")

    def act(obs: torch.Tensor) -> torch.Tensor:
        if mean is not None and std is not None:
            obs = (obs - mean) / (std + 1e-2)  # rsl_rl's EmpiricalNormalization
        return mlp(obs)

    return act


class ClimbTeacherPolicy:
    """See the module docstring. ``step(state, command) -> joint targets`` for one robot."""

    def __init__(self, path: Path | str, walker_bundle: Path | str = WALK_BUNDLE) -> None:
        data = torch.load(path, weights_only=False, map_location="cpu")
        env = data["env"]
        self.path = Path(path)
        self.provenance = data.get("provenance", {})
        self.actor = actor_from_state(data["actor_state_dict"], data["activation"])
        self.residual_joints = np.array(RESIDUAL_JOINTS[env.get("residual_on", "all")])
        self.residual_scale = float(env["residual_scale"])
        self.heading_gain = float(env.get("heading_gain", 0.0))
        self.bundle: Bundle = load_bundle(walker_bundle)  # the gains, robot and rate the teacher acts under
        self.walker = WalkTeacher(1, self.bundle)
        m = self.bundle.manifest
        self.clock = GaitClock(float(m.gait_period_s), 1.0 / m.policy_hz, batch=1)
        self.last_action = np.zeros((1, self.bundle.robot.num_joints))
        self.boxes: tuple[F, F, F, NDArray[np.int64]] = (np.zeros((1, 0, 3)), np.zeros((1, 0, 3)), np.zeros((1, 0)),
                                                          np.zeros(1, dtype=np.int64))  # fmt: skip
        self.base_pos: Callable[[], F] = lambda: np.zeros(3)

    def bind(self, base_pos: Callable[[], F], boxes: Sequence[tuple[F, F, float]]) -> None:
        """Privileged inputs for the next trial: where the base is (a callable: read each step), and the
        course's boxes as (centre (3,), half size (3,), yaw)."""
        self.base_pos = base_pos
        b = len(boxes)
        center = np.array([c for c, _, _ in boxes]).reshape(1, b, 3)
        half = np.array([h for _, h, _ in boxes]).reshape(1, b, 3)
        yaw = np.array([y for _, _, y in boxes], dtype=np.float64).reshape(1, b)
        self.boxes = (center, half, yaw, np.array([b]))

    def reset(self) -> None:
        self.clock.reset()
        self.last_action[:] = 0.0

    def step(self, q: F, dq: F, quat_wxyz: F, gyro: F, command: F) -> F:
        """Joint targets (J,) for the state and the command (vx, vy, yaw rate; the teacher steers to +x itself)."""
        cmd = np.asarray(command, dtype=np.float64).reshape(1, 3)
        phase = self.clock.advance(cmd).copy()
        obs, walker_action = teacher_observation(
            self.walker, q[None], dq[None], self.base_pos()[None], quat_wxyz[None], gyro[None], cmd,
            self.last_action, phase, self.boxes, self.heading_gain,
        )  # fmt: skip
        with torch.no_grad():
            residual = self.actor(torch.as_tensor(obs)).numpy().astype(np.float64)
        action = walker_action.copy()
        action[:, self.residual_joints] += self.residual_scale * residual
        m = self.bundle.manifest
        action = np.clip(action, -m.action_clip, m.action_clip)
        self.last_action = action
        return np.asarray(m.default_joint_pos, dtype=np.float64) + m.action_scale * action[0]
