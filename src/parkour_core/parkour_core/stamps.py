"""Message stamps as (sec, nanosec) and as float seconds, converted the one way every node does.

Seconds read from a stamp as ``sec + nanosec * 1e-9`` (:func:`stamp_seconds`) and written back with
:func:`stamp_parts` read as the same float again, on sim time and on wall-clock time alike, so a
float stamp that travels in a message (the depth frame behind a policy tick) still finds the frame it
names when a replay looks it up. Below 2**22 s (sim time) the (sec, nanosec) come back exactly too;
a wall-clock float has a resolution of a few hundred nanoseconds.
"""

from __future__ import annotations

import math


def stamp_parts(t_s: float) -> tuple[int, int]:
    """Seconds -> (sec, nanosec) of a ROS time, carrying a rounded-up nanosecond part into sec.

    The fraction is taken after the whole seconds are subtracted (exact in floating point), so the
    nanoseconds are as precise as the float allows. Sim time accumulates steps in floating point
    (2.9999999999997 for 3.0): rounding gives 1e9 ns there, which becomes the next second.
    """
    sec = math.floor(t_s)
    nanosec = round((t_s - sec) * 1e9)
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return int(sec), int(nanosec)


def stamp_seconds(sec: int, nanosec: int) -> float:
    """(sec, nanosec) -> seconds, the same float wherever a node computes it."""
    return sec + nanosec * 1e-9
