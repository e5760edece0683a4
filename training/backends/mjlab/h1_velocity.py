"""The ``h1_walk`` task on mjlab: the H1 learns velocity tracking on MuJoCo-Warp.

Runs inside ``.venv-mjlab`` only. The same task as :mod:`training.tasks.h1_walk` (the ``mujoco_cpu`` backend)
on mjlab's velocity-task managers, everything that defines it read from our code, not restated: the
robot (:func:`h1_entity_cfg`), actions (:func:`action_cfg`), observation and its noise
(:func:`observation_cfgs`), command and its curriculum (:func:`command_cfg`), foot contact
(:func:`contact_sensor_cfgs`: mjlab's contact sensors, MuJoCo's contacts as the CPU env reads them),
reward terms (:func:`reward_cfgs`), episodes and per-episode physics (:func:`env_cfg`). Its settings and
reward weights are the CPU task's own (``training.tasks.h1_walk.task.env_config`` of the same config).

What differs from the CPU env, and why: rewards and terminations read state one physics substep stale
(mjlab's step order); reset joint noise is clamped to the soft joint limits; the push timers
(:func:`env_cfg`), the curriculum (:func:`command_cfg`) and the physics draws (:func:`physics_event_cfgs`)
say how they run; a resumed run restarts the curriculum (mjlab checkpoints hold no env state). The bundle
export (``training.tasks.h1_walk.bundle``) is not wired to an mjlab run; its inputs and outputs are the CPU task's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import torch

from parkour_core.gait import STANDING_PHASE, START_PHASE
from parkour_core.robots import H1
from training.configs import TrainConfig
from training.envs.supervision import SUPERVISOR
from training.tasks.h1_walk import rewards as h1_rewards
from training.tasks.h1_walk.env import (
    ACTION_CLIP,
    ACTION_SCALE,
    CRITIC_EXTRA,
    FOOT_SITES,
    OBS_NOISE,
    POLICY_TERMS,
    POSE_WEIGHTS,
    H1WalkConfig,
)

TASK_ID = "Parkour-H1-Velocity"
ROOT = Path(__file__).resolve().parents[3]
STILL_THRESHOLD = 0.01  # parkour_core.gait.GaitClock's default
# The contact sensors: the feet (columns left, right) and every other body of the robot, on the floor.
FEET_CONTACT = "feet_ground_contact"
NONFOOT_CONTACT = "nonfoot_ground_contact"
ONLY_POSITIVE = "only_positive"  # the reward term that clips the step's sum at zero (no h1_walk term)


# ----------------------------------------------------------------------------- the robot


def h1_model_path() -> Path:
    """Unitree's H1 MJCF where `make setup` extracted it, in the runtime ``.venv`` (this process runs in
    ``.venv-mjlab``, whose prefix parkour_core.assets would search), its SHA-256 checked against the pin."""
    from parkour_core.assets import PINNED_SHA256
    from parkour_core.hashing import sha256_file

    package, _, rel = H1.mjcf_asset.partition(":")
    path = ROOT / ".venv" / "assets" / "extracted" / package / rel
    if not path.is_file():
        raise FileNotFoundError(f"{path}: Unitree's H1 model is not there; run `make setup` (it extracts it)")
    if sha256_file(path) != PINNED_SHA256[H1.mjcf_asset]:
        raise ValueError(f"{path} differs from the pinned SHA-256 of {H1.mjcf_asset}; run `make setup`")
    return path


def _h1_spec() -> mujoco.MjSpec:
    from parkour_sim.models import robot_model

    spec = mujoco.MjSpec.from_file(str(h1_model_path()))
    adapt = robot_model(H1).adapt  # the spec's joint names, the sole sites and the IMU, as the sim has them
    if adapt is not None:
        adapt(spec, H1)
    for act in list(spec.actuators):  # torque motors; mjlab adds position actuators named as the joints
        spec.delete(act)
    return spec


def h1_entity_cfg():
    """mjlab's EntityCfg for our H1: its MJCF, the spec's PD gains, torque limits and default pose.

    Unitree's MJCF, as the sim adapts it (``parkour_sim.models``), loads as an mjlab ``Entity`` once its
    torque ``<motor>`` elements are removed: mjlab adds one ``<position>`` actuator per joint, named as the
    joint, which would clash with the motors' names. The actuators are ``BuiltinPositionActuatorCfg``
    with parkour_core's H1 stand gains (``kp_stand``, ``kd_stand``) and torque limits (``tau_max``): the
    CPU backend's PD servos (MuJoCo position actuators, ``tau = clamp(kp (target - q) - kd dq)``). Joint
    limits, armature and damping are the MJCF's; default pose and standing height the robot spec's.
    """
    from mjlab.actuator import BuiltinPositionActuatorCfg
    from mjlab.entity import EntityArticulationInfoCfg, EntityCfg

    actuators = tuple(
        BuiltinPositionActuatorCfg(
            target_names_expr=(j.name,), stiffness=j.kp_stand, damping=j.kd_stand, effort_limit=j.tau_max
        )
        for j in H1.joints
    )
    return EntityCfg(
        init_state=EntityCfg.InitialStateCfg(
            pos=(0.0, 0.0, H1.standing_base_height_m),
            joint_pos={j.name: j.default_q for j in H1.joints},
            joint_vel={".*": 0.0},
        ),
        spec_fn=_h1_spec,
        articulation=EntityArticulationInfoCfg(
            actuators=actuators, soft_joint_pos_limit_factor=h1_rewards.SOFT_LIMIT_FRACTION
        ),
    )


def _robot(env):
    return env.scene["robot"]


def _sdk_ids(env) -> torch.Tensor:
    """Entity joint indices of parkour_core's joint order (cached on the env)."""
    ids = getattr(env, "_h1_sdk_ids", None)
    if ids is None:
        names = _robot(env).joint_names
        ids = torch.tensor([names.index(n) for n in H1.joint_names], device=env.device)
        env._h1_sdk_ids = ids
    return ids


