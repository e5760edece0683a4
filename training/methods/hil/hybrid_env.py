"""HIL's hybrid setting: tracking envs and goal-driven adversarial envs in one batch, one observation.

One :class:`~training.envs.tracking.TrackingEnv` steps all ``num_tracking + num_adversarial``
environments together (the same physics, terrains, randomization and start-state sampling); the
first ``num_tracking`` are **tracking** envs, the rest **adversarial** envs (:class:`HybridEnv`
says how each is rewarded and ended). Both kinds see the same goal-conditioned observation
(:func:`hybrid_observation`): the privileged proprioception and height scan of
:mod:`training.envs.privileged` without the reference's joint terms, plus a 5-d goal

    goal = (target root position - pelvis, heading frame (3); cos, sin of target heading - heading)

``step`` returns ``obs, reward, done, info``; ``info["transitions"]`` holds every env's
(s, s') features for the discriminator, ``info["kind"]`` 0 for tracking and 1 for adversarial.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from training.envs.privileged import PRIVILEGED_TERMS, term_slices
from training.envs.reference import Reference
from training.envs.tracking import RefSampler, StartSampler, TrackingConfig, TrackingEnv
from training.methods.hil.features import BLOCK_SLICES, env_states, state_features
from training.motion_matching import quat

F = NDArray[np.float64]
F32 = NDArray[np.float32]

TRACKING, ADVERSARIAL = 0, 1
OBS_TERMS: tuple[str, ...] = (
    "pelvis_ori_w",
    "pelvis_lin_vel_w",
    "pelvis_ang_vel_b",
    "joint_pos",
    "joint_vel",
    "actions",
    "height_scan",
)
GOAL_DIM = 5
_SLICES = term_slices(PRIVILEGED_TERMS)
OBS_DIM = sum(_SLICES[t].stop - _SLICES[t].start for t in OBS_TERMS) + GOAL_DIM


@dataclass(frozen=True)
class HybridEnvConfig:
    num_tracking: int = 4
    num_adversarial: int = 4
    task_weight: float = 0.5  # AMP's w_G
    style_weight: float = 0.5  # AMP's w_S
    arrive_m: float = 0.3
    min_speed_mps: float = 0.0  # floor of the commanded speed v*
    fall_height_m: float = 0.35
    max_tilt_rad: float = 1.0

    def __post_init__(self) -> None:
        if self.num_tracking < 0 or self.num_adversarial < 0 or self.num_tracking + self.num_adversarial < 1:
            raise ValueError("hybrid env: num_tracking and num_adversarial must be >= 0 with at least one env")

    @property
    def num_envs(self) -> int:
        return self.num_tracking + self.num_adversarial


def _heading_goal(pelvis_pos: F, heading: F, target_pos: F, target_heading: F) -> F:
    d = target_pos - pelvis_pos
    c, s = np.cos(heading), np.sin(heading)
    dpsi = target_heading - heading
    return np.stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1], d[:, 2], np.cos(dpsi), np.sin(dpsi)], -1)


def _matrix_from_six_d(six: F) -> F:
    """(N, 3, 3) rotation from the first two matrix columns (privileged ``*_ori_*`` terms)."""
    c0, c1 = six[:, 0:3], six[:, 3:6]
    return np.stack([c0, c1, np.cross(c0, c1)], axis=-1)


def tracking_goal_from_privileged(privileged: NDArray) -> F:
    """The tracking goal from the privileged observation's pelvis-error and orientation terms."""
    p = np.asarray(privileged, dtype=np.float64)
    rot = _matrix_from_six_d(p[:, _SLICES["pelvis_ori_w"]])
    err_w = np.einsum("nij,nj->ni", rot, p[:, _SLICES["anchor_pos_error_b"]])
    ref_rot = rot @ _matrix_from_six_d(p[:, _SLICES["anchor_ori_error_b"]])
    heading = np.arctan2(rot[:, 1, 0], rot[:, 0, 0])
    ref_heading = np.arctan2(ref_rot[:, 1, 0], ref_rot[:, 0, 0])
    zeros = np.zeros_like(err_w)
    return _heading_goal(zeros, heading, err_w, ref_heading)


def hybrid_observation(privileged: NDArray, goal: F | None = None) -> F32:
    """(N, OBS_DIM) float32: :data:`OBS_TERMS` of the privileged observation, then the goal
    (the tracking goal when ``goal`` is None)."""
    p = np.asarray(privileged)
    g = tracking_goal_from_privileged(p) if goal is None else goal
    return np.concatenate([p[:, _SLICES[t]] for t in OBS_TERMS] + [g], axis=-1).astype(np.float32)


def target_location_reward(offset_xy: F, velocity_xy: F, speed: F, arrive_m: float) -> F:
    """AMP's target-location task reward (offset = target - pelvis, planar).

    ``0.7 exp(-0.5 |d|^2) + 0.3 exp(-max(0, v* - u.v)^2)``: d the planar offset to the target, u its
    direction, v* the reference's commanded speed; the velocity term is 1 once within ``arrive_m``.
    """
    dist = np.linalg.norm(offset_xy, axis=-1)
    direction = offset_xy / np.maximum(dist, 1e-6)[:, None]
    toward = np.sum(direction * velocity_xy, axis=-1)
    r_vel = np.where(dist < arrive_m, 1.0, np.exp(-(np.maximum(0.0, speed - toward) ** 2)))
    return 0.7 * np.exp(-0.5 * dist**2) + 0.3 * r_vel


