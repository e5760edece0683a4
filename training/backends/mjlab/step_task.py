"""The ``student_step`` task on mjlab: PHP's hybrid DAgger + PPO on a course of low platforms (stage 2),
on MuJoCo-Warp, through OUR runner.

Runs inside ``.venv-mjlab`` only (``parkour train run --config student_step[_tiny] --backend mjlab
[--device cuda]``, which runs ``smoke.py`` there). The learner is the ``mujoco_cpu`` task's, unchanged:
:class:`training.rl.runner.Runner` with :class:`~training.rl.algorithms.HybridPPO`, the student
:class:`~training.rl.models.DepthRecurrentModel` and its asymmetric MLP critic, the train config, the
success gate, the curriculum and the choice of exported weights inherited from
:class:`training.tasks.student_step.task.StepTask`. The env is :mod:`walk_task`'s (mjlab's G1 under the
walking policy's PD, the same actions, camera, randomization, pushes and falls, and the differences
from the CPU task it lists) made :class:`training.tasks.student_step.env.StepEnv`: the terrain
(:func:`tile_pool`, :class:`StepEpisodes`), command (``StepCommand``), observation groups
(:func:`observation_cfgs`), reward (:class:`step_reward`) and the supervisor's limits
(:func:`supervisor_clip`) each say where they differ from the CPU task, and why.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import torch

from parkour_core.bundle import Manifest, as_array
from parkour_core.robots import G1
from training.backends.mjlab import policy_terms, step_terms, walk_task
from training.backends.mjlab.depth import camera_sensor_cfg
from training.backends.mjlab.student_bundle import walk_manifest
from training.configs.schema import TrainConfig
from training.envs.privileged import NO_BOX
from training.envs.supervision import SUPERVISOR, clamp_bounds
from training.rl.models import DEPTH_GROUP, TEACHER_GROUP, DepthRecurrentModel
from training.rl.runner import Runner
from training.tasks.student_step.env import CourseConfig, StepReward
from training.tasks.student_step.task import StepTask, course_config
from training.tasks.student_step.teacher import FEET, ReflexConfig
from training.tasks.student_walk.bundle import keep_calibration_frame
from training.tasks.student_walk.env import CommandConfig, TerrainConfig, platform_course
from training.tasks.student_walk.task import walk_config
from training.tasks.student_walk.teacher import TEACHER_PROVENANCE, WALK_BUNDLE

TILE_SIZE_M = (22.0, 6.0)
TILE_ROWS, TILE_COLS = 8, 8
WALK_TILE_SHARE = 0.25
PRIVILEGED_GROUP = "privileged"
BOX_SLOTS = 4  # the most boxes on a tile: WalkEnv's gentle course


# ----------------------------------------------------------------------------- the tile pool


@dataclass(frozen=True)
class TilePool:
    """Every tile's boxes in its course frame (the robot starts at the origin facing +x), tile ``t`` at
    row ``t // cols``, column ``t % cols`` of mjlab's terrain generator."""

    rows: int
    cols: int
    center: np.ndarray  # (T, BOX_SLOTS, 3), padding slots with half size NO_BOX
    half: np.ndarray
    yaw: np.ndarray  # (T, BOX_SLOTS)
    heights: np.ndarray  # (T, platforms): a course's platform heights (0 on walk tiles)
    courses: np.ndarray  # course tile ids, lowest highest platform first
    walks: np.ndarray  # walk tile ids

    def top(self) -> np.ndarray:
        return self.heights.max(axis=1)