def _const(env, name: str, value) -> torch.Tensor:
    key = f"_h1_{name}"
    t = getattr(env, key, None)
    if t is None:
        t = torch.tensor(np.array(value, dtype=np.float32), device=env.device)
        setattr(env, key, t)
    return t


# ----------------------------------------------------------------------------- actions


def spec_order_action_cfg(**kwargs):
    """mjlab's joint position action config, its joints in the order ``actuator_names`` gives them (our robot
    spec's), not the model's; ``kwargs`` are ``JointPositionActionCfg``'s."""
    from mjlab.envs.mdp.actions import JointPositionAction, JointPositionActionCfg

    class SpecOrderJointPositionAction(JointPositionAction):
        def _find_targets(self, cfg):
            return self._entity.find_joints(cfg.actuator_names, preserve_order=True)

    @dataclass(kw_only=True)
    class SpecOrderJointPositionActionCfg(JointPositionActionCfg):
        def build(self, env):
            return SpecOrderJointPositionAction(self, env)

    return SpecOrderJointPositionActionCfg(**kwargs)


def action_cfg():
    """Targets ``default_q + ACTION_SCALE * a`` in parkour_core's joint order, actions clipped at ``ACTION_CLIP``.

    The SDK order, because mjlab's own joint action would use the MJCF's tree order; targets are clamped
    where the supervisor clamps them (``SupervisorConfig.joint_margin_rad`` inside the limits).
    """
    margin = SUPERVISOR.joint_margin_rad
    return spec_order_action_cfg(
        entity_name="robot",
        actuator_names=tuple(H1.joint_names),
        scale=ACTION_SCALE,
        use_default_offset=True,
        clip={j.name: (j.q_min + margin, j.q_max - margin) for j in H1.joints},
    )


def _targets(env) -> torch.Tensor:
    """The policy's targets before the supervisor's clamp (parkour_core order)."""
    return _const(env, "default_q", H1.default_q) + ACTION_SCALE * env.action_manager.action


def _target_excess(env) -> torch.Tensor:
    t = _targets(env)
    lo, hi = _const(env, "q_min", [j.q_min for j in H1.joints]), _const(env, "q_max", [j.q_max for j in H1.joints])
    return torch.clamp(torch.maximum(lo - t, t - hi), min=0.0)


# ----------------------------------------------------------------------------- the CPU task's settings


def task_config(cfg: TrainConfig) -> H1WalkConfig:
    """The CPU env's config of ``cfg`` (``training.tasks.h1_walk.task.env_config``): ranges, curriculum, physics,
    noise, reward weights, all read from there so both backends train what one config says."""
    from training.tasks.h1_walk.task import env_config

    return env_config(cfg)


def swing_time_s(gait_period_s: float) -> float:
    """The clock's swing time (``H1WalkEnv.swing_s``): air time beyond it is not paid."""
    return gait_period_s * math.acos(h1_rewards.SWING_COS) / math.pi


# ----------------------------------------------------------------------------- the command, gait clock, curriculum


