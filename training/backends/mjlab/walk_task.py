"""The ``student_walk`` task on mjlab: DAgger from the walking policy into the recurrent depth student,
on MuJoCo-Warp, through OUR runner.

Runs inside ``.venv-mjlab`` only (``parkour train run --config student_walk[_tiny] --backend mjlab
[--device cuda]``, which runs ``smoke.py`` there). The learner is the ``mujoco_cpu`` task's, unchanged:
:class:`training.rl.runner.Runner` with :class:`~training.rl.algorithms.BlendedDistillation` and
:class:`~training.rl.models.DepthRecurrentModel`, its train config and hooks inherited from
:class:`training.tasks.student_walk.task.WalkTask` (mjlab's own runner has no distillation of this kind).
The env is an mjlab ``ManagerBasedRlEnv`` behind mjlab's ``RslRlVecEnvWrapper`` (rsl_rl's ``VecEnv``),
built to be :class:`training.tasks.student_walk.env.WalkEnv`. Each builder below (robot, actions, terrain,
command, observations, episodes, export) says what of WalkEnv it restates, where it differs from the
CPU task and why. Random streams are torch's generators seeded from ``run.seed``, not numpy's.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import torch

from parkour_core.bundle import Manifest, as_array, load_bundle
from parkour_core.robots import G1
from parkour_sim.depth_camera import add_depth_camera
from parkour_sim.models import joint_armature
from training.backends.mjlab import policy_terms
from training.backends.mjlab.depth import DEPTH_SENSOR, DepthStream, camera_sensor_cfg
from training.backends.mjlab.student_bundle import MJLAB_STUDENT, walk_manifest
from training.configs.schema import TrainConfig
from training.envs.randomization import RandomizationConfig, restitution_to_dampratio
from training.envs.student import CameraConfig
from training.rl.algorithms import teacher_env_count
from training.rl.models import DEPTH_GROUP, TEACHER_GROUP, DepthRecurrentModel
from training.rl.runner import Budget, Runner
from training.tasks.student_walk.bundle import keep_calibration_frame
from training.tasks.student_walk.env import (
    FALL_HEIGHT_M,
    FALL_TILT_RAD,
    CommandConfig,
    TerrainConfig,
    platform_course,
)
from training.tasks.student_walk.task import WalkTask, walk_config
from training.tasks.student_walk.teacher import TEACHER_PROVENANCE, WALK_BUNDLE

TERRAIN_GROUP = 0  # mjlab's terrain geoms; its G1 sits in groups 2 and 3
TILE_SIZE_M = (12.0, 6.0)  # x: the longest course (10.3 m) and 1 m behind the start; y: 3 m boxes yawed 20 deg
TILE_START_X_M = 1.0
TILE_ROWS, TILE_COLS = 8, 8
BORDER_M = 10.0
FOOT_GEOMS = re.compile(r"(left|right)_foot\d_collision")


# ----------------------------------------------------------------------------- the robot


def standing_height(default_q: np.ndarray) -> float:
    """Pelvis height at which the lowest foot collision geom of mjlab's G1 in ``default_q`` touches z = 0
    (``training.envs.reference._feet_on_floor_height`` on mjlab's model)."""
    from mjlab.asset_zoo.robots.unitree_g1.g1_constants import get_spec

    spec = get_spec()
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10.0, 10.0, 0.1])
    m = spec.compile()
    d = mujoco.MjData(m)
    lifted = 1.5
    d.qpos[2], d.qpos[3] = lifted, 1.0
    for name, q in zip(G1.joint_names, default_q, strict=True):
        d.qpos[m.jnt_qposadr[m.joint(name).id]] = q
    mujoco.mj_kinematics(m, d)
    floor = m.geom("floor").id
    fromto = np.zeros(6)
    feet = [g for g in range(m.ngeom) if FOOT_GEOMS.fullmatch(m.geom(g).name or "")]
    return lifted - min(mujoco.mj_geomDistance(m, d, floor, g, 10.0, fromto) for g in feet)


