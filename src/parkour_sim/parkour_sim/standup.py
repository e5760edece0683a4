"""Stand-up trials: the supervisor's own core standing the simulated robot up, on the peers it may meet.

In process, without ROS: the SupervisorCore the node builds (its stand-up interpolation, stand gains,
rules and clamps) ticks at its rate against RobotSim, whose motors follow each command either every
physics step (the robot's drivers, our bridge) or once when it arrives, the torque held until the
next (Unitree's simulators), at a given physics step, with commands lost in gaps (a stalled host: the
motors keep the last one). A trial stands up on the elastic band, stands there, is released and
must stand on its own; it fails on any move to DAMP (the reason is kept) or a fall. It hangs damped
first, as a robot does between the supervisor's start and the operator's request.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from parkour_core.config import StackConfig
from parkour_core.robots import get_robot
from parkour_core.safety import Mode, Request
from parkour_core.supervisor_core import RobotReading, SupervisorInputs
from parkour_core.supervisor_setup import build_core
from parkour_sim.faults import CommandGaps
from parkour_sim.physics import RobotSim

DAMPED_BEFORE_S = 1.0  # hanging in DAMP before the stand-up request, as after the supervisor starts
HANG_AFTER_STAND_S = 1.0  # standing on the band before it is released
STAND_ALONE_S = 3.0  # then standing on the robot's own feet


@dataclass(frozen=True)
class Peer:
    physics_dt_s: float
    pd_law: str  # "every_step" | "on_command"
    robot_model: str = ""
    gap_s: float = 0.0  # commands lost for this long ...
    gap_every_s: float = 0.5  # ... this often (the phase drawn per trial)
    lost_fraction: float = 0.0  # each command lost with this chance: a controller starved now and then

    def label(self) -> str:
        gaps = f", {self.gap_s * 1e3:.0f} ms gaps every {self.gap_every_s:g} s" if self.gap_s else ""
        if self.lost_fraction:
            gaps += f", {self.lost_fraction:.0%} of commands lost at random"
        return f"{self.robot_model or 'default'} model, {self.physics_dt_s * 1e3:g} ms step, PD {self.pd_law}{gaps}"


def stand_up_trial(cfg: StackConfig, peer: Peer, seed: int, release: bool = False) -> dict[str, Any]:
    spec = get_robot(cfg.robot)
    cfg = replace(cfg, supervisor=replace(cfg.supervisor, fallback="stand"))  # no walking here
    core = build_core(cfg)
    sim = RobotSim(spec, "flat", peer.physics_dt_s, robot_model=peer.robot_model, pd_law=peer.pd_law)
    sim.hang()
    rng = np.random.default_rng(seed)
    phase = float(rng.uniform(0.0, peer.gap_every_s))
    gaps = CommandGaps(peer.gap_s, peer.gap_every_s)
    tick_s = 1.0 / cfg.supervisor.rate_hz
    next_tick = 0.0
    requests: list[tuple[Request, str]] = []
    requested = False
    stood_at: float | None = None  # STAND reached
    on_band = False  # and held on the band for HANG_AFTER_STAND_S without a fault
    released_at: float | None = None
    stood_alone_s = 0.0
    dropped = 0
    worst_speed, fastest = 0.0, ""
    limit_s = (
        DAMPED_BEFORE_S
        + 1.0
        + cfg.supervisor.stand_up_duration_s
        + HANG_AFTER_STAND_S
        + (STAND_ALONE_S if release else 0.0)
    )
    enabled = np.ones(spec.num_joints, dtype=bool)
    while sim.time < limit_s:
        now = sim.time
        if now >= next_tick - 1e-9:
            next_tick += tick_s
            if not requested and now >= DAMPED_BEFORE_S:
                requests.append((Request.STAND_UP, "trial"))
                requested = True
            reading = RobotReading(sim.q, sim.dq, sim.quat_wxyz, sim.gyro, now)
            command, _ = core.tick(SupervisorInputs(now_s=now, robot=reading, requests=tuple(requests)))
            requests.clear()
            lost = peer.lost_fraction > 0.0 and rng.random() < peer.lost_fraction
            if gaps.dropping(now + phase) or lost:
                dropped += 1
            else:
                sim.set_command(command, enabled)
            speed = np.abs(sim.dq) / spec.dq_max
            if speed.max() > worst_speed:
                worst_speed, fastest = float(speed.max()), spec.joint_names[int(np.argmax(speed))]
            if core.mode is Mode.DAMP and core.transitions:
                break
            if core.mode is Mode.STAND and stood_at is None:
                stood_at = now
            if released_at is not None:
                if sim.fallen():
                    break
                stood_alone_s = now - released_at
                if stood_alone_s >= STAND_ALONE_S:
                    break
            elif stood_at is not None and now >= stood_at + HANG_AFTER_STAND_S:
                on_band = True
                if not release:
                    break
                sim.hang(None)
                released_at = now
        sim.step()
    damped = [t.reason for t in core.transitions if t.to_mode is Mode.DAMP]
    fell = released_at is not None and sim.fallen()
    alone = None if not release else (on_band and not damped and not fell and stood_alone_s >= STAND_ALONE_S - tick_s)
    return {
        "peer": peer.label(),
        "seed": seed,
        "stood_on_band": bool(on_band),
        "stood_alone": alone,
        "damped": damped[0] if damped else None,
        "fell": bool(fell),
        "reached_stand_at_s": None if stood_at is None else round(stood_at, 3),
        "commands_dropped": dropped,
        "max_speed_ratio": round(worst_speed, 3),
        "fastest_joint": fastest,
        "base_height_m": round(float(sim.base_pos[2]), 3),
    }