def command_cfg(cfg: TrainConfig, play: bool = False):
    """mjlab's ``UniformVelocityCommand`` over the CPU task's ranges, with the gait clock and the curriculum.

    vx, vy, yaw rate in the base frame; ``zero_fraction`` standing envs; resampled every ``resample_s``;
    no heading control. The ranges are the configured ones times the curriculum level (``play``: 1).
    """
    from mjlab.tasks.velocity.mdp import UniformVelocityCommand, UniformVelocityCommandCfg

    c = task_config(cfg)
    dt = 1.0 / cfg.env.control_hz
    step_rad = 2.0 * math.pi * dt / c.gait_period_s
    steps_per_iteration = cfg.ppo.num_steps_per_env

    class GaitVelocityCommand(UniformVelocityCommand):
        """mjlab's velocity command plus parkour_core's gait clock (``GaitClock``, batched, in torch) and
        ``H1WalkEnv``'s command curriculum.

        The clock advances once per step after the reward, is parked at pi on a zero command and resets
        to (0, pi). The curriculum (legged_gym's, :meth:`update_curriculum`) runs on the mean ``lin_vel``
        term of each iteration's steps (``ppo.num_steps_per_env`` of them, as the runner collects), taken
        from the reward manager as the step computed it, and moves the level after the iteration's last
        step, as the CPU task's ``after_iteration`` does. mjlab's curriculum terms run at resets and its
        ``commands_vel`` on a step schedule, so the level lives here; ``metrics["command_level"]`` logs it.
        """

        def __init__(self, cfg_, env) -> None:
            super().__init__(cfg_, env)
            self.phase = torch.tensor(START_PHASE, device=self.device).repeat(self.num_envs, 1)
            self.parked = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
            self.level = 1.0 if play else float(c.curriculum_start)
            self.iteration_tracking: list[float] = []  # each finished iteration's mean lin_vel term
            self._tracking_sum = torch.zeros((), device=self.device)
            self._counted_step = 0
            self.metrics["command_level"] = torch.full((self.num_envs,), self.level, device=self.device)
            self._apply_level()

        def _apply_level(self) -> None:
            s, r = self.level, self.cfg.ranges
            r.lin_vel_x, r.lin_vel_y = (c.vx[0] * s, c.vx[1] * s), (c.vy[0] * s, c.vy[1] * s)
            r.ang_vel_z = (c.yaw_rate[0] * s, c.yaw_rate[1] * s)

        def update_curriculum(self, lin_vel_tracking: float) -> None:
            """``H1WalkEnv.update_curriculum``: wider ranges once the planar velocity is tracked well."""
            if lin_vel_tracking > c.curriculum_threshold:
                self.level = min(1.0, self.level + c.curriculum_step)
                self._apply_level()

        def _update_metrics(self) -> None:
            super()._update_metrics()
            self.metrics["command_level"].fill_(self.level)

        def compute(self, dt, env_ids=None) -> None:
            step = self._env.common_step_counter
            counted = env_ids is None and step > self._counted_step and not play
            if counted:
                self._counted_step = step
                self._tracking_sum += _step_term_value(self._env, "lin_vel").mean()
            super().compute(dt, env_ids)
            if counted and step % steps_per_iteration == 0:
                mean = float(self._tracking_sum) / steps_per_iteration
                self._tracking_sum.zero_()
                self.iteration_tracking.append(mean)
                self.update_curriculum(mean)

        def reset(self, env_ids):
            extras = super().reset(env_ids)
            self.phase[env_ids] = torch.tensor(START_PHASE, device=self.device)
            self.parked[env_ids] = False
            return extras

        def _update_command(self, env_ids) -> None:
            super()._update_command(env_ids)  # standing envs' commands are zeroed here
            ids = slice(None) if env_ids is None else env_ids
            cmd = self.vel_command_b[ids]
            advanced = torch.fmod(self.phase[ids] + step_rad + math.pi, 2.0 * math.pi) - math.pi
            still = (torch.linalg.norm(cmd[:, :2], dim=-1) < STILL_THRESHOLD) & (cmd[:, 2].abs() < STILL_THRESHOLD)
            restart = ~still & self.parked[ids]
            start = torch.tensor(START_PHASE, device=self.device).expand_as(advanced)
            phase = torch.where(restart[:, None], start, advanced)
            self.phase[ids] = torch.where(still[:, None], torch.full_like(phase, STANDING_PHASE), phase)
            self.parked[ids] = still

    @dataclass(kw_only=True)
    class GaitVelocityCommandCfg(UniformVelocityCommandCfg):
        def build(self, env):
            return GaitVelocityCommand(self, env)

    return GaitVelocityCommandCfg(
        entity_name="robot",
        resampling_time_range=(c.resample_s, c.resample_s),
        rel_standing_envs=c.zero_fraction,
        rel_heading_envs=0.0,
        rel_forward_envs=0.0,
        rel_world_envs=0.0,
        heading_command=False,
        debug_vis=False,
        ranges=UniformVelocityCommandCfg.Ranges(
            lin_vel_x=tuple(c.vx), lin_vel_y=tuple(c.vy), ang_vel_z=tuple(c.yaw_rate), heading=None
        ),
    )


def _command(env) -> torch.Tensor:
    return env.command_manager.get_command("twist")


def _phase(env) -> torch.Tensor:
    return env.command_manager.get_term("twist").phase


def _step_term_value(env, name: str) -> torch.Tensor:
    """Reward term ``name``'s value (unweighted) as the last step computed it; evaluated now where its weight is 0
    (the reward manager skips such terms)."""
    rm = env.reward_manager
    weight = rm.get_term_cfg(name).weight
    if weight == 0.0:
        cfg = rm.get_term_cfg(name)
        return cfg.func(env, **cfg.params)
    return rm._step_reward[:, rm.active_terms.index(name)] / weight


# ----------------------------------------------------------------------------- observation terms


def obs_command_lin_vel(env) -> torch.Tensor:
    return _command(env)[:, :2]


def obs_command_ang_vel(env) -> torch.Tensor:
    return _command(env)[:, 2:3]


def obs_dof_pos(env) -> torch.Tensor:
    r = _robot(env)
    ids = _sdk_ids(env)
    return r.data.joint_pos[:, ids] - r.data.default_joint_pos[:, ids]


def obs_dof_vel(env) -> torch.Tensor:
    return _robot(env).data.joint_vel[:, _sdk_ids(env)]


