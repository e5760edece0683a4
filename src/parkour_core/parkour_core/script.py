"""A scripted command sequence: requests fired once at their time, velocity held until replaced.

A step may wait for a supervisor mode (``in_mode``): when it is due and the mode is another, the
script's clock holds until the mode is reached, so every later step keeps its spacing after it.
A loaded machine then stretches the sequence instead of firing "activate" into a stand-up that
has not finished.

A velocity step may hold the heading (``hold_heading``): its yaw rate is then a proportional
correction towards the heading the IMU reported when the script started, so "walk straight" stays
straight for a policy that drifts (the script still knows nothing of where the robot is).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from parkour_core.config import ScriptStep

HEADING_GAIN_PER_S = 1.5  # yaw rate (rad/s) per radian of heading error
HEADING_MAX_RATE_RPS = 0.5


class Script:
    def __init__(self, steps: Sequence[ScriptStep]) -> None:
        self.steps = sorted(steps, key=lambda s: s.at_s)
        self.next_index = 0
        self.command = np.zeros(3)
        self.hold_heading = False  # the current velocity step's
        self.heading_rad: float | None = None  # the reference: the first yaw seen
        self.held_s = 0.0  # time the clock spent waiting for modes
        self._hold_started: float | None = None

    def advance(self, elapsed_s: float, mode: str = "") -> list[ScriptStep]:
        """Request steps due by ``elapsed_s`` (each returned once); updates :attr:`command`.

        ``mode`` is the supervisor's current mode, for steps that wait on one.
        """
        due: list[ScriptStep] = []
        while self.next_index < len(self.steps):
            step = self.steps[self.next_index]
            if step.at_s > self.script_time(elapsed_s):
                break
            if step.in_mode and step.in_mode != mode:
                if self._hold_started is None:
                    self._hold_started = elapsed_s - (self.script_time(elapsed_s) - step.at_s)
                break
            if self._hold_started is not None:
                self.held_s += elapsed_s - self._hold_started
                self._hold_started = None
            if step.request:
                due.append(step)
            else:
                self.command = np.asarray(step.cmd, dtype=np.float64)
                self.hold_heading = step.hold_heading
            self.next_index += 1
        return due

    def velocity(self, yaw_rad: float | None) -> np.ndarray:
        """The command to send, given the robot's yaw now (None: not known yet)."""
        if yaw_rad is not None and self.heading_rad is None:
            self.heading_rad = yaw_rad
        if not self.hold_heading or yaw_rad is None or self.heading_rad is None:
            return self.command
        error = math.remainder(self.heading_rad - yaw_rad, math.tau)
        rate = float(np.clip(HEADING_GAIN_PER_S * error, -HEADING_MAX_RATE_RPS, HEADING_MAX_RATE_RPS))
        return np.array([self.command[0], self.command[1], rate])

    def script_time(self, elapsed_s: float) -> float:
        """The script's own clock: elapsed time less the time spent waiting for modes."""
        if self._hold_started is not None:
            return min(elapsed_s, self._hold_started) - self.held_s
        return elapsed_s - self.held_s

    @property
    def done(self) -> bool:
        return self.next_index >= len(self.steps)