def tile_pool(course: CourseConfig, walk: TerrainConfig, seed: int, rows: int = TILE_ROWS, cols: int = TILE_COLS):
    """A pool of ``rows x cols`` tiles drawn once from ``seed``: a quarter walk tiles, the rest courses.

    Walk tiles are stage 1's (flat, or ``WalkEnv``'s gentle platforms, half each); course tiles are
    ``platform_course`` with ``course.platforms`` platforms of ``course.layout``. The CPU env draws each
    course's heights from U[min, cap] at its reset, with the cap raised by the curriculum; mjlab's terrain
    is static, so course tile ``k`` of ``K`` draws its heights from U[min, cap_k], ``cap_k`` spread evenly
    over (min, max] (:class:`StepEpisodes` picks among them). The heights thus come from a finite pool
    (48 courses at the default 8 x 8) stratified by cap: at a cap they are a mixture of U[min, cap_k] for
    the tiles with ``cap_k`` up to about the cap, a little lower on average than the CPU env's U[min, cap].
    Tiles are 22 m long: a course episode at 1 m/s for 20 s stays on its tile.
    """
    rng = np.random.default_rng([seed, 23])
    t = rows * cols
    n_walk = max(1, round(WALK_TILE_SHARE * t))
    k = t - n_walk
    p = course.platforms
    center, half, yaw = np.zeros((t, BOX_SLOTS, 3)), np.full((t, BOX_SLOTS, 3), NO_BOX), np.zeros((t, BOX_SLOTS))
    heights = np.zeros((t, p))
    caps = course.min_height_m + (course.max_height_m - course.min_height_m) * np.arange(1, k + 1) / k
    for i in range(t):
        if i < k:
            heights[i] = rng.uniform(course.min_height_m, caps[i], p)
            boxes = platform_course(rng, course.layout, heights[i])
        elif walk.boxes and (i - k) % 2:
            boxes = platform_course(rng, walk, rng.uniform(*walk.height_m, walk.boxes))
        else:
            continue
        b = len(boxes)
        center[i, :b], half[i, :b], yaw[i, :b] = boxes.center, boxes.half_size, boxes.yaw
    # Tiles shuffled over the field so the courses' heights do not grow along one axis of it.
    where = rng.permutation(t)
    order = np.argsort(where)
    courses = where[np.argsort(heights[:k].max(axis=1), kind="stable")]
    return TilePool(rows, cols, center[order], half[order], yaw[order], heights[order], courses, where[k:])


def terrain_cfg(pool: TilePool, seed: int):
    """mjlab's generator in curriculum mode: column ``c`` is one sub-terrain, its row ``r`` tile ``r cols + c``."""
    from mjlab.terrains import TerrainEntityCfg
    from mjlab.terrains.terrain_generator import SubTerrainCfg, TerrainGeneratorCfg, TerrainGeometry, TerrainOutput
    from mjlab.terrains.utils import make_plane

    @dataclass(kw_only=True)
    class CourseColumnCfg(SubTerrainCfg):
        column: int = 0

        def function(self, difficulty, spec, rng) -> TerrainOutput:
            row = round(difficulty * (pool.rows - 1))  # the curriculum generator's difficulty is row / (rows - 1)
            tile = row * pool.cols + self.column
            body = spec.body("terrain")
            geoms = [TerrainGeometry(geom=make_plane(body, self.size, 0.0, center_zero=False)[0])]
            ox, oy = walk_task.TILE_START_X_M, self.size[1] / 2.0
            for c, h, y in zip(pool.center[tile], pool.half[tile], pool.yaw[tile], strict=True):
                if h[0] <= 0.0:
                    continue
                g = body.add_geom(
                    type=mujoco.mjtGeom.mjGEOM_BOX, size=tuple(h), group=walk_task.TERRAIN_GROUP,
                    pos=(ox + c[0], oy + c[1], c[2]), quat=(math.cos(y / 2.0), 0.0, 0.0, math.sin(y / 2.0)),
                )  # fmt: skip
                geoms.append(TerrainGeometry(geom=g))
            return TerrainOutput(origin=np.array([ox, oy, 0.0]), geometries=geoms)

    sub = {f"col{c}": CourseColumnCfg(proportion=1.0, size=TILE_SIZE_M, column=c) for c in range(pool.cols)}
    generator = TerrainGeneratorCfg(
        seed=seed, curriculum=True, size=TILE_SIZE_M, border_width=walk_task.BORDER_M, border_height=1.0,
        num_rows=pool.rows, num_cols=pool.cols, color_scheme="none", sub_terrains=sub, difficulty_range=(0.0, 1.0),
    )  # fmt: skip
    return TerrainEntityCfg(terrain_type="generator", terrain_generator=generator, max_init_terrain_level=None)


# ----------------------------------------------------------------------------- episodes: tile, kind, command