def obs_sin_phase(env) -> torch.Tensor:
    return torch.sin(_phase(env))


def obs_cos_phase(env) -> torch.Tensor:
    return torch.cos(_phase(env))


def obs_base_height(env) -> torch.Tensor:
    return (_robot(env).data.root_link_pos_w[:, 2] - env.scene.env_origins[:, 2])[:, None]


def observation_cfgs(obs_noise: float = 0.0):
    """The actor's terms (POLICY_TERMS, in order) and the critic's (the same, clean, plus base velocity and height).

    ``training.tasks.h1_walk.env.POLICY_TERMS`` term by term (names, dims, scales), from mjlab's data. The actor's copy
    carries the CPU env's noise: uniform, ``obs_noise`` x :data:`~training.tasks.h1_walk.env.OBS_NOISE` in each term's
    own unit (mjlab adds a term's noise before its scale, as ``H1WalkEnv._noise_scale`` scales it).
    """
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.observation_manager import ObservationGroupCfg, ObservationTermCfg
    from mjlab.utils.noise import UniformNoiseCfg

    funcs = {
        "base_ang_vel": envs_mdp.base_ang_vel,  # root body's angular velocity, body frame: the IMU's gyro
        "projected_gravity": envs_mdp.projected_gravity,
        "command_lin_vel": obs_command_lin_vel,
        "command_ang_vel": obs_command_ang_vel,
        "dof_pos": obs_dof_pos,
        "dof_vel": obs_dof_vel,
        "actions": envs_mdp.last_action,
        "sin_phase": obs_sin_phase,
        "cos_phase": obs_cos_phase,
    }
    missing = [t.name for t in POLICY_TERMS if t.name not in funcs]
    if missing:
        raise ValueError(f"h1_walk observation terms without an mjlab counterpart: {missing}")

    def terms(noisy: bool) -> dict:
        out = {}
        for t in POLICY_TERMS:
            bound = obs_noise * OBS_NOISE.get(t.name, 0.0) if noisy else 0.0
            noise = UniformNoiseCfg(n_min=-bound, n_max=bound) if bound > 0.0 else None
            scale = t.scale if t.scale != 1.0 else None
            out[t.name] = ObservationTermCfg(func=funcs[t.name], scale=scale, clip=None, noise=noise)
        return out

    critic = {
        **terms(noisy=False),
        "base_lin_vel": ObservationTermCfg(func=envs_mdp.base_lin_vel),
        "base_height": ObservationTermCfg(func=obs_base_height),
    }
    return {
        "actor": ObservationGroupCfg(terms=terms(noisy=True), concatenate_terms=True, enable_corruption=obs_noise > 0),
        "critic": ObservationGroupCfg(terms=critic, concatenate_terms=True, enable_corruption=False),
    }


# ----------------------------------------------------------------------------- foot contact


def contact_sensor_cfgs():
    """mjlab's contact sensors against the terrain: each foot body, and every other body of the robot.

    The CPU env's contact reading (``H1WalkEnv._read``): a foot is down while a geom of its body touches the
    floor, and a contact of any other robot body with the floor ends the episode (``illegal_contact``).
    """
    from mjlab.sensor import ContactMatch, ContactSensorCfg

    terrain = ContactMatch(mode="body", pattern="terrain")
    feet = ContactSensorCfg(
        name=FEET_CONTACT,
        primary=ContactMatch(mode="body", pattern=tuple(f"^{b}$" for b in H1.foot_bodies), entity="robot"),
        secondary=terrain,
        fields=("found",),
        reduce="none",
    )
    others = ContactSensorCfg(
        name=NONFOOT_CONTACT,
        primary=ContactMatch(mode="body", pattern=".*", entity="robot", exclude=tuple(H1.foot_bodies)),
        secondary=terrain,
        fields=("found",),
        reduce="none",
    )
    return feet, others


def foot_contact(env) -> torch.Tensor:
    """(N, 2) bool, left and right: a geom of that foot touches the floor (the feet's contact sensor)."""
    sensor = env.scene[FEET_CONTACT]
    cols = getattr(env, "_h1_foot_contact_cols", None)
    if cols is None:
        names = sensor.primary_names
        cols = [next(k for k, n in enumerate(names) if n.split("/")[-1] == b) for b in H1.foot_bodies]
        env._h1_foot_contact_cols = cols
    return sensor.data.found[:, cols] > 0


def _foot_height(env) -> torch.Tensor:
    """Sole heights above the ground (N, 2: left, right): the sole sites, as the CPU env."""
    ids = getattr(env, "_h1_foot_sites", None)
    if ids is None:
        m = env.sim.mj_model
        ids = torch.tensor([m.site(f"robot/{s}").id for s in FOOT_SITES], device=env.device)
        env._h1_foot_sites = ids
    return env.sim.data.site_xpos[:, ids, 2] - env.scene.env_origins[:, 2:3]


def _foot_vel_xy(env) -> torch.Tensor:
    """(N, 2, 2): each sole site's planar velocity, world frame."""
    r = _robot(env)
    ids = getattr(env, "_h1_foot_site_local", None)
    if ids is None:
        ids = r.find_sites(FOOT_SITES, preserve_order=True)[0]
        env._h1_foot_site_local = ids
    return r.data.site_lin_vel_w[:, ids, 0:2]


