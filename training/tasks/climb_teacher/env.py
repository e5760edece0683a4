"""The climbing teacher's environment: the G1 on box courses, privileged, on the ``mujoco_cpu`` backend.

The learner's action is a residual on the walking policy's (legs and waist), so with a zero residual the
env is the walking policy on the course, commanded the course's speed and steered to its heading. The
robot runs as the bridge runs it (2 ms physics, PD every step, the walking policy's gains, targets
clamped where the supervisor clamps them) under the student task's randomization. Courses are boxes on
a line along +x, their height set per environment by a curriculum advanced by success; the observation
adds the height scan and the next box to the walking policy's own. Episodes end at a fall, off the
lane, optionally at targets the supervisor would refuse (all failures), past the course's end or at the
time limit. ``state_dict`` / ``load_state_dict`` hold everything a step reads, so a run resumes exactly.
The whole design, with its reasons: ``docs/training/climb-teacher.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parkour_core.gait import GaitClock
from parkour_core.math3d import projected_gravity
from parkour_core.robots import G1
from training.envs import supervision
from training.envs.physics import make_physics
from training.envs.privileged import scan_grid, scan_points_world, terrain_height
from training.envs.randomization import ModelRandomizer, PhysicsDraw, Pushes, RandomizationConfig, draw_physics
from training.envs.reference import Terrain
from training.motion_matching import quat
from training.tasks.climb_teacher import rewards
from training.tasks.student_walk.teacher import WalkTeacher

F = NDArray[np.float64]
Ints = NDArray[np.int64]

FEET = ("left_ankle_roll_link", "right_ankle_roll_link")
SHINS = ("left_knee_link", "right_knee_link")
ANKLE_ABOVE_SOLE_M = 0.04  # the G1's ankle-roll origin above its sole, standing
NEXT_BOX_DIMS = 6  # distance to the near face, lateral offset, cos/sin of the relative yaw, height, boxes left
CRITIC_EXTRA = 4  # base linear velocity (heading frame, 3), base height above the terrain under it (1)
WALKER_VX = (-1.0, 1.0)  # the walking policy's trained forward command range (its manifest's command_ranges)
WALKER_YAW_RATE = 0.5  # the heading correction's clip (rad/s)
# G1: the 12 leg joints first, then the waist's 3 (the walking policy's targets past a limit under pushes are
# mostly its ankles', some its waist's).
RESIDUAL_JOINTS = {"legs": tuple(range(12)), "lower_body": tuple(range(15)), "all": tuple(range(G1.num_joints))}
FAR_M = 5.0  # the next box's distance is clipped here (and reads this when none is left)


def along_box(xy: F, box_center: F, box_yaw: F) -> F:
    """(N, B) how far points (N, 2) lie past each box's centre along its axis."""
    axis = np.stack([np.cos(box_yaw), np.sin(box_yaw)], axis=-1)
    return np.einsum("nbk,nbk->nb", xy[:, None, :] - box_center[..., :2], axis)


def next_box(root_pos: F, yaw: F, box_center: F, box_half: F, box_yaw: F, num_boxes: Ints) -> F:
    """(N, NEXT_BOX_DIMS) the first box whose far face the base has not passed, in the heading frame: distance
    to its near face (clipped to [-1, FAR_M]), lateral offset, cos/sin of its yaw to the heading, height, boxes
    left counting it. None left: ``FAR_M`` away, flat."""
    n, slots = box_yaw.shape
    along = along_box(root_pos[:, :2], box_center, box_yaw)
    ahead = (along < box_half[..., 0]) & (np.arange(slots) < num_boxes[:, None])
    has = ahead.any(axis=1)
    k = np.argmax(ahead, axis=1)
    rows = np.arange(n)
    center, half, b_yaw = box_center[rows, k], box_half[rows, k], box_yaw[rows, k]
    rel = center[:, :2] - root_pos[:, :2]
    c, s = np.cos(yaw), np.sin(yaw)
    near = np.clip(-along[rows, k] - half[:, 0], -1.0, FAR_M)
    lateral = -s * rel[:, 0] + c * rel[:, 1]
    out = np.stack([near, lateral, np.cos(b_yaw - yaw), np.sin(b_yaw - yaw), 2.0 * half[:, 2],
                    (num_boxes - k).astype(np.float64)], axis=-1)  # fmt: skip
    return np.where(has[:, None], out, [FAR_M, 0.0, 1.0, 0.0, 0.0, 0.0])


