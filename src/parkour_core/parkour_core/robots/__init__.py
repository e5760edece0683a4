"""Robot specs by name."""

from __future__ import annotations

from parkour_core.robots.g1 import G1
from parkour_core.robots.h1 import H1
from parkour_core.robots.spec import CameraMount, JointSpec, RobotSpec

ROBOTS: dict[str, RobotSpec] = {G1.name: G1, H1.name: H1}


def get_robot(name: str) -> RobotSpec:
    try:
        return ROBOTS[name]
    except KeyError:
        raise ValueError(f"unknown robot {name!r}; known robots: {', '.join(sorted(ROBOTS))}") from None


__all__ = ["G1", "H1", "ROBOTS", "CameraMount", "JointSpec", "RobotSpec", "get_robot"]