# ----------------------------------------------------------------------------- reward terms (h1_walk.rewards in torch)


def rew_lin_vel(env) -> torch.Tensor:
    err = torch.sum((_command(env)[:, :2] - _robot(env).data.root_link_lin_vel_b[:, :2]) ** 2, dim=-1)
    return torch.exp(-err / h1_rewards.TRACKING_SIGMA2)


def rew_ang_vel(env) -> torch.Tensor:
    err = (_command(env)[:, 2] - _robot(env).data.root_link_ang_vel_b[:, 2]) ** 2
    return torch.exp(-err / h1_rewards.TRACKING_SIGMA2)


def rew_lin_vel_z(env) -> torch.Tensor:
    return _robot(env).data.root_link_lin_vel_b[:, 2] ** 2


def rew_ang_vel_xy(env) -> torch.Tensor:
    return torch.sum(_robot(env).data.root_link_ang_vel_b[:, :2] ** 2, dim=-1)


def rew_base_height(env) -> torch.Tensor:
    return (obs_base_height(env)[:, 0] - H1.standing_base_height_m) ** 2


def rew_target_limits(env) -> torch.Tensor:
    return torch.sum(_target_excess(env), dim=-1)


def rew_hip_pos(env) -> torch.Tensor:
    hips = [k for k, n in enumerate(H1.joint_names) if "hip_roll" in n or "hip_yaw" in n]
    return torch.sum(obs_dof_pos(env)[:, hips] ** 2, dim=-1)


def rew_alive(env) -> torch.Tensor:
    return torch.ones(env.num_envs, device=env.device)


def _swinging(env) -> torch.Tensor:
    return torch.cos(_phase(env)) > h1_rewards.SWING_COS


def rew_contact(env) -> torch.Tensor:
    return torch.sum((foot_contact(env) == ~_swinging(env)).float(), dim=-1)


def rew_swing_height(env) -> torch.Tensor:
    lifted = _swinging(env) & ~foot_contact(env)
    return torch.sum((_foot_height(env) - h1_rewards.SWING_HEIGHT_M) ** 2 * lifted, dim=-1)


def swing_target(gait_phase: torch.Tensor, height_m: float = h1_rewards.SWING_HEIGHT_M) -> torch.Tensor:
    """``h1_walk.rewards.swing_target``: 0 in stance; in swing a smoothstep up to ``height_m`` at phase 0 and down."""
    edge = math.acos(h1_rewards.SWING_COS)
    s = torch.clamp(1.0 - gait_phase.abs() / edge, 0.0, 1.0)
    return height_m * s * s * (3.0 - 2.0 * s)


def rew_feet_phase(env) -> torch.Tensor:
    error = torch.sum((_foot_height(env) - swing_target(_phase(env))) ** 2, dim=-1)
    return torch.exp(-error / h1_rewards.PHASE_SIGMA2)


def rew_feet_slip(env) -> torch.Tensor:
    return torch.sum(torch.sum(_foot_vel_xy(env) ** 2, dim=-1) * foot_contact(env), dim=-1)


def rew_upper_pose(env) -> torch.Tensor:
    weights = _const(env, "pose_weights", pose_weights())
    return torch.sum(weights * obs_dof_pos(env) ** 2, dim=-1)


def pose_weights() -> list[float]:
    """upper_pose's weight of each joint, parkour_core order (``H1WalkEnv.pose_weights``)."""
    return [next((w for part, w in POSE_WEIGHTS.items() if part in n), 0.0) for n in H1.joint_names]


def _walking(command: torch.Tensor) -> torch.Tensor:
    """``h1_walk.rewards.walking``: the clock runs (a planar or yaw command above the threshold)."""
    return (torch.linalg.norm(command[:, :2], dim=-1) >= STILL_THRESHOLD) | (command[:, 2].abs() >= STILL_THRESHOLD)


class FeetAirTime:
    """``feet_air_time`` with ``H1WalkEnv.step``'s bookkeeping, once per env step, on the feet's contact sensor.

    legged_gym's rule: a touchdown is the first step down (in contact now or at the step before) after a
    flight; it pays its air time, up to the swing's, less ``AIR_TIME_S``, while the clock runs. The step's
    value is kept, so asking again within the step (``term_values``) neither advances the bookkeeping nor
    reads a command resampled since. Reset: no air time, both feet down (as the CPU env resets them).
    """

    def __init__(self, cfg, env) -> None:
        n, dev = env.num_envs, env.device
        self.air_time_s = torch.zeros((n, 2), device=dev)  # in the air since (0 while down)
        self.last_contact = torch.ones((n, 2), dtype=torch.bool, device=dev)
        self.contact = torch.ones((n, 2), dtype=torch.bool, device=dev)  # the step's reading
        self.first_contact = torch.zeros((n, 2), dtype=torch.bool, device=dev)  # the step's touchdowns
        self.flight_s = torch.zeros((n, 2), device=dev)  # the step's air times, this step included
        self.value = torch.zeros(n, device=dev)
        self._step = -1

    def __call__(self, env, swing_s: float) -> torch.Tensor:
        if env.common_step_counter != self._step:
            self._step = env.common_step_counter
            contact = foot_contact(env)
            down = contact | self.last_contact
            self.first_contact = down & (self.air_time_s > 0.0)
            self.air_time_s += env.step_dt
            self.flight_s = self.air_time_s.clone()
            flight = torch.clamp(self.flight_s, max=swing_s) - h1_rewards.AIR_TIME_S
            self.value = torch.sum(flight * self.first_contact, dim=-1) * _walking(_command(env))
            self.air_time_s *= ~down
            self.last_contact = contact
            self.contact = contact
        return self.value

    def reset(self, env_ids=None) -> None:
        ids = slice(None) if env_ids is None else env_ids
        self.air_time_s[ids] = 0.0
        self.last_contact[ids] = True