class StepEpisodes:
    """A reset event: each new episode's kind and tile (StepEnv.place_terrain), its course state.

    A walk episode with probability ``course.walk_fraction`` starts on a walk tile; a course episode starts
    on a tile drawn uniformly from those whose highest platform is at most the curriculum's cap in force
    (the lowest tile if none is).
    """

    def __init__(self, cfg, env) -> None:
        p = cfg.params
        self.pool: TilePool = p["pool"]
        self.course: CourseConfig = p["course"]
        dev, n = env.device, env.num_envs
        f = lambda a: torch.as_tensor(a, dtype=torch.float32, device=dev)  # noqa: E731
        pool = self.pool
        self.center, self.half, self.yaw, self.tile_heights = f(pool.center), f(pool.half), f(pool.yaw), f(pool.heights)
        self.course_top = f(pool.top()[pool.courses])
        self.courses = torch.as_tensor(pool.courses, device=dev)
        self.walks = torch.as_tensor(pool.walks, device=dev)
        self.height_cap_m = self.course.max_height_m  # StepTask.before_iteration sets it
        self.generator = torch.Generator(device=dev).manual_seed(int(p["seed"]) * 1000 + 23)
        self.tile = torch.zeros(n, dtype=torch.long, device=dev)
        self.on_course = torch.zeros(n, dtype=torch.bool, device=dev)
        self.was_course = torch.zeros(n, dtype=torch.bool, device=dev)
        self.cleared = torch.zeros((n, self.course.platforms), dtype=torch.bool, device=dev)
        self.device = dev
        env._step_episodes = self

    def __call__(self, env, env_ids, **params) -> None:
        ids = env_ids.to(self.device).long()
        k = len(ids)
        u = torch.rand((2, k), generator=self.generator, device=self.device)
        walk = u[0] < self.course.walk_fraction
        eligible = int((self.course_top <= self.height_cap_m + 1e-9).sum().clamp(min=1))
        course_tile = self.courses[(u[1] * eligible).long().clamp(max=eligible - 1)]
        walk_tile = self.walks[(u[1] * len(self.walks)).long().clamp(max=len(self.walks) - 1)]
        tile = torch.where(walk, walk_tile, course_tile)
        self.was_course[ids] = self.on_course[ids]
        self.tile[ids] = tile
        self.on_course[ids] = ~walk
        self.cleared[ids] = False
        terrain = env.scene.terrain
        row, col = tile // self.pool.cols, tile % self.pool.cols
        terrain.terrain_levels[ids], terrain.terrain_types[ids] = row, col
        terrain.env_origins[ids] = terrain.terrain_origins[row, col]

    def reset(self, env_ids=None) -> None:
        pass

    def heights(self) -> torch.Tensor:
        return torch.where(self.on_course[:, None], self.tile_heights[self.tile], 0.0)

    def boxes(self, slots: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each environment's tile boxes (the first ``slots``): centres, half sizes, yaws."""
        s = slice(None) if slots is None else slice(0, slots)
        return self.center[self.tile, s], self.half[self.tile, s], self.yaw[self.tile, s]


def _episodes(env) -> StepEpisodes:
    return env._step_episodes


def command_cfg(manifest: Manifest, command: CommandConfig, course: CourseConfig, seed: int):
    from mjlab.managers.command_manager import CommandTerm, CommandTermCfg

    class StepCommand(CommandTerm):
        """WalkEnv's command on walk episodes, StepEnv's held (vx, 0, 0) on course episodes; the gait clock.

        Walk episodes resample their command every 4 s and after a fall; course episodes hold
        (U[0.5, 1], 0, 0) for the whole episode.
        """

        def __init__(self, cfg, env) -> None:
            super().__init__(cfg, env)
            self.vel = torch.zeros((self.num_envs, 3), device=self.device)
            self.age_s = torch.zeros(self.num_envs, device=self.device)
            self.generator = torch.Generator(device=self.device).manual_seed(seed * 1000 + 13)
            self.clock = policy_terms.GaitClock(manifest.gait_period_s, env.step_dt, self.num_envs, self.device)

        @property
        def command(self) -> torch.Tensor:
            return self.vel

        @property
        def phase(self) -> torch.Tensor:
            return self.clock.phase

        def _uniform(self, k: int, lo: float, hi: float) -> torch.Tensor:
            return lo + (hi - lo) * torch.rand(k, generator=self.generator, device=self.device)

        def resample(self, ids: torch.Tensor) -> None:
            ids = ids[~_episodes(self._env).on_course[ids]]  # a course's command is held for its episode
            k, c = len(ids), command
            if k == 0:
                return
            cmd = torch.stack([self._uniform(k, *c.vx), self._uniform(k, *c.vy), self._uniform(k, *c.yaw_rate)], -1)
            zero = torch.rand(k, generator=self.generator, device=self.device) < c.zero_fraction
            self.vel[ids] = torch.where(zero[:, None], torch.zeros_like(cmd), cmd)
            self.age_s[ids] = 0.0

        def reset(self, env_ids) -> dict[str, float]:
            episodes = _episodes(self._env)
            ids = env_ids.to(self.device).long()
            fell = self._env.termination_manager.terminated[ids]
            fresh = ids[(fell | episodes.was_course[ids]) | (self._env.episode_length_buf[ids] == 0)]
            self.resample(fresh)
            course = ids[episodes.on_course[ids]]
            if len(course):
                vx = self._uniform(len(course), *course_speed)
                self.vel[course] = torch.stack([vx, torch.zeros_like(vx), torch.zeros_like(vx)], -1)
                self.age_s[course] = -math.inf
            self.clock.reset(ids)
            return {}

        def compute(self, dt, env_ids=None) -> None:
            if env_ids is None:  # a policy tick: WalkEnv.step_walk's age and resampling, then every clock
                self.age_s += self._env.step_dt
                self.resample((self.age_s >= command.resample_s).nonzero().flatten())
                self.clock.advance(self.vel)
            else:
                self.clock.advance(self.vel[env_ids], env_ids)

        def _update_metrics(self) -> None:
            pass

        def _resample_command(self, env_ids) -> None:
            pass

        def _update_command(self, env_ids) -> None:
            pass

    @dataclass(kw_only=True)
    class StepCommandCfg(CommandTermCfg):
        def build(self, env):
            return StepCommand(self, env)

    course_speed = course.speed_mps
    return StepCommandCfg(resampling_time_range=(1e9, 1e9))


# ----------------------------------------------------------------------------- observations


def _root(env) -> tuple[torch.Tensor, torch.Tensor]:
    """qpos and qvel of the free joint: the state after the step, not kinematics one substep stale."""
    robot = walk_task._robot(env)
    d = env.sim.data
    return d.qpos[:, robot.indexing.free_joint_q_adr], d.qvel[:, robot.indexing.free_joint_v_adr]


class step_teacher_actions:  # lower case: mjlab's class-based terms read as functions
    """StepTeacher.act in torch: the walking policy's actions plus the step-up reflex over the tile's boxes."""

    def __init__(self, cfg, env) -> None:
        self.walker = walk_task.teacher_actions(cfg, env)
        robot = walk_task._robot(env)
        self.feet = robot.find_bodies(FEET, preserve_order=True)[0]
        self.action_scale = float(self.walker.manifest.action_scale)
        self.last_lift = torch.zeros((env.num_envs, 2), device=env.device)

    def __call__(self, env, bundle: str, command_gain: float = 1.0, supervisor_limits: bool = False) -> torch.Tensor:
        actions = self.walker(env, bundle, command_gain)
        robot = walk_task._robot(env)
        origin = env.scene.env_origins[:, None, :]
        foot_pos = robot.data.body_link_pos_w[:, self.feet] - origin
        foot_vel = robot.data.body_link_lin_vel_w[:, self.feet]
        center, half, yaw = _episodes(env).boxes()
        self.last_lift = step_terms.lift_angles(foot_pos, foot_vel, robot.data.root_link_lin_vel_w, center, half, yaw,
                                                ReflexConfig())  # fmt: skip
        actions = actions + step_terms.reflex_offsets(self.last_lift, self.action_scale)
        if not supervisor_limits:
            return actions
        limits = _limits(env, self.walker.manifest)
        return step_terms.supervised_actions(actions, limits.default_q, limits.action_scale, limits.low, limits.high)

    def reset(self, env_ids=None) -> None:
        pass


@dataclass(frozen=True)
class _Limits:
    default_q: torch.Tensor
    action_scale: float
    q_min: torch.Tensor
    q_max: torch.Tensor
    low: torch.Tensor  # where the supervisor clamps the targets
    high: torch.Tensor


def _joint_limits(manifest: Manifest) -> tuple[np.ndarray, np.ndarray]:
    """The G1's joint limits (q_min, q_max) in the manifest's joint order."""
    joints = {j.name: j for j in G1.joints}
    return (np.array([joints[n].q_min for n in manifest.joint_names]),
            np.array([joints[n].q_max for n in manifest.joint_names]))  # fmt: skip


def supervisor_clip(manifest: Manifest) -> dict[str, tuple[float, float]]:
    """Per joint, where the supervisor clamps its target: ``joint_margin_rad`` inside the joint's limits.

    With ``course.supervisor_limits`` the action term clamps the targets here, the teacher's labels are
    clamped the same (:func:`step_terms.supervised_actions`), and targets the supervisor would refuse end
    the episode as a fall (:func:`term_refused`), as ``StepEnv`` does.
    """
    low, high = clamp_bounds(*_joint_limits(manifest))
    return {n: (float(lo), float(hi)) for n, lo, hi in zip(manifest.joint_names, low, high, strict=True)}


def _limits(env, manifest: Manifest) -> _Limits:
    """The joint limits and the supervisor's clamp in the manifest's joint order, on the env's device."""
    cached = getattr(env, "_supervisor_limits", None)
    if cached is None:
        t = lambda v: torch.tensor(np.asarray(v, dtype=np.float32), device=env.device)  # noqa: E731
        q_min, q_max = _joint_limits(manifest)
        low, high = clamp_bounds(q_min, q_max)
        cached = _Limits(t(as_array(manifest.default_joint_pos)), float(manifest.action_scale), t(q_min), t(q_max),
                         t(low), t(high))  # fmt: skip
        env._supervisor_limits = cached
    return cached


def term_refused(env, manifest: Manifest) -> torch.Tensor:
    """``StepEnv.refused``: the policy's targets past a joint limit by more than the supervisor's tolerance."""
    lim = _limits(env, manifest)
    return step_terms.refused(env.action_manager.action, lim.default_q, lim.action_scale, lim.q_min, lim.q_max,
                              SUPERVISOR.target_limit_tolerance_rad)  # fmt: skip


def _six_d(q: torch.Tensor) -> torch.Tensor:
    """training.envs.privileged.six_d: the rotation matrix's first two columns."""
    w, x, y, z = q.unbind(-1)
    c0 = torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)], -1)
    c1 = torch.stack([2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)], -1)
    return torch.cat([c0, c1], -1)


