"""The ``h1_walk`` task on mjlab: the H1 learns velocity tracking on MuJoCo-Warp.

Runs inside ``.venv-mjlab`` only. The same task as :mod:`training.h1_walk` (the ``mujoco_cpu``
backend), on mjlab's velocity-task managers (``mjlab.tasks.velocity``: its factory config, its
``UniformVelocityCommand``, its event, reward and termination functions where they compute the same
thing), with everything that defines the task read from our code, not restated: the robot
(:func:`h1_entity_cfg`), actions (:func:`action_cfg`), observation (:func:`observation_cfgs`),
command (:func:`command_cfg`), rewards (:func:`reward_cfgs`) and episodes (:func:`env_cfg`).

What differs from the CPU env: reset joint noise is clamped to mjlab's soft joint limits (0.9 of the
range) instead of the hard ones; rewards and terminations read state one physics substep stale, as
every mjlab task (mjlab's documented design); the push timers start at a random phase in mjlab's
interval manager, not per episode. The bundle export (``training.h1_walk.bundle``) is not wired to an
mjlab run: the policy's inputs and outputs are laid out as the CPU task's, so its checkpoint is the
same MLP.
"""

from __future__ import annotations

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
from training.h1_walk import rewards as h1_rewards
from training.h1_walk.env import ACTION_CLIP, ACTION_SCALE, CONTACT_HEIGHT_M, CRITIC_EXTRA, POLICY_TERMS

TASK_ID = "Parkour-H1-Velocity"
ROOT = Path(__file__).resolve().parents[3]
FOOT_SITES = ("left_foot", "right_foot")  # the sole sites parkour_sim.models adds; gait phase columns: left, right
STILL_THRESHOLD = 0.01  # parkour_core.gait.GaitClock's default


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


# ----------------------------------------------------------------------------- the command and gait clock


def command_cfg(cfg: TrainConfig):
    """mjlab's ``UniformVelocityCommand`` over ``cfg.velocity`` with the gait clock.

    vx, vy, yaw rate in the base frame; ``zero_fraction`` standing envs; resampled every ``resample_s``;
    no heading control.
    """
    from mjlab.tasks.velocity.mdp import UniformVelocityCommand, UniformVelocityCommandCfg

    dt = 1.0 / cfg.env.control_hz
    step_rad = 2.0 * math.pi * dt / cfg.velocity.gait_period_s

    class GaitVelocityCommand(UniformVelocityCommand):
        """mjlab's velocity command plus parkour_core's gait clock (``GaitClock``, batched, in torch).

        The clock advances once per step after the reward, is parked at pi on a zero command and resets
        to (0, pi).
        """

        def __init__(self, cfg_, env) -> None:
            super().__init__(cfg_, env)
            self.phase = torch.tensor(START_PHASE, device=self.device).repeat(self.num_envs, 1)
            self.parked = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)

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

    v = cfg.velocity
    return GaitVelocityCommandCfg(
        entity_name="robot",
        resampling_time_range=(v.resample_s, v.resample_s),
        rel_standing_envs=v.zero_fraction,
        rel_heading_envs=0.0,
        rel_forward_envs=0.0,
        rel_world_envs=0.0,
        heading_command=False,
        debug_vis=False,
        ranges=UniformVelocityCommandCfg.Ranges(
            lin_vel_x=tuple(v.vx), lin_vel_y=tuple(v.vy), ang_vel_z=tuple(v.yaw_rate), heading=None
        ),
    )


def _command(env) -> torch.Tensor:
    return env.command_manager.get_command("twist")


def _phase(env) -> torch.Tensor:
    return env.command_manager.get_term("twist").phase


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


def observation_cfgs():
    """The actor's terms (POLICY_TERMS, in order) and the critic's (the same plus base velocity and height).

    ``training.h1_walk.env.POLICY_TERMS`` term by term (names, dims, scales), from mjlab's data.
    """
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.observation_manager import ObservationGroupCfg, ObservationTermCfg

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
    actor = {
        t.name: ObservationTermCfg(func=funcs[t.name], scale=t.scale if t.scale != 1.0 else None, clip=None)
        for t in POLICY_TERMS
    }
    critic = {
        **actor,
        "base_lin_vel": ObservationTermCfg(func=envs_mdp.base_lin_vel),
        "base_height": ObservationTermCfg(func=obs_base_height),
    }
    return {
        "actor": ObservationGroupCfg(terms=actor, concatenate_terms=True, enable_corruption=False),
        "critic": ObservationGroupCfg(terms=critic, concatenate_terms=True, enable_corruption=False),
    }


# ----------------------------------------------------------------------------- reward terms (h1_walk.rewards in torch)


def _foot_height(env) -> torch.Tensor:
    """Sole heights above the ground (N, 2: left, right): the sole sites, as the CPU env."""
    ids = getattr(env, "_h1_foot_sites", None)
    if ids is None:
        m = env.sim.mj_model
        ids = torch.tensor([m.site(f"robot/{s}").id for s in FOOT_SITES], device=env.device)
        env._h1_foot_sites = ids
    return env.sim.data.site_xpos[:, ids, 2] - env.scene.env_origins[:, 2:3]


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
    contact = _foot_height(env) < CONTACT_HEIGHT_M
    return torch.sum((contact == ~_swinging(env)).float(), dim=-1)


