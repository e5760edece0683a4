"""The trained climbing teacher outside its training env: the walking policy plus the actor's residual.

Both load ``teacher.pt`` (written by the ``climb_teacher`` task) through :func:`load_teacher` and act
through :func:`teacher_actions` on ``training.tasks.climb_teacher.env.teacher_observation``, the training
env's own observation. Both are privileged (the boxes, the base's world position), so they run only
where those are known, never on a robot:

- :class:`ClimbTeacherPolicy`: one robot, ticked like the runtime's ``PolicyRunner`` (``reset()`` on
  activation; each ``step`` advances the gait clock on the command in force, then acts); before a
  trial it is told the course's boxes and where to read the base's position (``bind``). The
  evaluation's teacher row.
- :class:`ClimbTeacherLabels`: every environment of a training env's batched MuJoCo at once, on the
  env's own gait phase and last action: DAgger's labels for the depth student.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from numpy.typing import NDArray

from parkour_core.bundle import Bundle, load_bundle
from parkour_core.gait import GaitClock
from training.envs.mujoco_cpu import BatchedMujoco
from training.tasks.climb_teacher.env import RESIDUAL_JOINTS, teacher_observation
from training.tasks.student_walk.teacher import WALK_BUNDLE, WalkTeacher

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


@dataclass(frozen=True)
class Teacher:
    """A trained climbing teacher: its actor and how its residual meets the walking policy's action."""

    path: Path
    actor: Callable[[torch.Tensor], torch.Tensor]
    residual_joints: NDArray[np.int64]
    residual_scale: float
    heading_gain: float
    provenance: dict
    env: dict  # the training env's config it was saved with (ClimbConfig as a dict)


class TeacherFileError(ValueError):
    """A file that is not a climb_teacher checkpoint: the message names it and says what it lacks."""


TEACHER_KEYS = ("actor_state_dict", "activation", "env")  # what the climb_teacher task saves and this reads


def load_teacher(path: Path | str) -> Teacher:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (a climb_teacher run's teacher.pt)")
    not_teacher = f"{path}: not a climb_teacher checkpoint (a climb_teacher run's teacher.pt)"
    if path.stat().st_size == 0:
        raise TeacherFileError(f"{not_teacher}: the file is empty")
    try:
        data = torch.load(path, weights_only=False, map_location="cpu")
    except Exception as e:  # torch.load raises what its unpickler meets (EOFError, UnpicklingError, RuntimeError...)
        raise TeacherFileError(f"{not_teacher}: torch cannot load it ({' '.join(str(e).split())})") from None
    missing = [k for k in TEACHER_KEYS if k not in data] if isinstance(data, dict) else list(TEACHER_KEYS)
    if missing:
        raise TeacherFileError(f"{not_teacher}: it holds no {', '.join(missing)}")
    env = data["env"]
    return Teacher(
        path=path, actor=actor_from_state(data["actor_state_dict"], data["activation"]),
        residual_joints=np.array(RESIDUAL_JOINTS[env.get("residual_on", "all")]),
        residual_scale=float(env["residual_scale"]), heading_gain=float(env.get("heading_gain", 0.0)),
        provenance=data.get("provenance", {}), env=env,
    )  # fmt: skip


def teacher_actions(
    teacher: Teacher, walker: WalkTeacher, q: F, dq: F, root_pos: F, root_quat: F, gyro: F, command: F,
    last_action: F, phase: F, boxes: tuple[F, F, F, NDArray[np.int64]],
) -> F:  # fmt: skip
    """(N, J) the teacher's actions (the walking policy's plus the residual, clipped) for N robots."""
    obs, walker_action = teacher_observation(
        walker, q, dq, root_pos, root_quat, gyro, command, last_action, phase, boxes, teacher.heading_gain
    )
    with torch.no_grad():
        residual = teacher.actor(torch.as_tensor(obs)).numpy().astype(np.float64)
    action = walker_action.copy()
    action[:, teacher.residual_joints] += teacher.residual_scale * residual
    clip = float(walker.manifest.action_clip)
    return np.clip(action, -clip, clip)


class ClimbTeacherPolicy:
    """See the module docstring. ``step(q, dq, quat, gyro, command) -> joint targets`` for one robot."""

    def __init__(self, path: Path | str, walker_bundle: Path | str = WALK_BUNDLE) -> None:
        self.teacher = load_teacher(path)
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
        self.last_action = teacher_actions(
            self.teacher, self.walker, q[None], dq[None], self.base_pos()[None], quat_wxyz[None], gyro[None], cmd,
            self.last_action, phase, self.boxes,
        )  # fmt: skip
        m = self.bundle.manifest
        return np.asarray(m.default_joint_pos, dtype=np.float64) + m.action_scale * self.last_action[0]


class ClimbTeacherLabels:
    """See the module docstring. ``act(command, last_action, phase) -> actions (N, J)`` on ``sim``'s state."""

    def __init__(self, num_envs: int, sim: BatchedMujoco, path: Path | str) -> None:
        self.teacher = load_teacher(path)
        self.walker = WalkTeacher(num_envs)
        self.sim = sim
        self.kp, self.kd = self.walker.kp, self.walker.kd

    def reset(self, env_ids: NDArray[np.int64] | None = None) -> None:
        """Nothing to reset: the env's gait clock and last action come with every call."""

    def boxes(self) -> tuple[F, F, F, NDArray[np.int64]]:
        """Every environment's boxes as they stand in its simulator, padded to the backend's slots."""
        sim = self.sim
        n, slots = sim.num_envs, sim.max_boxes
        center, half, yaw = np.zeros((n, slots, 3)), np.full((n, slots, 3), -1.0), np.zeros((n, slots))
        count = np.zeros(n, dtype=np.int64)
        for i, t in enumerate(sim.terrains):
            b = count[i] = len(t)
            center[i, :b], half[i, :b], yaw[i, :b] = t.center, t.half_size, t.yaw
        return center, half, yaw, count

    def act(self, command: F, last_action: F, phase: F) -> F:
        s = self.sim
        return teacher_actions(
            self.teacher, self.walker, s.q, s.dq, s.root_pos, s.root_quat, s.gyro, command, last_action, phase,
            self.boxes(),
        )  # fmt: skip