def robot_cfg(manifest: Manifest):
    """mjlab's G1 with the walking policy's PD, the spec's effort limits and armature, the D435 on the torso.

    mjlab's G1 is ``g1.xml`` of mjlab's asset zoo (compare-walk's ``g1_walk@mjlab`` row is the walking policy
    on it): capsule feet, its inertias, mjlab's collision setup (feet with condim 3, the other collision geoms
    frictionless), no self-collisions; not holosoma's ``g1_29dof.xml``, because mjlab builds its G1 from its
    own asset. The walking policy's PD (``models/g1_walk`` kp/kd) runs as MuJoCo position actuators
    (``tau = clamp(kp (q* - q) - kd dq)`` at every 2 ms step, the CPU backend's servos), with parkour_sim's
    per-joint armature (the reflected motor inertia ``parkour sim --robot-model mjlab`` uses).
    """
    from mjlab.actuator import BuiltinPositionActuatorCfg
    from mjlab.asset_zoo.robots.unitree_g1.g1_constants import FULL_COLLISION_WITHOUT_SELF, get_spec
    from mjlab.entity import EntityArticulationInfoCfg, EntityCfg

    kp, kd, q0 = as_array(manifest.kp), as_array(manifest.kd), as_array(manifest.default_joint_pos)
    joints = {j.name: j for j in G1.joints}
    actuators = tuple(
        BuiltinPositionActuatorCfg(
            target_names_expr=(re.escape(name),), stiffness=float(kp[k]), damping=float(kd[k]),
            effort_limit=joints[name].tau_max, armature=joint_armature(name),
        )
        for k, name in enumerate(manifest.joint_names)
    )  # fmt: skip

    def spec_with_camera() -> mujoco.MjSpec:
        spec = get_spec()
        add_depth_camera(spec.body(G1.camera.body), G1.camera)
        return spec

    return EntityCfg(
        init_state=EntityCfg.InitialStateCfg(
            pos=(0.0, 0.0, standing_height(q0)),
            joint_pos={re.escape(n): float(q) for n, q in zip(manifest.joint_names, q0, strict=True)},
            joint_vel={".*": 0.0},
        ),
        collisions=(FULL_COLLISION_WITHOUT_SELF,),
        spec_fn=spec_with_camera,
        articulation=EntityArticulationInfoCfg(actuators=actuators, soft_joint_pos_limit_factor=0.9),
    )


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


def action_cfg(manifest: Manifest, clip: dict[str, tuple[float, float]] | None = None):
    """Targets ``default_q + 0.25 a`` in parkour_core's joint order (the manifest's ``action_scale``).

    ``clip``: per joint name, the (low, high) its target is clamped to before it reaches the motor.
    """
    return spec_order_action_cfg(
        entity_name="robot",
        actuator_names=tuple(re.escape(n) for n in manifest.joint_names),
        scale=float(manifest.action_scale),
        use_default_offset=True,
        **({"clip": clip} if clip is not None else {}),
    )


# ----------------------------------------------------------------------------- terrain


def terrain_cfg(t: TerrainConfig, seed: int):
    """The tile pool: flat tiles and ``platform_course`` tiles in proportion ``t.fraction``.

    The courses are the gentle platforms of ``WalkEnv.place_terrain`` (four 2-5 cm boxes, 0.8 m deep, 3 m
    wide, yawed up to 20 deg) ahead of the start. mjlab compiles one model for all worlds and terrain is
    static geometry of it, so the courses are tiles of mjlab's terrain generator,
    ``TILE_ROWS x TILE_COLS`` of them drawn once per run from ``seed``, and each episode starts on a tile
    drawn at random (``randomize_terrain``); the CPU env draws a new course at every reset instead. A robot
    that walks off its tile walks onto the next one (courses end 0.8-10.3 m ahead; tiles are 12 m long).
    """
    from mjlab.terrains import TerrainEntityCfg
    from mjlab.terrains.terrain_generator import SubTerrainCfg, TerrainGeneratorCfg, TerrainGeometry, TerrainOutput
    from mjlab.terrains.utils import make_plane

    @dataclass(kw_only=True)
    class WalkTileCfg(SubTerrainCfg):
        """Ground with its top at z = 0; with ``boxes``, WalkEnv's course ahead of the start (x forward)."""

        course: TerrainConfig | None = None

        def function(self, difficulty, spec, rng) -> TerrainOutput:
            del difficulty
            body = spec.body("terrain")
            geoms = [TerrainGeometry(geom=make_plane(body, self.size, 0.0, center_zero=False)[0])]
            ox, oy = TILE_START_X_M, self.size[1] / 2.0
            if self.course is not None:
                c = self.course
                boxes = platform_course(rng, c, rng.uniform(*c.height_m, c.boxes))
                for centre, half, yaw in zip(boxes.center, boxes.half_size, boxes.yaw, strict=True):
                    g = body.add_geom(
                        type=mujoco.mjtGeom.mjGEOM_BOX, size=tuple(half), group=TERRAIN_GROUP,
                        pos=(ox + centre[0], oy + centre[1], centre[2]),
                        quat=(math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)),
                    )  # fmt: skip
                    geoms.append(TerrainGeometry(geom=g))
            return TerrainOutput(origin=np.array([ox, oy, 0.0]), geometries=geoms)

    courses = t.boxes > 0 and t.fraction > 0.0
    sub = {"flat": WalkTileCfg(proportion=1.0 - t.fraction if courses else 1.0, size=TILE_SIZE_M)}
    if courses:
        sub["platforms"] = WalkTileCfg(proportion=t.fraction, size=TILE_SIZE_M, course=t)
    generator = TerrainGeneratorCfg(
        seed=seed, curriculum=False, size=TILE_SIZE_M, border_width=BORDER_M, border_height=1.0,
        num_rows=TILE_ROWS, num_cols=TILE_COLS, color_scheme="none", sub_terrains=sub,
    )  # fmt: skip
    return TerrainEntityCfg(terrain_type="generator", terrain_generator=generator, max_init_terrain_level=None)


