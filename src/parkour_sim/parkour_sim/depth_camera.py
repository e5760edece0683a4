"""A simulated Intel RealSense D435i: z-depth from MuJoCo, the training noise model, frame latency. No ROS.

The camera sits on the robot's camera-mount body at the mount pose (``RobotSpec.camera``) with the D435's
87 x 58 deg depth field of view and returns **z-depth** in metres (distance along the optical axis, what a
RealSense reports), 0 where nothing is within range (a real sensor's hole). Two methods give the same image:

- ``raycast``: ``mj_multiRay`` from the camera centre, one ray per pixel centre, whose returned ray
  parameter *is* z-depth (:func:`ray_directions`).
- ``render``: an offscreen ``mujoco.Renderer`` depth image (``MUJOCO_GL=egl`` or ``osmesa``).

Both see only the terrain geom group (:data:`TERRAIN_GEOM_GROUP`): the robot's own meshes cost
about 6x per frame and the real head camera mostly does not see the robot.

The noise model (:func:`add_depth_noise`) and the latency schedule (:class:`FrameSchedule`) are
pure, so training applies exactly what the simulator publishes.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import mujoco
import numpy as np
from numpy.typing import NDArray

from parkour_core.config import SimCameraConfig
from parkour_core.depth import DepthSpec, preprocess_depth
from parkour_core.robots.spec import CameraMount
from parkour_core.stats import summary_ms

Float32Array = NDArray[np.float32]

# The geom group the camera sees. scene.py puts the floor and every box here; the holosoma G1 uses
# group 1 for visual meshes, 3 for collision shapes and 5 for sites, so 2 is free.
TERRAIN_GEOM_GROUP = 2
DEPTH_CAMERA_NAME = "depth_camera"
D435_FOV_DEG = (87.0, 58.0)  # horizontal, vertical (depth stream)
# Returns outside [MIN, MAX] read as holes, as on a D435: it has no depth closer than its minimum z
# (about 0.1-0.3 m, depending on resolution) and is rated to about 10 m. The policy clips at
# depth.far_m (2 m) anyway, so the far limit only decides what the raw image shows.
MIN_DEPTH_M = 0.1
MAX_DEPTH_M = 10.0
METHODS = ("raycast", "render")

# A mount frame looks along +x with z up (ROS body convention, like Unitree's URDF camera link); a
# MuJoCo camera looks along its -z with y up. Columns: the camera's x, y, z axes in the mount frame.
MOUNT_FROM_MUJOCO_CAMERA = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def rpy_matrix(rpy: tuple[float, float, float]) -> NDArray[np.float64]:
    """URDF roll/pitch/yaw (fixed axes x, then y, then z) -> rotation matrix."""
    roll, pitch, yaw = rpy
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    ry = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    rz = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    return rz @ ry @ rx


def camera_quat_wxyz(rpy: tuple[float, float, float]) -> NDArray[np.float64]:
    """Orientation of the MuJoCo camera in its mount body for a mount at ``rpy``."""
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, (rpy_matrix(rpy) @ MOUNT_FROM_MUJOCO_CAMERA).ravel())
    return quat


def add_depth_camera(body: mujoco.MjsBody, mount: CameraMount, name: str = DEPTH_CAMERA_NAME) -> mujoco.MjsCamera:
    """Add the D435 depth camera to ``body`` (the mount's body) in a model being built with MjSpec."""
    half_x, half_y = (math.radians(f) / 2.0 for f in D435_FOV_DEG)
    camera = body.add_camera(name=name, pos=list(mount.xyz), quat=list(camera_quat_wxyz(mount.rpy)))
    # Focal length 1 and a sensor of 2 tan(fov/2): the frustum is exactly the D435's field of view,
    # whatever the rendered resolution (the resolution only scales focal_pixel, which we do not use).
    camera.focal_length = [1.0, 1.0]
    camera.sensor_size = [2.0 * math.tan(half_x), 2.0 * math.tan(half_y)]
    camera.resolution = [round(D435_FOV_DEG[0]), round(D435_FOV_DEG[1])]
    return camera


def ray_directions(width: int, height: int, fov_deg: tuple[float, float] = D435_FOV_DEG) -> NDArray[np.float64]:
    """(height * width, 3) camera-frame directions through the pixel centres, row 0 at the top.

    Each is left unnormalised, ``(x, y, -1)`` (the MuJoCo camera looks along -z), so a hit at ray
    parameter t lies at z-depth t: no per-pixel cosine correction.
    """
    half_w, half_h = (math.tan(math.radians(f) / 2.0) for f in fov_deg)
    x = ((np.arange(width) + 0.5) / width * 2.0 - 1.0) * half_w  # left -> right
    y = (1.0 - (np.arange(height) + 0.5) / height * 2.0) * half_h  # top -> bottom
    xx, yy = np.meshgrid(x, y)
    return np.stack([xx.ravel(), yy.ravel(), -np.ones(width * height)], axis=1)


def geomgroup_mask(groups: tuple[int, ...]) -> NDArray[np.uint8]:
    """MuJoCo's per-group on/off mask (mj_multiRay's ``geomgroup``, MjvOption.geomgroup)."""
    mask = np.zeros(mujoco.mjNGROUP, dtype=np.uint8)
    mask[list(groups)] = 1
    return mask


class SimDepthCamera:
    """Z-depth images of the model's depth camera; see the module docstring.

    ``capture`` reads the camera and geom poses already in ``data`` (after ``mj_step``, or
    ``mj_kinematics`` + ``mj_camlight`` for the current ``qpos``). ``geom_groups`` are the groups
    the camera sees: the terrain only, unless a benchmark or test wants the robot in view. The
    render method owns an OpenGL context: create, use and close it on one thread.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        width: int,
        height: int,
        method: str = "raycast",
        *,
        geom_groups: tuple[int, ...] = (TERRAIN_GEOM_GROUP,),
        camera: str = DEPTH_CAMERA_NAME,
        min_depth_m: float = MIN_DEPTH_M,
        max_depth_m: float = MAX_DEPTH_M,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"depth camera method must be one of {METHODS}, got {method!r}")
        self.camera_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        if self.camera_id < 0:
            raise ValueError(f"the model has no camera {camera!r} (scene.build_model adds it at the robot's mount)")
        self.model = model
        self.width, self.height, self.method = width, height, method
        self.min_depth_m, self.max_depth_m = min_depth_m, max_depth_m
        self.geomgroup = geomgroup_mask(geom_groups)
        self._renderer: mujoco.Renderer | None = None
        if method == "raycast":
            self._directions_cam = ray_directions(width, height)
            self._directions_world = np.empty_like(self._directions_cam)
            self._geom_ids = np.empty(width * height, dtype=np.int32)
            self._ray_t = np.empty(width * height, dtype=np.float64)
        else:
            self._init_renderer()

    def _init_renderer(self) -> None:
        m = self.model
        # The offscreen buffer must hold the image, and the clip planes must lie outside the sensor
        # range: clipped geometry would show what is behind it, where a ray reads the geometry.
        # (The planes scale with the model's extent: 0.01 and 50 extents by default.)
        m.vis.global_.offwidth = max(m.vis.global_.offwidth, self.width)
        m.vis.global_.offheight = max(m.vis.global_.offheight, self.height)
        m.vis.map.znear = min(m.vis.map.znear, 0.5 * self.min_depth_m / m.stat.extent)
        m.vis.map.zfar = max(m.vis.map.zfar, 2.0 * self.max_depth_m / m.stat.extent)
        self._renderer = mujoco.Renderer(m, self.height, self.width)
        self._renderer.enable_depth_rendering()
        self._scene_option = mujoco.MjvOption()
        self._scene_option.geomgroup[:] = self.geomgroup
        self._scene_option.sitegroup[:] = 0
        self._render_out = np.empty((self.height, self.width), dtype=np.float32)

    def capture(self, data: mujoco.MjData) -> Float32Array:
        """A new (height, width) float32 z-depth image in metres; 0 = no return within range."""
        if self._renderer is None:
            depth = self._raycast(data)
        else:
            self._renderer.update_scene(data, camera=self.camera_id, scene_option=self._scene_option)
            depth = self._renderer.render(out=self._render_out).copy()
        # Misses (ray: -1; render: the far plane) and anything out of range read 0, like a RealSense.
        depth[~((depth >= self.min_depth_m) & (depth <= self.max_depth_m))] = 0.0
        return depth

    def _raycast(self, data: mujoco.MjData) -> Float32Array:
        cam_rot = data.cam_xmat[self.camera_id].reshape(3, 3)  # columns: camera axes in the world
        np.matmul(self._directions_cam, cam_rot.T, out=self._directions_world)
        mujoco.mj_multiRay(
            self.model,
            data,
            data.cam_xpos[self.camera_id],
            self._directions_world.ravel(),
            self.geomgroup,
            1,  # flg_static: the terrain is static (world-body) geometry
            -1,  # bodyexclude: none; the geom group already leaves the robot out
            self._geom_ids,
            self._ray_t,
            None,
            self.width * self.height,
            mujoco.mjMAXVAL,
        )
        return self._ray_t.astype(np.float32).reshape(self.height, self.width)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


# ---------------------------------------------------------------------------------------------
# The training noise model


@dataclass(frozen=True)
class DepthNoise:
    """What training adds to clean depth (PHP): a frame offset, pixel noise and stereo holes."""

    offset_max_m: float = 0.03  # per frame, uniform in [-max, max]
    noise_sigma_m: float = 0.03  # per pixel, Gaussian
    hole_fraction: float = 0.01  # per pixel probability of reading 0 (no stereo match)

    def __post_init__(self) -> None:
        if self.offset_max_m < 0.0 or self.noise_sigma_m < 0.0 or not (0.0 <= self.hole_fraction <= 1.0):
            raise ValueError(f"invalid depth noise {self}")


def add_depth_noise(depth_m: NDArray, noise: DepthNoise, rng: np.random.Generator) -> Float32Array:
    """Clean z-depth (..., H, W) in metres -> a new noisy float32 image (or batch), seeded by ``rng``.

    Leading dimensions are frames, each with its own offset (training passes a batch). Pixels
    that are already holes (0) stay holes; noise never makes a depth negative: a pixel pushed to
    or below 0 reads 0, as a RealSense reports no depth rather than a negative one.
    """
    depth = np.asarray(depth_m, dtype=np.float32)
    if depth.ndim < 2:
        raise ValueError(f"depth must be (..., H, W), got shape {depth.shape}")
    frames = depth.shape[:-2]
    offset = rng.uniform(-noise.offset_max_m, noise.offset_max_m, size=(*frames, 1, 1)).astype(np.float32)
    noisy = depth + offset
    if noise.noise_sigma_m > 0.0:
        noisy += rng.normal(0.0, noise.noise_sigma_m, size=depth.shape).astype(np.float32)
    dropped = rng.random(depth.shape) < noise.hole_fraction
    noisy[dropped | ~(depth > 0.0) | ~(noisy > 0.0)] = 0.0
    return noisy


def depth_to_z16(depth_m: NDArray) -> NDArray[np.uint16]:
    """Metres -> uint16 millimetres (a D435's z16 at its default 1 mm scale); 0 stays a hole."""
    mm = np.rint(np.asarray(depth_m, dtype=np.float64) * 1000.0)
    return np.clip(np.nan_to_num(mm, nan=0.0), 0, np.iinfo(np.uint16).max).astype(np.uint16)


@dataclass(frozen=True)
class DepthFrame:
    """One simulated camera frame: the noisy metric image and the policy image made from it."""

    exposure_s: float
    metres: Float32Array
    policy: Float32Array


def make_depth_frame(
    clean_m: NDArray, exposure_s: float, noise: DepthNoise, spec: DepthSpec, rng: np.random.Generator
) -> DepthFrame:
    """Noise the clean image, then :func:`preprocess_depth` (the one preprocessing) for the policy."""
    noisy = add_depth_noise(clean_m, noise, rng)
    return DepthFrame(exposure_s, noisy, preprocess_depth(noisy, spec))


# ---------------------------------------------------------------------------------------------
# When frames are exposed and published

T = TypeVar("T")
_TIME_EPS_S = 1e-9  # sim time accumulates dt in floating point; grid points must not slip a step


@dataclass(frozen=True)
class ScheduledFrame(Generic[T]):
    exposure_s: float  # sim time the scene was sensed: the message's header.stamp
    publish_s: float  # sim time it may be published
    latency_s: float  # the latency drawn for it (publish_s - exposure_s unless held behind an earlier frame)
    frame: T


class FrameSchedule(Generic[T]):
    """Exposures every ``1/hz`` of sim time; each frame published ``latency`` later, in order.

    Exposures follow a fixed grid (``start_s + k / hz``), taken at the first call at or after each
    grid point, so the rate does not drift with the caller's step. Latency is drawn per frame,
    uniform in ``[latency_min_s, latency_max_s]``. A camera pipeline is a FIFO: a frame is never
    published before the one exposed ahead of it (possible when the latency spread exceeds the
    period).
    """

    def __init__(
        self, hz: float, latency_min_s: float, latency_max_s: float, rng: np.random.Generator, start_s: float = 0.0
    ) -> None:
        if hz <= 0.0 or not (0.0 <= latency_min_s <= latency_max_s):
            raise ValueError(f"bad camera schedule: hz {hz}, latency [{latency_min_s}, {latency_max_s}]")
        self.period_s = 1.0 / hz
        self.latency_min_s, self.latency_max_s = latency_min_s, latency_max_s
        self.rng = rng
        self.start_s = start_s
        self.next_exposure_s = start_s
        self._pending: deque[ScheduledFrame[T]] = deque()
        self._last_publish_s = -math.inf

    def exposure_due(self, now_s: float) -> bool:
        return now_s >= self.next_exposure_s - _TIME_EPS_S

    def exposures_due(self, times_s: Sequence[float]) -> list[int]:
        """Which of ``times_s`` (ascending) would expose a frame, were each offered in turn (``exposure_due``, then
        ``expose``): their indices. Nothing is exposed."""
        due, next_s = [], self.next_exposure_s
        for k, t in enumerate(times_s):
            if t >= next_s - _TIME_EPS_S:
                due.append(k)
                next_s = self._next_after(t)
        return due

    def _next_after(self, now_s: float) -> float:
        """The grid point after an exposure at ``now_s``."""
        k = math.floor((now_s - self.start_s) / self.period_s + _TIME_EPS_S) + 1
        return self.start_s + k * self.period_s

    def expose(self, now_s: float, frame: T) -> ScheduledFrame[T]:
        """Queue ``frame`` sensed at ``now_s``; returns its schedule."""
        latency = float(self.rng.uniform(self.latency_min_s, self.latency_max_s))
        publish = max(now_s + latency, self._last_publish_s)
        self._last_publish_s = publish
        scheduled = ScheduledFrame(now_s, publish, latency, frame)
        self._pending.append(scheduled)
        self.next_exposure_s = self._next_after(now_s)
        return scheduled

    def pop_due(self, now_s: float) -> list[ScheduledFrame[T]]:
        """Frames whose publish time has come, oldest first."""
        due = []
        while self._pending and self._pending[0].publish_s <= now_s + _TIME_EPS_S:
            due.append(self._pending.popleft())
        return due

    @property
    def pending(self) -> int:
        return len(self._pending)


# ---------------------------------------------------------------------------------------------
# The camera as the bridge runs it


class SimDepthSensor:
    """Capture on schedule, add noise, preprocess, hold each frame for its latency; keeps statistics.

    Call :meth:`tick` after every physics step: it exposes a frame when one is due and returns the
    frames whose publish time has come. Also keeps a few frames (one every ``strip_every_s`` of
    sim time, at most ``strip_max``) for the run's picture strip.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        cfg: SimCameraConfig,
        spec: DepthSpec,
        start_s: float = 0.0,
        strip_every_s: float = 1.5,
        strip_max: int = 12,
    ) -> None:
        self.cfg, self.spec = cfg, spec
        self.model = model
        self.camera = SimDepthCamera(model, cfg.width, cfg.height, cfg.method)
        self.noise = DepthNoise(cfg.offset_max_m, cfg.noise_sigma_m, cfg.hole_fraction)
        # Separate streams, so changing the latency settings leaves the noise of every frame as it was.
        noise_seed, latency_seed = np.random.SeedSequence(cfg.seed).spawn(2)
        self.noise_rng = np.random.default_rng(noise_seed)
        self.schedule: FrameSchedule[DepthFrame] = FrameSchedule(
            cfg.hz, cfg.latency_min_s, cfg.latency_max_s, np.random.default_rng(latency_seed), start_s
        )
        self.strip_every_s, self.strip_max = strip_every_s, strip_max
        self.strip: list[DepthFrame] = []
        self._strip_start_s = self._next_strip_s = start_s
        self.capture_s: list[float] = []  # wall time of the ray cast / render alone
        self.frame_s: list[float] = []  # wall time of capture + noise + preprocessing
        self.latency_drawn_s: list[float] = []
        self.published_age_s: list[float] = []  # sim time at publication - exposure stamp
        self.published_stamps_s: list[float] = []

    def tick(self, data: mujoco.MjData, published: bool = True) -> list[ScheduledFrame[DepthFrame]]:
        """Expose a frame if one is due and return the frames due for publication. ``published``: they go
        out now; a caller that sends them later says when with :meth:`mark_published`."""
        now = float(data.time)
        if self.schedule.exposure_due(now):
            self._expose(data, now)
        due = self.schedule.pop_due(now)
        if published:
            self.mark_published(due, now)
        return due

    def mark_published(self, frames: list[ScheduledFrame[DepthFrame]], now_s: float) -> None:
        for f in frames:
            self.published_age_s.append(now_s - f.exposure_s)
            self.published_stamps_s.append(f.exposure_s)

    def _expose(self, data: mujoco.MjData, now: float) -> None:
        started = time.perf_counter()
        # mj_step leaves poses of the state before its integration; refresh them so the image
        # shows the scene at `now`, its stamp (mj_step recomputes them next step anyway).
        mujoco.mj_kinematics(self.model, data)
        mujoco.mj_camlight(self.model, data)
        clean = self.camera.capture(data)
        captured = time.perf_counter()
        frame = make_depth_frame(clean, now, self.noise, self.spec, self.noise_rng)
        self.capture_s.append(captured - started)
        self.frame_s.append(time.perf_counter() - started)
        self.latency_drawn_s.append(self.schedule.expose(now, frame).latency_s)
        if len(self.strip) < self.strip_max and now >= self._next_strip_s - _TIME_EPS_S:
            self.strip.append(frame)
            k = math.floor((now - self._strip_start_s) / self.strip_every_s + _TIME_EPS_S) + 1
            self._next_strip_s = self._strip_start_s + k * self.strip_every_s

    def published_fps(self) -> float | None:
        """Frames per second of sim time between the first and the last published stamp."""
        stamps = self.published_stamps_s
        if len(stamps) < 2 or stamps[-1] <= stamps[0]:
            return None
        return (len(stamps) - 1) / (stamps[-1] - stamps[0])

    def stats(self) -> dict[str, Any]:
        fps = self.published_fps()
        return {
            "method": self.cfg.method,
            "width": self.cfg.width,
            "height": self.cfg.height,
            "hz": self.cfg.hz,
            "frames_rendered": len(self.capture_s),
            "frames_published": len(self.published_stamps_s),
            "frames_pending_at_end": self.schedule.pending,
            "published_fps": round(fps, 3) if fps is not None else None,
            "render_ms": summary_ms(self.capture_s),
            "frame_ms": summary_ms(self.frame_s),
            "latency_config_s": [self.cfg.latency_min_s, self.cfg.latency_max_s],
            "latency_drawn_ms": summary_ms(self.latency_drawn_s),
            "published_age_ms": summary_ms(self.published_age_s),
        }

    def close(self) -> None:
        self.camera.close()
