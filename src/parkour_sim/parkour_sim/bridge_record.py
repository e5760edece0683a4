"""What the bridge node measures and records of a run: its counters and timings, the robot's trajectory,
the fault onsets seen from the simulator's side, and bridge.json made of them.

Free of ROS: the node counts into :class:`BridgeMeters`, samples :class:`RunRecord` from the simulation,
and writes :func:`bridge_report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parkour_core.stats import CpuMeter, Samples, summary_ms
from parkour_sim.faults import BridgeFaults
from parkour_sim.physics import RobotSim

LONG_POLICY_WAIT_S = 0.1  # a hold for the policy this long (wall): reported one by one in bridge.json
LONG_LOWCMD_GAP_S = 0.02  # four supervisor periods: reported one by one in bridge.json
LONG_KEPT = 100  # long holds and gaps, and violation times, reported one by one
TRAJECTORY_KEYS = ("t", "x", "y", "z", "yaw", "vx", "vy", "tilt")


@dataclass
class BridgeMeters:
    lowstate_sent: int = 0
    lowcmd_received: int = 0
    lowcmd_dropped: int = 0  # arrived during an injected command gap
    lowcmd_violations: int = 0  # joints of received commands beyond a limit (independent audit)
    lowcmd_violation_times: list[float] = field(default_factory=list)
    lowstate_suppressed: int = 0
    camera_ticks_suppressed: int = 0
    lockstep_waits: int = 0
    policy_wait_wall: Samples = field(default_factory=Samples)  # per hold: wall time until the policy's targets
    # (sim s, waited ms, gave up) of each hold for the policy past LONG_POLICY_WAIT_S of wall time.
    long_policy_waits: list[tuple[float, float, bool]] = field(default_factory=list)
    supervisor_waits: int = 0
    supervisor_wait_wall: Samples = field(default_factory=Samples)
    physics_step_wall: Samples = field(default_factory=Samples)
    step_period_wall: Samples = field(default_factory=Samples)
    lowcmd_period_wall: Samples = field(default_factory=Samples)  # between lowcmds taken
    last_lowcmd_wall: float = 0.0
    last_lowcmd_sim_s: float | None = None
    # Sim time each command was held until the next: what a held-torque peer (peer: unitree_sim)
    # integrates one torque over; (sim s, held ms) of each hold past LONG_LOWCMD_GAP_S.
    lowcmd_held_sim: Samples = field(default_factory=Samples)
    long_lowcmd_gaps: list[tuple[float, float]] = field(default_factory=list)
    lowstate_encode_wall: Samples = field(default_factory=Samples)
    lowcmd_decode_wall: Samples = field(default_factory=Samples)
    clock_publish_wall: Samples = field(default_factory=Samples)
    depth_publish_s: Samples = field(default_factory=Samples)
    cpu: CpuMeter = field(default_factory=CpuMeter)

    def violations(self, count: int, sim_s: float) -> None:
        if count:
            self.lowcmd_violations += count
            self.lowcmd_violation_times.append(round(sim_s, 4))

    def lowcmd_taken(self, wall: float, sim_s: float) -> None:
        """A command applied at ``sim_s``: how long the one before it held (sim) and the gap between (wall)."""
        if self.last_lowcmd_sim_s is not None:
            self.lowcmd_period_wall.append(wall - self.last_lowcmd_wall)
            held_s = sim_s - self.last_lowcmd_sim_s
            self.lowcmd_held_sim.append(held_s)
            if held_s > LONG_LOWCMD_GAP_S and len(self.long_lowcmd_gaps) < LONG_KEPT:
                self.long_lowcmd_gaps.append((round(sim_s, 4), round(held_s * 1000.0, 1)))
        self.last_lowcmd_wall = wall
        self.lowcmd_received += 1
        self.last_lowcmd_sim_s = sim_s

    def held_for_supervisor(self, waited_wall_s: float) -> None:
        self.supervisor_waits += 1
        self.supervisor_wait_wall.append(waited_wall_s)

    def held_for_policy(self, waited_wall_s: float, sim_s: float, gave_up: bool) -> None:
        self.lockstep_waits += 1
        self.policy_wait_wall.append(waited_wall_s)
        if waited_wall_s > LONG_POLICY_WAIT_S and len(self.long_policy_waits) < LONG_KEPT:
            self.long_policy_waits.append((round(sim_s, 4), round(waited_wall_s * 1000.0, 1), gave_up))


@dataclass
class RunRecord:
    """The robot over the run: the trajectory at the report's rate, the whole qpos for rendering, the
    fall, and the onsets the fault suite judges the supervisor against, from the simulator's side: the
    first rt/lowstate sent that shows the base tilted past the supervisor's limit (after the band's
    release), and the first depth frame exposed after a camera stall that reached the topic."""

    cos_max_tilt: float  # cos of supervisor.max_tilt_rad
    trajectory: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in TRAJECTORY_KEYS})
    state_t: list[float] = field(default_factory=list)
    state_qpos: list[np.ndarray] = field(default_factory=list)
    fell: bool = False
    fell_at_s: float | None = None
    tilt_exceeded_at_s: float | None = None
    camera_resumed_at_s: float | None = None

    def sample(self, sim: RobotSim, band_released: bool) -> None:
        pos, vel = sim.base_pos, sim.base_lin_vel_world
        values = (sim.time, pos[0], pos[1], pos[2], sim.yaw, vel[0], vel[1], sim.tilt)
        for key, value in zip(TRAJECTORY_KEYS, values, strict=True):
            self.trajectory[key].append(round(float(value), 5))
        if band_released and not self.fell and sim.fallen():
            self.fell = True
            self.fell_at_s = sim.time

    def keep_state(self, sim: RobotSim) -> None:
        """The whole qpos (a copy), for rendering the run after it ended."""
        self.state_t.append(sim.time)
        self.state_qpos.append(sim.data.qpos.astype(np.float32))

    def lowstate_sent(self, sim: RobotSim, band_released: bool) -> None:
        if self.tilt_exceeded_at_s is None and band_released:
            _, x, y, _ = sim.data.qpos[3:7]
            if 1.0 - 2.0 * (x * x + y * y) < self.cos_max_tilt:  # cos of the tilt: the body z axis' world z
                self.tilt_exceeded_at_s = sim.time

    def frame_published(self, exposure_s: float, sim_s: float, faults: BridgeFaults) -> None:
        stall = faults.camera_stall
        if self.camera_resumed_at_s is None and stall.triggered and exposure_s >= stall.end_s:
            self.camera_resumed_at_s = sim_s


def bridge_report(
    m: BridgeMeters,
    r: RunRecord,
    run: dict[str, Any],
    camera: dict[str, Any] | None,
    camera_frame_ms: dict[str, Any] | None,
    faults: BridgeFaults,
    last_target_sim_s: float | None,
    states: dict[str, Any],
) -> dict[str, Any]:
    """bridge.json. ``run``: sim_time_s, wall_time_s, peer, robot_model, band_released_at_s, band_hung_at_s, scene;
    ``camera``: the camera's stats, ``camera_frame_ms`` its frame times (None: no camera); ``states``: the
    trajectory file's entry."""
    sim_time, wall_time = run["sim_time_s"], run["wall_time_s"]
    return {
        "sim_time_s": sim_time,
        "wall_time_s": wall_time,
        "sim_real_time_factor": sim_time / wall_time if wall_time > 0 else None,
        "lowstate_sent": m.lowstate_sent,
        "lowcmd_received": m.lowcmd_received,
        "lowcmd_dropped_in_gaps": m.lowcmd_dropped,
        "peer": run["peer"],
        "robot_model": run["robot_model"],
        "lockstep_waits": m.lockstep_waits,
        "lockstep_wait_wall_s": round(float(np.sum(m.policy_wait_wall)), 3),
        "policy_wait_wall_ms": summary_ms(m.policy_wait_wall),
        "supervisor_waits": m.supervisor_waits,
        "supervisor_wait_wall_s": round(float(np.sum(m.supervisor_wait_wall)), 3),
        "supervisor_wait_wall_ms": summary_ms(m.supervisor_wait_wall),
        "cpu": m.cpu.report(sim_time),
        "callbacks_ms": {
            "physics_step": summary_ms(m.physics_step_wall),
            "lowstate_encode_crc_write": summary_ms(m.lowstate_encode_wall),
            "lowcmd_take_decode": summary_ms(m.lowcmd_decode_wall),
            "clock_publish": summary_ms(m.clock_publish_wall),
            "camera_frame": camera_frame_ms,
            "camera_publish": summary_ms(m.depth_publish_s),
        },
        "periods_wall_ms": {
            "step": summary_ms(m.step_period_wall),
            "lowcmd": summary_ms(m.lowcmd_period_wall),
        },
        "lowcmd_held_sim_ms": summary_ms(m.lowcmd_held_sim),
        "band_released_at_s": run["band_released_at_s"],
        "band_hung_at_s": run["band_hung_at_s"],
        "fell": r.fell,
        "fell_at_s": r.fell_at_s,
        "scene": run["scene"],
        "camera": camera if camera is not None else {"enabled": False},
        "lowcmd_holds_past_20ms_sim_s_ms": m.long_lowcmd_gaps,
        "policy_waits_past_100ms_sim_s_ms_gave_up": m.long_policy_waits,
        "lowcmd_limit_violations": m.lowcmd_violations,
        "lowcmd_violation_times_s": m.lowcmd_violation_times[:LONG_KEPT],
        "faults": {
            "triggered": faults.triggered,
            "tilt_exceeded_at_s": r.tilt_exceeded_at_s,
            "camera_resumed_at_s": r.camera_resumed_at_s,
            "policy_last_target_s": last_target_sim_s,
            "lowstate_suppressed": m.lowstate_suppressed,
            "camera_ticks_suppressed": m.camera_ticks_suppressed,
        },
        "trajectory": r.trajectory,
        "states": states,
    }
