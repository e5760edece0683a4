"""The depth student's environment: the robot's own observation, a simulated D435i, the 2D command.

It runs a :class:`~training.envs.tracking.TrackingEnv` (same physics, rewards, randomization and
references) and adds what the student sees: proprioception through ``parkour_core``
(:meth:`StudentEnv.policy_observation`, exactly what the policy node computes on the robot), the
command in the robot's heading frame (:func:`command_in_heading_frame`) and the depth image
(:class:`DepthPipeline`).

For DAgger, ``obs["privileged"]`` is the teacher's observation of the same state, and
``info["expert_terminated"]`` is True where the tracking error exceeds the teachers' 0.5 m (the
label is not usable); the episode itself ends at ``termination_m`` (relaxed up to 1.0 m by the
distillation schedule: set ``env.termination_m``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np
from numpy.typing import NDArray

from parkour_core.bundle import Manifest
from parkour_core.depth import DepthSpec
from parkour_core.gait import GaitClock
from parkour_core.obs import build_observation, observation_size
from parkour_core.runner import RobotState, observation_input
from parkour_sim.depth_camera import (
    DEPTH_CAMERA_NAME,
    DepthFrame,
    DepthNoise,
    FrameSchedule,
    make_depth_frame,
)
from training.envs import rewards
from training.envs.reference import Reference
from training.envs.tracking import ActionContract, TrackingConfig, TrackingEnv
from training.motion_matching import quat

F = NDArray[np.float64]
Ints = NDArray[np.int64]

MAX_YAW_RATE = 1.0  # rad/s, the heading controller's clip


def default_student_manifest() -> Manifest:
    """The student bundle's manifest as training.export writes it (imports torch: call once)."""
    from training.export.student import student_manifest

    return student_manifest("training", hidden_size=256, files={}, provenance={})


@dataclass(frozen=True)
class CameraConfig:
    width: int = 87  # raycast pixels over the 87 x 58 deg field of view
    height: int = 58
    hz: float = 30.0
    latency_s: tuple[float, float] = (0.06, 0.08)
    noise: DepthNoise = field(default_factory=DepthNoise)
    extrinsic_pos_m: float = 0.025
    extrinsic_rot_deg: float = 2.5


@dataclass(frozen=True)
class StudentConfig:
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    camera: CameraConfig = field(default_factory=CameraConfig)
    expert_termination_m: float = rewards.TERMINATION_M


def command_in_heading_frame(command_vel_world: F, command_heading: F, root_quat: F) -> F:
    """(N, 3) body commands (vx, vy, yaw rate) from world velocity commands and commanded headings.

    From the reference's per-frame command: the commanded world velocity turned into the robot's heading
    frame (vx, vy), and a yaw rate ``clip(wrap(heading_cmd - yaw), -1, 1)`` rad/s steering toward the
    commanded heading; the manifest's discrete (speed level, heading sector) command is derived from it by
    ``parkour_core.command``.
    """
    yaw = quat.yaw(root_quat)
    c, s = np.cos(yaw), np.sin(yaw)
    vx = c * command_vel_world[:, 0] + s * command_vel_world[:, 1]
    vy = -s * command_vel_world[:, 0] + c * command_vel_world[:, 1]
    yaw_rate = np.clip(quat.wrap(command_heading - yaw), -MAX_YAW_RATE, MAX_YAW_RATE)
    return np.stack([vx, vy, yaw_rate], axis=-1)