def _rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """v (world) in the frame of unit quaternion q."""
    w, u = q[:, :1], -q[:, 1:]
    t = 2.0 * torch.linalg.cross(u, v)
    return v + w * t + torch.linalg.cross(u, t)


def privileged_obs(env, manifest: Manifest, anchor_height_m: float) -> torch.Tensor:
    """The CPU env's privileged observation (PRIVILEGED_TERMS' order) of its standing reference, in torch.

    The reference pelvis the ``anchor_*`` terms compare against stands at mjlab's G1 standing height
    (``anchor_height_m``), not holosoma's.
    """
    from mjlab.envs import mdp as envs_mdp

    from training.backends.mjlab.terrain import SCAN_SENSOR

    robot = walk_task._robot(env)
    qpos, qvel = _root(env)
    inp = walk_task.obs_input(env, manifest)
    pos = qpos[:, :3] - env.scene.env_origins
    quat = qpos[:, 3:7]
    n = pos.shape[0]
    zeros = torch.zeros((n, len(G1.joint_names)), device=env.device)
    anchor = torch.zeros_like(pos)
    anchor[:, 2] = anchor_height_m
    conj = torch.cat([quat[:, :1], -quat[:, 1:]], -1)
    del robot
    return torch.cat(
        [
            zeros,  # the reference's joints are the default pose
            zeros,  # and still
            _rotate_inverse(quat, anchor - pos),
            _six_d(conj),
            pos,
            _six_d(quat),
            qvel[:, :3],
            inp.gyro,
            inp.q - inp.default_q,
            inp.dq,
            inp.last_action,
            envs_mdp.height_scan(env, SCAN_SENSOR),
        ],
        -1,
    )


