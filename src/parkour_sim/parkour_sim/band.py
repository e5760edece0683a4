"""The simulated gantry: the elastic band the robot starts on, let go and re-attached on request.

The bridge's ``/sim/release_band`` and ``/sim/hang_band`` services answer from their own thread; the
physics loop applies what they asked between steps (:meth:`BandControl.apply`), never under mj_step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from parkour_sim.physics import RobotSim

HANG_REFUSED = "refused: the robot already hangs on the elastic band"


class BandControl:
    """Hangs ``sim`` on its band at once; ``publish(released)`` is called on every change the loop applies."""

    def __init__(self, sim: RobotSim, publish: Callable[[bool], None]) -> None:
        self.sim = sim
        self.publish = publish
        self._lock = threading.Lock()
        self._wanted = True  # hanging, as the services last asked
        self.released_at_s: float | None = None  # the first release: a fall counts from here on, hanging or not
        self.hung_at_s: list[float] = []  # each re-attachment after a release
        sim.hang()

    @property
    def released(self) -> bool:
        """Released at least once: the robot has had to carry itself since."""
        return self.released_at_s is not None

    def request_release(self) -> tuple[bool, str]:
        with self._lock:
            self._wanted = False
        return True, "elastic band released"

    def request_hang(self) -> tuple[bool, str]:
        with self._lock:
            if self._wanted:
                return False, HANG_REFUSED
            self._wanted = True
        return True, "elastic band re-attached where the robot is"

    def apply(self) -> None:
        """Between physics steps: the band as the services last asked."""
        with self._lock:
            wanted = self._wanted
        sim = self.sim
        if wanted == (sim.band is not None):
            return
        if wanted:
            # Anchored where the base is now, as an operator hooks a gantry back on and takes up its slack. At
            # the reset height (sim.base_height_m) the stiff weld would jerk a standing robot, whose pelvis sits
            # a few cm lower with its legs under load, up off its feet. Here it takes the weight only once the
            # legs go limp, and sags by millimetres.
            sim.hang(anchor_z_m=float(sim.base_pos[2]))
            self.hung_at_s.append(sim.time)
        else:
            sim.hang(None)
            if self.released_at_s is None:
                self.released_at_s = sim.time
        self.publish(not wanted)
