"""One evaluation trial, in process, through the code the robot runs.

The nodes' pieces without their ROS shells: ``PolicyRunner`` (the policy node's runner, reset on
entering ACTIVE like the node), the supervisor's ``SupervisorCore`` built exactly as the node builds
it (``build_core``: its rules, clamps and BLIND fallback gait), the simulated D435i with its noise
and latency (``SimDepthSensor``), and the bridge's MuJoCo robot with the motor PD law
(``RobotSim``). The operator's part is the demo script's: stand up on the band, release it once
standing, activate, then command the speed straight ahead. The climbing teacher and the depth
ablation: :class:`TrialRunner`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.bundle import Bundle, load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.config import StackConfig
from parkour_core.runner import PolicyRunner, RobotState
from parkour_core.safety import Mode, Request
from parkour_core.supervisor_core import (
    BundleGains,
    PolicyTargets,
    RobotReading,
    SupervisorInputs,
    VelocityCommand,
)
from parkour_core.supervisor_setup import build_core
from parkour_sim.depth_camera import SimDepthSensor
from parkour_sim.physics import RobotSim
from training.eval.protocol import Instance, Protocol, verdict
from training.registry import load_object

# "privileged:MODULE:CLASS=PATH" in place of a bundle: a privileged policy (a teacher), CLASS(PATH).
PRIVILEGED_PREFIX = "privileged:"
SETTLE_AFTER_STAND_S = 0.5  # released from the band, standing, before activation
PATH_HZ = 25.0  # base positions kept for the verdict and the plots


@dataclass
class TrialResult:
    outcome: str
    boxes_cleared: int
    progress_m: float
    fell_at_s: float | None  # since activation
    final_mode: str
    blind_s: float  # time the supervisor walked its fallback gait
    transitions: list[dict[str, Any]]
    sim_s: float
    pace_mps: float | None = None  # mean forward (+x) speed from activation to the trial's end

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "boxes_cleared": self.boxes_cleared,
            "progress_m": round(self.progress_m, 3),
            "fell_at_s": None if self.fell_at_s is None else round(self.fell_at_s, 3),
            "final_mode": self.final_mode,
            "blind_s": round(self.blind_s, 3),
            "sim_s": round(self.sim_s, 3),
            "pace_mps": None if self.pace_mps is None else round(self.pace_mps, 3),
        }


def privileged_policy(factory: str, path: str | Path) -> str:
    """What stands for a bundle to run ``factory(path)`` (``factory``: ``"module:Class"``) in its place."""
    return f"{PRIVILEGED_PREFIX}{factory}={path}"


class TrialRunner:
    """Loads the bundle and the stack config once; runs trials in this process.

    :func:`privileged_policy` in place of a bundle runs a privileged policy instead (a trained teacher, such
    as the climbing teacher's ``teacher.pt``): told the course's boxes and reading the base's world position,
    under the bundle it names (its ``bundle``: the gains) and the same supervisor, so the teacher -> student
    gap is read on like trials. The policy has ``bundle``, ``bind(base_pos, boxes)``, ``reset()`` and
    ``step(q, dq, quat_wxyz, gyro, command) -> joint targets``.

    ``depth_ablation``: the camera sees the same robot pose over flat ground (a second copy of the robot in
    a world without the obstacles, posed like the first at every frame), with the same noise and latency:
    what the student does when its depth tells it nothing about the course.
    """

    def __init__(self, bundle: str, cfg: StackConfig, depth_ablation: bool = False) -> None:
        self.depth_ablation = depth_ablation
        self.teacher: Any = None
        if bundle.startswith(PRIVILEGED_PREFIX):
            factory, _, path = bundle[len(PRIVILEGED_PREFIX) :].partition("=")
            self.teacher = load_object(factory)(path)
            self.bundle: Bundle = self.teacher.bundle
            bundle = str(self.bundle.path)
        else:
            self.bundle = load_bundle(resolve_bundle(bundle))
        self.cfg = replace(cfg, policy=replace(cfg.policy, bundle=bundle))
        self.spec = self.bundle.robot
        m = self.bundle.manifest
        self.gains = BundleGains.make(m.name, m.kp, m.kd, m.uses_depth, self.spec.num_joints)
        self.runner = PolicyRunner(self.bundle, intra_op_threads=1)

    def run(self, p: Protocol, instance: Instance, seed: int) -> TrialResult:
        cfg = self.cfg
        m = self.bundle.manifest
        dt = cfg.bridge.physics_dt_s
        model = cfg.bridge.robot_model
        sim = RobotSim(self.spec, instance.world(), dt, robot_model=model)
        sim.hang()
        core = build_core(cfg)
        core.register_bundle(self.gains)
        depth = None
        seen = sim  # what the camera looks at
        if m.uses_depth:
            if self.depth_ablation:
                seen = RobotSim(self.spec, {"description": "flat ground (depth ablation)"}, dt, robot_model=model)
            cam_cfg = replace(cfg.sim_camera, seed=seed % (2**31))
            depth = SimDepthSensor(seen.model, cam_cfg, cfg.depth.spec(), start_s=sim.time, strip_max=0)
        runner, teacher = self.runner, self.teacher
        if teacher is not None:
            boxes = [(np.array([b.x, b.y, b.height_m / 2]), np.array([b.depth_m / 2, b.width_m / 2, b.height_m / 2]),
                      b.yaw_rad) for b in instance.boxes]  # fmt: skip
            teacher.bind(lambda: sim.base_pos, boxes)
        policy_every = max(1, round(1.0 / (m.policy_hz * dt)))
        supervisor_every = max(1, round(1.0 / (cfg.supervisor.rate_hz * dt)))
        path_every = max(1, round(1.0 / (PATH_HZ * dt)))
        speed = instance.speed_mps
        stand_up_s = cfg.supervisor.stand_up_duration_s
        active_at: float | None = None
        active_x = 0.0
        stood_at: float | None = None
        activate_sent = False
        horizon = p.horizon_s(speed, instance.start_m, len(instance.boxes), 0.0)
        limit_s = stand_up_s + SETTLE_AFTER_STAND_S + 2.0 + horizon  # stand-up, settle, slack, then the trial
        targets: PolicyTargets | None = None
        depth_stamp: float | None = None
        requests: list[tuple[Request, str]] = [(Request.STAND_UP, "eval")]
        velocity = np.zeros(3)
        path: list[tuple[float, float]] = []
        fell_at: float | None = None
        blind_ticks = 0
        step = 0
        while sim.time < limit_s:
            now = sim.time
            if depth is not None:
                if seen is not sim:
                    seen.data.qpos[:] = sim.data.qpos
                    seen.data.time = sim.data.time
                for scheduled in depth.tick(seen.data):
                    frame = scheduled.frame
                    runner.set_depth(frame.policy, frame.exposure_s)
                    depth_stamp = frame.exposure_s
            if core.mode is Mode.STAND and stood_at is None:
                stood_at = now
                sim.hang(None)
            if stood_at is not None and not activate_sent and now >= stood_at + SETTLE_AFTER_STAND_S:
                requests.append((Request.ACTIVATE, "eval"))  # once, as an operator would
                activate_sent = True
            # The policy node ticks in every mode (activation needs fresh targets); its runner is
            # reset on entering ACTIVE.
            if step % policy_every == 0 and teacher is not None:
                q_targets = teacher.step(sim.q, sim.dq, sim.quat_wxyz, sim.gyro, velocity)
                targets = PolicyTargets(np.asarray(q_targets, dtype=np.float64), now, m.name)
            elif step % policy_every == 0:
                q_targets = runner.step(RobotState(sim.q, sim.dq, sim.quat_wxyz, sim.gyro), velocity)
                targets = PolicyTargets(np.asarray(q_targets, dtype=np.float64), now, m.name)
            if step % supervisor_every == 0:
                inputs = SupervisorInputs(
                    now_s=now,
                    robot=RobotReading(sim.q, sim.dq, sim.quat_wxyz, sim.gyro, now),
                    targets=targets,
                    depth_stamp_s=depth_stamp,
                    command=VelocityCommand(velocity.copy(), now),
                    requests=tuple(requests),
                )
                requests.clear()
                before = core.mode
                command, _ = core.tick(inputs)
                sim.set_command(command, np.ones(self.spec.num_joints, dtype=bool))
                if core.mode is Mode.ACTIVE and before is not Mode.ACTIVE and active_at is None:
                    active_at = now
                    active_x = float(sim.base_pos[0])
                    runner.reset()  # as the policy node does on entering ACTIVE
                    if teacher is not None:
                        teacher.reset()
                    velocity = np.array([speed, 0.0, 0.0])
                if core.mode is Mode.BLIND:
                    blind_ticks += 1
            sim.step()
            step += 1
            if active_at is not None:
                if step % path_every == 0:
                    path.append((float(sim.base_pos[0]), float(sim.base_pos[1])))
                fallen = sim.fallen() or (core.mode is Mode.DAMP)
                if fallen:
                    fell_at = sim.time - active_at
                    break
                if sim.time - active_at >= horizon:
                    break
                xy_now = np.array([sim.base_pos[:2]])
                last = instance.boxes[-1]
                if float(last.local_x(xy_now)[0]) > last.depth_m / 2 + p.beyond_m:
                    break  # success: no need to simulate the rest of the horizon
        if depth is not None:
            depth.close()
        if active_at is None:
            # Never activated (the supervisor refused): a failure of the stack, reported as a timeout.
            return TrialResult("times_out", 0, 0.0, None, core.mode.value, 0.0,
                               [t.to_dict() for t in core.transitions], sim.time)  # fmt: skip
        xy = np.array([*path, (float(sim.base_pos[0]), float(sim.base_pos[1]))])
        outcome, boxes = verdict(p, instance, xy, fell_at is not None)
        return TrialResult(
            outcome=outcome,
            boxes_cleared=boxes,
            progress_m=float(xy[:, 0].max()),
            fell_at_s=fell_at,
            final_mode=core.mode.value,
            blind_s=blind_ticks / cfg.supervisor.rate_hz,
            transitions=[t.to_dict() for t in core.transitions],
            sim_s=sim.time,
            pace_mps=(float(sim.base_pos[0]) - active_x) / max(sim.time - active_at, dt),
        )