# ----------------------------------------------------------------------------- commands: walk command and clock, camera


def command_cfgs(manifest: Manifest, camera: CameraConfig, command: CommandConfig, seed: int):
    from mjlab.managers.command_manager import CommandTerm, CommandTermCfg

    class WalkCommand(CommandTerm):
        """WalkEnv's velocity command and the walking policy's gait clock.

        The command: (vx U[0, 1], vy U[-0.2, 0.2], yaw rate U[-0.3, 0.3]), all zero with probability 0.1,
        resampled every 4 s and at a fall (not at a time-out). The clock: parkour_core's ``GaitClock`` in
        torch, reset with the episode and advanced once per tick with the command in force.
        """

        def __init__(self, cfg, env) -> None:
            super().__init__(cfg, env)
            self.spec = command
            self.vel = torch.zeros((self.num_envs, 3), device=self.device)
            self.age_s = torch.zeros(self.num_envs, device=self.device)
            self.generator = torch.Generator(device=self.device).manual_seed(seed * 1000 + 13)
            self.clock = policy_terms.GaitClock(manifest.gait_period_s, env.step_dt, self.num_envs, self.device)
            self.resample(torch.arange(self.num_envs, device=self.device))

        @property
        def command(self) -> torch.Tensor:
            return self.vel

        @property
        def phase(self) -> torch.Tensor:
            return self.clock.phase

        def _uniform(self, k: int, lo: float, hi: float) -> torch.Tensor:
            return lo + (hi - lo) * torch.rand(k, generator=self.generator, device=self.device)

        def resample(self, ids: torch.Tensor) -> None:
            k, c = len(ids), self.spec
            if k == 0:
                return
            cmd = torch.stack([self._uniform(k, *c.vx), self._uniform(k, *c.vy), self._uniform(k, *c.yaw_rate)], -1)
            zero = torch.rand(k, generator=self.generator, device=self.device) < c.zero_fraction
            self.vel[ids] = torch.where(zero[:, None], torch.zeros_like(cmd), cmd)
            self.age_s[ids] = 0.0

        def reset(self, env_ids) -> dict[str, float]:
            fell = self._env.termination_manager.terminated[env_ids]  # a fall draws a new command, a time-out not
            self.resample(env_ids[fell])
            self.clock.reset(env_ids)
            return {}

        def compute(self, dt, env_ids=None) -> None:
            if env_ids is None:  # a policy tick: WalkEnv.step_walk's age and resampling, then every clock
                self.age_s += self._env.step_dt
                self.resample((self.age_s >= self.spec.resample_s).nonzero().flatten())
                self.clock.advance(self.vel)
            else:  # the reset path: the new episodes' clocks tick once
                self.clock.advance(self.vel[env_ids], env_ids)

        def _update_metrics(self) -> None:
            pass

        def _resample_command(self, env_ids) -> None:
            self.resample(env_ids)

        def _update_command(self, env_ids) -> None:
            pass

    class DepthCamera(CommandTerm):
        """Owns the :class:`DepthStream`: mount jitter drawn at reset (before the step's ``sense()`` casts
        the rays), the stream advanced once per tick by the ``depth`` observation (after ``sense()``)."""

        def __init__(self, cfg, env) -> None:
            super().__init__(cfg, env)
            self.stream = DepthStream(self.num_envs, camera, manifest.depth.spec, self.device, seed)
            self.sensor = env.scene[DEPTH_SENSOR]
            self.sensor.stream = self.stream
            self.reset_due = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
            self.tick_due = False

        @property
        def command(self) -> torch.Tensor:
            return self.stream.image

        def reset(self, env_ids) -> dict[str, float]:
            self.stream.draw_extrinsics(env_ids)
            self.reset_due[env_ids] = True
            return {}

        def compute(self, dt, env_ids=None) -> None:
            if env_ids is None:
                self.tick_due = True

        def update(self) -> None:
            """Once per step, after ``sense()``: replay the new episodes' cameras, tick the others'."""
            if not (self.tick_due or bool(self.reset_due.any())):
                return
            now = self._env.episode_length_buf.double() * self._env.step_dt
            raw = self.sensor.depth()
            fresh = self.reset_due.nonzero().flatten()
            self.stream.reset(fresh, now[fresh], raw[fresh])
            if self.tick_due:
                running = (~self.reset_due).nonzero().flatten()
                self.stream.tick(running, now[running], raw[running])
            self.reset_due[:] = False
            self.tick_due = False

        def _update_metrics(self) -> None:
            pass

        def _resample_command(self, env_ids) -> None:
            pass

        def _update_command(self, env_ids) -> None:
            pass

    @dataclass(kw_only=True)
    class WalkCommandCfg(CommandTermCfg):
        def build(self, env):
            return WalkCommand(self, env)

    @dataclass(kw_only=True)
    class DepthCameraCfg(CommandTermCfg):
        def build(self, env):
            return DepthCamera(self, env)

    never = (1e9, 1e9)  # both terms keep their own clocks
    return {"walk": WalkCommandCfg(resampling_time_range=never), "camera": DepthCameraCfg(resampling_time_range=never)}


