"""The batched motion-tracking teacher environment on plain MuJoCo (CPU).

N environments, each tracking one :class:`~training.envs.reference.Reference` on its terrain,
stepped together through :class:`~training.envs.physics.Physics` (``BatchedMujoco`` on the CPU, ``WarpMujoco``
on MuJoCo-Warp; PD at 500 Hz, policy at 50 Hz).
Actions use the robot's contract (:class:`ActionContract`): joint targets
``default_q + action_scale * action``, the student bundle's mapping, so teacher and student actions
are the same quantity for DAgger. Reset and step: :class:`TrackingEnv`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parkour_core.bundle import Manifest
from parkour_core.robots import G1, RobotSpec
from training.envs import rewards
from training.envs.mujoco_cpu import MAX_BOXES
from training.envs.physics import make_physics
from training.envs.privileged import NO_BOX, PrivilegedInput, build_privileged, privileged_size
from training.envs.randomization import ModelRandomizer, Pushes, RandomizationConfig, draw_physics
from training.envs.reference import Reference

F = NDArray[np.float64]
Ints = NDArray[np.int64]

# start_sampler(env_ids, ref_ids, rng) -> start frames
StartSampler = Callable[[Ints, Ints, np.random.Generator], Ints]
RefSampler = Callable[[Ints, np.random.Generator], Ints]


@dataclass(frozen=True)
class ActionContract:
    """How an action becomes joint targets, and the PD gains: what the bundle manifest records."""

    default_q: F
    action_scale: float
    action_clip: float
    kp: F
    kd: F

    @staticmethod
    def from_manifest(m: Manifest) -> ActionContract:
        return ActionContract(
            np.asarray(m.default_joint_pos, dtype=np.float64),
            float(m.action_scale),
            float(m.action_clip),
            np.asarray(m.kp, dtype=np.float64),
            np.asarray(m.kd, dtype=np.float64),
        )

    def targets(self, actions: F) -> F:
        return self.default_q + self.action_scale * np.clip(actions, -self.action_clip, self.action_clip)

    def actions_for(self, q_targets: F) -> F:
        """The action whose targets are ``q_targets`` (replaying a reference as PD targets)."""
        return (np.asarray(q_targets) - self.default_q) / self.action_scale


G1_CONTRACT = ActionContract(G1.default_q, 0.25, 100.0, G1.kp_stand, G1.kd_stand)
"""The G1 student bundle's mapping (training.export.student_manifest; a test keeps them equal)."""


@dataclass(frozen=True)
class TrackingConfig:
    num_envs: int = 16
    physics_dt_s: float = 0.002
    decimation: int = 10  # physics steps per policy step: 500 Hz / 50 Hz
    termination_m: float = rewards.TERMINATION_M
    nthread: int = 2
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    rewards: rewards.RewardConfig = field(default_factory=rewards.RewardConfig)
    auto_reset: bool = True
    min_episode_frames: int = 10  # default start frames leave at least this much reference
    compute_rewards: bool = True  # False: reward 0 (a task with its own), unless a finite termination needs the error
    observe_privileged: bool = True  # False: observe() returns (N, 0) (no learner reads it)
    max_boxes: int = MAX_BOXES
    seed: int = 0
    backend: str = "mujoco_cpu"  # training.envs.physics: mujoco_cpu or mujoco_warp
    device: str = "cpu"  # mujoco_warp's device


def frames_from_phases(references: Sequence[Reference], ref_ids: Ints, phases: F, min_episode_frames: int = 0) -> Ints:
    """Start phases in [0, 1] (an adaptive sampler's draw) -> frames, leaving ``min_episode_frames`` to go."""
    last = np.array([references[r].num_frames - 1 for r in ref_ids])
    usable = np.maximum(last - min_episode_frames, 0)
    return np.minimum(np.floor(np.asarray(phases) * (usable + 1)).astype(np.int64), usable)


