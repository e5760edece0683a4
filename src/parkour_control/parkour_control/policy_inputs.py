"""What the policy node has heard for its next tick: the newest robot state, the supervisor's mode, and
the depth frames (the newest, and the exact header stamp of each recent one, so a tick names its frame).

Free of ROS: the node's callbacks fill :class:`PolicyInputs`; its tick reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parkour_core.runner import RobotState

FRAME_STAMPS_KEPT = 32  # header stamps of the newest depth frames, by their float stamp (the gate holds 8)


@dataclass
class PolicyInputs:
    q: np.ndarray | None = None
    dq: np.ndarray | None = None
    quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    gyro: np.ndarray = field(default_factory=lambda: np.zeros(3))
    joint_stamp_s: float | None = None  # capture time of the newest rt/lowstate
    supervisor_state: str = "UNKNOWN"
    reset_requested: bool = False  # the supervisor entered ACTIVE: the tick resets the runner
    # For /policy/tick_inputs: a reset since the last published tick. The first tick is marked too (the
    # runner is fresh), so a replay knows where the recorded runner's memory is known to it.
    reset_since_published: bool = True
    released_depth_stamp_s: float | None = None  # the newest frame the latency gate let through
    last_depth_stamp_s: float | None = None
    last_depth_image: np.ndarray | None = None
    # The (sec, nanosec) each recent frame's header had: the tick inputs name the frame by them exactly.
    frame_stamps: dict[float, tuple[int, int]] = field(default_factory=dict)

    def robot_state(self) -> RobotState | None:
        """The state a tick steps on; None before the first rt/lowstate."""
        if self.q is None or self.dq is None or self.joint_stamp_s is None:
            return None
        return RobotState(self.q, self.dq, self.quat, self.gyro)

    def frame(self, stamp_s: float, sec: int, nanosec: int, image: np.ndarray) -> None:
        """A depth frame arrived (stamped ``sec``.``nanosec``, ``stamp_s`` as a float)."""
        self.frame_stamps[stamp_s] = (sec, nanosec)
        while len(self.frame_stamps) > FRAME_STAMPS_KEPT:
            del self.frame_stamps[next(iter(self.frame_stamps))]
        self.last_depth_stamp_s = stamp_s
        self.last_depth_image = image

    def released_frame_stamp(self) -> tuple[int, int] | None:
        """The header stamp of the frame the tick used, if one was released and is still known."""
        depth = self.released_depth_stamp_s
        return self.frame_stamps.get(depth) if depth is not None else None
