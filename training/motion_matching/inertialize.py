"""Inertialization: at a switch, keep the pose and velocity the old clip had and let the difference
to the new clip decay with the critically damped spring, so the output has no jump.

The state is an offset (x, v) added to the newly played pose; each frame it decays by
``spring.decay_spring``. At a switch the offset absorbs the new gap: offset' = (src + offset) - dst in
position and in velocity, where src is what the old clip would have played this frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from training.motion_matching.spring import decay_spring

F = NDArray[np.float64]


@dataclass
class Offset:
    x: F
    v: F

    @classmethod
    def zeros(cls, dims: int) -> Offset:
        return cls(np.zeros(dims), np.zeros(dims))


def transition(off: Offset, src_x: F, src_v: F, dst_x: F, dst_v: F) -> Offset:
    """The offset after switching from a source pose/velocity to a destination pose/velocity."""
    return Offset(off.x + src_x - dst_x, off.v + src_v - dst_v)


def step(off: Offset, halflife_s: float, dt: float) -> Offset:
    x, v = decay_spring(off.x, off.v, halflife_s, dt)
    return Offset(np.asarray(x), np.asarray(v))
