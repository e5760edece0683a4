"""Depth frames on their way into the policy: optional latency emulation and age accounting.

The student was trained with 60-80 ms between exposure and use. A faster camera pipeline is
not better for it: the gate can hold each frame until its age reaches a latency drawn from the
bundle's trained range. Ages are always now - stamp, where the stamp is the exposure time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass
class PendingFrame:
    image: np.ndarray
    stamp_s: float
    release_s: float


class DepthLatencyGate:
    """Frames in, the newest frame whose release time has come out (older ones are superseded)."""

    def __init__(self, latency_s: tuple[float, float] | None, seed: int = 0, max_pending: int = 8) -> None:
        self.latency_s = latency_s
        self._rng = np.random.default_rng(seed)
        self._pending: deque[PendingFrame] = deque(maxlen=max_pending)
        self.superseded = 0  # frames replaced by a newer one before the policy used them

    def push(self, image: np.ndarray, stamp_s: float) -> None:
        release = stamp_s
        if self.latency_s is not None:
            release = stamp_s + float(self._rng.uniform(*self.latency_s))
        self._pending.append(PendingFrame(image, stamp_s, release))

    def pop_ready(self, now_s: float) -> PendingFrame | None:
        ready = None
        while self._pending and self._pending[0].release_s <= now_s:
            if ready is not None:
                self.superseded += 1
            ready = self._pending.popleft()
        return ready

    def clear(self) -> None:
        self._pending.clear()


class FrameRate:
    """Frames per second over the stamps seen (exposure times, so transport jitter does not count)."""

    def __init__(self) -> None:
        self.frames = 0
        self.first_stamp_s: float | None = None
        self.last_stamp_s: float | None = None

    def add(self, stamp_s: float) -> None:
        self.frames += 1
        if self.first_stamp_s is None:
            self.first_stamp_s = stamp_s
        self.last_stamp_s = stamp_s

    @property
    def fps(self) -> float:
        if self.frames < 2 or self.first_stamp_s is None or self.last_stamp_s is None:
            return 0.0
        span = self.last_stamp_s - self.first_stamp_s
        return (self.frames - 1) / span if span > 0 else 0.0
