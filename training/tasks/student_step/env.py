"""The step-up course of stage 2: ``WalkEnv`` with low platforms straight ahead, and a reward for PPO.

An episode is one of two kinds, drawn at its start:

- **course** (probability ``1 - walk_fraction``): ``platforms`` boxes straight ahead
  (``platform_course``: near faces ``first_m`` then ``spacing_m`` apart, yawed up to 20 deg, 0.8 m
  deep), heights drawn from U[``min_height_m``, ``max_height_m``] (the curriculum raises the upper
  bound); the command is (vx, 0, 0) with vx U[``speed_mps``], held for the episode, as in ``parkour
  eval``'s protocol.
- **walk**: stage 1's episode (gentle terrain in half of them, a random command every 4 s), so the
  walking style keeps being exercised everywhere, not only on the course.

The reward (PPO's half of the hybrid; the teacher's labels are the other), and why it tracks velocity
along the course: :meth:`StepEnv.step_course`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from parkour_core.bundle import Manifest
from training.envs import supervision
from training.envs.reference import Terrain
from training.motion_matching import quat
from training.tasks.student_step.config import CourseSection
from training.tasks.student_walk.env import TerrainConfig, WalkConfig, WalkEnv, platform_course

F = NDArray[np.float64]
Ints = NDArray[np.int64]


# Where a course's platforms stand: the first near face 0.75-2 m ahead, then 2-3 m apart.
COURSE_LAYOUT = TerrainConfig(first_m=(0.75, 2.0), spacing_m=(2.0, 3.0))


@dataclass(frozen=True)
class StepReward:
    track: float = 1.0  # per second
    yaw: float = 0.5  # per second
    clear: float = 1.0  # per platform passed
    fall: float = -5.0  # per fall
    sigma_sq: float = 0.25


class StepEnv(WalkEnv):
    """The course and walk episodes of the module docstring. ``step_course(actions) -> obs, reward, done, info``."""

    def __init__(
        self,
        cfg: WalkConfig,
        manifest: Manifest,
        course: CourseSection | None = None,
        reward: StepReward = StepReward(),
    ) -> None:
        self.course = course = course or CourseSection()
        self.reward_cfg = reward
        self.height_cap_m = course.max_height_m
        n = cfg.num_envs
        self.on_course = np.zeros(n, dtype=bool)
        self.cleared = np.zeros((n, course.platforms), dtype=bool)
        self.heights = np.zeros((n, course.platforms))
        self.course_rng = np.random.default_rng([cfg.seed, 19])
        super().__init__(cfg, manifest)
        if course.supervisor_limits:
            robot = self.tracking.robot
            self.tracking.sim.target_bounds = supervision.clamp_bounds(robot.q_min, robot.q_max)

    def supervised_actions(self, actions: F) -> F:
        """``actions`` with their targets clamped as the motors get them (``supervisor_limits``; else as given)."""
        bounds = self.tracking.sim.target_bounds
        if bounds is None:
            return actions
        contract = self.tracking.contract
        return contract.actions_for(np.clip(contract.targets(actions), *bounds))

    def refused(self, actions: F) -> NDArray[np.bool_]:
        """(N,) the supervisor would take the robot from these actions (``supervisor_limits``; else never)."""
        if not self.course.supervisor_limits:
            return np.zeros(self.num_envs, dtype=bool)
        robot, targets = self.tracking.robot, self.tracking.contract.targets(actions)
        return supervision.refused(supervision.target_excess(targets, robot.q_min, robot.q_max))

    def place_terrain(self, ids: Ints) -> None:
        c, rng = self.course, self.course_rng
        walk = rng.random(len(ids)) < c.walk_fraction
        super().place_terrain(ids[walk])
        self.on_course[ids] = ~walk
        # A walk episode draws its own command: one after a course would hold the course's for good.
        super().resample(ids[walk])
        self.cleared[ids] = False
        self.heights[ids] = 0.0
        for i in ids[~walk]:
            heights = rng.uniform(c.min_height_m, max(c.min_height_m, self.height_cap_m), c.platforms)
            self.heights[i] = heights
            self.tracking.sim.set_terrain(int(i), platform_course(rng, COURSE_LAYOUT, heights))
            self.walk_command[i] = (rng.uniform(*c.speed_mps), 0.0, 0.0)
            self.command_age_s[i] = -np.inf  # held for the episode

    def resample(self, ids: Ints) -> None:
        # Course episodes keep their command; place_terrain (at the reset) sets the next one.
        super().resample(ids[~self.on_course[ids]])

    def platforms_passed(self) -> NDArray[np.bool_]:
        """(N, platforms): the base is beyond the platform's far face (course episodes only)."""
        sim = self.tracking.sim
        out = np.zeros_like(self.cleared)
        for i in np.flatnonzero(self.on_course):
            t: Terrain = sim.terrains[i]
            axis = np.stack([np.cos(t.yaw), np.sin(t.yaw)], axis=-1)
            along = np.einsum("bk,bk->b", sim.root_pos[i, :2] - t.center[:, :2], axis)
            out[i, : len(t)] = along > t.half_size[:, 0]
        return out

    def platform_heights(self) -> F:
        """(N, platforms) heights of each course's platforms (0 for walk episodes), drawn at its start."""
        return self.heights.copy()

    def step_course(self, actions: F) -> tuple[dict[str, NDArray[np.float32]], F, NDArray[np.bool_], dict]:
        """One policy step with PPO's reward.

        Per second, ``w_track exp(-|v_xy - c_xy|^2 / 0.25) + w_yaw exp(-(w_z - c_wz)^2 / 0.25)`` (times the
        20 ms tick); per event, ``clear`` for each platform whose far face the base passes and ``fall`` on a
        fall (which ends the episode). With gamma 0.99 a walking robot's value is about 3, so a fall costs as
        much as ~270 ticks of perfect tracking and a platform is worth ~30. Velocity tracking, not forward
        progress: a progress reward pays diving forward more than the fall costs.

        On a course (``progress_reward``, the default) the tracked velocity is the world-frame one against
        (vx, 0) along the course's +x, not the velocity in the robot's own heading: the heading-frame term
        pays a robot that turns away from the platforms as much as one that walks over them, and
        lambda_PPO's weight then makes the student worse. A course episode ends, without the fall's cost,
        when the base leaves the course's lane (``|y| > lane_half_width_m``): nothing off the lane can be
        learned about platforms.
        """
        r, sim = self.reward_cfg, self.tracking.sim
        command = self.walk_command.copy()
        before = self.cleared.copy()
        on_course_before = self.on_course.copy()
        heights = self.platform_heights()
        refused = self.refused(actions)
        obs, done, info = self.step_walk(actions)
        refused &= ~done
        info["fell"] = info["fell"] | refused
        ended = done | refused  # every episode that ended in the step other than by leaving the lane
        # The state the step reached (a fallen env is reset by step_walk: its reward is the fall's).
        yaw = quat.yaw(sim.root_quat)
        v = sim.root_lin_vel_w
        v_heading = np.stack([np.cos(yaw) * v[:, 0] + np.sin(yaw) * v[:, 1],
                              -np.sin(yaw) * v[:, 0] + np.cos(yaw) * v[:, 1]], axis=-1)  # fmt: skip
        yaw_rate = sim.gyro[:, 2]
        velocity = v_heading
        left_lane = np.zeros_like(done)
        if self.course.progress_reward:
            velocity = np.where(on_course_before[:, None], v[:, :2], v_heading)
            left_lane = on_course_before & ~ended & (np.abs(sim.root_pos[:, 1]) > self.course.lane_half_width_m)
        track = np.exp(-np.sum((velocity - command[:, :2]) ** 2, axis=1) / r.sigma_sq)
        turn = np.exp(-((yaw_rate - command[:, 2]) ** 2) / r.sigma_sq)
        passed = self.platforms_passed() & ~ended[:, None]
        newly = passed & ~before
        self.cleared |= passed
        reward = (r.track * track + r.yaw * turn) * self.tracking.dt_s + r.clear * newly.sum(axis=1)
        fell = info["fell"]
        reward = np.where(fell, r.fall, reward)
        info["cleared_heights"] = heights[newly]
        # A fall on a course is charged to the first platform not yet passed: the one being attempted.
        attempting = np.argmax(~before, axis=1)
        pending = ~before.all(axis=1) & on_course_before
        info["fell_heights"] = heights[np.arange(len(fell)), attempting][fell & pending]
        info["track"] = track
        # Off the lane: ended here, like a time-out (the value of where it stood is bootstrapped). Refused:
        # a fall, as on the robot, where the supervisor's fallback gait takes over.
        reset = left_lane | refused
        if reset.any():
            ids = np.flatnonzero(reset)
            self.resample(ids)
            obs = self.reset(ids)
            done = done | reset
        info["left_lane"] = left_lane
        info["refused"] = refused
        return obs, reward, done, info