# ----------------------------------------------------------------------------- observations


def _robot(env):
    return env.scene["robot"]


def _cached(env, key: str, make):
    value = getattr(env, key, None)
    if value is None:
        value = make()
        setattr(env, key, value)
    return value


def obs_input(env, manifest: Manifest) -> policy_terms.ObsInput:
    """What the manifest's terms read, from mjlab's state (parkour_core's joint order)."""
    robot = _robot(env)
    ids = _cached(
        env,
        "_walk_joint_ids",
        lambda: torch.tensor([robot.joint_names.index(n) for n in G1.joint_names], device=env.device),
    )
    default_q = _cached(
        env,
        "_walk_default_q",
        lambda: torch.tensor(as_array(manifest.default_joint_pos), dtype=torch.float32, device=env.device),
    )
    d = robot.data
    command = env.command_manager.get_command("walk")
    return policy_terms.ObsInput(
        q=d.joint_pos[:, ids], dq=d.joint_vel[:, ids], quat_wxyz=d.root_link_quat_w, gyro=d.root_link_ang_vel_b,
        command=command, last_action=env.action_manager.action, default_q=default_q,
        gait_phase=env.command_manager.get_term("walk").phase,
        command_discrete=policy_terms.discretise_command(command, manifest.command),
    )  # fmt: skip


def obs_term(env, manifest: Manifest, index: int) -> torch.Tensor:
    return policy_terms.term_value(manifest.obs_terms[index], obs_input(env, manifest))


def obs_depth(env) -> torch.Tensor:
    camera = env.command_manager.get_term("camera")
    camera.update()
    return camera.stream.image.clone()  # the stream writes into its image in place


class teacher_actions:  # lower case: mjlab's class-based terms read as functions
    """The walking policy's actions on its own observation terms (``WalkTeacher.act`` in torch)."""

    def __init__(self, cfg, env) -> None:
        bundle = load_bundle(cfg.params["bundle"])
        self.manifest = bundle.manifest
        self.mlp = policy_terms.OnnxMlp(bundle.file(self.manifest.policy.file)).to(env.device)

    def __call__(self, env, bundle: str, command_gain: float = 1.0) -> torch.Tensor:
        """``command_gain``: the policy is commanded this times the forward speed (``teacher_command``)."""
        o = obs_input(env, self.manifest)
        if command_gain != 1.0:
            command = o.command.clone()
            command[:, 0] *= command_gain
            o = dataclasses.replace(
                o, command=command, command_discrete=policy_terms.discretise_command(command, self.manifest.command)
            )
        obs = policy_terms.build_observation(self.manifest.obs_terms, o)
        clip = float(self.manifest.action_clip)
        return self.mlp(obs).clamp(-clip, clip)

    def reset(self, env_ids=None) -> None:
        pass


