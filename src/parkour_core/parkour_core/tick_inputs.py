"""What the policy runner consumed on one tick, as the policy node publishes it on
``/policy/tick_inputs`` (std_msgs/Float64MultiArray) right before that tick's targets.

One definition for both sides: the node encodes, bag replay decodes, so a replay through the same
bundle reproduces the recorded targets bit for bit. float64 keeps every input exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TICK_INPUTS_TOPIC = "/policy/tick_inputs"
# The label of the one layout dimension: names the encoding so a reader can refuse another one.
TICK_INPUTS_LAYOUT = "parkour_tick_inputs_v1"


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


HEADER_LEN = 4  # stamp_sec, stamp_nanosec, reset, depth_stamp_s
FIXED_LEN = HEADER_LEN + 3 + 4 + 3  # + command, quaternion, gyro


def encode_tick_inputs(t: TickInputs) -> tuple[str, list[float]]:
    """(layout label, data) for a Float64MultiArray; float64 keeps every input exact."""
    depth = math.nan if t.depth_stamp_s is None else t.depth_stamp_s
    data = [float(t.stamp_sec), float(t.stamp_nanosec), 1.0 if t.reset else 0.0, depth]
    for part in (t.command, t.quat_wxyz, t.gyro, t.q, t.dq):
        data.extend(float(v) for v in np.asarray(part, dtype=np.float64).ravel())
    return TICK_INPUTS_LAYOUT, data


def decode_tick_inputs(label: str, data: np.ndarray | list[float]) -> TickInputs:
    if label != TICK_INPUTS_LAYOUT:
        raise ValueError(f"{TICK_INPUTS_TOPIC} has layout {label!r}; this replay reads {TICK_INPUTS_LAYOUT!r}")
    values = np.asarray(data, dtype=np.float64)
    n2 = len(values) - FIXED_LEN
    if n2 <= 0 or n2 % 2:
        raise ValueError(f"{TICK_INPUTS_TOPIC} message has {len(values)} values, not {FIXED_LEN} + 2 x joints")
    n = n2 // 2
    depth = float(values[3])
    i = HEADER_LEN
    return TickInputs(
        stamp_sec=int(values[0]),
        stamp_nanosec=int(values[1]),
        reset=bool(values[2]),
        depth_stamp_s=None if math.isnan(depth) else depth,
        command=values[i : i + 3].copy(),
        quat_wxyz=values[i + 3 : i + 7].copy(),
        gyro=values[i + 7 : i + 10].copy(),
        q=values[i + 10 : i + 10 + n].copy(),
        dq=values[i + 10 + n : i + 10 + 2 * n].copy(),
    )