def walker_command(command: F, yaw: F, heading_gain: float) -> F:
    """(N, 3) the walking policy's command: the course's speed in its range, steering to the course's heading."""
    out = np.array(command, dtype=np.float64)
    out[:, 0] = np.clip(out[:, 0], *WALKER_VX)
    out[:, 2] = np.clip(-heading_gain * quat.wrap(yaw), -WALKER_YAW_RATE, WALKER_YAW_RATE)
    return out


_GRID = scan_grid()


def teacher_observation(
    walker: WalkTeacher, q: F, dq: F, root_pos: F, root_quat: F, gyro: F, command: F, last_action: F, phase: F,
    boxes: tuple[F, F, F, Ints], heading_gain: float,
) -> tuple[NDArray[np.float32], F]:  # fmt: skip
    """The actor's observation (N, D) and the walking policy's action (N, J), from the robot's state, the
    course's command along +x, the action last sent, the gait phase and the boxes (centres, half sizes,
    yaws, count): what the training env and the evaluation's privileged teacher both compute."""
    box_center, box_half, box_yaw, num_boxes = boxes
    yaw = quat.yaw(root_quat)
    walker_obs = walker.observe(q, dq, root_quat, gyro, walker_command(command, yaw, heading_gain), last_action, phase)
    walker_action = walker.action(walker_obs)
    points = scan_points_world(root_pos, root_quat, _GRID)
    scan = root_pos[:, 2:3] - terrain_height(box_center, box_half, box_yaw, points)
    heading = np.stack([np.cos(yaw), np.sin(yaw)], axis=-1)
    nxt = next_box(root_pos, yaw, box_center, box_half, box_yaw, num_boxes)
    obs = np.concatenate([walker_obs, walker_action, command[:, :1], heading, scan, nxt], axis=-1)
    return obs.astype(np.float32), walker_action


@dataclass(frozen=True)
class ClimbConfig:
    num_envs: int = 64
    physics_dt_s: float = 0.002
    decimation: int = 10
    nthread: int = 2
    seed: int = 0
    backend: str = "mujoco_cpu"  # training.envs.physics: mujoco_cpu or mujoco_warp
    device: str = "cpu"  # mujoco_warp's device
    boxes: int = 2
    flat_fraction: float = 0.1
    first_m: tuple[float, float] = (1.0, 3.0)
    spacing_m: tuple[float, float] = (2.5, 3.5)
    depth_m: float = 0.8
    width_m: float = 3.0
    yaw_deg: float = 20.0
    levels: tuple[float, ...] = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40)
    height_jitter_m: float = 0.025
    start_level: int = 0
    speed_mps: tuple[float, float] = (0.3, 1.5)
    beyond_m: float = 1.5  # past the last box's far face: the course is done (as the eval's success)
    slack_s: float = 6.0  # episode time limit: the course at the commanded speed plus this
    max_episode_s: float = 20.0
    residual_scale: float = 1.0
    residual_on: str = "lower_body"
    # True: targets the supervisor would refuse end the episode as a failure (on the robot it takes over);
    # False: they are only penalised (``weights.target_limits``), and counted.
    refusal_ends_episode: bool = True
    heading_gain: float = 1.0  # the walking policy's yaw-rate command per rad of heading error
    heading_noise_rad: float = 0.1
    fall_height_m: float = 0.45  # base above the terrain under it and above the lower sole
    fall_tilt_rad: float = 1.0
    lane_half_width_m: float = 1.5
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    weights: rewards.Weights = field(default_factory=rewards.Weights)