def rew_only_positive(env) -> torch.Tensor:
    """What lifts the step's sum so far to zero where it is negative (legged_gym's ``only_positive_rewards``):
    the last term, weight 1, so the reward is ``max(sum of the h1_walk terms, 0)``."""
    return torch.clamp(-env.reward_manager._reward_buf, min=0.0) / env.step_dt


def reward_cfgs(cfg: TrainConfig):
    """``training.tasks.h1_walk.rewards`` (its terms, the config's ``Weights``) as mjlab reward terms, summed as the CPU
    env sums them.

    Each term is a torch function of mjlab's state that computes what the numpy term computes: mjlab's own
    ``flat_orientation_l2``, ``action_rate_l2``, ``joint_vel_l2``, ``joint_pos_limits`` and
    ``joint_torques_l2`` where they are the same formula (the motors' force after their limits, as MuJoCo's
    position actuators compute it, is the CPU env's PD torque; mjlab's ``track_linear_velocity``,
    ``feet_air_time`` and ``feet_slip`` are not: vertical speed, no touchdown rule, a command gate). Weights
    are ``task_config(cfg).weights``, times the step dt (mjlab's ``scale_rewards_by_dt``, as the CPU env); with
    ``only_positive_rewards`` a last term (:data:`ONLY_POSITIVE`) clips the sum at zero.
    """
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.reward_manager import RewardTermCfg
    from mjlab.managers.scene_entity_config import SceneEntityCfg

    c = task_config(cfg)
    all_joints = SceneEntityCfg("robot", joint_names=tuple(H1.joint_names), preserve_order=True)
    funcs = {  # h1_walk.rewards.terms' names -> (function, params)
        "lin_vel": (rew_lin_vel, {}),
        "ang_vel": (rew_ang_vel, {}),
        "lin_vel_z": (rew_lin_vel_z, {}),
        "ang_vel_xy": (rew_ang_vel_xy, {}),
        "orientation": (envs_mdp.flat_orientation_l2, {}),
        "base_height": (rew_base_height, {}),
        "action_rate": (envs_mdp.action_rate_l2, {}),
        "dof_vel": (envs_mdp.joint_vel_l2, {"asset_cfg": all_joints}),
        "dof_pos_limits": (envs_mdp.joint_pos_limits, {"asset_cfg": all_joints}),
        "target_limits": (rew_target_limits, {}),
        "hip_pos": (rew_hip_pos, {}),
        "alive": (rew_alive, {}),
        "contact": (rew_contact, {}),
        "swing_height": (rew_swing_height, {}),
        "feet_phase": (rew_feet_phase, {}),
        "feet_slip": (rew_feet_slip, {}),
        "feet_air_time": (FeetAirTime, {"swing_s": swing_time_s(c.gait_period_s)}),
        "upper_pose": (rew_upper_pose, {}),
        "torques": (envs_mdp.joint_torques_l2, {}),
    }
    weights = dataclasses.asdict(c.weights)
    if set(funcs) != set(weights):
        raise ValueError(f"h1_walk reward terms and the mjlab terms differ: {sorted(set(funcs) ^ set(weights))}")
    out = {name: RewardTermCfg(func=f, weight=weights[name], params=p) for name, (f, p) in funcs.items()}
    if c.only_positive_rewards:
        out[ONLY_POSITIVE] = RewardTermCfg(func=rew_only_positive, weight=1.0)  # last: it reads the sum so far
    return out


def term_values(env) -> dict[str, torch.Tensor]:
    """Every h1_walk reward term's raw value now (unweighted), for checks against ``h1_walk.rewards.terms``."""
    out = {}
    for name in env.reward_manager.active_terms:
        if name == ONLY_POSITIVE:
            continue
        cfg = env.reward_manager.get_term_cfg(name)
        out[name] = cfg.func(env, **cfg.params)
    return out


# ----------------------------------------------------------------------------- terminations and events


def term_refused(env) -> torch.Tensor:
    """Targets the supervisor would refuse: past a hard joint limit by more than its tolerance."""
    return _target_excess(env).max(dim=-1).values > SUPERVISOR.target_limit_tolerance_rad