def observation_cfgs(manifest: Manifest):
    """The CPU task's observation groups.

    ``policy``: the student's proprioceptive terms in the bundle manifest's order through :mod:`policy_terms`
    (parkour_core's formulas in torch). ``depth``: the torso camera's rays through our noise, latency and
    preprocessing (:mod:`depth`, which says why its exposure instants are policy ticks, not 2 ms substeps).
    ``teacher_actions``: the walking policy (``models/g1_walk``'s ONNX graph as a torch MLP,
    :class:`policy_terms.OnnxMlp`) on its own observation terms, the same gait phase and command, clipped
    as ``WalkTeacher``.
    """
    from mjlab.managers.observation_manager import ObservationGroupCfg, ObservationTermCfg

    policy = {
        f"{k:02d}_{t.name}": ObservationTermCfg(func=obs_term, params={"manifest": manifest, "index": k})
        for k, t in enumerate(manifest.obs_terms)
    }
    group = {"concatenate_terms": True, "enable_corruption": False}
    return {
        "policy": ObservationGroupCfg(terms=policy, **group),
        DEPTH_GROUP: ObservationGroupCfg(terms={"image": ObservationTermCfg(func=obs_depth)}, **group),
        TEACHER_GROUP: ObservationGroupCfg(
            terms={"walk": ObservationTermCfg(func=teacher_actions, params={"bundle": str(WALK_BUNDLE)})}, **group
        ),
    }


# ----------------------------------------------------------------------------- episodes: falls, randomization, pushes


def _root_qpos(env) -> torch.Tensor:
    robot = _robot(env)
    return env.sim.data.qpos[:, robot.indexing.free_joint_q_adr]


def term_fell(env) -> torch.Tensor:
    """WalkEnv.fallen (pelvis below 0.45 m or tilted past 1 rad) on the state after the step.

    Read from ``qpos``, as the CPU env does: mjlab's terminations would read kinematics one substep stale.
    """
    root = _root_qpos(env)
    rq = root[:, 3:7]
    up_z = 1.0 - 2.0 * (rq[:, 1] ** 2 + rq[:, 2] ** 2)
    tilt = torch.arccos(up_z.clamp(-1.0, 1.0))
    return (root[:, 2] < FALL_HEIGHT_M) | (tilt > FALL_TILT_RAD)


