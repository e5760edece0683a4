"""The H1 velocity-tracking environment on the ``mujoco_cpu`` backend: blind walking on flat ground.

The robot is the H1's default model (Unitree's MJCF, ``parkour_sim.models``) through
:class:`~training.envs.mujoco_cpu.BatchedMujoco`; its observation is parkour_core's terms
(:data:`POLICY_TERMS`), built by ``build_observation`` over the whole batch, so the exported bundle
sees on the robot what it saw here. The reward is a sum of small
terms (:mod:`training.h1_walk.rewards`), each weight times dt. Robot, observation, command, episodes
and pushes in detail: :class:`H1WalkEnv`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from parkour_core.gait import GaitClock
from parkour_core.math3d import projected_gravity, rotate_inverse
from parkour_core.obs import ObsInput, ObsTerm, build_observation, observation_size
from parkour_core.robots import H1, RobotSpec
from training.envs import supervision
from training.envs.mujoco_cpu import BatchedMujoco
from training.h1_walk import rewards
from training.motion_matching import quat

F = NDArray[np.float64]
Ints = NDArray[np.int64]

# The runtime's names and scales (holosoma's and legged_gym's: angular velocity x 0.25, joint velocity x 0.05).
POLICY_TERMS = (
    ObsTerm("base_ang_vel", 3, 0.25),
    ObsTerm("projected_gravity", 3),
    ObsTerm("command_lin_vel", 2),
    ObsTerm("command_ang_vel", 1),
    ObsTerm("dof_pos", 19),
    ObsTerm("dof_vel", 19, 0.05),
    ObsTerm("actions", 19),
    ObsTerm("sin_phase", 2),
    ObsTerm("cos_phase", 2),
)
CRITIC_EXTRA = 4  # base linear velocity (base frame, 3) and base height (1)
ACTION_SCALE = 0.25
ACTION_CLIP = 100.0
# A sole this low is on the flat floor (its site: mid-sole on the sole's plane): a tilted foot's edge touches first.
CONTACT_HEIGHT_M = 0.02
FOOT_SITES = ("left_foot", "right_foot")  # each H1 model's sole sites (parkour_sim.models)


@dataclass(frozen=True)
class H1WalkConfig:
    num_envs: int = 64
    physics_dt_s: float = 0.005
    control_hz: float = 50.0
    nthread: int = 2
    seed: int = 0
    episode_s: float = 20.0
    gait_period_s: float = 0.8  # unitree_rl_gym's H1 and G1 gait period
    vx: tuple[float, float] = (-0.5, 1.0)
    vy: tuple[float, float] = (-0.3, 0.3)
    yaw_rate: tuple[float, float] = (-0.5, 0.5)
    zero_fraction: float = 0.1
    resample_s: float = 5.0
    fall_height_m: float = 0.6
    fall_tilt_rad: float = 0.8
    joint_noise_rad: float = 0.05
    push_interval_s: float = 5.0
    push_vel_mps: float = 0.5
    weights: rewards.Weights = field(default_factory=rewards.Weights)

    @property
    def decimation(self) -> int:
        return round(1.0 / (self.control_hz * self.physics_dt_s))


class H1WalkEnv:
    """``step(actions) -> obs, reward, done, info``; obs groups ``policy``, ``critic``.

    - Robot: PD at every physics step with the H1 deployers' gains (``parkour_core.robots.h1``: the gains
      the bundle carries and a real H1 runs), targets ``default_q + action_scale * a`` held for
      ``decimation`` steps and clamped as the supervisor clamps them (``joint_margin_rad`` inside the
      joint limits).
    - Observation: the gait clock is the runtime's (``parkour_core.gait.GaitClock`` over the batch): both
      feet advance by 2 pi dt / period, anti-phase, parked at pi while the command is zero. The critic
      also reads the base's linear velocity and height (:data:`CRITIC_EXTRA`).
    - Command (vx, vy, yaw rate) in the base frame, resampled every ``resample_s``, zero with
      probability ``zero_fraction``.
    - Episodes end at a fall (base below ``fall_height_m`` or tilted past ``fall_tilt_rad``), at targets
      the supervisor would refuse (past a joint limit by more than ``target_limit_tolerance_rad``: on the
      robot that policy leaves ACTIVE), or time out at ``episode_s``; reset to the default pose with
      joint noise and a random heading.
    - Pushes: a base velocity kick of up to ``push_vel_mps`` every ``push_interval_s``.
    """

    def __init__(self, cfg: H1WalkConfig, robot: RobotSpec = H1) -> None:
        self.cfg = cfg
        self.robot = robot
        self.num_envs = cfg.num_envs
        self.num_actions = robot.num_joints
        self.dt_s = 1.0 / cfg.control_hz
        self.max_episode_length = round(cfg.episode_s / self.dt_s)
        self.kp, self.kd = robot.kp_stand.copy(), robot.kd_stand.copy()
        self.sim = BatchedMujoco(
            cfg.num_envs, robot, cfg.physics_dt_s, cfg.decimation, self.kp, self.kd, max_boxes=1, nthread=cfg.nthread
        )
        model = self.sim.base_model
        self.foot_sites = np.array([model.site(s).id for s in FOOT_SITES])
        self.q_min = np.array([j.q_min for j in robot.joints])
        self.q_max = np.array([j.q_max for j in robot.joints])
        self.default_q = robot.default_q.copy()
        self.hip_joints = np.array([k for k, n in enumerate(robot.joint_names) if "hip_roll" in n or "hip_yaw" in n])
        self.standing_height_m = robot.standing_base_height_m
        self.rng = np.random.default_rng(cfg.seed)
        n, a = self.num_envs, self.num_actions
        self.command = np.zeros((n, 3))
        self.command_age_s = np.zeros(n)
        self.gait = GaitClock(cfg.gait_period_s, self.dt_s, batch=n)
        self.last_action = np.zeros((n, a))
        self.prev_action = np.zeros((n, a))
        self.target_excess = np.zeros((n, a))
        self.steps = np.zeros(n, dtype=np.int64)
        self.push_age_s = np.zeros(n)
        self.soft_min, self.soft_max = rewards.soft_limits(self.q_min, self.q_max)
        self.policy_size = observation_size(POLICY_TERMS)
        self.reset(np.arange(n))
        self.gait.advance(self.command)  # the runtime's first tick advances the clock before it observes

    def close(self) -> None:
        self.sim.close()

    # -- episodes ----------------------------------------------------------------------------

    def reset(self, ids: Ints) -> None:
        c, rng = self.cfg, self.rng
        for i in ids:
            q = self.default_q + rng.uniform(-c.joint_noise_rad, c.joint_noise_rad, self.num_actions)
            q = np.clip(q, self.q_min, self.q_max)
            root = np.array([0.0, 0.0, self.standing_height_m])
            heading = quat.from_yaw(rng.uniform(-np.pi, np.pi))
            zero = np.zeros(3)
            self.sim.set_state(int(i), root, heading, q, zero, zero, np.zeros(self.num_actions))
        self.last_action[ids] = 0.0
        self.prev_action[ids] = 0.0
        self.gait.reset(ids)
        self.steps[ids] = 0
        self.push_age_s[ids] = rng.uniform(0.0, c.push_interval_s, len(ids))
        self.resample(ids)

    def resample(self, ids: Ints) -> None:
        c, rng, k = self.cfg, self.rng, len(ids)
        cmd = np.stack([rng.uniform(*c.vx, k), rng.uniform(*c.vy, k), rng.uniform(*c.yaw_rate, k)], axis=-1)
        cmd[rng.random(k) < c.zero_fraction] = 0.0
        self.command[ids] = cmd
        self.command_age_s[ids] = 0.0

    # -- reading -----------------------------------------------------------------------------

    def state(self) -> rewards.State:
        s = self.sim
        root_quat = s.root_quat
        foot_z = np.stack([d.site_xpos[self.foot_sites, 2] for d in s.datas])
        return rewards.State(
            q=s.q,
            dq=s.dq,
            root_quat=root_quat,
            gravity=projected_gravity(root_quat),
            base_lin_vel=rotate_inverse(root_quat, s.root_lin_vel_w),
            base_ang_vel=s.gyro,
            base_height_m=s.root_pos[:, 2],
            foot_height_m=foot_z,
            foot_contact=foot_z < CONTACT_HEIGHT_M,
        )

    def observe(self, st: rewards.State | None = None) -> dict[str, NDArray[np.float32]]:
        st = st if st is not None else self.state()
        o = ObsInput(
            q=st.q, dq=st.dq, quat_wxyz=st.root_quat, gyro=st.base_ang_vel, command=self.command,
            last_action=self.last_action, default_q=np.broadcast_to(self.default_q, st.q.shape),
            gait_phase=self.gait.phase,
        )  # fmt: skip
        policy = build_observation(POLICY_TERMS, o)
        extra = np.concatenate([st.base_lin_vel, st.base_height_m[:, None]], axis=-1).astype(np.float32)
        return {"policy": policy, "critic": np.concatenate([policy, extra], axis=-1)}

    # -- stepping ----------------------------------------------------------------------------

    def _push(self) -> None:
        c = self.cfg
        self.push_age_s += self.dt_s
        due = np.flatnonzero(self.push_age_s >= c.push_interval_s)
        for i in due:
            self.sim.datas[int(i)].qvel[0:2] += self.rng.uniform(-c.push_vel_mps, c.push_vel_mps, 2)
        self.push_age_s[due] = 0.0

    def context(self) -> rewards.Context:
        return rewards.Context(
            command=self.command, gait_phase=self.gait.phase, action=self.last_action, prev_action=self.prev_action,
            target_excess=self.target_excess, default_q=self.default_q, soft_min=self.soft_min,
            soft_max=self.soft_max, hip_joints=self.hip_joints, base_height_target_m=self.standing_height_m,
        )  # fmt: skip

    def step(self, actions: F) -> tuple[dict[str, NDArray[np.float32]], F, NDArray[np.bool_], dict]:
        c = self.cfg
        actions = np.clip(actions, -ACTION_CLIP, ACTION_CLIP)
        self.prev_action, self.last_action = self.last_action, actions.copy()
        self._push()
        targets = self.default_q + ACTION_SCALE * actions
        self.target_excess = supervision.target_excess(targets, self.q_min, self.q_max)
        self.sim.step(np.clip(targets, *supervision.clamp_bounds(self.q_min, self.q_max)))
        self.steps += 1
        st = self.state()
        # The command and phase the action was chosen on.
        terms = rewards.terms(st, self.context())
        reward = rewards.total(terms, c.weights) * self.dt_s
        tilt = np.arccos(np.clip(-st.gravity[:, 2], -1.0, 1.0))
        fell = (st.base_height_m < c.fall_height_m) | (tilt > c.fall_tilt_rad)
        refused = supervision.refused(self.target_excess)
        timed_out = (self.steps >= self.max_episode_length) & ~fell & ~refused
        done = fell | refused | timed_out
        info = {"time_outs": timed_out, "fell": fell, "refused": refused, "terms": terms,
                "speed": st.base_lin_vel[:, :2].copy(), "command": self.command.copy()}  # fmt: skip
        self.command_age_s += self.dt_s
        due = np.flatnonzero((self.command_age_s >= c.resample_s) & ~done)
        if len(due):
            self.resample(due)
        ids = np.flatnonzero(done)
        if len(ids):
            self.reset(ids)
            st = self.state()
        self.gait.advance(self.command)  # on the command the next observation carries
        return self.observe(st), reward, done, info