class TrackingEnv:
    """Arrays are batched over ``cfg.num_envs``, joints in the robot's order.

    - ``reset(env_ids, start_frames, ref_ids)`` puts each environment at a reference frame: root pose and
      velocity, joint positions and velocities, and draws its domain randomization. An external sampler
      chooses the start frames (PHP's adaptive sampling from failure regions:
      ``training.algorithms.sampling.AdaptiveStartSampler`` draws start phases,
      :func:`frames_from_phases` turns them into frames). With ``auto_reset`` the environment resets
      finished episodes itself through ``start_sampler`` (uniform by default) and reports where each
      finished episode started (``info["episode_start_phase"]``) and whether it failed.
    - ``step(actions) -> obs, reward, done, info``: ``obs`` is the privileged observation
      (:mod:`training.envs.privileged`), ``reward`` PHP's Eq. 5 plus regularizers
      (:mod:`training.envs.rewards`), ``done`` = terminated (tracking error > ``termination_m``) or
      truncated (the reference ended); ``info["reward_terms"]`` holds each weighted term.
    """

    def __init__(
        self,
        references: Sequence[Reference],
        cfg: TrackingConfig = TrackingConfig(),
        contract: ActionContract = G1_CONTRACT,
        robot: RobotSpec = G1,
        start_sampler: StartSampler | None = None,
        ref_sampler: RefSampler | None = None,
    ) -> None:
        if not references:
            raise ValueError("TrackingEnv needs at least one reference")
        body_names = references[0].body_names
        for r in references:
            if r.body_names != body_names:
                raise ValueError(f"reference {r.name!r} tracks other bodies than {references[0].name!r}")
            if len(r.terrain) > cfg.max_boxes:
                raise ValueError(f"reference {r.name!r} has {len(r.terrain)} boxes; max_boxes is {cfg.max_boxes}")
        self.references = list(references)
        self.cfg = cfg
        self.contract = contract
        self.robot = robot
        self.num_envs = n = cfg.num_envs
        self.num_actions = robot.num_joints
        self.num_obs = privileged_size()
        self.termination_m = cfg.termination_m
        self.rng = np.random.default_rng(cfg.seed)
        self.sim = make_physics(
            cfg.backend, n, robot, cfg.device, physics_dt_s=cfg.physics_dt_s, decimation=cfg.decimation,
            kp=contract.kp, kd=contract.kd, max_boxes=cfg.max_boxes, nthread=cfg.nthread,
        )  # fmt: skip
        self.dt_s = cfg.physics_dt_s * cfg.decimation
        m = self.sim.base_model
        self.body_ids = np.array([m.body(b).id for b in body_names])
        self.anchor = references[0].anchor_index
        self.randomizer = ModelRandomizer(m, robot.torso_body)
        self.pushes = Pushes(cfg.randomization, n, self.rng)
        self.physics = draw_physics(cfg.randomization, n, self.rng)
        self.start_sampler = start_sampler or self._uniform_start
        self.ref_sampler = ref_sampler or (lambda ids, rng: rng.integers(0, len(self.references), size=len(ids)))
        self.ref_id = np.zeros(n, dtype=np.int64)
        self.start_frame = np.zeros(n, dtype=np.int64)
        self.frame = np.zeros(n, dtype=np.int64)
        self.episode_steps = np.zeros(n, dtype=np.int64)
        self.last_action = np.zeros((n, self.num_actions))
        self.tracking_error = np.zeros(n)
        # Called after the physics of every step (before auto-reset) and after every reset.
        self.after_physics: list[Callable[[], None]] = []
        self.after_reset: list[Callable[[Ints], None]] = []
        self._loaded_ref = np.full(n, -1, dtype=np.int64)

    def close(self) -> None:
        self.sim.close()

    # -- episodes ---------------------------------------------------------------------------

    def _uniform_start(self, env_ids: Ints, ref_ids: Ints, rng: np.random.Generator) -> Ints:
        phases = rng.uniform(0.0, 1.0, size=len(env_ids))
        return frames_from_phases(self.references, ref_ids, phases, self.cfg.min_episode_frames)

    def _padded_boxes(self) -> tuple[F, F, F]:
        """Each environment's boxes as they stand in its simulator, (N, max_boxes, 3) x 2 and (N, max_boxes).

        The simulator's terrain, not the reference's: a task may place its own (the step-up course).
        """
        n, k = self.num_envs, self.cfg.max_boxes
        center, half, yaw = np.zeros((n, k, 3)), np.full((n, k, 3), NO_BOX), np.zeros((n, k))
        for i, t in enumerate(self.sim.terrains):
            b = len(t)
            center[i, :b], half[i, :b], yaw[i, :b] = t.center, t.half_size, t.yaw
        return center, half, yaw

    def reset(
        self, env_ids: Sequence[int] | Ints | None = None, start_frames: Ints | None = None, ref_ids: Ints | None = None
    ):
        """Start episodes; returns the privileged observation of every environment (N, num_obs)."""
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        self._reset(ids, start_frames, ref_ids)
        return self.observe()

    def _reset(self, ids: Ints, start_frames: Ints | None, ref_ids: Ints | None) -> None:
        if len(ids) == 0:
            return
        refs = self.ref_sampler(ids, self.rng) if ref_ids is None else np.asarray(ref_ids, dtype=np.int64)
        refs = np.broadcast_to(refs, ids.shape)
        frames = self.start_sampler(ids, refs, self.rng) if start_frames is None else np.asarray(start_frames)
        frames = np.broadcast_to(frames, ids.shape).astype(np.int64)
        physics = draw_physics(self.cfg.randomization, len(ids), self.rng)
        for k, (i, r, f) in enumerate(zip(ids, refs, frames, strict=True)):
            ref = self.references[r]
            if not 0 <= f < ref.num_frames:
                raise ValueError(f"start frame {f} outside reference {ref.name!r} (0..{ref.num_frames - 1})")
            if self._loaded_ref[i] != r:
                self.sim.set_terrain(int(i), ref.terrain)
                self._loaded_ref[i] = r
            self.randomizer.apply(self.sim, int(i), physics, k)
            for name in ("static_friction", "kinetic_friction", "friction", "restitution", "dampratio"):
                getattr(self.physics, name)[i] = getattr(physics, name)[k]
            self.physics.torso_com_offset_m[i] = physics.torso_com_offset_m[k]
            self.sim.set_state(
                int(i), ref.root_pos[f], ref.root_quat[f], ref.joint_pos[f], ref.root_lin_vel_w[f],
                ref.root_ang_vel_w[f], ref.joint_vel[f],
            )  # fmt: skip
        self.ref_id[ids] = refs
        self.start_frame[ids] = frames
        self.frame[ids] = frames
        self.episode_steps[ids] = 0
        self.last_action[ids] = 0.0
        self.pushes.reset(ids, self.sim.time_s[ids])
        for hook in self.after_reset:
            hook(ids)

    def start_phase(self, env_ids: Ints | None = None) -> F:
        """Where each environment's episode started, as a fraction of its reference."""
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids)
        last = np.array([max(self.references[r].num_frames - 1, 1) for r in self.ref_id[ids]])
        return self.start_frame[ids] / last

    # -- stepping ---------------------------------------------------------------------------

    def step(self, actions: F) -> tuple[NDArray[np.float32], F, NDArray[np.bool_], dict[str, Any]]:
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape != (self.num_envs, self.num_actions):
            raise ValueError(f"actions must be ({self.num_envs}, {self.num_actions}), got {actions.shape}")
        push = self.pushes.forces(self.sim.time_s)
        self.sim.step(self.contract.targets(actions), push)
        self.episode_steps += 1
        offset = np.rint(self.episode_steps * self.dt_s * self._fps()).astype(np.int64)
        self.frame = np.minimum(self.start_frame + offset, self._last_frame())
        if self.cfg.compute_rewards or np.isfinite(self.termination_m):
            inp = self._reward_input(actions)
            terms = rewards.reward_terms(inp, self.cfg.rewards)
            # The previous action is 0 at a reset (as the runtime's); the first action has no rate to pay.
            terms["action_rate"] = np.where(self.episode_steps > 1, terms["action_rate"], 0.0)
            reward = rewards.total_reward(terms, self.cfg.rewards)
            self.tracking_error = rewards.tracking_error(inp.robot.pos, inp.reference.pos)
        else:  # a task with its own reward and no tracking termination (the walking students)
            terms, reward = {}, np.zeros(self.num_envs)
            self.tracking_error = np.zeros(self.num_envs)
        terminated = rewards.terminated(self.tracking_error, self.termination_m)
        truncated = (self.frame >= self._last_frame()) & ~terminated
        done = terminated | truncated
        self.last_action = actions.copy()
        for hook in self.after_physics:
            hook()
        obs = self.observe()
        info: dict[str, Any] = {
            "reward_terms": rewards.weighted(terms, self.cfg.rewards),
            "tracking_error": self.tracking_error.copy(),
            "terminated": terminated,
            "truncated": truncated,
            "push_force": push,
            "episode_start_phase": self.start_phase(),
            "episode_ref_id": self.ref_id.copy(),
            "frame": self.frame.copy(),
        }
        if self.cfg.auto_reset and done.any():
            ids = np.flatnonzero(done)
            info["final_obs"] = obs[ids].copy()
            self._reset(ids, None, None)
            obs = self.observe()
        return obs, reward, done, info

    def _fps(self) -> F:
        return np.array([self.references[r].fps for r in self.ref_id])

    def _last_frame(self) -> Ints:
        return np.array([self.references[r].num_frames - 1 for r in self.ref_id])

    # -- state --------------------------------------------------------------------------------

    def reference_bodies(self) -> rewards.BodyState:
        refs = [self.references[r] for r in self.ref_id]
        f = self.frame
        return rewards.BodyState(
            np.stack([r.body_pos_w[t] for r, t in zip(refs, f, strict=True)]),
            np.stack([r.body_quat_w[t] for r, t in zip(refs, f, strict=True)]),
            np.stack([r.body_lin_vel_w[t] for r, t in zip(refs, f, strict=True)]),
            np.stack([r.body_ang_vel_w[t] for r, t in zip(refs, f, strict=True)]),
        )

    def robot_bodies(self) -> rewards.BodyState:
        return rewards.BodyState(*self.sim.bodies(self.body_ids))

    def _reward_input(self, actions: F) -> rewards.RewardInput:
        return rewards.RewardInput(
            robot=self.robot_bodies(),
            reference=self.reference_bodies(),
            anchor=self.anchor,
            joint_pos=self.sim.q,
            joint_min=self.robot.q_min,
            joint_max=self.robot.q_max,
            action=actions,
            prev_action=self.last_action,
            self_contacts=self.sim.self_contacts(),
        )

    def current_tracking_error(self) -> F:
        return rewards.tracking_error(self.robot_bodies().pos, self.reference_bodies().pos)

    def privileged_input(self) -> PrivilegedInput:
        refs = [self.references[r] for r in self.ref_id]
        f = self.frame
        box_center, box_half, box_yaw = self._padded_boxes()
        ref_bodies = self.reference_bodies()
        return PrivilegedInput(
            ref_joint_pos=np.stack([r.joint_pos[t] for r, t in zip(refs, f, strict=True)]),
            ref_joint_vel=np.stack([r.joint_vel[t] for r, t in zip(refs, f, strict=True)]),
            ref_anchor_pos=ref_bodies.pos[:, self.anchor],
            ref_anchor_quat=ref_bodies.quat[:, self.anchor],
            pelvis_pos=self.sim.root_pos,
            pelvis_quat=self.sim.root_quat,
            pelvis_lin_vel_w=self.sim.root_lin_vel_w,
            pelvis_ang_vel_b=self.sim.gyro,
            joint_pos=self.sim.q,
            joint_vel=self.sim.dq,
            default_q=self.contract.default_q,
            last_action=self.last_action,
            box_center=box_center,
            box_half=box_half,
            box_yaw=box_yaw,
        )

    def observe(self) -> NDArray[np.float32]:
        """The privileged observation of every environment's current state, (N, num_obs); (N, 0) when the
        config does not observe it (a task whose learner never reads it)."""
        if not self.cfg.observe_privileged:
            return np.zeros((self.num_envs, 0), dtype=np.float32)
        return build_privileged(self.privileged_input())
