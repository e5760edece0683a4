"""LLP's depth-sensor timing: a camera rate drawn in 27-33 Hz and a latency drawn in 30-60 ms.

PHP's student env (:mod:`training.envs.student`) exposes frames on a fixed 30 Hz grid and holds each
for U[60, 80] ms. LLP randomizes the rate too, so the policy never learns one exact frame period:
here the period is drawn per camera (per episode, at every reset) from U[1/33, 1/27] s (a rate drawn
in [27, 33] Hz, then inverted) and the latency per frame from U[30, 60] ms. The frame mechanics are
unchanged: :class:`parkour_sim.depth_camera.FrameSchedule` (grid, FIFO publishing, per-frame latency)
and the student env's :class:`~training.envs.student.DepthPipeline` (raycast, noise, preprocessing,
extrinsic jitter, warm start at reset). :class:`LLPDepthPipeline` only changes which rate a reset
gives the schedule; :func:`llp_student_env` puts it into a :class:`~training.envs.student.StudentEnv`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from parkour_core.bundle import Manifest
from parkour_sim.depth_camera import FrameSchedule
from training.envs.reference import Reference
from training.envs.student import CameraConfig, DepthPipeline, StudentConfig, StudentEnv

Ints = NDArray[np.int64]


@dataclass(frozen=True)
class LLPTiming:
    """The camera rate range (Hz, drawn per camera/episode) and the latency range (s, drawn per frame)."""

    hz: tuple[float, float] = (27.0, 33.0)
    latency_s: tuple[float, float] = (0.030, 0.060)

    def __post_init__(self) -> None:
        if not 0.0 < self.hz[0] <= self.hz[1]:
            raise ValueError(f"LLPTiming.hz must be 0 < min <= max, got {self.hz}")
        if not 0.0 <= self.latency_s[0] <= self.latency_s[1]:
            raise ValueError(f"LLPTiming.latency_s must be 0 <= min <= max, got {self.latency_s}")

    @property
    def nominal_hz(self) -> float:
        return 0.5 * (self.hz[0] + self.hz[1])

    def draw_hz(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(*self.hz))

    def schedule(self, rng: np.random.Generator, start_s: float = 0.0) -> FrameSchedule:
        """A camera with a freshly drawn rate; its frames' latencies are drawn by the schedule."""
        return FrameSchedule(self.draw_hz(rng), *self.latency_s, rng, start_s=start_s)

    def camera(self, base: CameraConfig) -> CameraConfig:
        """``base`` (resolution, noise, jitter) with LLP's latency and the nominal rate."""
        return dataclasses.replace(base, hz=self.nominal_hz, latency_s=self.latency_s)


class LLPDepthPipeline(DepthPipeline):
    """The student env's depth pipeline with the camera rate redrawn for each environment at its reset."""

    def __init__(self, pipeline: DepthPipeline, timing: LLPTiming, seed: int) -> None:
        # Adopt the constructed pipeline's state (cameras, noise streams, schedules, images).
        self.__dict__.update(pipeline.__dict__)
        self.timing = timing
        self.base_cfg = timing.camera(pipeline.cfg)
        self.rate_rng = np.random.default_rng(np.random.SeedSequence([seed, 27, 33]))
        self.camera_hz = np.full(self.env.sim.num_envs, self.base_cfg.hz)

    def reset(self, ids: Ints) -> None:
        try:
            for i in np.asarray(ids, dtype=np.int64):
                self.camera_hz[i] = self.timing.draw_hz(self.rate_rng)
                self.cfg = dataclasses.replace(self.base_cfg, hz=float(self.camera_hz[i]))
                super().reset(np.array([i]))
        finally:
            self.cfg = self.base_cfg


def llp_student_env(
    references: Sequence[Reference],
    cfg: StudentConfig,
    manifest: Manifest | None = None,
    timing: LLPTiming | None = None,
) -> StudentEnv:
    """A :class:`StudentEnv` whose camera follows LLP's timing (the rest of the env is PHP's)."""
    timing = timing or LLPTiming()
    cfg = dataclasses.replace(cfg, camera=timing.camera(cfg.camera))
    env = StudentEnv(references, cfg, manifest)
    pipeline = LLPDepthPipeline(env.depth, timing, cfg.tracking.seed)
    hooks = env.tracking
    hooks.after_physics[hooks.after_physics.index(env.depth.after_physics)] = pipeline.after_physics
    hooks.after_reset[hooks.after_reset.index(env.depth.reset)] = pipeline.reset
    env.depth = pipeline
    return env