class ClimbEnv:
    """See the module docstring. ``step(residual) -> obs, reward, done, info``; obs groups ``policy``, ``critic``."""

    def __init__(self, cfg: ClimbConfig) -> None:
        self.cfg = cfg
        n = self.num_envs = cfg.num_envs
        self.robot = G1
        self.walker = WalkTeacher(n)
        self.residual_joints = np.array(RESIDUAL_JOINTS[cfg.residual_on])
        self.num_actions = len(self.residual_joints)
        self.dt_s = cfg.physics_dt_s * cfg.decimation
        self.max_episode_length = round(cfg.max_episode_s / self.dt_s)
        self.kp, self.kd = self.walker.kp, self.walker.kd
        self.sim = make_physics(
            cfg.backend, n, self.robot, cfg.device, physics_dt_s=cfg.physics_dt_s, decimation=cfg.decimation,
            kp=self.kp, kd=self.kd, max_boxes=cfg.boxes, nthread=cfg.nthread,
        )  # fmt: skip
        self.q_min = np.array([j.q_min for j in self.robot.joints])
        self.q_max = np.array([j.q_max for j in self.robot.joints])
        self.sim.target_bounds = supervision.clamp_bounds(self.q_min, self.q_max)
        self.default_q = self.walker.default_q
        self.action_scale = float(self.walker.manifest.action_scale)
        self.action_clip = float(self.walker.manifest.action_clip)
        self.feet = np.array([self.sim.base_model.body(b).id for b in FEET])
        self.feet_and_shins = np.array([self.sim.base_model.body(b).id for b in FEET + SHINS])
        self.randomizer = ModelRandomizer(self.sim.base_model, self.robot.torso_body)
        self.rng = np.random.default_rng([cfg.seed, 37])
        self.pushes = Pushes(cfg.randomization, n, self.rng)
        self.physics = draw_physics(cfg.randomization, n, self.rng)
        self.gait = GaitClock(float(self.walker.manifest.gait_period_s), self.dt_s, batch=n)
        b = cfg.boxes
        self.box_center = np.zeros((n, b, 3))
        self.box_half = np.full((n, b, 3), -1.0)  # privileged.NO_BOX: a padding slot covers nothing
        self.box_yaw = np.zeros((n, b))
        self.num_boxes = np.zeros(n, dtype=np.int64)
        self.passed = np.zeros((n, b), dtype=bool)
        self.level = np.full(n, cfg.start_level, dtype=np.int64)
        self.command = np.zeros((n, 3))
        self.course_end_m = np.zeros(n)
        self.time_limit = np.zeros(n, dtype=np.int64)
        self.steps = np.zeros(n, dtype=np.int64)
        self.last_action = np.zeros((n, self.robot.num_joints))  # what the motors were sent (walker + residual)
        self.residual = np.zeros((n, self.num_actions))
        self.prev_residual = np.zeros((n, self.num_actions))
        self.walker_action = np.zeros((n, self.robot.num_joints))
        self.target_excess = np.zeros((n, self.robot.num_joints))
        self.reset(np.arange(n))
        self.gait.advance(self.command)  # the runtime's first tick advances the clock before it observes

    def close(self) -> None:
        self.sim.close()

    @property
    def heights(self) -> F:
        return np.asarray(self.cfg.levels)

    # -- episodes ----------------------------------------------------------------------------

    def course(self, i: int, level: int) -> Terrain:
        """Environment ``i``'s boxes at ``level`` (none on a flat episode), straight ahead of the origin."""
        c, rng = self.cfg, self.rng
        if rng.random() < c.flat_fraction:
            return Terrain()
        k = c.boxes
        heights = np.maximum(self.heights[level] + rng.uniform(-c.height_jitter_m, c.height_jitter_m, k), 0.02)
        near = rng.uniform(*c.first_m) + np.concatenate([[0.0], np.cumsum(rng.uniform(*c.spacing_m, k - 1))])
        yaw = np.deg2rad(rng.uniform(-c.yaw_deg, c.yaw_deg, k))
        center = np.stack([near + c.depth_m / 2, np.zeros(k), heights / 2], axis=-1)
        half = np.stack([np.full(k, c.depth_m / 2), np.full(k, c.width_m / 2), heights / 2], axis=-1)
        return Terrain(center, half, yaw)

    def reset(self, ids: Ints) -> None:
        c, rng = self.cfg, self.rng
        physics = draw_physics(c.randomization, len(ids), rng)
        for k, i in enumerate(ids):
            i = int(i)
            self.randomizer.apply(self.sim, int(i), physics, k)
            for f in fields(PhysicsDraw):
                getattr(self.physics, f.name)[i] = getattr(physics, f.name)[k]
            terrain = self.course(i, int(self.level[i]))
            self._set_terrain(i, terrain)
            heading = quat.from_yaw(rng.uniform(-c.heading_noise_rad, c.heading_noise_rad))
            root = np.array([0.0, 0.0, self.robot.standing_base_height_m])
            zero = np.zeros(3)
            self.sim.set_state(i, root, heading, self.default_q, zero, zero, np.zeros(self.robot.num_joints))
        speed = rng.uniform(*c.speed_mps, len(ids))
        self.command[ids] = np.stack([speed, np.zeros(len(ids)), np.zeros(len(ids))], axis=-1)
        last_far = np.array([self._last_far_face(int(i)) for i in ids])
        self.course_end_m[ids] = last_far + c.beyond_m
        limit_s = np.minimum(self.course_end_m[ids] / speed + c.slack_s, c.max_episode_s)
        self.time_limit[ids] = np.round(limit_s / self.dt_s).astype(np.int64)
        self.steps[ids] = 0
        self.passed[ids] = False
        self.last_action[ids] = 0.0
        self.residual[ids] = 0.0
        self.prev_residual[ids] = 0.0
        self.gait.reset(ids)
        self.pushes.reset(ids, self.sim.time_s[ids])

    def _set_terrain(self, i: int, terrain: Terrain) -> None:
        self.sim.set_terrain(i, terrain)
        b = len(terrain)
        self.num_boxes[i] = b
        self.box_center[i], self.box_half[i], self.box_yaw[i] = 0.0, -1.0, 0.0
        self.box_center[i, :b], self.box_half[i, :b], self.box_yaw[i, :b] = (
            terrain.center,
            terrain.half_size,
            terrain.yaw,
        )

    def _last_far_face(self, i: int) -> float:
        """x of environment ``i``'s last box's far face on the course's line; on flat ground, where the far
        face of a box at the farthest first position would be."""
        b = int(self.num_boxes[i])
        if b == 0:
            return self.cfg.first_m[1] + self.cfg.depth_m
        return float(self.box_center[i, b - 1, 0] + self.box_half[i, b - 1, 0])

    # -- reading -----------------------------------------------------------------------------

    def along_box(self, xy: F) -> F:
        return along_box(xy, self.box_center, self.box_yaw)

    def state(self) -> rewards.State:
        s = self.sim
        root_quat, root_pos = s.root_quat, s.root_pos
        yaw = quat.yaw(root_quat)
        v = s.root_lin_vel_w
        feet_pos = s.bodies(self.feet)[0]
        under = terrain_height(self.box_center, self.box_half, self.box_yaw, root_pos[:, None, :2])[:, 0]
        feet_ground = terrain_height(self.box_center, self.box_half, self.box_yaw, feet_pos[..., :2])
        on_top = (feet_ground > 0.0) & (feet_pos[..., 2] - ANKLE_ABOVE_SOLE_M - feet_ground < 0.03)
        targets = self.default_q + self.action_scale * np.clip(self.last_action, -self.action_clip, self.action_clip)
        bounds = self.sim.target_bounds
        assert bounds is not None
        torque = self.kp * (np.clip(targets, *bounds) - s.q) - self.kd * s.dq
        torque = np.clip(torque, -self.sim.tau_limit, self.sim.tau_limit)
        # Above the terrain under the base, or above the lower sole if that is higher: a base over a box top
        # while the feet are still on the floor in front of it has not fallen.
        above_sole = root_pos[:, 2] - (feet_pos[..., 2].min(axis=1) - ANKLE_ABOVE_SOLE_M)
        return rewards.State(
            root_pos=root_pos, yaw=yaw, gravity=projected_gravity(root_quat), lin_vel_w=v, ang_vel_b=s.gyro,
            height_above_m=np.maximum(root_pos[:, 2] - under, above_sole),
            feet_on_top=on_top.sum(axis=1).astype(np.float64), torque=torque,
            leg_face_contacts=s.box_face_contacts(self.feet_and_shins),
        )  # fmt: skip

    def next_box(self, root_pos: F, yaw: F) -> F:
        return next_box(root_pos, yaw, self.box_center, self.box_half, self.box_yaw, self.num_boxes)

    def observe(self) -> dict[str, NDArray[np.float32]]:
        s = self.sim
        root_pos, root_quat = s.root_pos, s.root_quat
        boxes = (self.box_center, self.box_half, self.box_yaw, self.num_boxes)
        policy, self.walker_action = teacher_observation(
            self.walker, s.q, s.dq, root_pos, root_quat, s.gyro, self.command, self.last_action, self.gait.phase,
            boxes, self.cfg.heading_gain,
        )  # fmt: skip
        yaw = quat.yaw(root_quat)
        v = s.root_lin_vel_w
        c, sn = np.cos(yaw), np.sin(yaw)
        v_heading = np.stack([c * v[:, 0] + sn * v[:, 1], -sn * v[:, 0] + c * v[:, 1], v[:, 2]], axis=-1)
        under = terrain_height(self.box_center, self.box_half, self.box_yaw, root_pos[:, None, :2])[:, 0]
        extra = np.concatenate([v_heading, (root_pos[:, 2] - under)[:, None]], axis=-1).astype(np.float32)
        return {"policy": policy, "critic": np.concatenate([policy, extra], axis=-1)}

    # -- stepping ----------------------------------------------------------------------------

    def step(self, residual: F) -> tuple[dict[str, NDArray[np.float32]], F, NDArray[np.bool_], dict[str, Any]]:
        """One 50 Hz tick with the learner's residual; ``observe()`` must have run on the current state (it
        computes the walking policy's action), as the task does after every step and reset."""
        c = self.cfg
        self.prev_residual, self.residual = self.residual, np.asarray(residual, dtype=np.float64).copy()
        actions = self.walker_action.copy()
        actions[:, self.residual_joints] += c.residual_scale * self.residual
        actions = np.clip(actions, -self.action_clip, self.action_clip)
        self.last_action = actions
        targets = self.default_q + self.action_scale * actions
        self.target_excess = supervision.target_excess(targets, self.q_min, self.q_max)
        self.sim.step(targets, self.pushes.forces(self.sim.time_s))
        self.steps += 1
        st = self.state()
        before = self.passed.copy()
        along = self.along_box(st.root_pos[:, :2])
        present = np.arange(c.boxes) < self.num_boxes[:, None]
        self.passed |= present & (along > self.box_half[..., 0])
        newly = self.passed & ~before
        terms = rewards.terms(st, self.context(), newly.sum(axis=1))
        tilt = np.arccos(np.clip(-st.gravity[:, 2], -1.0, 1.0))
        fell = (st.height_above_m < c.fall_height_m) | (tilt > c.fall_tilt_rad)
        would_refuse = supervision.refused(self.target_excess)
        refused = would_refuse & ~fell & c.refusal_ends_episode
        left_lane = (np.abs(st.root_pos[:, 1]) > c.lane_half_width_m) & ~fell & ~refused
        # Done with the course: ``beyond_m`` past the last box's far face along its axis (the eval's success).
        last = np.maximum(self.num_boxes - 1, 0)
        rows = np.arange(self.num_envs)
        beyond_last = along[rows, last] > self.box_half[rows, last, 0] + c.beyond_m
        finished = np.where(self.num_boxes > 0, beyond_last, st.root_pos[:, 0] > self.course_end_m)
        finished &= ~fell & ~refused & ~left_lane
        timed_out = (self.steps >= self.time_limit) & ~fell & ~refused & ~left_lane & ~finished
        terms["fall"] = (fell | refused | left_lane).astype(np.float64)
        reward = rewards.total(terms, c.weights, self.dt_s)
        done = fell | refused | left_lane | finished | timed_out
        all_passed = self.passed.sum(axis=1) >= self.num_boxes
        info: dict[str, Any] = {
            "fell": fell, "refused": refused, "would_refuse": would_refuse, "left_lane": left_lane,
            "finished": finished,
            "time_outs": finished | timed_out, "terms": terms,
            "newly_passed_heights": 2.0 * self.box_half[..., 2][newly],
            "speed_along": st.lin_vel_w[:, 0].copy(), "command": self.command.copy(),
            "flat": self.num_boxes == 0, "level": self.level.copy(), "episode_s": self.steps * self.dt_s,
            "course_done": done & (self.num_boxes > 0), "course_success": done & all_passed & (self.num_boxes > 0),
        }  # fmt: skip
        ids = np.flatnonzero(done)
        if len(ids):
            # The box being attempted when an episode failed: the first one not passed.
            attempting = np.argmax(~self.passed, axis=1)
            failed = done & ~all_passed & (self.num_boxes > 0)
            rows = np.flatnonzero(failed & (fell | refused | left_lane))
            info["fell_heights"] = 2.0 * self.box_half[rows, attempting[rows], 2]
            self.update_levels(ids, all_passed[ids], (fell | refused | left_lane)[ids], self.passed[ids].sum(axis=1))
            self.reset(ids)
        else:
            info["fell_heights"] = np.zeros(0)
        self.gait.advance(self.command)  # on the command the next observation carries
        return self.observe(), reward, done, info

    def context(self) -> rewards.Context:
        return rewards.Context(
            command=self.command, residual=self.residual, prev_residual=self.prev_residual,
            target_excess=self.target_excess, first_step=self.steps == 1,
        )  # fmt: skip

    def update_levels(self, ids: Ints, succeeded: NDArray[np.bool_], failed: NDArray[np.bool_], passed: Ints) -> None:
        """legged_gym's terrain curriculum, judged on the course: up on passing every box, down on a fall or
        on passing fewer than half; a success at the top level draws a random level."""
        top = len(self.cfg.levels) - 1
        flat = self.num_boxes[ids] == 0
        short = passed < np.ceil(self.num_boxes[ids] / 2)
        up = succeeded & ~flat
        down = (failed | short) & ~succeeded & ~flat
        level = self.level[ids] + up.astype(np.int64) - down.astype(np.int64)
        wrap = up & (self.level[ids] >= top)
        level = np.where(wrap, self.rng.integers(0, top + 1, len(ids)), level)
        self.level[ids] = np.clip(level, 0, top)

    # -- exact resume ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        states = self.sim.get_states()
        arrays = ("box_center", "box_half", "box_yaw", "num_boxes", "passed", "level", "command", "course_end_m",
                  "time_limit", "steps", "last_action", "residual", "prev_residual")  # fmt: skip
        return {
            "rng": self.rng.bit_generator.state,
            "mujoco_state": states,
            "physics": {f.name: getattr(self.physics, f.name).copy() for f in fields(PhysicsDraw)},
            "pushes": {
                "start_s": self.pushes.start_s.copy(),
                "end_s": self.pushes.end_s.copy(),
                "force": self.pushes.force.copy(),
            },
            "gait": {"phase": self.gait.phase.copy(), "standing": self.gait._standing.copy()},
            **{name: np.array(getattr(self, name)) for name in arrays},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        for name, value in state["physics"].items():
            getattr(self.physics, name)[:] = value
        for name in ("start_s", "end_s", "force"):
            getattr(self.pushes, name)[:] = state["pushes"][name]
        self.gait.phase[:] = state["gait"]["phase"]
        self.gait._standing[:] = state["gait"]["standing"]
        for name in ("box_center", "box_half", "box_yaw", "num_boxes", "passed", "level", "command", "course_end_m",
                     "time_limit", "steps", "last_action", "residual", "prev_residual"):  # fmt: skip
            getattr(self, name)[:] = state[name]
        s = self.sim
        for i in range(self.num_envs):
            self.randomizer.apply(s, i, self.physics, i)
            b = int(self.num_boxes[i])
            s.set_terrain(i, Terrain(self.box_center[i, :b].copy(), self.box_half[i, :b].copy(),
                                     self.box_yaw[i, :b].copy()))  # fmt: skip
        s.set_states(state["mujoco_state"])
