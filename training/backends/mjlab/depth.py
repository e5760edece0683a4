"""The students' simulated D435i on mjlab: the camera's rays as an mjlab ray-cast sensor, and
``training.envs.student.DepthPipeline`` (noise, latency, preprocessing) restated in torch.

:class:`DepthStream` imports torch and our packages only (``test_depth.py`` holds it equal to the CPU
code in the runtime ``.venv``); :func:`camera_sensor_cfg` builds the mjlab sensor and is called only
inside ``.venv-mjlab``. Each says where it differs from the CPU env and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from parkour_core.depth import DepthSpec, area_weights, crop_pixels
from parkour_core.robots.spec import CameraMount
from parkour_sim.depth_camera import (
    MAX_DEPTH_M,
    MIN_DEPTH_M,
    MOUNT_FROM_MUJOCO_CAMERA,
    DepthNoise,
    ray_directions,
    rpy_matrix,
)
from training.envs.student import CameraConfig

DEPTH_SENSOR = "depth_rays"
_TIME_EPS_S = 1e-9  # FrameSchedule's tolerance on grid times


def rotvec_matrix(r: torch.Tensor) -> torch.Tensor:
    """Rotation matrices [..., 3, 3] of rotation vectors [..., 3] (Rodrigues)."""
    angle = r.norm(dim=-1, keepdim=True)
    axis = r / angle.clamp(min=1e-12)
    x, y, z = axis.unbind(-1)
    zero = torch.zeros_like(x)
    k = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], dim=-1).reshape(*r.shape[:-1], 3, 3)
    s, c = torch.sin(angle)[..., None], torch.cos(angle)[..., None]
    eye = torch.eye(3, dtype=r.dtype, device=r.device).expand_as(k)
    return eye + s * k + (1.0 - c) * (k @ k)


def nominal_camera_rotation(mount: CameraMount) -> np.ndarray:
    """Body-from-camera rotation of the D435 at ``mount`` (the CPU scene's ``cam_quat``)."""
    return rpy_matrix(mount.rpy) @ MOUNT_FROM_MUJOCO_CAMERA


def clean_depth(distances: torch.Tensor, ray_norm: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Ray distances [N, H*W] (-1: miss) -> z-depth [N, H, W], 0 outside ``SimDepthCamera``'s range."""
    z = distances / ray_norm
    z = torch.where((distances >= 0) & (z >= MIN_DEPTH_M) & (z <= MAX_DEPTH_M), z, torch.zeros_like(z))
    return z.reshape(-1, height, width)


def add_depth_noise(depth: torch.Tensor, noise: DepthNoise, generator: torch.Generator | None) -> torch.Tensor:
    """``parkour_sim.depth_camera.add_depth_noise`` on frames [M, H, W]."""
    m, dev = depth.shape[0], depth.device
    offset = (torch.rand((m, 1, 1), generator=generator, device=dev) * 2.0 - 1.0) * noise.offset_max_m
    noisy = depth + offset
    if noise.noise_sigma_m > 0.0:
        noisy = noisy + torch.randn(depth.shape, generator=generator, device=dev) * noise.noise_sigma_m
    dropped = torch.rand(depth.shape, generator=generator, device=dev) < noise.hole_fraction
    return torch.where(dropped | ~(depth > 0.0) | ~(noisy > 0.0), torch.zeros_like(noisy), noisy)


class Preprocess:
    """``parkour_core.depth.preprocess_depth`` on frames [M, H, W] of one raw size."""

    def __init__(self, raw_hw: tuple[int, int], spec: DepthSpec, device: torch.device | str) -> None:
        self.spec = spec
        self.rows, self.cols = crop_pixels(raw_hw, spec.crop)
        kept = (self.rows.stop - self.rows.start, self.cols.stop - self.cols.start)
        self.resize = kept != (spec.height, spec.width)
        if self.resize:
            self.rows_w = torch.as_tensor(np.array(area_weights(kept[0], spec.height)), device=device)
            self.cols_w = torch.as_tensor(np.array(area_weights(kept[1], spec.width)).T.copy(), device=device)

    def __call__(self, raw: torch.Tensor) -> torch.Tensor:
        s = self.spec
        metres = raw[:, self.rows, self.cols].float()
        metres = torch.where(metres > 0.0, metres, torch.full_like(metres, s.far_m)).clamp(s.near_m, s.far_m)
        if self.resize:
            metres = (self.rows_w @ metres) @ self.cols_w
        return (metres - s.near_m) * np.float32(1.0 / (s.far_m - s.near_m)) - np.float32(0.5)


@dataclass
class Extrinsics:
    """Per-environment camera mount jitter: position offset (m) and rotation vector (rad), both [N, 3]."""

    pos: torch.Tensor
    rotvec: torch.Tensor


class DepthStream:
    """The camera's grid, latency, noise and preprocessing per environment (``DepthPipeline`` in torch).

    Each environment's exposures lie on a 30 Hz grid with a random phase, with a latency U[60, 80] ms per
    frame, published in order (a frame never before the one exposed ahead of it: ``FrameSchedule``); the
    policy sees the newest published frame. At reset the camera's last latency + period are replayed with
    frames of the start state (``DepthPipeline.reset``). Each published frame gets ``add_depth_noise``'s
    model (offset per frame, Gaussian per pixel, holes, non-positive -> 0) and ``preprocess_depth`` (holes
    -> far, clip, crop, area resize with parkour_core's own weights, normalise). Frames wait in a ring of
    slots per environment (the clean metric image, a few hundred floats at the students' ray counts).
    ``image`` [N, spec.height, spec.width] is what the policy sees.

    Unlike the CPU env, which exposes a frame at the 2 ms physics substep its grid time falls on (it keeps
    every substep's state from ``mujoco.rollout``), an exposure here is taken at the first policy tick at
    or after its grid time (0-18 ms later; ``FrameSchedule``'s own rule, called at 50 Hz instead of
    500 Hz): mjlab senses once per env step, after the step's ``forward()``. Sensing inside the decimation
    loop would read the camera pose one substep stale (mjlab's ``mj_step`` leaves kinematics before
    integration) and cast every world's rays at every substep, ten times the ray cost, for environments
    of which only one in seventeen is due. The noise is drawn from torch's generator (seeded from
    ``run.seed``) when a frame is published rather than when it is exposed: a frame is noised once either
    way, and frames overtaken before the policy sees them are never noised; the same distribution, not
    the CPU's numpy streams.
    """

    def __init__(
        self,
        num_envs: int,
        cfg: CameraConfig,
        spec: DepthSpec,
        device: torch.device | str,
        seed: int = 0,
    ) -> None:
        self.cfg, self.spec, self.device = cfg, spec, torch.device(device)
        self.num_envs = n = num_envs
        self.period_s = 1.0 / cfg.hz
        # Frames in flight at once: those exposed within the longest latency, plus the reset replay's.
        self.replay_frames = math.ceil((cfg.latency_s[1] + self.period_s) / self.period_s) + 1
        self.slots = self.replay_frames + 1
        self.generator = torch.Generator(device=self.device).manual_seed(int(seed) * 1000 + 7)
        self.preprocess = Preprocess((cfg.height, cfg.width), spec, self.device)
        f64 = {"dtype": torch.float64, "device": self.device}
        self.start_s = torch.zeros(n, **f64)
        self.next_exposure_s = torch.zeros(n, **f64)
        self.last_publish_s = torch.full((n,), -math.inf, **f64)
        self.slot_raw = torch.zeros((n, self.slots, cfg.height, cfg.width), device=self.device)
        self.slot_exposure_s = torch.zeros((n, self.slots), **f64)
        self.slot_publish_s = torch.zeros((n, self.slots), **f64)
        self.slot_used = torch.zeros((n, self.slots), dtype=torch.bool, device=self.device)
        self.image = torch.zeros((n, spec.height, spec.width), device=self.device)
        self.image_exposure_s = torch.zeros(n, **f64)
        self.extrinsics = Extrinsics(torch.zeros((n, 3), device=self.device), torch.zeros((n, 3), device=self.device))

    # -- draws -------------------------------------------------------------------------------

    def _uniform(self, shape: tuple[int, ...], lo: float, hi: float, dtype=torch.float64) -> torch.Tensor:
        u = torch.rand(shape, generator=self.generator, device=self.device, dtype=dtype)
        return lo + (hi - lo) * u

    def draw_extrinsics(self, ids: torch.Tensor) -> None:
        """A new camera mount pose for each environment in ``ids`` (an episode start)."""
        p, r = self.cfg.extrinsic_pos_m, math.radians(self.cfg.extrinsic_rot_deg)
        self.extrinsics.pos[ids] = self._uniform((len(ids), 3), -p, p, torch.float32)
        self.extrinsics.rotvec[ids] = self._uniform((len(ids), 3), -r, r, torch.float32)

    def _latency(self, k: int) -> torch.Tensor:
        return self._uniform((k,), *self.cfg.latency_s)

    # -- the schedule ------------------------------------------------------------------------

    def _next_grid_after(self, ids: torch.Tensor, exposed_s: torch.Tensor) -> None:
        k = torch.floor((exposed_s - self.start_s[ids]) / self.period_s + _TIME_EPS_S) + 1
        self.next_exposure_s[ids] = self.start_s[ids] + k * self.period_s

    def _expose(self, ids: torch.Tensor, exposed_s: torch.Tensor, raw: torch.Tensor) -> None:
        """Queue one frame for each environment in ``ids`` (distinct), exposed at ``exposed_s``."""
        if len(ids) == 0:
            return
        free = ~self.slot_used[ids]
        if not bool(free.any(dim=1).all()):
            raise RuntimeError("depth stream: more frames in flight than slots (latency longer than configured?)")
        slot = free.float().argmax(dim=1)
        publish = torch.maximum(exposed_s + self._latency(len(ids)), self.last_publish_s[ids])
        self.last_publish_s[ids] = publish
        self.slot_raw[ids, slot] = raw
        self.slot_exposure_s[ids, slot] = exposed_s
        self.slot_publish_s[ids, slot] = publish
        self.slot_used[ids, slot] = True
        self._next_grid_after(ids, exposed_s)

    def _publish(self, ids: torch.Tensor, now_s: torch.Tensor) -> None:
        due = self.slot_used[ids] & (self.slot_publish_s[ids] <= now_s[:, None] + _TIME_EPS_S)
        shown = due.any(dim=1)
        if bool(shown.any()):
            newest = torch.where(due, self.slot_exposure_s[ids], torch.full_like(self.slot_exposure_s[ids], -math.inf))
            slot = newest.argmax(dim=1)[shown]
            env = ids[shown]
            raw = self.slot_raw[env, slot]
            self.image[env] = self.preprocess(add_depth_noise(raw, self.cfg.noise, self.generator))
            self.image_exposure_s[env] = self.slot_exposure_s[env, slot]
        self.slot_used[ids] &= ~due

    def reset(self, ids: torch.Tensor, now_s: torch.Tensor, raw: torch.Tensor) -> None:
        """Episode starts at ``now_s`` [len(ids)] with the start state's clean image ``raw`` [len(ids), H, W]:
        the grid over the last latency + period replayed with it, then the due frames published."""
        if len(ids) == 0:
            return
        p = self.period_s
        lead = math.ceil((self.cfg.latency_s[1] + p) / p)
        self.start_s[ids] = now_s + self._uniform((len(ids),), 0.0, p) - p * lead
        self.next_exposure_s[ids] = self.start_s[ids]
        self.slot_used[ids] = False
        self.last_publish_s[ids] = -math.inf
        for _ in range(self.replay_frames):
            due = now_s >= self.next_exposure_s[ids] - _TIME_EPS_S
            if not bool(due.any()):
                break
            self._expose(ids[due], self.next_exposure_s[ids[due]].clone(), raw[due])
        self._publish(ids, now_s)

    def tick(self, ids: torch.Tensor, now_s: torch.Tensor, raw: torch.Tensor) -> None:
        """A policy tick at ``now_s`` of environments ``ids``: expose where a grid time has come, then publish."""
        if len(ids) == 0:
            return
        due = now_s >= self.next_exposure_s[ids] - _TIME_EPS_S
        self._expose(ids[due], now_s[due], raw[due])
        self._publish(ids, now_s)

    # -- the camera's rays -------------------------------------------------------------------

    def body_from_camera(self, nominal: torch.Tensor) -> torch.Tensor:
        """[N, 3, 3]: each environment's camera rotation in its mount body, ``R(rotvec) R_nominal``."""
        return rotvec_matrix(self.extrinsics.rotvec) @ nominal


def camera_rays(cfg: CameraConfig) -> tuple[np.ndarray, np.ndarray]:
    """Unit ray directions [H*W, 3] in the MuJoCo camera frame and the norm of each ``(x, y, -1)``."""
    d = ray_directions(cfg.width, cfg.height)
    norm = np.linalg.norm(d, axis=1)
    return d / norm[:, None], norm


def camera_sensor_cfg(mount: CameraMount, cfg: CameraConfig, terrain_groups: tuple[int, ...]):
    """mjlab's sensor for the D435's rays (:class:`CameraRaysSensor`). Inside .venv-mjlab.

    The rays are ``parkour_sim.depth_camera.ray_directions`` (one per pixel centre over the D435's
    87 x 58 deg, ``(x, y, -1)`` in the MuJoCo camera frame) from the camera on ``torso_link`` at the robot
    spec's mount, as ``SimDepthCamera``'s ``raycast`` casts them, through mjlab's ``RayCastSensor``
    (mujoco_warp's BVH ray kernel, terrain geom groups only). z-depth = hit distance / |(x, y, -1)|, 0 for
    a miss or outside [0.1, 10] m (``SimDepthCamera``'s range). Not mjlab's ``CameraSensorCfg``: its
    render crops the camera's sensor to the image's aspect, so 87 x 58 pixels would span 79.5 x 58 deg,
    not the D435's field (``checks.py depth`` compares both with our CPU depth).

    The sensor exists before the env's managers; the term that owns the :class:`DepthStream` hands it
    over (``sensor.stream = stream``), and from then on its extrinsics turn each environment's rays."""
    from mjlab.sensor import GridPatternCfg, ObjRef, RayCastSensor, RayCastSensorCfg

    unit, norm = camera_rays(cfg)
    nominal = nominal_camera_rotation(mount)

    @dataclass
    class CameraRaysPatternCfg(GridPatternCfg):
        def generate_rays(self, mj_model, device):
            offsets = torch.tensor(np.tile(mount.xyz, (len(unit), 1)), dtype=torch.float32, device=device)
            return offsets, torch.tensor(unit @ nominal.T, dtype=torch.float32, device=device)

    class CameraRaysSensor(RayCastSensor):
        """mjlab's ray sensor with each environment's camera pose (mount jitter) in its body.

        mjlab's sensor turns one ray pattern with its frame body; this one turns each environment's own,
        because the extrinsic jitter (per episode, the mount moved by U[-2.5, 2.5] cm per axis and turned
        by U[-2.5, 2.5] deg about each axis, ``R = R(rotvec) R_nominal`` as the CPU env writes
        ``cam_quat``) differs per environment.
        """

        stream: DepthStream | None = None

        def initialize(self, mj_model, model, data, device) -> None:
            super().initialize(mj_model, model, data, device)
            self.unit_cam = torch.tensor(unit, dtype=torch.float32, device=device)
            self.ray_norm = torch.tensor(norm, dtype=torch.float32, device=device)
            self.nominal = torch.tensor(nominal, dtype=torch.float32, device=device)
            self.mount_xyz = torch.tensor(mount.xyz, dtype=torch.float32, device=device)

        def prepare_rays(self) -> None:
            stream = self.stream
            _, body, _ = self._frame_infos[0]
            pos = self._data.xpos[:, body]
            mat = self._data.xmat[:, body].view(-1, 3, 3)
            n = pos.shape[0]
            if stream is None:
                offset = self.mount_xyz.expand(n, 3)
                rot = self.nominal.expand(n, 3, 3)
            else:
                offset = self.mount_xyz + stream.extrinsics.pos
                rot = stream.body_from_camera(self.nominal)
            origin = pos + torch.einsum("bij,bj->bi", mat, offset)
            dirs = torch.einsum("bij,bjk,nk->bni", mat, rot, self.unit_cam)
            origins = origin[:, None, :].expand_as(dirs)
            wp_pnt = _torch_view(self._ray_pnt).view(n, self._num_rays, 3)
            wp_vec = _torch_view(self._ray_vec).view(n, self._num_rays, 3)
            wp_pnt.copy_(origins)
            wp_vec.copy_(dirs)
            self._cached_world_origins = origins
            self._cached_world_rays = dirs
            self._cached_frame_pos = pos[:, None, :]
            self._cached_frame_mat = mat[:, None, :, :]

        def depth(self) -> torch.Tensor:
            """Clean z-depth [N, H, W] of the last ``sense()``."""
            return clean_depth(self.data.distances, self.ray_norm, cfg.height, cfg.width)

    @dataclass
    class CameraRaysSensorCfg(RayCastSensorCfg):
        def build(self):
            return CameraRaysSensor(self)

    return CameraRaysSensorCfg(
        name=DEPTH_SENSOR,
        frame=ObjRef(type="body", name=mount.body, entity="robot"),
        pattern=CameraRaysPatternCfg(),
        ray_alignment="base",
        max_distance=100.0,  # misses and far hits are cut at MAX_DEPTH_M in z, as SimDepthCamera cuts them
        exclude_parent_body=True,
        include_geom_groups=terrain_groups,
    )


def _torch_view(array):
    import warp as wp

    return wp.to_torch(array)