class DepthPipeline:
    """Per environment: camera, noise stream, frame schedule and the newest published policy image.

    A raycast ``SimDepthCamera`` (``parkour_sim.depth_camera``) per environment, exposed on a 30 Hz grid
    with a random phase, each exposure at the exact physics sub-step (2 ms) it falls on;
    ``make_depth_frame`` adds the training noise (per-frame offset +-3 cm, pixel noise, holes) and runs
    ``parkour_core.depth.preprocess_depth``; a ``FrameSchedule`` holds every frame for a latency drawn in
    [60, 80] ms; the policy sees the newest published frame at each 50 Hz tick (so its age at use is the
    latency plus up to one tick and one camera period, as on the robot). Extrinsic jitter: per episode
    the camera mount moves by U[-2.5, 2.5] cm per axis and turns by U[-2.5, 2.5] deg about each axis
    (written into that environment's model). At reset the camera is taken to have been running with the
    robot in its start state: its grid over the last latency + period is replayed, so the newest
    published frame and the frames in flight are what a live camera would hold.
    """

    def __init__(self, tracking: TrackingEnv, cfg: CameraConfig, spec: DepthSpec, seed: int) -> None:
        self.env, self.cfg, self.spec = tracking, cfg, spec
        sim = tracking.sim
        n = sim.num_envs
        sim.add_depth_camera(cfg.width, cfg.height)
        self.camera_id = mujoco.mj_name2id(sim.base_model, mujoco.mjtObj.mjOBJ_CAMERA, DEPTH_CAMERA_NAME)
        self.nominal_pos = sim.base_model.cam_pos[self.camera_id].copy()
        self.nominal_quat = sim.base_model.cam_quat[self.camera_id].copy()
        streams = np.random.SeedSequence([seed, 7]).spawn(2 * n)
        self.noise_rng = [np.random.default_rng(s) for s in streams[:n]]
        self.camera_rng = [np.random.default_rng(s) for s in streams[n:]]
        self.schedules: list[FrameSchedule[DepthFrame]] = [
            FrameSchedule(cfg.hz, *cfg.latency_s, self.camera_rng[i]) for i in range(n)
        ]
        self.image = np.zeros((n, spec.height, spec.width), dtype=np.float32)
        self.image_exposure_s = np.zeros(n)
        self.published: list[list[tuple[float, float, float]]] = [[] for _ in range(n)]  # (exposure, publish, latency)
        self.extrinsic_pos = np.zeros((n, 3))
        self.extrinsic_rotvec = np.zeros((n, 3))

    def reset(self, ids: Ints) -> None:
        sim = self.env.sim
        for i in ids:
            rng = self.camera_rng[i]
            self.extrinsic_pos[i] = rng.uniform(-self.cfg.extrinsic_pos_m, self.cfg.extrinsic_pos_m, 3)
            self.extrinsic_rotvec[i] = np.deg2rad(
                rng.uniform(-self.cfg.extrinsic_rot_deg, self.cfg.extrinsic_rot_deg, 3)
            )
            sim.set_model(int(i), "cam_pos", self.camera_id, self.nominal_pos + self.extrinsic_pos[i])
            rotated = quat.mul(quat.from_rotvec(self.extrinsic_rotvec[i]), self.nominal_quat)
            sim.set_model(int(i), "cam_quat", self.camera_id, rotated)
        clean_images = sim.depth_images([(int(i), -1) for i in ids])
        now_s = sim.time_s
        for i, clean in zip(ids, clean_images, strict=True):
            rng, now = self.camera_rng[i], float(now_s[i])
            # The camera was already running: replay its grid over the last latency + period (frames of
            # the start state), so the newest published frame and those in flight are as on a live camera.
            period = 1.0 / self.cfg.hz
            first = now + rng.uniform(0.0, period) - period * np.ceil((self.cfg.latency_s[1] + period) / period)
            schedule: FrameSchedule[DepthFrame] = FrameSchedule(self.cfg.hz, *self.cfg.latency_s, rng, start_s=first)
            while schedule.exposure_due(now):
                t = schedule.next_exposure_s
                schedule.expose(t, make_depth_frame(clean, t, self.cfg.noise, self.spec, self.noise_rng[i]))
            self.schedules[i] = schedule
            self.published[i] = []
            self._publish(i, now)

    def _publish(self, i: int, now: float) -> None:
        due = self.schedules[i].pop_due(now)
        for f in due:
            self.published[i].append((f.exposure_s, f.publish_s, f.latency_s))
        if due:
            self.image[i] = due[-1].frame.policy
            self.image_exposure_s[i] = due[-1].exposure_s

    def after_physics(self) -> None:
        """Expose frames whose grid time fell inside the last policy step; publish the due ones."""
        sim = self.env.sim
        times = sim.substep_time_s
        due = [(i, k) for i in range(sim.num_envs) for k in self.schedules[i].exposures_due(times[i].tolist())]
        for (i, k), clean in zip(due, sim.depth_images(due), strict=True):  # each environment's in its grid order
            t = float(times[i, k])
            self.schedules[i].expose(t, make_depth_frame(clean, t, self.cfg.noise, self.spec, self.noise_rng[i]))
        now_s = sim.time_s
        for i in range(sim.num_envs):
            self._publish(i, float(now_s[i]))