def rew_swing_height(env) -> torch.Tensor:
    h = _foot_height(env)
    lifted = _swinging(env) & ~(h < CONTACT_HEIGHT_M)
    return torch.sum((h - h1_rewards.SWING_HEIGHT_M) ** 2 * lifted, dim=-1)


def reward_cfgs():
    """``training.h1_walk.rewards`` (unitree_rl_gym's H1 terms and ``Weights``) as mjlab reward terms.

    Each term is a torch function of mjlab's state that computes what the numpy term computes: mjlab's own
    ``flat_orientation_l2``, ``action_rate_l2``, ``joint_vel_l2`` and ``joint_pos_limits`` where they are
    the same formula (mjlab's ``track_linear_velocity`` is not: it adds the vertical speed), times the step
    dt (mjlab's ``scale_rewards_by_dt``, as the CPU env).
    """
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.reward_manager import RewardTermCfg
    from mjlab.managers.scene_entity_config import SceneEntityCfg

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
    }
    weights = vars(h1_rewards.Weights())
    if set(funcs) != set(weights):
        raise ValueError(f"h1_walk reward terms and the mjlab terms differ: {sorted(set(funcs) ^ set(weights))}")
    return {name: RewardTermCfg(func=f, weight=weights[name], params=p) for name, (f, p) in funcs.items()}


def term_values(env) -> dict[str, torch.Tensor]:
    """Every reward term's raw value now (unweighted), for checks against ``h1_walk.rewards.terms``."""
    out = {}
    for name in env.reward_manager.active_terms:
        cfg = env.reward_manager.get_term_cfg(name)
        out[name] = cfg.func(env, **cfg.params)
    return out


# ----------------------------------------------------------------------------- terminations and events


def term_refused(env) -> torch.Tensor:
    """Targets the supervisor would refuse: past a hard joint limit by more than its tolerance."""
    return _target_excess(env).max(dim=-1).values > SUPERVISOR.target_limit_tolerance_rad


def env_cfg(cfg: TrainConfig, world_size: int = 1, play: bool = False):
    """mjlab's ManagerBasedRlEnvCfg for h1_walk from our config (num_envs split over ranks).

    Episodes end at a fall (``root_height_below_minimum``, ``bad_orientation``), at targets the supervisor
    would refuse, or at ``episode_length_s``; they reset to the default pose with joint noise and a random
    heading; pushes come by ``push_by_setting_velocity`` every ``push_interval_s``.
    """
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.event_manager import EventTermCfg
    from mjlab.managers.scene_entity_config import SceneEntityCfg
    from mjlab.managers.termination_manager import TerminationTermCfg
    from mjlab.tasks.velocity.velocity_env_cfg import make_velocity_env_cfg
    from mjlab.terrains import TerrainEntityCfg

    if cfg.env.robot != "h1":
        raise ValueError(f"h1_walk trains the H1: env.robot must be 'h1', got {cfg.env.robot!r}")
    if cfg.env.num_envs % world_size:
        raise ValueError(f"env.num_envs {cfg.env.num_envs} does not split over {world_size} GPUs")
    v = cfg.velocity
    env = make_velocity_env_cfg()
    env.scene.num_envs = cfg.env.num_envs // world_size
    env.scene.terrain = TerrainEntityCfg(terrain_type="plane")
    env.scene.entities = {"robot": h1_entity_cfg()}
    env.scene.sensors = ()  # flat ground, no height scan; foot contact as the CPU env: sole height
    env.episode_length_s = cfg.env.episode_length_s
    env.decimation = cfg.env.decimation
    env.sim.mujoco.timestep = cfg.env.physics_dt_s
    env.sim.njmax = 300
    env.sim.nconmax = None
    env.seed = cfg.run.seed
    env.viewer.body_name = H1.torso_body

    env.actions = {"joint_pos": action_cfg()}
    env.commands = {"twist": command_cfg(cfg)}
    env.observations = observation_cfgs()
    env.rewards = reward_cfgs()
    env.metrics = {}
    env.curriculum = {}
    env.terminations = {
        "time_out": TerminationTermCfg(func=envs_mdp.time_out, time_out=True),
        "fell_low": TerminationTermCfg(
            func=envs_mdp.root_height_below_minimum, params={"minimum_height": v.fall_height_m}
        ),
        "fell_tilt": TerminationTermCfg(func=envs_mdp.bad_orientation, params={"limit_angle": v.fall_tilt_rad}),
        "refused": TerminationTermCfg(func=term_refused),
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
                "position_range": (-v.joint_noise_rad, v.joint_noise_rad),
                "velocity_range": (0.0, 0.0),
                "asset_cfg": SceneEntityCfg("robot", joint_names=(".*",)),
            },
        ),
    }
    if not play and v.push_vel_mps > 0:
        env.events["push_robot"] = EventTermCfg(
            func=envs_mdp.push_by_setting_velocity,
            mode="interval",
            interval_range_s=(v.push_interval_s, v.push_interval_s),
            params={"velocity_range": {"x": (-v.push_vel_mps, v.push_vel_mps), "y": (-v.push_vel_mps, v.push_vel_mps)}},
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