def randomization_events(r: RandomizationConfig, seed: int):
    """``training.envs.randomization``'s per-episode draws and pushes as mjlab events.

    As ``RandomizationConfig()``: friction (kinetic U[0.4, 1.1] capped by static U[0.4, 1.3], on every
    contact geom), restitution as the contacts' damping ratio, torso CoM offset, and pushes (a horizontal
    force U[0, 30] N on the torso for U[1, 3] s after a quiet U[1, 5] s).
    """
    from mjlab.managers.event_manager import RecomputeLevel, requires_model_fields

    generator: dict[str, torch.Generator] = {}

    def gen(device) -> torch.Generator:
        if "g" not in generator:
            generator["g"] = torch.Generator(device=device).manual_seed(seed * 1000 + 19)
        return generator["g"]

    def uniform(k: int, lo: float, hi: float, device, cols: int | None = None) -> torch.Tensor:
        shape = (k,) if cols is None else (k, cols)
        return lo + (hi - lo) * torch.rand(shape, generator=gen(device), device=device)

    @requires_model_fields("geom_friction", "geom_solref", "body_ipos", recompute=RecomputeLevel.set_const)
    def randomize_physics(env, env_ids) -> None:
        """``draw_physics`` + ``ModelRandomizer.apply``: friction and damping ratio on every contact geom,
        the torso's CoM moved."""
        m, dev, k = env.sim.mj_model, env.device, len(env_ids)
        geoms = _cached(env, "_walk_contact_geoms", lambda: torch.tensor(
            np.flatnonzero((m.geom_contype != 0) | (m.geom_conaffinity != 0)), device=dev))  # fmt: skip
        torso = _cached(env, "_walk_torso", lambda: m.body(f"robot/{G1.torso_body}").id)
        static = uniform(k, *r.static_friction, dev)
        kinetic = torch.minimum(uniform(k, *r.kinetic_friction, dev), static)
        used = {"kinetic": kinetic, "static": static, "mean": 0.5 * (static + kinetic)}[r.friction_used]
        restitution = uniform(k, *r.restitution, dev)
        damp = torch.as_tensor(restitution_to_dampratio(restitution.cpu().numpy()), dtype=torch.float32, device=dev)
        offset = torch.stack([uniform(k, lo, hi, dev) for lo, hi in r.torso_com_offset_m], dim=-1)
        ids = env_ids.to(dev).long()
        grid_e, grid_g = torch.meshgrid(ids, geoms, indexing="ij")
        env.sim.model.geom_friction[grid_e, grid_g, 0] = used[:, None].expand_as(grid_e).to(torch.float32)
        nominal = env.sim.get_default_field("geom_solref")
        env.sim.model.geom_solref[grid_e, grid_g, 0] = nominal[geoms, 0].expand_as(grid_e)
        env.sim.model.geom_solref[grid_e, grid_g, 1] = damp[:, None].expand_as(grid_e)
        ipos = env.sim.get_default_field("body_ipos")
        env.sim.model.body_ipos[ids, torso] = ipos[torso] + offset

    class TorsoPushes:
        """``training.envs.randomization.Pushes`` per environment in torch, on its episode clock.

        The force is set after a step for the next one; the CPU env sets it at the start of that step, from
        the same clock: the same schedule.
        """

        def __init__(self, cfg, env) -> None:
            n, dev = env.num_envs, env.device
            self.robot = _robot(env)
            self.body = self.robot.find_bodies(G1.torso_body)[0]
            self.start_s = torch.full((n,), math.inf, device=dev)
            self.end_s = torch.full((n,), math.inf, device=dev)
            self.force = torch.zeros((n, 3), device=dev)
            self.device = dev
            self._schedule(torch.arange(n, device=dev), torch.zeros(n, device=dev))

        def _schedule(self, ids: torch.Tensor, after_s: torch.Tensor) -> None:
            k = len(ids)
            if k == 0:
                return
            if not r.pushes:
                self.start_s[ids] = self.end_s[ids] = math.inf
                self.force[ids] = 0.0
                return
            self.start_s[ids] = after_s + uniform(k, *r.push_quiet_s, self.device)
            self.end_s[ids] = self.start_s[ids] + uniform(k, *r.push_duration_s, self.device)
            angle = uniform(k, -math.pi, math.pi, self.device)
            magnitude = uniform(k, *r.push_force_n, self.device)
            self.force[ids] = torch.stack([magnitude * torch.cos(angle), magnitude * torch.sin(angle),
                                           torch.zeros_like(angle)], -1)  # fmt: skip

        def __call__(self, env, env_ids) -> None:
            now = env.episode_length_buf.float() * env.step_dt  # the next step's start, as Pushes.forces(now)
            ended = (now >= self.end_s).nonzero().flatten()
            self._schedule(ended, self.end_s[ended])
            active = (now >= self.start_s) & (now < self.end_s)
            force = torch.where(active[:, None], self.force, torch.zeros_like(self.force))[:, None, :]
            self.robot.write_external_wrench_to_sim(force, torch.zeros_like(force), body_ids=self.body)

        def reset(self, env_ids=None) -> None:
            ids = torch.arange(len(self.start_s), device=self.device) if env_ids is None else env_ids
            zero = torch.zeros((len(ids), 1, 3), device=self.device)
            self.robot.write_external_wrench_to_sim(zero, zero, env_ids=ids, body_ids=self.body)
            self._schedule(ids, torch.zeros(len(ids), device=self.device))

    return randomize_physics, TorsoPushes


# ----------------------------------------------------------------------------- the env


