"""How long a peer of the simulator (the policy, the supervisor) has been silent, in wall time.

Both peers tick on sim time. While the bridge holds sim time for one of them, the other cannot
tick either, so that wall time is the simulator's, not the peer's silence. Counting it once made
the bridge take a live supervisor for gone after a 2 s wait for a killed policy and run the robot
on without it until it fell (a flaky policy_killed fault test on a loaded machine).
"""

from __future__ import annotations


class PeerSilence:
    def __init__(self, timeout_wall_s: float) -> None:
        self.timeout_wall_s = timeout_wall_s
        self.last_heard_wall: float | None = None
        self.held_wall_s = 0.0  # sim time was held this long since the peer was last heard

    def heard(self, wall: float) -> None:
        self.last_heard_wall = wall
        self.held_wall_s = 0.0

    def sim_held(self, wall_s: float) -> None:
        """Sim time stood still this long (the bridge waited for the other peer)."""
        self.held_wall_s += wall_s

    def silent_s(self, wall: float) -> float:
        """Wall time since the peer was last heard during which sim time could move (0 before it was)."""
        if self.last_heard_wall is None:
            return 0.0
        return max(0.0, wall - self.last_heard_wall - self.held_wall_s)

    def gone(self, wall: float) -> bool:
        return self.last_heard_wall is not None and self.silent_s(wall) > self.timeout_wall_s


class TickGrid:
    """The sim times a periodic peer ticks at (multiples of ``period_s``), and which physics step reaches each.

    A peer on sim time ticks on the first /clock at or after its due time; the bridge holds sim time
    at that step until the peer has answered, so every tick of the peer sees the state of its own time
    and the simulated robot gets a command every period of sim time, however slow the machine is.
    """

    def __init__(self, period_s: float, tolerance_s: float = 1e-6) -> None:
        if not period_s > 0:
            raise ValueError(f"a tick grid needs a positive period, got {period_s}")
        self.period_s = period_s
        self.tolerance_s = tolerance_s
        self.next_s = 0.0

    def reached(self, t_s: float) -> float | None:
        """The due time this step reached (the latest one, if a step spans several), else None."""
        if t_s < self.next_s - self.tolerance_s:
            return None
        due = self.next_s + self.period_s * ((t_s + self.tolerance_s - self.next_s) // self.period_s)
        self.next_s = due + self.period_s
        return due
