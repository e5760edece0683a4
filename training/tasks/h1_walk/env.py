"""The H1 velocity-tracking environment: blind walking on flat ground, on the CPU or on MuJoCo-Warp.

The robot is the H1's default model (Unitree's MJCF, ``parkour_sim.models``), simulated through
:class:`~training.envs.physics.Physics` (``backend``: ``BatchedMujoco`` on the CPU, ``WarpMujoco`` on a GPU;
the MDP below is the same numpy on both); its observation is parkour_core's terms
(:data:`POLICY_TERMS`), built by ``build_observation`` over the whole batch, so the exported bundle
sees on the robot what it saw here. The reward is a sum of small terms (:mod:`training.tasks.h1_walk.rewards`),
each weight times dt, clipped at zero. Foot contact is read from MuJoCo's contacts. The command ranges
grow with the tracking reached (:meth:`H1WalkEnv.update_curriculum`), each episode draws its own physics,
and ``state_dict`` holds everything a step reads, so a run resumes exactly. In detail: :class:`H1WalkEnv`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from parkour_core.gait import GaitClock
from parkour_core.math3d import projected_gravity, rotate_inverse
from parkour_core.obs import ObsInput, ObsTerm, build_observation, observation_size
from parkour_core.robots import H1, RobotSpec
from training.envs import supervision
from training.envs.physics import make_physics, warp_device
from training.motion_matching import quat
from training.tasks.h1_walk import rewards
from training.tasks.h1_walk.config import H1WalkTrainConfig

F = NDArray[np.float64]
Ints = NDArray[np.int64]
Range = tuple[float, float]

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
# unitree_rl_gym's observation noise at level 1, in each term's own unit (before its scale).
OBS_NOISE = {"base_ang_vel": 0.2, "projected_gravity": 0.05, "dof_pos": 0.01, "dof_vel": 1.5}
CRITIC_EXTRA = 4  # base linear velocity (base frame, 3) and base height (1)
ACTION_SCALE = 0.25
ACTION_CLIP = 100.0
FOOT_SITES = ("left_foot", "right_foot")  # each H1 model's sole sites (parkour_sim.models)
# upper_pose's weight per joint (MuJoCo Playground's H1 pose cost: torso 2, arms 1; the legs are free).
POSE_WEIGHTS = {"torso": 2.0, "shoulder": 1.0, "elbow": 1.0}


class H1WalkEnv:
    """``step(actions) -> obs, reward, done, info``; obs groups ``policy``, ``critic``.

    - Robot: PD at every physics step with the H1 deployers' gains (``parkour_core.robots.h1``: the gains
      the bundle carries and a real H1 runs), targets ``default_q + action_scale * a`` held for
      ``decimation`` steps and clamped as the supervisor clamps them (``joint_margin_rad`` inside the
      joint limits).
    - Observation: the gait clock is the runtime's (``parkour_core.gait.GaitClock`` over the batch): both
      feet advance by 2 pi dt / period, anti-phase, parked at pi while the command is zero. Uniform noise
      (``obs_noise`` x :data:`OBS_NOISE`) on the policy's copy; the critic reads it clean, plus the base's
      linear velocity and height (:data:`CRITIC_EXTRA`).
    - Command (vx, vy, yaw rate) in the base frame, resampled every ``resample_s``, zero with probability
      ``zero_fraction``, drawn from the configured ranges times the curriculum level.
    - Episodes end at a fall (base below ``fall_height_m``, tilted past ``fall_tilt_rad``, or a body other
      than the feet on the floor), at what makes the supervisor leave ACTIVE (targets past a joint limit by
      more than its tolerance, a joint beyond its limit or faster than its speed limit allows), or time out
      at ``episode_s``; reset to the default pose with joint noise and a random heading.
    - Physics per episode: floor and robot friction, mass added to the pelvis, the torso's CoM offset,
      motor strength (kp and kd scaled together). Pushes: a base velocity kick every ``push_interval_s``.
    """

    def __init__(self, config: H1WalkTrainConfig, nthread: int = 2, robot: RobotSpec = H1) -> None:
        """``config``: the task's (``env`` sizes and steps the batch, ``velocity`` is the MDP's, ``run.seed``
        seeds it); ``nthread``: the CPU backend's threads."""
        e = config.env
        self.config = config
        self.velocity = cfg = config.velocity
        self.weights = cfg.weights()
        self.robot = robot
        self.num_envs = e.num_envs
        self.num_actions = robot.num_joints
        self.dt_s = 1.0 / e.control_hz
        self.max_episode_length = round(e.episode_length_s / self.dt_s)
        self.kp, self.kd = robot.kp_stand.copy(), robot.kd_stand.copy()
        self.sim = make_physics(
            e.backend, e.num_envs, robot, warp_device(config.run.device), physics_dt_s=e.physics_dt_s,
            decimation=e.decimation, kp=self.kp, kd=self.kd, max_boxes=1, nthread=nthread, robot_model=e.robot_model,
        )  # fmt: skip
        model = self.sim.base_model
        self.foot_sites = np.array([model.site(s).id for s in FOOT_SITES])
        self.feet_bodies = model.site_bodyid[self.foot_sites]
        feet = [model.body(b).id for b in robot.foot_bodies]
        # Each geom's part: 0 / 1 the left / right foot, 2 another robot body, -1 the world.
        self.geom_part = np.where(model.geom_bodyid == 0, -1, 2)
        for k, body in enumerate(feet):
            self.geom_part[model.geom_bodyid == body] = k
        self.floor = model.geom("floor").id
        self.pelvis = model.body(robot.base_body).id
        self.torso = model.body(robot.torso_body).id
        self.contact_geoms = np.flatnonzero((model.geom_contype != 0) | (model.geom_conaffinity != 0))
        self.nominal = {
            "friction": model.geom_friction[self.contact_geoms, 0].copy(),
            "pelvis_mass": float(model.body_mass[self.pelvis]),
            "torso_ipos": model.body_ipos[self.torso].copy(),
            "gainprm": model.actuator_gainprm[self.sim.actuators, 0].copy(),
            "biasprm": model.actuator_biasprm[self.sim.actuators, 1:3].copy(),
        }
        self.q_min = np.array([j.q_min for j in robot.joints])
        self.q_max = np.array([j.q_max for j in robot.joints])
        self.dq_fault = supervision.SUPERVISOR.velocity_limit_factor * np.array([j.dq_max for j in robot.joints])
        self.tau_max = self.sim.tau_limit
        self.default_q = robot.default_q.copy()
        names = robot.joint_names
        self.hip_joints = np.array([k for k, n in enumerate(names) if "hip_roll" in n or "hip_yaw" in n])
        self.pose_weights = np.array([next((w for part, w in POSE_WEIGHTS.items() if part in n), 0.0) for n in names])
        self.standing_height_m = robot.standing_base_height_m
        self.swing_s = cfg.gait_period_s * float(np.arccos(rewards.SWING_COS)) / np.pi
        self.rng = np.random.default_rng(config.run.seed)
        n, a = self.num_envs, self.num_actions
        self.level = float(cfg.curriculum_start)
        self.command = np.zeros((n, 3))
        self.command_age_s = np.zeros(n)
        self.gait = GaitClock(cfg.gait_period_s, self.dt_s, batch=n)
        self.last_action = np.zeros((n, a))
        self.prev_action = np.zeros((n, a))
        self.target_excess = np.zeros((n, a))
        self.targets = np.tile(self.default_q, (n, 1))
        self.steps = np.zeros(n, dtype=np.int64)
        self.push_age_s = np.zeros(n)
        self.air_time_s = np.zeros((n, 2))
        self.last_contact = np.ones((n, 2), dtype=bool)
        self.physics = {
            "friction": np.ones(n), "added_mass_kg": np.zeros(n), "com_offset_m": np.zeros((n, 3)),
            "motor_strength": np.ones(n),
        }  # fmt: skip
        self.touched = np.zeros(n, dtype=bool)  # a body other than the feet on the floor, at the last read
        self.soft_min, self.soft_max = rewards.soft_limits(self.q_min, self.q_max)
        self.policy_size = observation_size(POLICY_TERMS)
        self.noise_scale = self._noise_scale(cfg.obs_noise)
        self.reset(np.arange(n))
        self.gait.advance(self.command)  # the runtime's first tick advances the clock before it observes
        self.last_obs = self.observe()

    def close(self) -> None:
        self.sim.close()

    @staticmethod
    def _noise_scale(level: float) -> NDArray[np.float32]:
        parts = [np.full(t.dims, level * OBS_NOISE.get(t.name, 0.0) * t.scale) for t in POLICY_TERMS]
        return np.concatenate(parts).astype(np.float32)

    # -- episodes ----------------------------------------------------------------------------

    def command_ranges(self) -> tuple[Range, Range, Range]:
        """The (vx, vy, yaw rate) ranges at the current curriculum level."""
        c, s = self.velocity, self.level
        return (c.vx[0] * s, c.vx[1] * s), (c.vy[0] * s, c.vy[1] * s), (c.yaw_rate[0] * s, c.yaw_rate[1] * s)

    def update_curriculum(self, lin_vel_tracking: float) -> None:
        """legged_gym's command curriculum: wider ranges once the planar velocity is tracked well."""
        if lin_vel_tracking > self.velocity.curriculum_threshold:
            self.level = min(1.0, self.level + self.velocity.curriculum_step)

    def reset(self, ids: Ints) -> None:
        c, rng = self.velocity, self.rng
        self._draw_physics(ids)
        for i in ids:
            q = self.default_q + rng.uniform(-c.joint_noise_rad, c.joint_noise_rad, self.num_actions)
            q = np.clip(q, self.q_min, self.q_max)
            root = np.array([0.0, 0.0, self.standing_height_m])
            heading = quat.from_yaw(rng.uniform(-np.pi, np.pi))
            zero = np.zeros(3)
            self.sim.set_state(int(i), root, heading, q, zero, zero, np.zeros(self.num_actions))
        self.last_action[ids] = 0.0
        self.prev_action[ids] = 0.0
        self.targets[ids] = self.default_q
        self.gait.reset(ids)
        self.steps[ids] = 0
        self.air_time_s[ids] = 0.0
        self.last_contact[ids] = True
        self.push_age_s[ids] = rng.uniform(0.0, c.push_interval_s, len(ids))
        self.resample(ids)

    def _draw_physics(self, ids: Ints) -> None:
        c, rng, k = self.velocity, self.rng, len(ids)
        p = self.physics
        p["friction"][ids] = rng.uniform(*c.friction, k)
        p["added_mass_kg"][ids] = rng.uniform(*c.added_mass_kg, k)
        p["com_offset_m"][ids] = rng.uniform(-c.com_offset_m, c.com_offset_m, (k, 3))
        p["motor_strength"][ids] = rng.uniform(*c.motor_strength, k)
        for i in ids:
            self._apply_physics(int(i))

    def _apply_physics(self, i: int) -> None:
        s, p, nom, a = self.sim, self.physics, self.nominal, self.sim.actuators
        s.set_model(i, "geom_friction", (self.contact_geoms, 0), nom["friction"] * p["friction"][i])
        s.set_model(i, "body_mass", self.pelvis, nom["pelvis_mass"] + p["added_mass_kg"][i])
        s.set_model(i, "body_ipos", self.torso, nom["torso_ipos"] + p["com_offset_m"][i])
        s.set_model(i, "actuator_gainprm", (a, 0), nom["gainprm"] * p["motor_strength"][i])
        s.set_model(i, "actuator_biasprm", (a, slice(1, 3)), nom["biasprm"] * p["motor_strength"][i])

    def resample(self, ids: Ints) -> None:
        c, rng, k = self.velocity, self.rng, len(ids)
        vx, vy, yaw = self.command_ranges()
        cmd = np.stack([rng.uniform(*vx, k), rng.uniform(*vy, k), rng.uniform(*yaw, k)], axis=-1)
        cmd[rng.random(k) < c.zero_fraction] = 0.0
        self.command[ids] = cmd
        self.command_age_s[ids] = 0.0

    # -- reading -----------------------------------------------------------------------------

    def _read(self) -> dict[str, Any]:
        """Every environment's state, read through the physics backend."""
        s = self.sim
        r = s.read({
            "qpos": ("qpos", slice(None)), "qvel": ("qvel", slice(None)),
            "gyro": ("sensordata", slice(s.gyro_adr, s.gyro_adr + 3)), "sole": ("site_xpos", self.foot_sites),
            "cvel": ("cvel", self.feet_bodies), "com": ("subtree_com", self.pelvis),
        })  # fmt: skip
        parts = s.contact_parts(self.geom_part, 3, self.floor)
        return r | {"contact": parts[:, 0:2], "touched": parts[:, 2]}

    def state(self) -> rewards.State:
        r, s = self._read(), self.sim
        root_quat = r["qpos"][:, 3:7]
        q, dq = r["qpos"][:, s.qpos_adr], r["qvel"][:, s.qvel_adr]
        # cvel: (angular, linear) at the subtree CoM of the pelvis, the root of every robot body.
        ang, lin = r["cvel"][..., 0:3], r["cvel"][..., 3:6]
        sole_vel = lin + np.cross(ang, r["sole"] - r["com"][:, None, :])
        gain = self.physics["motor_strength"][:, None]
        torque = np.clip(gain * (self.kp * (self.targets - q) - self.kd * dq), -self.tau_max, self.tau_max)
        self.touched = r["touched"]
        return rewards.State(
            q=q,
            dq=dq,
            root_quat=root_quat,
            gravity=projected_gravity(root_quat),
            base_lin_vel=rotate_inverse(root_quat, r["qvel"][:, 0:3]),
            base_ang_vel=r["gyro"],
            base_height_m=r["qpos"][:, 2],
            foot_height_m=r["sole"][..., 2],
            foot_contact=r["contact"],
            foot_vel_xy=sole_vel[..., 0:2],
            torque=torque,
        )

    def observe(self, st: rewards.State | None = None) -> dict[str, NDArray[np.float32]]:
        """The noise-free observation of the state (``st`` or the current one)."""
        st = st if st is not None else self.state()
        o = ObsInput(
            q=st.q, dq=st.dq, quat_wxyz=st.root_quat, gyro=st.base_ang_vel, command=self.command,
            last_action=self.last_action, default_q=np.broadcast_to(self.default_q, st.q.shape),
            gait_phase=self.gait.phase,
        )  # fmt: skip
        policy = build_observation(POLICY_TERMS, o)
        extra = np.concatenate([st.base_lin_vel, st.base_height_m[:, None]], axis=-1).astype(np.float32)
        return {"policy": policy, "critic": np.concatenate([policy, extra], axis=-1)}

    def _noisy(self, obs: dict[str, NDArray[np.float32]]) -> dict[str, NDArray[np.float32]]:
        if not self.velocity.obs_noise:
            return obs
        noise = self.rng.uniform(-1.0, 1.0, obs["policy"].shape).astype(np.float32) * self.noise_scale
        return {**obs, "policy": obs["policy"] + noise}

    # -- stepping ----------------------------------------------------------------------------

    def _push(self) -> None:
        c = self.velocity
        self.push_age_s += self.dt_s
        due = np.flatnonzero(self.push_age_s >= c.push_interval_s)
        for i in due:
            self.sim.add_qvel(int(i), slice(0, 2), self.rng.uniform(-c.push_vel_mps, c.push_vel_mps, 2))
        self.push_age_s[due] = 0.0

    def context(self, first_contact: NDArray[np.bool_] | None = None) -> rewards.Context:
        return rewards.Context(
            command=self.command, gait_phase=self.gait.phase, action=self.last_action, prev_action=self.prev_action,
            target_excess=self.target_excess, default_q=self.default_q, soft_min=self.soft_min,
            soft_max=self.soft_max, hip_joints=self.hip_joints, base_height_target_m=self.standing_height_m,
            pose_weights=self.pose_weights, air_time_s=self.air_time_s,
            first_contact=np.zeros_like(self.last_contact) if first_contact is None else first_contact,
            swing_s=self.swing_s,
        )  # fmt: skip

    def step(self, actions: F) -> tuple[dict[str, NDArray[np.float32]], F, NDArray[np.bool_], dict]:
        c = self.velocity
        actions = np.clip(actions, -ACTION_CLIP, ACTION_CLIP)
        self.prev_action, self.last_action = self.last_action, actions.copy()
        self._push()
        targets = self.default_q + ACTION_SCALE * actions
        self.target_excess = supervision.target_excess(targets, self.q_min, self.q_max)
        self.targets = np.clip(targets, *supervision.clamp_bounds(self.q_min, self.q_max))
        self.sim.step(self.targets)
        self.steps += 1
        st = self.state()
        # legged_gym's air time: a touchdown is the first step down after a flight (contact or the step before).
        down = st.foot_contact | self.last_contact
        first_contact = down & (self.air_time_s > 0.0)
        self.air_time_s += self.dt_s
        # The command and phase the action was chosen on.
        terms = rewards.terms(st, self.context(first_contact))
        reward = rewards.total(terms, self.weights, c.only_positive_rewards) * self.dt_s
        self.air_time_s *= ~down
        self.last_contact = st.foot_contact.copy()
        tilt = np.arccos(np.clip(-st.gravity[:, 2], -1.0, 1.0))
        fell = (st.base_height_m < c.fall_height_m) | (tilt > c.fall_tilt_rad) | self.touched
        tolerance = supervision.SUPERVISOR.joint_limit_tolerance_rad
        faulted = np.any((np.abs(st.dq) > self.dq_fault) | (st.q < self.q_min - tolerance)
                         | (st.q > self.q_max + tolerance), axis=-1)  # fmt: skip
        refused = supervision.refused(self.target_excess) | faulted
        timed_out = (self.steps >= self.max_episode_length) & ~fell & ~refused
        done = fell | refused | timed_out
        info = {"time_outs": timed_out, "fell": fell, "refused": refused, "faulted": faulted, "terms": terms,
                "speed": st.base_lin_vel[:, :2].copy(), "yaw_rate": st.base_ang_vel[:, 2].copy(),
                "command": self.command.copy(), "touchdowns": first_contact}  # fmt: skip
        self.command_age_s += self.dt_s
        due = np.flatnonzero((self.command_age_s >= c.resample_s) & ~done)
        if len(due):
            self.resample(due)
        ids = np.flatnonzero(done)
        if len(ids):
            self.reset(ids)
            st = self.state()
        self.gait.advance(self.command)  # on the command the next observation carries
        self.last_obs = self._noisy(self.observe(st))
        return self.last_obs, reward, done, info

    # -- exact resume ------------------------------------------------------------------------

    _ARRAYS = ("command", "command_age_s", "last_action", "prev_action", "target_excess", "targets", "steps",
               "push_age_s", "air_time_s", "last_contact")  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state,
            "mujoco_state": self.sim.get_states(),
            "level": self.level,
            "physics": {k: v.copy() for k, v in self.physics.items()},
            "gait": {"phase": self.gait.phase.copy(), "standing": self.gait._standing.copy()},
            "last_obs": {k: v.copy() for k, v in self.last_obs.items()},
            **{name: getattr(self, name).copy() for name in self._ARRAYS},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.level = float(state["level"])
        for k, v in state["physics"].items():
            self.physics[k][:] = v
        self.gait.phase[:] = state["gait"]["phase"]
        self.gait._standing[:] = state["gait"]["standing"]
        for name in self._ARRAYS:
            getattr(self, name)[:] = state[name]
        for i in range(self.num_envs):
            self._apply_physics(i)
        self.sim.set_states(state["mujoco_state"])
        self.last_obs = {k: v.copy() for k, v in state["last_obs"].items()}
