"""A scripted command sequence: requests fired once at their time, velocity held until replaced."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parkour_core.config import ScriptStep


class Script:
    def __init__(self, steps: Sequence[ScriptStep]) -> None:
        self.steps = sorted(steps, key=lambda s: s.at_s)
        self.next_index = 0
        self.command = np.zeros(3)

    def advance(self, elapsed_s: float) -> list[ScriptStep]:
        """Request steps due by ``elapsed_s`` (each returned once); updates :attr:`command`."""
        due: list[ScriptStep] = []
        while self.next_index < len(self.steps) and self.steps[self.next_index].at_s <= elapsed_s:
            step = self.steps[self.next_index]
            if step.request:
                due.append(step)
            else:
                self.command = np.asarray(step.cmd, dtype=np.float64)
            self.next_index += 1
        return due

    @property
    def done(self) -> bool:
        return self.next_index >= len(self.steps)
