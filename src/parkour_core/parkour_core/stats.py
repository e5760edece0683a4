"""Timing statistics the way we report them: medians and tails, never one number."""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

SAMPLES_KEPT = 30_000  # per measurement: 10 min of a 50 Hz loop, 2.5 min of a 200 Hz one


class Samples:
    """The newest ``capacity`` values of one measurement (a ring buffer), with the count and largest of all.

    Nodes record their timings here, so an hour on the robot keeps a bounded window, not a list that grows.
    """

    def __init__(self, capacity: int = SAMPLES_KEPT) -> None:
        self._values = np.empty(capacity, dtype=np.float64)
        self.count = 0  # values ever added
        self.largest = -np.inf

    def append(self, value: float) -> None:
        self._values[self.count % len(self._values)] = value
        self.count += 1
        if value > self.largest:
            self.largest = value

    def __len__(self) -> int:
        return min(self.count, len(self._values))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        n, capacity = self.count, len(self._values)
        kept = self._values[:n] if n <= capacity else np.roll(self._values, -(n % capacity))
        return kept.astype(dtype) if dtype is not None else kept.copy()

    def tail(self, k: int) -> np.ndarray:
        return np.asarray(self)[-k:]


def summary_ms(values_s: Sequence[float] | Samples) -> dict[str, float | int | None]:
    """p50/p99/max (ms) and the sample count of durations given in seconds (for :class:`Samples`: the
    percentiles of the kept window, the max and count of all)."""
    if len(values_s) == 0:
        return {"p50": None, "p99": None, "max": None, "n": 0}
    a = np.asarray(values_s, dtype=np.float64) * 1000.0
    largest = values_s.largest * 1000.0 if isinstance(values_s, Samples) else float(a.max())
    count = values_s.count if isinstance(values_s, Samples) else len(a)
    return {
        "p50": round(float(np.percentile(a, 50)), 4),
        "p99": round(float(np.percentile(a, 99)), 4),
        "max": round(float(largest), 4),
        "n": count,
    }


def histogram_ms(values_s: Sequence[float] | Samples, bin_ms: float = 1.0, top_ms: float = 100.0) -> dict[str, Any]:
    """Counts of durations (seconds) in ``bin_ms`` bins from 0 to ``top_ms``; ``over``: how many lay above."""
    a = np.asarray(values_s, dtype=np.float64) * 1000.0
    counts, _ = np.histogram(a, bins=np.arange(0.0, top_ms + bin_ms / 2, bin_ms))
    return {"bin_ms": bin_ms, "counts": counts.tolist(), "over": int(np.count_nonzero(a > top_ms))}


class CpuMeter:
    """CPU seconds this process used (user + system, every thread) since it was made, against wall time."""

    def __init__(self) -> None:
        self._start = os.times()
        self._wall = time.perf_counter()
        self._major_faults = _major_page_faults()

    def report(self, sim_s: float | None = None) -> dict[str, float | None]:
        now = os.times()
        user, system = now.user - self._start.user, now.system - self._start.system
        wall = time.perf_counter() - self._wall
        return {
            "user_s": round(user, 3),
            "system_s": round(system, 3),
            "wall_s": round(wall, 3),
            "cores": round((user + system) / wall, 4) if wall > 0 else None,  # CPU seconds per second of run
            "cpu_s_per_sim_s": round((user + system) / sim_s, 4) if sim_s else None,
            "nice": os.getpriority(os.PRIO_PROCESS, 0),  # what the scheduler weighed it by
            # pages read back from disk, each a stall: code and data the kernel had evicted (lock_memory)
            "major_page_faults": _major_page_faults() - self._major_faults,
            "memory_locked": _memory_locked(),
        }


def _memory_locked() -> bool | None:
    """Whether this process has locked memory (VmLck > 0: Linux; None elsewhere). VmLck is the size of
    the locked mappings, not of the resident pages, so only whether it is zero says anything."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmLck:"):
                return int(line.split()[1]) > 0
    except OSError:
        pass
    return None


def _major_page_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
