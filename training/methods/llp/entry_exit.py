"""LLP's transition evaluation: the approach-to-skill entry and the skill-to-next exit, scored apart.

A single success rate over a chained motion hides where it fails. LLP recommends scoring the two
transitions separately: the **entry** (the approach hands over to the skill) in a window around
the skill's first frame, the **exit** (the skill hands over to what comes next) in a window around
its last frame. Pure functions over one trial's trajectory (times, tracking error, when it ended
and whether it failed) and the skill's windows; :func:`aggregate` turns many trials into rates,
with the exit rate also given conditional on a successful entry (an exit a trial never reached is
not the exit's failure).

A window is passed when the trial reaches the window's end without failing before it and its
tracking error stays within ``max_error_m`` inside the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float

    def __post_init__(self) -> None:
        if not self.end_s > self.start_s:
            raise ValueError(f"window end {self.end_s} must be after its start {self.start_s}")


@dataclass(frozen=True)
class SkillWindows:
    entry: Window
    exit: Window


def skill_windows(
    entry_frame: int, end_frame: int, fps: float, before_s: float = 0.3, after_s: float = 0.3
) -> SkillWindows:
    """Windows ``[t - before, t + after]`` around the skill's first frame and around its last frame."""
    if end_frame < entry_frame:
        raise ValueError(f"skill end frame {end_frame} is before its entry frame {entry_frame}")
    t_in, t_out = entry_frame / fps, end_frame / fps
    return SkillWindows(Window(t_in - before_s, t_in + after_s), Window(t_out - before_s, t_out + after_s))


@dataclass(frozen=True)
class Trajectory:
    """One trial: sample times (s, increasing), tracking error (m) at each, and how it ended.

    ``failed_at_s``: when the trial failed (fall / termination), ``None`` if it did not. A trial that
    stops without failing (it timed out, or the recording ended) passes no window beyond its last sample.
    """

    times_s: np.ndarray
    error_m: np.ndarray
    failed_at_s: float | None = None

    @staticmethod
    def of(times_s: ArrayLike, error_m: ArrayLike, failed_at_s: float | None = None) -> Trajectory:
        t, e = np.asarray(times_s, dtype=float), np.asarray(error_m, dtype=float)
        if t.shape != e.shape or t.ndim != 1 or len(t) == 0:
            raise ValueError(f"times and errors must be equal-length 1D arrays, got {t.shape} and {e.shape}")
        if np.any(np.diff(t) <= 0):
            raise ValueError("trajectory times must increase")
        return Trajectory(t, e, failed_at_s)


@dataclass(frozen=True)
class WindowScore:
    reached: bool  # the trial was still running (not failed) when the window opened
    passed: bool
    failed_inside: bool  # it failed within the window
    max_error_m: float | None  # None when no sample falls in the window
    mean_error_m: float | None


def score_window(traj: Trajectory, window: Window, max_error_m: float = 0.5) -> WindowScore:
    failed_at = np.inf if traj.failed_at_s is None else traj.failed_at_s
    reached = failed_at > window.start_s and traj.times_s[-1] >= window.start_s
    inside = (traj.times_s >= window.start_s) & (traj.times_s <= window.end_s)
    err = traj.error_m[inside]
    max_err = float(err.max()) if err.size else None
    mean_err = float(err.mean()) if err.size else None
    failed_inside = window.start_s < failed_at <= window.end_s
    completed = failed_at > window.end_s and traj.times_s[-1] >= window.end_s
    passed = bool(reached and completed and max_err is not None and max_err <= max_error_m)
    return WindowScore(bool(reached), passed, bool(failed_inside), max_err, mean_err)


@dataclass(frozen=True)
class EntryExitScore:
    entry: WindowScore
    exit: WindowScore

    def to_dict(self) -> dict[str, dict[str, float | bool]]:
        return {"entry": asdict(self.entry), "exit": asdict(self.exit)}


def score_trial(traj: Trajectory, windows: SkillWindows, max_error_m: float = 0.5) -> EntryExitScore:
    return EntryExitScore(score_window(traj, windows.entry, max_error_m), score_window(traj, windows.exit, max_error_m))


def _rate(hits: int, n: int) -> float | None:
    return hits / n if n else None


def aggregate(scores: Sequence[EntryExitScore]) -> dict[str, float | int | None]:
    """Entry and exit success rates over trials; the exit also over the trials whose entry passed."""
    n = len(scores)
    entry_ok = [s for s in scores if s.entry.passed]
    return {
        "trials": n,
        "entry_success": _rate(len(entry_ok), n),
        "exit_success": _rate(sum(s.exit.passed for s in scores), n),
        "exit_success_given_entry": _rate(sum(s.exit.passed for s in entry_ok), len(entry_ok)),
        "entry_failed_inside": _rate(sum(s.entry.failed_inside for s in scores), n),
        "exit_failed_inside": _rate(sum(s.exit.failed_inside for s in scores), n),
    }