def fallen(features: F32, cfg: HybridEnvConfig) -> NDArray[np.bool_]:
    """A fall, from state features: pelvis below ``fall_height_m`` over the terrain or tilted past
    ``max_tilt_rad``."""
    height = features[:, BLOCK_SLICES["root_height"]][:, 0]
    down_z = features[:, BLOCK_SLICES["gravity_b"]][:, 2]  # -1 when upright
    tilt = np.arccos(np.clip(-down_z, -1.0, 1.0))
    return (height < cfg.fall_height_m) | (tilt > cfg.max_tilt_rad)


class HybridEnv:
    """Tracking and adversarial envs in one batch. Env ``i`` is a tracking env for ``i < num_tracking``.

    - tracking env: the target is the reference's root (pelvis) pose at the env's reference frame, the
      one the next action is scored against; reward = PHP's tracking reward (Eq. 5 + regularizers);
      termination = tracking error > ``termination_m``. This goal is a function of the privileged
      observation alone (:func:`tracking_goal_from_privileged`), so a privileged-observation teacher
      label (DAgger) comes out of the same policy (:class:`training.methods.hil.task.HILTeacherAdapter`).
    - adversarial env: the target is a position, the reference clip's last root position (the far side
      of its obstacle), with the reference's commanded heading; no pose to track. Reward =
      ``task_weight * r_task + style_weight * r_style``, with AMP's target-location task reward
      (:func:`target_location_reward`) and the style reward of the discriminator (``style_reward_fn``
      on the step's transition features). Termination = a fall (:func:`fallen`).

    Both kinds are truncated when the reference clip ends.
    """

    def __init__(
        self,
        references: Sequence[Reference],
        tracking: TrackingConfig,
        cfg: HybridEnvConfig = HybridEnvConfig(),
        start_sampler: StartSampler | None = None,
        ref_sampler: RefSampler | None = None,
        style_reward_fn: Callable[[F32], F] | None = None,
    ) -> None:
        self.cfg = cfg
        self.termination_m = tracking.termination_m
        inner = dataclasses.replace(tracking, num_envs=cfg.num_envs, auto_reset=False, termination_m=np.inf)
        self.env = TrackingEnv(references, inner, start_sampler=start_sampler, ref_sampler=ref_sampler)
        self.num_envs = cfg.num_envs
        self.num_actions = self.env.num_actions
        self.num_obs = OBS_DIM
        self.dt_s = self.env.dt_s
        self.kind = np.where(np.arange(cfg.num_envs) < cfg.num_tracking, TRACKING, ADVERSARIAL)
        self.adversarial = self.kind == ADVERSARIAL
        self.style_reward_fn = style_reward_fn
        self._features = np.zeros((self.num_envs, 0), dtype=np.float32)

    def close(self) -> None:
        self.env.close()

    # -- goals ---------------------------------------------------------------------------------

    def adversarial_targets(self) -> tuple[F, F, F]:
        """Per env: target position (the clip's last root position), target heading and speed v*."""
        refs = [self.env.references[r] for r in self.env.ref_id]
        f = self.env.frame
        pos = np.stack([r.root_pos[-1] for r in refs])
        heading = np.array([r.command_heading[t] for r, t in zip(refs, f, strict=True)])
        speed = np.array([np.linalg.norm(r.command_vel_world[t]) for r, t in zip(refs, f, strict=True)])
        return pos, heading, np.maximum(speed, self.cfg.min_speed_mps)

    def _observe(self, privileged: F32) -> F32:
        goal = tracking_goal_from_privileged(privileged)
        if self.adversarial.any():
            pos, heading, _ = self.adversarial_targets()
            sim = self.env.sim
            adv = _heading_goal(sim.root_pos, quat.yaw(sim.root_quat), pos, heading)
            goal[self.adversarial] = adv[self.adversarial]
        return hybrid_observation(privileged, goal)

    # -- episodes ------------------------------------------------------------------------------

    def reset(self) -> F32:
        privileged = self.env.reset()
        self._features = state_features(env_states(self.env))
        return self._observe(privileged)

    def step(self, actions: F) -> tuple[F32, F, NDArray[np.bool_], dict[str, Any]]:
        privileged, tracking_reward, _, info = self.env.step(actions)
        after = state_features(env_states(self.env))
        transitions = np.concatenate([self._features, after], axis=-1)
        sim = self.env.sim
        pos, _, speed = self.adversarial_targets()
        task = target_location_reward((pos - sim.root_pos)[:, :2], sim.root_lin_vel_w[:, :2], speed, self.cfg.arrive_m)
        style = np.zeros(self.num_envs)
        if self.style_reward_fn is not None and self.adversarial.any():
            style[self.adversarial] = self.style_reward_fn(transitions[self.adversarial])
        adversarial_reward = self.cfg.task_weight * task + self.cfg.style_weight * style
        reward = np.where(self.adversarial, adversarial_reward, tracking_reward)
        fell = fallen(after, self.cfg)
        lost = info["tracking_error"] > self.termination_m
        terminated = np.where(self.adversarial, fell, lost)
        truncated = info["truncated"] & ~terminated
        done = terminated | truncated
        obs = self._observe(privileged)
        info = {
            **info,
            "terminated": terminated,
            "truncated": truncated,
            "kind": self.kind,
            "transitions": transitions,
            "tracking_reward": tracking_reward,
            "task_reward": task,
            "style_reward": style,
        }
        self._features = after
        if done.any():
            ids = np.flatnonzero(done)
            info["final_obs"] = obs[ids].copy()
            privileged = self.env.reset(ids)
            self._features = state_features(env_states(self.env))
            obs = self._observe(privileged)
        return obs, reward, done, info
