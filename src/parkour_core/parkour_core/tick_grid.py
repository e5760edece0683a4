"""When a periodic loop ticks: on the first clock reading at or after each multiple of its period, once.

One grid serves both sides of the lockstep: a node's :class:`~parkour_core.ros_process.PeriodicTick`
ticks on it, and the simulator holds sim time at the steps that reach it until the node has answered.
The two must agree on every tick, the first included: a tick the simulator waits for and the node
never runs stalls the lockstep until the simulator gives up on the node.
"""

from __future__ import annotations

import math


class TickGrid:
    """Due times ``first_s + k period_s``; :meth:`reached` names the one a clock reading reaches.

    ``first_s`` None: the grid starts at the first reading (a steady clock's arbitrary origin).
    """

    def __init__(self, period_s: float, first_s: float | None = None, tolerance_s: float = 1e-6) -> None:
        if not period_s > 0:
            raise ValueError(f"a tick grid needs a positive period, got {period_s}")
        self.period_s = period_s
        self.tolerance_s = tolerance_s
        self.next_s = first_s

    @classmethod
    def on_sim_time(cls, period_s: float) -> TickGrid:
        """A node on sim time: its first tick is one period in (no /clock reads 0 before the sim steps)."""
        return cls(period_s, first_s=period_s)

    @classmethod
    def on_steady_clock(cls, period_s: float, timer_created_s: float) -> TickGrid:
        """A node on wall time: a steady timer created at ``timer_created_s`` (read just before it was) is
        due one period later and every period after, and fires some wake-up latency after each due time,
        never before. A fire counts for the due time it follows. Starting the grid at the first fire
        instead, with a tolerance of microseconds, would take every fire that woke sooner after its due
        time than the first one had for an early one and drop it: the loop would run a double period at
        a percent or two of a 50 Hz policy's ticks, even on a quiet machine."""
        return cls(period_s, first_s=timer_created_s + period_s)

    def reached(self, t_s: float) -> float | None:
        """The due time ``t_s`` reached (the latest one, if a reading spans several), else None."""
        if self.next_s is None:
            self.next_s = t_s
        if t_s < self.next_s - self.tolerance_s:
            return None
        due = self.next_s + self.period_s * ((t_s + self.tolerance_s - self.next_s) // self.period_s)
        self.next_s = due + self.period_s
        return due


def sim_tick_before(t_s: float, period_s: float, tolerance_s: float = 1e-6) -> float | None:
    """The latest tick of a sim-time grid (:meth:`TickGrid.on_sim_time`: period, 2 period, ...) before
    ``t_s`` (a tick within ``tolerance_s`` of ``t_s`` is at it, not before); None before the first."""
    k = math.ceil((t_s - tolerance_s) / period_s) - 1
    return k * period_s if k >= 1 else None
