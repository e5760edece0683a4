"""The gait clock of phase-conditioned walking policies (one phase per foot)."""

from __future__ import annotations

import numpy as np

from parkour_core.obs import FloatArray

STANDING_PHASE = np.pi
START_PHASE = (0.0, np.pi)


class GaitClock:
    """Advances each foot's phase by 2 pi dt / period; parks both at pi while the command is ~zero."""

    def __init__(self, period_s: float, dt_s: float, still_threshold: float = 0.01) -> None:
        if period_s <= 0 or dt_s <= 0:
            raise ValueError(f"gait period ({period_s}) and control dt ({dt_s}) must be positive")
        self.step_rad = 2.0 * np.pi * dt_s / period_s
        self.still_threshold = still_threshold
        self.phase = np.array(START_PHASE)
        self.standing = False

    def reset(self) -> None:
        self.phase = np.array(START_PHASE)
        self.standing = False

    def advance(self, command: FloatArray) -> FloatArray:
        """Phase to observe on the next tick, given the command in force now."""
        self.phase = np.fmod(self.phase + self.step_rad + np.pi, 2.0 * np.pi) - np.pi
        still = np.linalg.norm(command[:2]) < self.still_threshold and abs(command[2]) < self.still_threshold
        if still:
            self.phase = np.full(2, STANDING_PHASE)
            self.standing = True
        elif self.standing:
            self.phase = np.array(START_PHASE)
            self.standing = False
        return self.phase