def observation_cfgs(
    manifest: Manifest, anchor_height_m: float, teacher_command_gain: float = 1.0, supervisor_limits: bool = False
):
    """``policy`` and ``depth`` (walk_task's), ``teacher_actions`` and ``privileged``.

    ``teacher_actions``: the walking policy as walk_task's, plus the step-up reflex over the tile's boxes
    (:func:`step_terms.lift_angles`). ``privileged``: the CPU env's 12 privileged terms of its standing
    reference (:mod:`training.envs.privileged`, 290 values) restated in torch, the height scan from the
    PHP teacher's ray-cast sensor (``terrain.height_scan_sensor_cfg``).
    """
    from mjlab.managers.observation_manager import ObservationGroupCfg, ObservationTermCfg

    groups = walk_task.observation_cfgs(manifest)
    group = {"concatenate_terms": True, "enable_corruption": False}
    groups[TEACHER_GROUP] = ObservationGroupCfg(
        terms={
            "step": ObservationTermCfg(
                func=step_teacher_actions,
                params={
                    "bundle": str(WALK_BUNDLE),
                    "command_gain": teacher_command_gain,
                    "supervisor_limits": supervisor_limits,
                },
            )
        },
        **group,
    )
    groups[PRIVILEGED_GROUP] = ObservationGroupCfg(
        terms={"all": ObservationTermCfg(func=privileged_obs,
                                         params={"manifest": manifest, "anchor_height_m": anchor_height_m})},
        **group,
    )  # fmt: skip
    return groups