def term_faulted(env) -> torch.Tensor:
    """A joint beyond its limit by more than the supervisor's tolerance, or faster than its speed limit allows."""
    r, ids = _robot(env), _sdk_ids(env)
    q, dq = r.data.joint_pos[:, ids], r.data.joint_vel[:, ids]
    tol = SUPERVISOR.joint_limit_tolerance_rad
    lo, hi = _const(env, "q_min", [j.q_min for j in H1.joints]), _const(env, "q_max", [j.q_max for j in H1.joints])
    dq_fault = _const(env, "dq_fault", [SUPERVISOR.velocity_limit_factor * j.dq_max for j in H1.joints])
    return torch.any((dq.abs() > dq_fault) | (q < lo - tol) | (q > hi + tol), dim=-1)


def physics_draws(env) -> dict[str, torch.Tensor]:
    """Each environment's friction and motor strength factors of this episode (1: nominal)."""
    draws = getattr(env, "_h1_physics", None)
    if draws is None:
        draws = {k: torch.ones(env.num_envs, device=env.device) for k in ("friction", "motor_strength")}
        env._h1_physics = draws
    return draws


def _uniform(env, n: int, bounds: tuple[float, float]) -> torch.Tensor:
    return torch.empty(n, device=env.device).uniform_(*bounds)


def physics_event_cfgs(c: H1WalkConfig) -> dict:
    """``H1WalkEnv``'s per-episode physics as mjlab reset events (each only where its range is not nominal).

    Added pelvis mass and the torso's CoM offset are mjlab's ``dr.body_mass`` / ``dr.body_com_offset`` ("add",
    per environment and axis, as the CPU env draws them; mjlab also recomputes the mass-derived constants).
    Friction and motor strength are ours: the CPU env scales the friction of every contact geom, robot and
    floor, by one draw (MuJoCo takes the larger of a pair's), and kp and kd of every motor by one draw,
    where ``dr.geom_friction`` scales one entity's geoms and ``dr.pd_gains`` draws per motor and per gain.
    """
    from mjlab.envs.mdp import dr
    from mjlab.managers.event_manager import EventTermCfg, requires_model_fields
    from mjlab.managers.scene_entity_config import SceneEntityCfg

    @requires_model_fields("geom_friction")
    def scale_friction(env, env_ids, friction_range: tuple[float, float]) -> None:
        m = env.sim.mj_model
        geoms = _const(env, "contact_geoms", np.flatnonzero((m.geom_contype != 0) | (m.geom_conaffinity != 0))).long()
        ids = torch.arange(env.num_envs, device=env.device) if env_ids is None else env_ids.to(env.device)
        p = _uniform(env, len(ids), friction_range)
        nominal = env.sim.get_default_field("geom_friction")[geoms, 0]
        env.sim.model.geom_friction[ids[:, None], geoms, 0] = nominal * p[:, None]
        physics_draws(env)["friction"][ids] = p

    @requires_model_fields("actuator_gainprm", "actuator_biasprm")
    def scale_motor_strength(env, env_ids, strength_range: tuple[float, float]) -> None:
        m = env.sim.mj_model
        acts = _const(env, "actuators", [m.actuator(f"robot/{n}").id for n in H1.joint_names]).long()
        ids = torch.arange(env.num_envs, device=env.device) if env_ids is None else env_ids.to(env.device)
        s = _uniform(env, len(ids), strength_range)[:, None]
        gain, bias = env.sim.get_default_field("actuator_gainprm"), env.sim.get_default_field("actuator_biasprm")
        env.sim.model.actuator_gainprm[ids[:, None], acts, 0] = gain[acts, 0] * s
        env.sim.model.actuator_biasprm[ids[:, None], acts, 1] = bias[acts, 1] * s
        env.sim.model.actuator_biasprm[ids[:, None], acts, 2] = bias[acts, 2] * s
        physics_draws(env)["motor_strength"][ids] = s[:, 0]

    events = {}
    if c.friction != (1.0, 1.0):
        events["friction"] = EventTermCfg(func=scale_friction, mode="reset", params={"friction_range": c.friction})
    if c.added_mass_kg != (0.0, 0.0):
        events["added_mass"] = EventTermCfg(
            func=dr.body_mass,
            mode="reset",
            params={"asset_cfg": SceneEntityCfg("robot", body_names=(H1.base_body,)), "operation": "add",
                    "ranges": c.added_mass_kg},
        )  # fmt: skip
    if c.com_offset_m:
        o = c.com_offset_m
        events["com_offset"] = EventTermCfg(
            func=dr.body_com_offset,
            mode="reset",
            params={"asset_cfg": SceneEntityCfg("robot", body_names=(H1.torso_body,)), "operation": "add",
                    "ranges": {0: (-o, o), 1: (-o, o), 2: (-o, o)}},
        )  # fmt: skip
    if c.motor_strength != (1.0, 1.0):
        events["motor_strength"] = EventTermCfg(
            func=scale_motor_strength, mode="reset", params={"strength_range": c.motor_strength}
        )
    return events