class StudentEnv:
    """The student's view of a TrackingEnv (see the module docstring).

    ``step`` returns obs = {"policy", "depth", "privileged"}, reward, done, info.
    """

    def __init__(
        self,
        references: Sequence[Reference],
        cfg: StudentConfig = StudentConfig(),
        manifest: Manifest | None = None,
    ) -> None:
        self.manifest = manifest if manifest is not None else default_student_manifest()
        if self.manifest.depth is None:
            raise ValueError(f"bundle manifest {self.manifest.name!r} has no depth input: not a depth student")
        self.cfg = cfg
        self.contract = ActionContract.from_manifest(self.manifest)
        self.tracking = TrackingEnv(references, cfg.tracking, self.contract)
        self.num_envs = self.tracking.num_envs
        self.num_actions = self.tracking.num_actions
        self.num_obs = observation_size(self.manifest.obs_terms)
        self.depth_spec = self.manifest.depth.spec
        self.depth = DepthPipeline(self.tracking, cfg.camera, self.depth_spec, cfg.tracking.seed)
        self.tracking.after_physics.append(self.depth.after_physics)
        self.tracking.after_reset.append(self.depth.reset)
        self.command = np.zeros((self.num_envs, 3))
        # Phase-conditioned bundles (a manifest ``gait_period_s``, ``sin_phase``/``cos_phase`` terms) see one
        # gait clock per environment, reset with its episode and advanced once per tick with the command in
        # force, as PolicyRunner runs it on the robot.
        period = self.manifest.gait_period_s
        self.gait_clocks = [GaitClock(period, self.tracking.dt_s) for _ in range(self.num_envs)] if period else []
        self.gait_phase = np.zeros((self.num_envs, 2 if period else 0))
        self.tracking.after_reset.append(self._reset_gait)

    def _reset_gait(self, ids: Ints) -> None:
        for i in ids if self.gait_clocks else ():
            self.gait_clocks[int(i)].reset()

    @property
    def termination_m(self) -> float:
        return self.tracking.termination_m

    @termination_m.setter
    def termination_m(self, value: float) -> None:
        self.tracking.termination_m = value

    def close(self) -> None:
        self.tracking.close()

    def reset(self, env_ids: Ints | None = None, start_frames: Ints | None = None, ref_ids: Ints | None = None):
        privileged = self.tracking.reset(env_ids, start_frames, ref_ids)
        return self._observe(privileged, None if env_ids is None else np.asarray(env_ids, dtype=np.int64))

    def step(self, actions: F) -> tuple[dict[str, NDArray[np.float32]], F, NDArray[np.bool_], dict[str, Any]]:
        privileged, reward, done, info = self.tracking.step(actions)
        info["expert_terminated"] = info["tracking_error"] > self.cfg.expert_termination_m
        obs = self._observe(privileged)
        info["command"] = self.command.copy()
        info["depth_age_s"] = self.tracking.sim.time_s - self.depth.image_exposure_s
        return obs, reward, done, info

    def _commands(self) -> F:
        t = self.tracking
        refs = [t.references[r] for r in t.ref_id]
        vel = np.stack([r.command_vel_world[f] for r, f in zip(refs, t.frame, strict=True)])
        heading = np.array([r.command_heading[f] for r, f in zip(refs, t.frame, strict=True)])
        return command_in_heading_frame(vel, heading, t.sim.root_quat)

    def policy_observation(self, ticked: Ints | None = None) -> NDArray[np.float32]:
        """(N, obs_size): the manifest's terms through parkour_core, as the policy node builds them.

        ``ticked``: the environments whose gait clocks advance (a policy tick); None: all of them. A
        reset of some environments ticks only theirs, so no clock advances twice in one step.
        """
        t = self.tracking
        self.command = self._commands()
        for i in (range(self.num_envs) if ticked is None else ticked) if self.gait_clocks else ():
            self.gait_phase[i] = self.gait_clocks[int(i)].advance(self.command[i])
        state = RobotState(t.sim.q, t.sim.dq, t.sim.root_quat, t.sim.gyro)
        o = observation_input(
            self.manifest, state, self.command, t.last_action, self.contract.default_q, self.gait_phase
        )
        return build_observation(self.manifest.obs_terms, o)

    def _observe(self, privileged: NDArray[np.float32], ticked: Ints | None = None) -> dict[str, NDArray[np.float32]]:
        return {"policy": self.policy_observation(ticked), "depth": self.depth.image.copy(), "privileged": privileged}