# ----------------------------------------------------------------------------- reward and terminations


def _time_out(env) -> torch.Tensor:
    return env.episode_length_buf >= env.max_episode_length


def term_left_lane(env, course: CourseConfig) -> torch.Tensor:
    """StepEnv.step_course's lane exit: a course episode's base beyond the lane, unless it fell or timed out.

    Beyond the lane is ``|y| > lane_half_width_m`` in the tile's frame. It ends the episode as a time-out
    (``left_lane``), so rsl_rl bootstraps its value; a fall ends it as a termination.
    """
    qpos, _ = _root(env)
    done = walk_task.term_fell(env) | _time_out(env)
    return step_terms.left_lane(qpos[:, 1] - env.scene.env_origins[:, 1], _episodes(env).on_course, done, course)


class step_reward:  # lower case: mjlab's class-based terms read as functions
    """StepEnv.step_course's reward on the state the step reached; keeps the step's outcome for the task's figures.

    One reward term, unscaled by mjlab (:func:`step_terms.step_reward`). The terminal step's reward is
    computed on the state the step reached, before the reset, where the CPU env reads it after its resets
    (a fallen robot's reward is the fall's on both).
    """

    def __init__(self, cfg, env) -> None:
        self.outcome: step_terms.StepOutcome | None = None
        self.refused = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
        self.heights = torch.zeros((env.num_envs, cfg.params["course"].platforms), device=env.device)

    def __call__(self, env, course: CourseConfig, reward: StepReward, manifest: Manifest) -> torch.Tensor:
        episodes = _episodes(env)
        qpos, qvel = _root(env)
        pos = qpos[:, :3] - env.scene.env_origins
        timed_out = _time_out(env)
        fell = walk_task.term_fell(env) & ~timed_out  # a fall at the time-out is a time-out (WalkEnv.step_walk)
        if course.supervisor_limits:
            self.refused = term_refused(env, manifest) & ~fell & ~timed_out
            fell = fell | self.refused  # a fall, as on the robot, where the supervisor's fallback takes over
        center, half, yaw = episodes.boxes(course.platforms)
        command = env.command_manager.get_command("walk")  # still the one the step was taken under
        self.heights = episodes.heights()
        self.outcome = step_terms.step_reward(
            pos, qpos[:, 3:7], qvel[:, :3], qvel[:, 5], command, episodes.on_course, episodes.cleared, self.heights,
            center, half, yaw, fell, fell | timed_out, env.step_dt, course, reward,
        )  # fmt: skip
        episodes.cleared = self.outcome.cleared
        return self.outcome.reward

    def reset(self, env_ids=None) -> None:
        pass


# ----------------------------------------------------------------------------- the env


