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


class WallPacer:
    """Paces sim time to wall time at ``real_time_factor``; never runs faster.

    Behind by more than ``catch_up_s`` (a busy machine, a lockstep hold), it runs on from where it is
    instead of stepping back to back: on wall time (a stand-in robot) a sprint would hold the last
    command's torque across every step of the stall with no chance for a new one, a gap the robot it
    stands in for never makes, so there ``catch_up_s`` is one physics step. In lockstep the peers are
    waited for at each tick and a short catch-up costs them nothing.
    """

    def __init__(self, wall: float, sim_s: float, real_time_factor: float, catch_up_s: float) -> None:
        self.real_time_factor = real_time_factor
        self.catch_up_s = catch_up_s
        self.anchor_wall, self.anchor_sim = wall, sim_s

    def sleep_s(self, wall: float, sim_s: float) -> float:
        """How long to sleep before the step after ``sim_s`` (0: step now); re-anchors when far behind."""
        ahead_s = self.anchor_wall + (sim_s - self.anchor_sim) / self.real_time_factor - wall
        if ahead_s < -self.catch_up_s:
            self.anchor_wall, self.anchor_sim = wall, sim_s
            return 0.0
        return max(0.0, ahead_s)