def env_cfg(cfg: TrainConfig, world_size: int = 1, play: bool = False):
    """mjlab's ManagerBasedRlEnvCfg for h1_walk from our config (num_envs split over ranks).

    Episodes end at a fall (``root_height_below_minimum``, ``bad_orientation``, ``illegal_contact`` of a body
    other than the feet with the floor), at targets the supervisor would refuse or a joint fault
    (:func:`term_faulted`), or at ``episode_length_s``; they reset to the default pose with joint noise
    (clamped to the soft joint limits by mjlab) and a random heading, and draw their physics
    (:func:`physics_event_cfgs`). Pushes come by ``push_by_setting_velocity`` every ``push_interval_s`` on
    mjlab's interval timers, whose phase is random at start and not restarted per episode (the CPU env
    restarts each episode's at a random phase). ``play``: the nominal robot, as the CPU task evaluates
    (no pushes, noise or physics draws; the whole command ranges).
    """
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.event_manager import EventTermCfg
    from mjlab.managers.scene_entity_config import SceneEntityCfg
    from mjlab.managers.termination_manager import TerminationTermCfg
    from mjlab.tasks.velocity import mdp as velocity_mdp
    from mjlab.tasks.velocity.velocity_env_cfg import make_velocity_env_cfg
    from mjlab.terrains import TerrainEntityCfg

    if cfg.env.robot != "h1":
        raise ValueError(f"h1_walk trains the H1: env.robot must be 'h1', got {cfg.env.robot!r}")
    if cfg.env.num_envs % world_size:
        raise ValueError(f"env.num_envs {cfg.env.num_envs} does not split over {world_size} GPUs")
    c = task_config(cfg)
    env = make_velocity_env_cfg()
    env.scene.num_envs = cfg.env.num_envs // world_size
    env.scene.terrain = TerrainEntityCfg(terrain_type="plane")
    env.scene.entities = {"robot": h1_entity_cfg()}
    env.scene.sensors = contact_sensor_cfgs()  # flat ground, no height scan
    env.episode_length_s = cfg.env.episode_length_s
    env.decimation = cfg.env.decimation
    env.sim.mujoco.timestep = cfg.env.physics_dt_s
    env.sim.njmax = 300
    env.sim.nconmax = None
    env.seed = cfg.run.seed
    env.viewer.body_name = H1.torso_body

    env.actions = {"joint_pos": action_cfg()}
    env.commands = {"twist": command_cfg(cfg, play)}
    env.observations = observation_cfgs(0.0 if play else c.obs_noise)
    env.rewards = reward_cfgs(cfg)
    env.metrics = {}
    env.curriculum = {}
    env.terminations = {
        "time_out": TerminationTermCfg(func=envs_mdp.time_out, time_out=True),
        "fell_low": TerminationTermCfg(
            func=envs_mdp.root_height_below_minimum, params={"minimum_height": c.fall_height_m}
        ),
        "fell_tilt": TerminationTermCfg(func=envs_mdp.bad_orientation, params={"limit_angle": c.fall_tilt_rad}),
        "fell_contact": TerminationTermCfg(func=velocity_mdp.illegal_contact, params={"sensor_name": NONFOOT_CONTACT}),
        "refused": TerminationTermCfg(func=term_refused),
        "faulted": TerminationTermCfg(func=term_faulted),
    }
    env.events = {
        "reset_base": EventTermCfg(
            func=envs_mdp.reset_root_state_uniform,
            mode="reset",
            params={"pose_range": {"yaw": (-math.pi, math.pi)}, "velocity_range": {}},
        ),
        "reset_robot_joints": EventTermCfg(
            func=envs_mdp.reset_joints_by_offset,
            mode="reset",
            params={
                "position_range": (-c.joint_noise_rad, c.joint_noise_rad),
                "velocity_range": (0.0, 0.0),
                "asset_cfg": SceneEntityCfg("robot", joint_names=(".*",)),
            },
        ),
    }
    if not play:
        env.events |= physics_event_cfgs(c)
    if not play and c.push_vel_mps > 0:
        env.events["push_robot"] = EventTermCfg(
            func=envs_mdp.push_by_setting_velocity,
            mode="interval",
            interval_range_s=(c.push_interval_s, c.push_interval_s),
            params={"velocity_range": {"x": (-c.push_vel_mps, c.push_vel_mps), "y": (-c.push_vel_mps, c.push_vel_mps)}},
        )
    if play:
        env.episode_length_s = int(1e9)
    return env


def critic_size() -> int:
    return sum(t.dims for t in POLICY_TERMS) + CRITIC_EXTRA


def rl_cfg(cfg: TrainConfig):
    from training.backends.mjlab.task import rl_cfg as teacher_rl_cfg

    out = teacher_rl_cfg(cfg)
    out.clip_actions = ACTION_CLIP
    return out


def register(cfg: TrainConfig, world_size: int = 1, task_id: str = TASK_ID) -> str:
    from mjlab.tasks.registry import list_tasks, register_mjlab_task
    from mjlab.tasks.velocity.rl import VelocityOnPolicyRunner

    if task_id not in list_tasks():
        register_mjlab_task(
            task_id=task_id,
            env_cfg=env_cfg(cfg, world_size),
            play_env_cfg=env_cfg(cfg, world_size, play=True),
            rl_cfg=rl_cfg(cfg),
            runner_cls=VelocityOnPolicyRunner,
        )
    return task_id