def env_cfg(cfg: TrainConfig, manifest: Manifest, pool: TilePool, randomize: bool = True, camera=None):
    from mjlab.envs import ManagerBasedRlEnvCfg
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.event_manager import EventTermCfg
    from mjlab.managers.reward_manager import RewardTermCfg
    from mjlab.managers.termination_manager import TerminationTermCfg
    from mjlab.scene import SceneCfg
    from mjlab.sim import MujocoCfg, SimulationCfg

    from training.backends.mjlab.terrain import height_scan_sensor_cfg

    walk = walk_config(cfg, cfg.env.num_envs, privileged=False)
    camera = camera or walk.camera
    course = course_config(cfg)
    seed = cfg.run.seed
    randomize_physics, pushes = walk_task.randomization_events(walk.randomization, seed)
    events = {
        # before the pose: the pose adds the tile's origin
        "tile": EventTermCfg(func=StepEpisodes, mode="reset", params={"pool": pool, "course": course, "seed": seed}),
        "pose": EventTermCfg(func=envs_mdp.reset_scene_to_default, mode="reset"),
    }
    if randomize:
        events["physics"] = EventTermCfg(func=randomize_physics, mode="reset")
        events["pushes"] = EventTermCfg(func=pushes, mode="step")
    q0 = as_array(manifest.default_joint_pos)
    commands = {
        "walk": command_cfg(manifest, walk.command, course, cfg.run.seed),
        "camera": walk_task.command_cfgs(manifest, camera, walk.command, cfg.run.seed)["camera"],
    }
    return ManagerBasedRlEnvCfg(
        decimation=cfg.env.decimation,
        scene=SceneCfg(
            num_envs=cfg.env.num_envs,
            terrain=terrain_cfg(pool, cfg.run.seed),
            entities={"robot": walk_task.robot_cfg(manifest)},
            sensors=(
                camera_sensor_cfg(G1.camera, camera, (walk_task.TERRAIN_GROUP,)),
                height_scan_sensor_cfg("pelvis"),
            ),
            extent=2.0,
        ),
        observations=observation_cfgs(
            manifest, walk_task.standing_height(q0), cfg.course.teacher_command_gain, course.supervisor_limits
        ),
        actions={
            "joint_pos": walk_task.action_cfg(manifest, supervisor_clip(manifest) if course.supervisor_limits else None)
        },
        commands=commands,
        events=events,
        rewards={
            "step": RewardTermCfg(
                func=step_reward, weight=1.0, params={"course": course, "reward": StepReward(), "manifest": manifest}
            )
        },
        scale_rewards_by_dt=False,  # step_reward scales its rates by the tick itself, as StepEnv
        terminations={
            "time_out": TerminationTermCfg(func=envs_mdp.time_out, time_out=True),
            "fell": TerminationTermCfg(func=walk_task.term_fell),
            "left_lane": TerminationTermCfg(func=term_left_lane, time_out=True, params={"course": course}),
            **(
                {"refused": TerminationTermCfg(func=term_refused, params={"manifest": manifest})}
                if course.supervisor_limits
                else {}
            ),
        },
        sim=SimulationCfg(
            nconmax=64, njmax=400, mujoco=MujocoCfg(timestep=cfg.env.physics_dt_s, iterations=10, ls_iterations=20)
        ),
        episode_length_s=cfg.env.episode_length_s,
        seed=cfg.run.seed,
    )


def make_env(cfg: TrainConfig, device: str, randomize: bool = True, camera=None):
    from mjlab.envs import ManagerBasedRlEnv

    manifest = walk_manifest(cfg)
    if manifest.depth is None or manifest.gait_period_s is None:
        raise ValueError(f"manifest {manifest.name!r}: the step-up student reads depth and a gait clock")
    course = course_config(cfg)
    pool = tile_pool(course, walk_config(cfg, 1).terrain, cfg.run.seed)
    env = ManagerBasedRlEnv(cfg=env_cfg(cfg, manifest, pool, randomize, camera), device=device)
    return env, manifest, pool


# ----------------------------------------------------------------------------- the runner's side