def env_cfg(cfg: TrainConfig, manifest: Manifest, camera: CameraConfig | None = None, randomize: bool = True):
    """mjlab's ManagerBasedRlEnvCfg of the walking student's env (``camera``: e.g. without noise, for checks).

    Episodes reset to the default pose standing at the origin of a tile facing +x and end at a fall or after
    ``env.episode_length_s``. The solver: ``implicitfast`` with 10 iterations (mjlab's velocity tasks), not
    MuJoCo's defaults.
    """
    from mjlab.envs import ManagerBasedRlEnvCfg
    from mjlab.envs import mdp as envs_mdp
    from mjlab.managers.event_manager import EventTermCfg
    from mjlab.managers.termination_manager import TerminationTermCfg
    from mjlab.scene import SceneCfg
    from mjlab.sim import MujocoCfg, SimulationCfg

    walk = walk_config(cfg, cfg.env.num_envs, privileged=False)
    camera = camera or walk.camera
    if manifest.depth is None or manifest.gait_period_s is None:
        raise ValueError(f"manifest {manifest.name!r}: the walking student reads depth and a gait clock")
    randomize_physics, pushes = randomization_events(walk.randomization, cfg.run.seed)
    events = {
        "tile": EventTermCfg(func=envs_mdp.randomize_terrain, mode="reset"),  # before the pose: it adds the origin
        "pose": EventTermCfg(func=envs_mdp.reset_scene_to_default, mode="reset"),
    }
    if randomize:
        events["physics"] = EventTermCfg(func=randomize_physics, mode="reset")
        events["pushes"] = EventTermCfg(func=pushes, mode="step")
    return ManagerBasedRlEnvCfg(
        decimation=cfg.env.decimation,
        scene=SceneCfg(
            num_envs=cfg.env.num_envs,
            terrain=terrain_cfg(walk.terrain, cfg.run.seed),
            entities={"robot": robot_cfg(manifest)},
            sensors=(camera_sensor_cfg(G1.camera, camera, (TERRAIN_GROUP,)),),
            extent=2.0,
        ),
        observations=observation_cfgs(manifest),
        actions={"joint_pos": action_cfg(manifest)},
        commands=command_cfgs(manifest, camera, walk.command, cfg.run.seed),
        events=events,
        terminations={
            "time_out": TerminationTermCfg(func=envs_mdp.time_out, time_out=True),
            "fell": TerminationTermCfg(func=term_fell),
        },
        sim=SimulationCfg(
            nconmax=64, njmax=400, mujoco=MujocoCfg(timestep=cfg.env.physics_dt_s, iterations=10, ls_iterations=20)
        ),
        episode_length_s=cfg.env.episode_length_s,
        seed=cfg.run.seed,
    )


def make_env(cfg: TrainConfig, device: str, camera: CameraConfig | None = None, randomize: bool = True):
    from mjlab.envs import ManagerBasedRlEnv

    manifest = walk_manifest(cfg)
    return ManagerBasedRlEnv(cfg=env_cfg(cfg, manifest, camera, randomize), device=device), manifest


# ----------------------------------------------------------------------------- the runner's side


def forward_speed(env) -> torch.Tensor:
    """WalkEnv.forward_speed: base velocity along the heading."""
    d = _robot(env).data
    q = d.root_link_quat_w
    fwd_x = 1.0 - 2.0 * (q[:, 2] ** 2 + q[:, 3] ** 2)
    fwd_y = 2.0 * (q[:, 1] * q[:, 2] + q[:, 0] * q[:, 3])
    yaw = torch.atan2(fwd_y, fwd_x)
    v = d.root_link_lin_vel_w
    return torch.cos(yaw) * v[:, 0] + torch.sin(yaw) * v[:, 1]


class _Rows:
    """keep_calibration_frame's view of an image batch on any device: one row copied to the host when asked."""

    def __init__(self, images: torch.Tensor) -> None:
        self.images = images

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, i: int) -> np.ndarray:
        return self.images[i].detach().cpu().numpy()


class MjlabWalkTask(WalkTask):
    """WalkTask's train config and hooks over the mjlab env; :meth:`record` keeps WalkTask.step's figures."""

    def __init__(self, cfg: TrainConfig, num_envs: int, manifest: Manifest, device: str) -> None:
        self.cfg = cfg
        self.num_envs = num_envs
        self.manifest = manifest
        self.device = device
        self.dt_s = 1.0 / cfg.env.control_hz
        self.teacher_envs = teacher_env_count(num_envs, cfg.distill.teacher_env_fraction)
        self.episode_steps = torch.zeros(num_envs)
        self.frames: list[np.ndarray] = []
        self._steps = 0
        self.started = time.monotonic()
        self._clear_figures()

    def record(self, env, dones: torch.Tensor, depth: torch.Tensor) -> None:
        speed = forward_speed(env).cpu()
        done = dones.bool().cpu()
        t, n = self.teacher_envs, self.num_envs
        self.episode_steps += 1
        self._speed_teacher.append(float(speed[:t].mean()) if t else math.nan)
        self._speed_student.append(float(speed[t:].mean()) if n > t else math.nan)
        self._command_vx.append(float(env.command_manager.get_command("walk")[:, 0].mean()))
        finished = done.clone()
        finished[:t] = False
        self._finished += (self.episode_steps[finished] * self.dt_s).tolist()
        self.episode_steps[done] = 0
        keep_calibration_frame(self.frames, _Rows(depth), self._steps)  # type: ignore[arg-type]
        self._steps += 1

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        model = runner.alg.get_policy()
        assert isinstance(model, DepthRecurrentModel)
        rows = runner.rows
        provenance = {
            "teacher": {
                **TEACHER_PROVENANCE,
                "policy": "holosoma-inference ppo_g1_29dof.onnx (models/g1_walk): its ONNX graph's weights run in "
                "torch on the env's device (training.backends.mjlab.policy_terms.OnnxMlp)",
            },
            "training": f"training.backends.mjlab.walk_task (rsl_rl distillation on mjlab, MuJoCo-Warp, device "
            f"{self.device}), config {size}, seed {self.cfg.run.seed}, {len(rows)} iterations, {self.num_envs} envs, "
            f"mjlab's G1, flat ground and gentle terrain (2-5 cm platforms on about half of a {TILE_ROWS}x{TILE_COLS} "
            "tile pool)",
            "size": size,
            "data": "none recorded: DAgger labels from the walking policy in training.backends.mjlab.walk_task (mjlab)",
            "seed": self.cfg.run.seed,
            "wall_s": round(sum(r["wall_s"] for r in rows), 1),
        }
        save_student(model, self.frames, provenance, out)
        return {"teacher_envs": self.teacher_envs, "bundle": str(out / "bundle"), "backend": "mjlab"}


