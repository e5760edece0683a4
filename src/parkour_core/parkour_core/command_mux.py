"""The velocity command the policy and the fallback gait follow: one of several sources, by priority.

Each source (the operator's teleop, an autonomy stack on /cmd_vel) is heard with its own timeout; the
command is the newest of the highest-priority source heard within its timeout, and zero when none is.
So a navigation stack or ``ros2 topic pub /cmd_vel`` drives the robot while nobody touches the
stick, the operator's stick takes over the moment it moves, and autonomy drives again once the
operator has let go for the teleop timeout. E-stop stands above all of them, in the supervisor:
DAMP within one tick, whatever any source says. The same pure mux runs in the policy node and in
the supervisor (its fallback gait), on the same topics, so both follow the same source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from parkour_core.obs import FloatArray

ZERO = np.zeros(3)


@dataclass(frozen=True)
class CommandSource:
    name: str
    priority: int  # higher wins
    timeout_s: float  # heard longer ago than this: the source is not commanding


@dataclass(frozen=True)
class MuxedCommand:
    velocity: FloatArray  # vx, vy, yaw rate
    source: str | None  # None: no source is commanding (zero velocity)
    stamp_s: float | None  # when the chosen command arrived


class CommandMux:
    def __init__(self, sources: Sequence[CommandSource]) -> None:
        names = [s.name for s in sources]
        if len(set(names)) != len(names):
            raise ValueError(f"command sources repeat a name: {names}")
        self.sources = sorted(sources, key=lambda s: -s.priority)
        self._latest: dict[str, tuple[FloatArray, float]] = {}
        self.selected: str | None = None
        self.switches = 0  # changes of the commanding source (None included)

    def put(self, source: str, velocity: Sequence[float] | FloatArray, now_s: float) -> None:
        """A command from ``source`` arrived at ``now_s``; a non-finite one counts as zero."""
        if source not in {s.name for s in self.sources}:
            raise KeyError(f"unknown command source {source!r}")
        v = np.asarray(velocity, dtype=np.float64)
        if v.shape != (3,) or not np.all(np.isfinite(v)):
            v = ZERO.copy()
        self._latest[source] = (v, now_s)

    def select(self, now_s: float) -> MuxedCommand:
        for source in self.sources:
            heard = self._latest.get(source.name)
            if heard is not None and now_s - heard[1] <= source.timeout_s:
                self._note(source.name)
                return MuxedCommand(heard[0], source.name, heard[1])
        self._note(None)
        return MuxedCommand(ZERO.copy(), None, None)

    def _note(self, name: str | None) -> None:
        if name != self.selected:
            self.switches += 1
            self.selected = name


TELEOP = "teleop"
AUTONOMY = "autonomy"


def stack_command_mux(teleop_timeout_s: float, autonomy_timeout_s: float) -> CommandMux:
    """The stack's two sources: the operator's teleop over autonomy (config ``cmd_vel``)."""
    return CommandMux([CommandSource(TELEOP, 2, teleop_timeout_s), CommandSource(AUTONOMY, 1, autonomy_timeout_s)])