class MjlabStepTask(StepTask):
    """StepTask's train config, gate, curriculum and weight choice over the mjlab env; :meth:`record` keeps
    StepTask.step's figures. ``self.env`` is the episodes' state: StepTask's curriculum sets its cap."""

    def __init__(self, cfg: TrainConfig, num_envs: int, manifest: Manifest, env, device: str) -> None:
        self.cfg = cfg
        self.num_envs = num_envs
        self.manifest = manifest
        self.course = course_config(cfg)
        self.env = _episodes(env)  # type: ignore[assignment]
        self.device = device
        self.dt_s = 1.0 / cfg.env.control_hz
        self.frames: list[np.ndarray] = []
        self.schedule_k = 0
        self.best: tuple[float, int, dict[str, torch.Tensor] | None] = (-1.0, -1, None)
        self._steps = 0
        self.started = time.monotonic()
        self._clear_figures()

    def record(self, env, rewards: torch.Tensor, depth: torch.Tensor) -> None:
        term = env.reward_manager.get_term_cfg("step").func
        o, heights = term.outcome, term.heights
        if o is None:
            return
        self._falls += int(o.fell.sum())
        self._left_lane += int(o.left_lane.sum())
        self._refused += int(term.refused.sum())
        self._cleared += heights[o.newly].tolist()
        self._fell += o.attempted_height[o.fell_pending].tolist()
        course = self.env.on_course
        speed = walk_task.forward_speed(env)
        self._speeds.append(float(speed[course].mean()) if bool(course.any()) else math.nan)
        cmd = env.command_manager.get_command("walk")
        self._commands.append(float(cmd[course, 0].mean()) if bool(course.any()) else math.nan)
        self._tracks.append(float(o.track.mean()))
        self._rewards.append(float(rewards.mean()))
        keep_calibration_frame(self.frames, walk_task._Rows(depth), self._steps)  # type: ignore[arg-type]
        self._steps += 1

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        model = runner.alg.get_policy()
        assert isinstance(model, DepthRecurrentModel)
        chosen = self.keep_final_load_best(model, out)
        rows = runner.rows
        provenance = {
            "teacher": {
                **TEACHER_PROVENANCE,
                "policy": "holosoma-inference ppo_g1_29dof.onnx (models/g1_walk): its ONNX graph's weights run in "
                "torch on the env's device (training.backends.mjlab.policy_terms.OnnxMlp)",
                "reflex": "training.tasks.student_step.teacher's privileged step-up reflex, in torch "
                "(training.backends.mjlab.step_terms.lift_angles)",
            },
            "training": f"training.backends.mjlab.step_task (rsl_rl PPO + PHP's hybrid loss on mjlab, MuJoCo-Warp, "
            f"device {self.device}), config {size}, seed {self.cfg.run.seed}, {len(rows)} iterations, "
            f"{self.num_envs} envs, mjlab's G1, platforms {100 * self.course.min_height_m:.0f}-"
            f"{100 * self.course.max_height_m:.0f} cm on a {TILE_ROWS}x{TILE_COLS} tile pool, gate "
            f"{self.cfg.distill.gate_rate}, progress reward {self.course.progress_reward}, teacher command gain "
            f"{self.cfg.course.teacher_command_gain}, supervisor limits {self.course.supervisor_limits}, from "
            f"{self.init if self.init is not None else 'random weights'}; {chosen}",
            "size": size,
            "data": "none recorded: DAgger labels and rewards from training.backends.mjlab.step_task (mjlab)",
            "seed": self.cfg.run.seed,
            "wall_s": round(sum(r["wall_s"] for r in rows), 1),
        }
        walk_task.save_student(model, self.frames, provenance, out)
        return self.report(rows, out / "bundle") | {"backend": "mjlab"}


def train(cfg: TrainConfig, out: Path, size: str, device: str = "cpu") -> dict[str, Any]:
    """Train ``cfg`` (a ``student_step`` config) on mjlab into ``out``; writes what ``training.rl.train.train``
    writes for the CPU task, and ``student_mjlab.pt`` for the bundle export. Returns ``student_step.json``."""
    dev = "cuda:0" if device == "cuda" else "cpu"
    env, manifest, _ = make_env(cfg, dev)
    task = MjlabStepTask(cfg, env.num_envs, manifest, env, dev)

    def on_step(env, obs, rewards, dones) -> None:
        task.record(env, rewards, obs[DEPTH_GROUP])

    return walk_task.run(cfg, out, size, device, task, walk_task.vec_env(env, on_step, float(manifest.action_clip)))
