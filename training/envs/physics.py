"""What a task's MDP asks of the simulator: :class:`Physics`, met by the CPU backend and by MuJoCo-Warp.

A task is written once, in numpy on the host, against this interface; :func:`make_physics` picks the backend
from the config's ``env.backend``: ``mujoco_cpu`` (:class:`~training.envs.mujoco_cpu.BatchedMujoco`, MuJoCo's
threaded rollout, float64) or ``mujoco_warp`` (:class:`~training.envs.mujoco_warp.WarpMujoco`, one world per
environment on a GPU, float32). ``training/envs/test_backends.py`` holds every such task to the same
observations, rewards and terminations on both from the same states.
"""

from __future__ import annotations

from typing import Any, Protocol

import mujoco
import numpy as np
from numpy.typing import NDArray

from parkour_core.robots import RobotSpec

F = NDArray[np.float64]
BACKENDS = ("mujoco_cpu", "mujoco_warp")


class Physics(Protocol):
    """N robots on one model layout; arrays [N, ...] in the robot's joint order."""

    num_envs: int
    decimation: int
    base_model: mujoco.MjModel
    actuators: NDArray[np.int64]
    qpos_adr: NDArray[np.int64]
    qvel_adr: NDArray[np.int64]
    tau_limit: F
    gyro_adr: int
    nstate: int

    def set_state(
        self, i: int, root_pos: F, root_quat: F, q: F, root_lin_vel_w: F, root_ang_vel_w: F, dq: F, time_s: float = 0.0
    ) -> None:
        """Place robot ``i`` (world-frame root velocities)."""
        ...

    def refresh(self, i: int) -> None:
        """Positions, contacts, velocities and sensors of environment ``i`` at its current state."""
        ...

    def set_model(self, i: int, field: str, index: Any, value: Any) -> None:
        """Environment ``i``'s ``MjModel.<field>[index] = value``."""
        ...

    def add_qvel(self, i: int, index: Any, dv: F) -> None:
        """Add ``dv`` to environment ``i``'s ``qvel[index]``."""
        ...

    def step(self, q_targets: F, push_force_w: F | None = None) -> None:
        """Hold the PD targets for ``decimation`` physics steps, then refresh at the final state."""
        ...

    def read(self, fields: dict[str, tuple[str, Any]]) -> dict[str, F]:
        """``name -> (MjData field, index)``: each field's indexed part of every environment, [N, ...]."""
        ...

    def contact_parts(self, geom_part: NDArray[np.int64], parts: int, other_geom: int) -> NDArray[np.bool_]:
        """[N, parts]: a geom of each part (``geom_part``: each geom's part, -1 none) touches ``other_geom``."""
        ...

    def get_states(self) -> F:
        """Full physics states (``mjSTATE_FULLPHYSICS``), [N, nstate]."""
        ...

    def set_states(self, states: F) -> None:
        """:meth:`get_states`' inverse; refreshed."""
        ...

    def close(self) -> None: ...


def warp_device(torch_device: str) -> str:
    """MuJoCo-Warp's name for the learner's torch device (``cuda`` is warp's ``cuda:0``)."""
    return "cuda:0" if torch_device == "cuda" else torch_device


def make_physics(backend: str, num_envs: int, robot: RobotSpec, device: str = "cpu", **kwargs: Any) -> Physics:
    """The backend's physics: ``kwargs`` are ``BatchedMujoco``'s (MuJoCo-Warp ignores ``nthread``)."""
    if backend == "mujoco_cpu":
        from training.envs.mujoco_cpu import BatchedMujoco

        return BatchedMujoco(num_envs, robot, **kwargs)
    if backend == "mujoco_warp":
        try:
            import mujoco_warp  # noqa: F401
        except ImportError as e:
            raise ValueError(f"env.backend mujoco_warp needs mujoco_warp ({e}); install it with: make setup") from None
        from training.envs.mujoco_warp import WarpMujoco

        return WarpMujoco(num_envs, robot, device=device, **kwargs)
    raise ValueError(f"unknown physics backend {backend!r}; known: {', '.join(BACKENDS)}")
