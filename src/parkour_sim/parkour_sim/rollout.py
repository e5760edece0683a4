"""Run a bundle on the simulated robot in one process, without ROS or DDS.

The same runner and PD law as the graph, for fast checks and evaluation; the graph itself is
tested end to end elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parkour_core.bundle import Bundle, as_array
from parkour_core.runner import PolicyRunner, RobotState
from parkour_core.safety import JointCommand
from parkour_sim.physics import RobotSim


@dataclass
class RolloutResult:
    fell_at_s: float | None
    base_start: np.ndarray
    base_end: np.ndarray

    @property
    def fell(self) -> bool:
        return self.fell_at_s is not None

    @property
    def forward_m(self) -> float:
        return float(self.base_end[0] - self.base_start[0])


def rollout(
    bundle: Bundle,
    command: tuple[float, float, float],
    seconds: float,
    scene: str = "flat",
    physics_dt_s: float = 0.002,
) -> RolloutResult:
    m = bundle.manifest
    runner = PolicyRunner(bundle)
    sim = RobotSim(bundle.robot, scene, physics_dt_s)
    n = bundle.robot.num_joints
    kp, kd = as_array(m.kp), as_array(m.kd)
    decimation = max(1, round(1.0 / (m.policy_hz * physics_dt_s)))
    enabled = np.ones(n, dtype=bool)
    cmd = np.asarray(command, dtype=np.float64)
    start = sim.base_pos
    for step in range(round(seconds / physics_dt_s)):
        if step % decimation == 0:
            targets = runner.step(RobotState(sim.q, sim.dq, sim.quat_wxyz, sim.gyro), cmd)
            sim.set_command(JointCommand(targets, np.zeros(n), kp, kd, np.zeros(n)), enabled)
        sim.step()
        if sim.fallen():
            return RolloutResult(sim.time, start, sim.base_pos)
    return RolloutResult(None, start, sim.base_pos)
