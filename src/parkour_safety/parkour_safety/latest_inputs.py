"""What the supervisor node has heard since its last tick, and how it becomes the core's inputs for a tick.

Free of ROS: the node's callbacks fill :class:`LatestInputs`; its tick takes one
:class:`parkour_core.supervisor_core.SupervisorInputs` from it and the requests with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from parkour_core.safety import Request
from parkour_core.supervisor_core import (
    GamepadReading,
    PolicyTargets,
    RobotReading,
    SupervisorInputs,
    VelocityCommand,
)
from parkour_core.unitree import LowStateView


@dataclass
class LatestInputs:
    """The newest reading of each input, and the requests waiting for the next tick."""

    view: LowStateView | None = None  # the newest rt/lowstate
    lowstate_t: float | None = None  # its capture time
    remote_keys: frozenset[str] = frozenset()  # the Unitree remote's keys held in it
    targets: PolicyTargets | None = None
    targets_stamp_ns: int = 0  # the targets' header stamp, exactly (names the policy tick)
    depth_stamp_s: float | None = None  # exposure of the newest depth frame
    gamepad: GamepadReading | None = None
    pending: list[tuple[Request, str]] = field(default_factory=list)  # (request, where from)
    estop_pending: bool = False  # the e-stop service was called

    @property
    def has_lowstate(self) -> bool:
        return self.view is not None and self.lowstate_t is not None

    def drop_requests(self) -> None:
        """Before the first rt/lowstate nothing is sent (its mode_machine must be echoed) and the robot is in
        DAMP: an e-stop has nothing to do, and no request may wait to act later."""
        self.pending.clear()
        self.estop_pending = False

    def take(self, now_s: float, command: VelocityCommand | None) -> SupervisorInputs:
        """The core's inputs for the tick at ``now_s``; the requests go with them (call once :attr:`has_lowstate`)."""
        view, lowstate_t = self.view, self.lowstate_t
        assert view is not None and lowstate_t is not None
        inputs = SupervisorInputs(
            now_s=now_s,
            robot=RobotReading(view.q, view.dq, view.quat_wxyz, view.gyro, lowstate_t, self.remote_keys),
            targets=self.targets,
            depth_stamp_s=self.depth_stamp_s,
            command=command,
            gamepad=self.gamepad,
            requests=tuple(self.pending),
            estop_service=self.estop_pending,
        )
        self.drop_requests()
        return inputs
