"""What the policy runner consumed on one tick, as the policy node publishes it on
``/policy/tick_inputs`` (parkour_interfaces/PolicyTickInputs) right before that tick's targets.

One definition for both sides: the node publishes it, bag replay reads it back, so a replay through
the same bundle reproduces the recorded targets bit for bit. Its fields travel as float64 and
(sec, nanosec) stamps, which keep every input exact; the conversion to and from the message lives in
the ROS-side packages (``parkour_control.messages``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TickInputs:
    """What the policy runner consumed on one tick (policy joint order)."""

    stamp_sec: int  # header.stamp of the /policy/joint_targets message of the same tick
    stamp_nanosec: int
    reset: bool  # the runner was reset (supervisor entered ACTIVE) since the previous published tick, or is new
    depth_stamp_s: float | None  # exposure stamp of the newest depth frame released to the policy so far
    command: np.ndarray  # (vx, vy, yaw rate) after the command timeout
    quat_wxyz: np.ndarray
    gyro: np.ndarray
    q: np.ndarray
    dq: np.ndarray

    @property
    def stamp_ns(self) -> int:
        return self.stamp_sec * 1_000_000_000 + self.stamp_nanosec
