"""A walking environment for the depth student: ``StudentEnv`` on flat ground with sampled velocity commands.

``StudentEnv`` needs a reference; this uses ``standing_reference`` (the default pose at the origin) only
as the start state and the episode clock: the tracking reward, the tracking termination (switched off
with an infinite threshold) and the reference's command are ignored. What changes (gains, command,
gentle terrain, gait clock, falls): :class:`WalkEnv`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from parkour_core.bundle import Manifest
from parkour_core.config import ConfigError
from parkour_core.obs import ObsTerm
from training.envs.randomization import RandomizationConfig
from training.envs.reference import Terrain, standing_reference
from training.envs.student import CameraConfig, StudentConfig, StudentEnv
from training.envs.tracking import TrackingConfig
from training.export.student import student_manifest
from training.motion_matching import quat

F = NDArray[np.float64]
Ints = NDArray[np.int64]

FALL_HEIGHT_M = 0.45
FALL_TILT_RAD = 1.0


@dataclass(frozen=True)
class CommandConfig:
    vx: tuple[float, float] = (0.0, 1.0)
    vy: tuple[float, float] = (-0.2, 0.2)
    yaw_rate: tuple[float, float] = (-0.3, 0.3)
    zero_fraction: float = 0.1
    resample_s: float = 4.0


@dataclass(frozen=True)
class TerrainConfig:
    fraction: float = 0.5
    boxes: int = 4
    height_m: tuple[float, float] = (0.02, 0.05)
    first_m: tuple[float, float] = (0.8, 2.0)  # start to the first near face
    spacing_m: tuple[float, float] = (1.2, 2.5)  # near face to near face
    depth_m: float = 0.8
    width_m: float = 3.0
    yaw_deg: float = 20.0


def platform_course(rng: np.random.Generator, cfg: TerrainConfig, heights: F) -> Terrain:
    """Boxes straight ahead of a robot at the origin facing +x, one per height, near faces spaced."""
    k = len(heights)
    near = rng.uniform(*cfg.first_m) + np.concatenate([[0.0], np.cumsum(rng.uniform(*cfg.spacing_m, k - 1))])
    yaw = np.deg2rad(rng.uniform(-cfg.yaw_deg, cfg.yaw_deg, k))
    center = np.stack([near + cfg.depth_m / 2, np.zeros(k), heights / 2], axis=-1)
    half = np.stack([np.full(k, cfg.depth_m / 2), np.full(k, cfg.width_m / 2), heights / 2], axis=-1)
    return Terrain(center, half, yaw)


@dataclass(frozen=True)
class WalkConfig:
    num_envs: int = 32
    episode_s: float = 20.0
    physics_dt_s: float = 0.002
    decimation: int = 10  # physics steps per policy step (the policy's 50 Hz)
    nthread: int = 2
    seed: int = 0
    camera: CameraConfig = field(default_factory=lambda: CameraConfig(width=36, height=24))
    command: CommandConfig = field(default_factory=CommandConfig)
    terrain: TerrainConfig = field(default_factory=TerrainConfig)
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    privileged: bool = True  # the teacher's privileged observation in obs["privileged"] (stage 2's critic reads it)
    backend: str = "mujoco_cpu"  # training.envs.physics: mujoco_cpu or mujoco_warp
    device: str = "cpu"  # mujoco_warp's device


# The walking policy's gait phase: its actions follow its clock, so the student reads the same clock
# rather than inferring the phase from proprioception (the first stage-1 run, without it, walked at
# half the commanded speed).
GAIT_TERMS = (ObsTerm("sin_phase", 2), ObsTerm("cos_phase", 2))


def walk_student_manifest(
    name: str, hidden_size: int, latent_dim: int, teacher: Manifest, control_hz: float | None = None
) -> Manifest:
    """The student bundle's manifest with the walking policy's PD gains and gait clock (as observed terms).
    ``control_hz``: the rate the task ticks at (a config's ``env.control_hz``), which must be the teacher's."""
    if control_hz is not None and abs(control_hz - teacher.policy_hz) > 1e-9:
        # The teacher's gait clock and the bundle's rate both assume the teacher's tick.
        raise ConfigError(
            f"env.control_hz: {control_hz:g} Hz, but the walking policy {teacher.name!r} runs at "
            f"{teacher.policy_hz:g} Hz and its student ticks with it; set env.control_hz: {teacher.policy_hz:g}"
        )
    m = student_manifest(name, hidden_size, {}, {}, latent_dim=latent_dim)
    if teacher.gait_period_s is None:
        raise ValueError(f"teacher bundle {teacher.name!r} has no gait clock; the walking student reads one")
    return dataclasses.replace(
        m, kp=teacher.kp, kd=teacher.kd, obs_terms=(*m.obs_terms, *GAIT_TERMS), gait_period_s=teacher.gait_period_s
    )


class WalkEnv(StudentEnv):
    """``step(actions) -> obs, done, info`` with falls and timeouts in ``done``. Beside ``StudentEnv``:

    - Gains: the walking policy's kp/kd (``models/g1_walk``), not the student bundle's stand gains: the
      teacher's actions only mean what it learned under its own PD. The action mapping
      (``default_q + 0.25 a``) and default pose are the same in both bundles.
    - Command per environment (vx, vy, yaw rate) in the heading frame, resampled every ``resample_s``:
      vx U[0, 1] m/s, vy U[-0.2, 0.2] m/s, yaw rate U[-0.3, 0.3] rad/s, all zero with probability
      ``zero_fraction``.
    - Gentle terrain in a fraction ``terrain.fraction`` of the episodes: ``terrain.boxes`` low platforms
      (``terrain.height_m``, 0.8 m deep, 3 m wide, yawed up to ``terrain.yaw_deg``) ahead of the start,
      every ``terrain.spacing_m``; the walking policy steps onto and off 5 cm by itself.
    - Gait clock: the student's manifest (``walk_student_manifest``) has the walking policy's clock
      (``gait_period_s``) and observes it (``sin_phase``, ``cos_phase``); ``StudentEnv`` runs one clock
      per environment and the teacher reads the same phase (``env.gait_phase``).
    - Falls end an episode (base height < 0.45 m or tilt > 1 rad) and reset it to the default pose;
      episodes also end at ``episode_s`` (the reference's end).
    """

    def __init__(self, cfg: WalkConfig, manifest: Manifest) -> None:
        tracking = TrackingConfig(
            num_envs=cfg.num_envs, physics_dt_s=cfg.physics_dt_s, decimation=cfg.decimation, nthread=cfg.nthread,
            seed=cfg.seed, termination_m=np.inf,
            randomization=cfg.randomization, compute_rewards=False, observe_privileged=cfg.privileged,
            backend=cfg.backend, device=cfg.device,
        )  # fmt: skip
        super().__init__([standing_reference(cfg.episode_s)], StudentConfig(tracking, cfg.camera), manifest)
        self.walk_cfg = cfg
        self.tracking.start_sampler = lambda ids, refs, rng: np.zeros(len(ids), dtype=np.int64)
        self.command_rng = np.random.default_rng([cfg.seed, 13])
        self.walk_command = np.zeros((self.num_envs, 3))
        self.command_age_s = np.zeros(self.num_envs)
        self.terrain_rng = np.random.default_rng([cfg.seed, 17])
        # First among the reset hooks, so the camera's first frame already sees the new terrain.
        self.tracking.after_reset.insert(0, self.place_terrain)
        self.resample(np.arange(self.num_envs))

    def place_terrain(self, ids: Ints) -> None:
        t, rng = self.walk_cfg.terrain, self.terrain_rng
        for i in ids:
            terrain = Terrain()
            if t.boxes and rng.random() < t.fraction:
                terrain = platform_course(rng, t, rng.uniform(*t.height_m, t.boxes))
            self.tracking.sim.set_terrain(int(i), terrain)

    def resample(self, ids: Ints) -> None:
        c, rng, n = self.walk_cfg.command, self.command_rng, len(ids)
        cmd = np.stack([rng.uniform(*c.vx, n), rng.uniform(*c.vy, n), rng.uniform(*c.yaw_rate, n)], axis=-1)
        cmd[rng.random(n) < c.zero_fraction] = 0.0
        self.walk_command[ids] = cmd
        self.command_age_s[ids] = 0.0

    def _commands(self) -> F:
        return self.walk_command.copy()

    def fallen(self) -> NDArray[np.bool_]:
        sim = self.tracking.sim
        rq = sim.root_quat
        # The body z axis in the world: its angle to vertical is the tilt.
        up_z = 1.0 - 2.0 * (rq[:, 1] ** 2 + rq[:, 2] ** 2)
        tilt = np.arccos(np.clip(up_z, -1.0, 1.0))
        return (sim.root_pos[:, 2] < FALL_HEIGHT_M) | (tilt > FALL_TILT_RAD)

    def forward_speed(self) -> F:
        """Base velocity along the robot's heading (m/s)."""
        sim = self.tracking.sim
        yaw = quat.yaw(sim.root_quat)
        v = sim.root_lin_vel_w
        return np.cos(yaw) * v[:, 0] + np.sin(yaw) * v[:, 1]

    def step_walk(self, actions: F) -> tuple[dict[str, NDArray[np.float32]], NDArray[np.bool_], dict]:
        dt = self.tracking.dt_s
        self.command_age_s += dt
        due = np.flatnonzero(self.command_age_s >= self.walk_cfg.command.resample_s)
        if len(due):
            self.resample(due)  # before the step: the observation it returns carries the new command
        obs, _, done, info = self.step(actions)
        fell = self.fallen() & ~done
        if fell.any():
            ids = np.flatnonzero(fell)
            self.resample(ids)
            obs = self.reset(ids)
        info["fell"] = fell | info["terminated"]
        return obs, done | fell, info
