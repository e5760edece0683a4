"""Velocity commands: the continuous (vx, vy, yaw rate) and PHP's discrete 2D command.

The parkour student is trained on a discrete command (a speed level and a heading sector) next
to the continuous one, so an operator's stick maps to the few behaviours it learned. The levels
and sector count are data in the bundle manifest (``command``), never hidden in code.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def speed_levels_problem(levels: Sequence[float]) -> str | None:
    """What is wrong with a list of discrete speed levels, or None. The bundle manifest's
    ``command.speed_levels_mps`` and the teleop config's ``discrete_speed_levels_mps`` are such lists;
    each caller names its own key."""
    if not levels or levels[0] != 0.0 or any(b <= a for a, b in itertools.pairwise(levels)):
        return f"must start at 0 and increase, got {list(levels)}"
    return None


@dataclass(frozen=True)
class DiscreteCommandSpec:
    speed_levels_mps: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5)
    heading_sectors: int = 8  # sectors of 360/N deg, sector 0 centred on straight ahead

    def __post_init__(self) -> None:
        problem = speed_levels_problem(self.speed_levels_mps)
        if problem:
            raise ValueError(f"command.speed_levels_mps {problem}")
        if self.heading_sectors < 1:
            raise ValueError(f"command.heading_sectors must be >= 1, got {self.heading_sectors}")

    def to_dict(self) -> dict[str, Any]:
        return {"speed_levels_mps": list(self.speed_levels_mps), "heading_sectors": self.heading_sectors}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> DiscreteCommandSpec:
        unknown = set(d) - {"speed_levels_mps", "heading_sectors"}
        if unknown:
            raise ValueError(f"command: unknown keys {sorted(unknown)}")
        return DiscreteCommandSpec(
            speed_levels_mps=tuple(float(x) for x in d["speed_levels_mps"]),
            heading_sectors=int(d["heading_sectors"]),
        )


def discretise_command(command: FloatArray, spec: DiscreteCommandSpec) -> FloatArray:
    """(vx, vy, yaw rate) -> (speed level index, heading sector index), as floats.

    The speed level is the nearest level to the planar speed (ties go to the slower level); the
    heading sector is the sector holding atan2(vy, vx). Standing still is level 0, sector 0.
    """
    return np.array(discrete_command(float(command[0]), float(command[1]), spec))


def discrete_command(vx: float, vy: float, spec: DiscreteCommandSpec) -> tuple[float, float]:
    """:func:`discretise_command` on the planar velocity as Python floats (the policy runner's path)."""
    speed = math.hypot(vx, vy)
    if not math.isfinite(speed):
        return 0.0, 0.0
    levels = spec.speed_levels_mps
    level = min(range(len(levels)), key=lambda i: (abs(levels[i] - speed), i))
    if level == 0:
        return 0.0, 0.0
    width = 2.0 * math.pi / spec.heading_sectors
    sector = math.floor((math.atan2(vy, vx) + width / 2.0) / width) % spec.heading_sectors
    return float(level), float(sector)
