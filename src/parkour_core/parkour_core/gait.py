"""The gait clock of phase-conditioned walking policies (one phase per foot)."""

from __future__ import annotations

import math

import numpy as np

from parkour_core.obs import FloatArray

STANDING_PHASE = np.pi
START_PHASE = (0.0, np.pi)


class GaitClock:
    """Advances each foot's phase by 2 pi dt / period; parks both at pi while the command is ~zero.

    ``batch``: clocks for that many robots at once (a training env's), phases [batch, 2] and commands
    [batch, 3]; ``None``: the robot's one clock, phases [2] and a command [3].
    """

    def __init__(self, period_s: float, dt_s: float, still_threshold: float = 0.01, batch: int | None = None) -> None:
        if period_s <= 0 or dt_s <= 0:
            raise ValueError(f"gait period ({period_s}) and control dt ({dt_s}) must be positive")
        self.step_rad = 2.0 * np.pi * dt_s / period_s
        self.still_threshold = still_threshold
        shape = () if batch is None else (batch,)
        self.phase: FloatArray = np.broadcast_to(np.array(START_PHASE), (*shape, 2)).copy()
        self._standing = np.zeros(shape, dtype=bool)

    @property
    def standing(self) -> bool:
        """The one clock is parked (a batch: every clock is)."""
        return bool(np.all(self._standing))

    def reset(self, ids: np.ndarray | None = None) -> None:
        """Back to the start phase; ``ids``: only those robots of a batch."""
        where = ... if ids is None else ids
        self.phase[where] = START_PHASE
        self._standing[where] = False

    def advance(self, command: FloatArray) -> FloatArray:
        """Phase to observe on the next tick, given the command in force now."""
        command = np.asarray(command)
        if self._standing.ndim == 0 and command.dtype == np.float64 and command.shape == (3,):
            return self._advance_one(*command.tolist())
        advanced = np.fmod(self.phase + self.step_rad + np.pi, 2.0 * np.pi) - np.pi
        still = (np.linalg.norm(command[..., :2], axis=-1) < self.still_threshold) & (
            np.abs(command[..., 2]) < self.still_threshold
        )
        restart = ~still & self._standing
        self.phase = np.where(
            still[..., None], STANDING_PHASE, np.where(restart[..., None], np.array(START_PHASE), advanced)
        )
        self._standing = np.array(still)
        return self.phase

    def _advance_one(self, vx: float, vy: float, yaw_rate: float) -> FloatArray:
        """:meth:`advance` of the one clock in Python floats: the same IEEE operations as the array path
        (the norm a sum of squares from +0.0, fmod exact), so the phase is bit for bit the same."""
        still = math.sqrt(vx * vx + vy * vy) < self.still_threshold and abs(yaw_rate) < self.still_threshold
        if still:
            phase = [STANDING_PHASE, STANDING_PHASE]
        elif self._standing:
            phase = list(START_PHASE)
        else:
            step, turn = self.step_rad, 2.0 * np.pi
            phase = [math.fmod(p + step + np.pi, turn) - np.pi for p in self.phase.tolist()]
        self.phase = np.array(phase)
        self._standing = np.array(still)
        return self.phase