def save_student(model: DepthRecurrentModel, frames: list[np.ndarray], provenance: dict, out: Path) -> None:
    """``student_mjlab.pt``: the weights, calibration frames and provenance the runtime venv exports from.

    The runtime ``.venv`` (which has onnxruntime for the exporter's parity checks) writes the bundle with
    ``training.tasks.student_walk.bundle.export_walking_student``: the same contract as the CPU task
    (:mod:`training.backends.mjlab.student_bundle`).
    """
    torch.save(
        {
            "state_dict": {k: v.detach().cpu() for k, v in model.pair_state_dict().items()},
            "frames": torch.as_tensor(np.stack(frames)) if frames else torch.zeros(0),
            "provenance": json.dumps(provenance),
        },
        out / MJLAB_STUDENT,
    )


def vec_env(env, on_step, clip: float):
    """mjlab's RslRlVecEnvWrapper, each step also handed to ``on_step(env, obs, rewards, dones)`` (a task's
    figures and calibration frames)."""
    from mjlab.rl import RslRlVecEnvWrapper

    class RecordingVecEnv(RslRlVecEnvWrapper):
        def step(self, actions):
            obs, rew, dones, extras = super().step(actions)
            on_step(self.unwrapped, obs, rew, dones)
            return obs, rew, dones, extras

    return RecordingVecEnv(env, clip_actions=clip)


def train(cfg: TrainConfig, out: Path, size: str, device: str = "cpu") -> dict[str, Any]:
    """Train ``cfg`` (a ``student_walk`` config) on mjlab into ``out``; writes what ``training.rl.train.train``
    writes for the CPU task, and ``student_mjlab.pt`` for the bundle export. Returns ``student_walk.json``."""
    dev = "cuda:0" if device == "cuda" else "cpu"
    env, manifest = make_env(cfg, dev)
    task = MjlabWalkTask(cfg, env.num_envs, manifest, dev)

    def on_step(env, obs, rewards, dones) -> None:
        task.record(env, dones, obs[DEPTH_GROUP])

    return run(cfg, out, size, device, task, vec_env(env, on_step, float(manifest.action_clip)))


def run(cfg: TrainConfig, out: Path, size: str, device: str, task, vec) -> dict[str, Any]:
    """Our runner on ``vec`` with ``task``'s train config and hooks; writes ``<task>.json`` and ``curves.png``
    as ``training.rl.train.train`` does for the CPU task. Returns the JSON's contents."""
    from training import registry
    from training.export.models import parameter_count
    from training.progress import plot_curves

    out.mkdir(parents=True, exist_ok=True)
    try:
        runner = Runner(vec, task.train_cfg(), out, task.device, hooks=task, figures=task.figures)
        task.initialize(runner)
        budget = Budget(minutes=cfg.run.minutes) if cfg.run.minutes else Budget(iterations=cfg.run.max_iterations)
        rows = runner.train(budget, name=cfg.task)
        report = task.finish(runner, out, size)
    finally:
        vec.close()
    result = {
        "task": cfg.task,
        "backend": "mjlab",
        "config": size,
        "config_values": dataclasses.asdict(cfg),
        "seed": cfg.run.seed,
        "device": device,
        "num_envs": task.num_envs,
        "parameters": parameter_count(runner.alg.get_policy()),
        "wall_s": round(sum(r["wall_s"] for r in rows), 1),
        "iterations": rows,
        **report,
    }
    (out / f"{cfg.task}.json").write_text(json.dumps(result, indent=1, default=str))
    plot_curves(rows, registry.get_task(cfg.task).panels, out / "curves.png")
    return result
