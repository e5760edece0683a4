"""LLP's camera timing: rates drawn in 27-33 Hz, latencies in 30-60 ms, in the schedule and in the student env."""

from __future__ import annotations

import numpy as np
import pytest

from training.envs.reference import standing_reference
from training.envs.student import CameraConfig, StudentConfig
from training.envs.tracking import TrackingConfig
from training.methods.llp.timing import LLPTiming, llp_student_env


def test_draws_are_within_llps_ranges() -> None:
    timing, rng = LLPTiming(), np.random.default_rng(0)
    rates = np.array([timing.draw_hz(rng) for _ in range(2000)])
    assert rates.min() >= 27.0 and rates.max() <= 33.0 and rates.max() - rates.min() > 5.5  # spans the range
    latencies = []
    for _ in range(200):
        schedule = timing.schedule(rng)
        assert 1 / 33 - 1e-12 <= schedule.period_s <= 1 / 27 + 1e-12
        latencies += [schedule.expose(t, None).latency_s for t in np.arange(5) * schedule.period_s]
    assert min(latencies) >= 0.030 and max(latencies) <= 0.060 and max(latencies) - min(latencies) > 0.025
    with pytest.raises(ValueError):
        LLPTiming(hz=(33.0, 27.0))


def test_the_student_env_publishes_on_llps_timing() -> None:
    cfg = StudentConfig(tracking=TrackingConfig(num_envs=2, seed=3), camera=CameraConfig(width=12, height=10))
    env = llp_student_env([standing_reference(2.0)], cfg)
    try:
        rates = []
        for _ in range(3):
            env.reset()
            rates.append(env.depth.camera_hz.copy())
            for _ in range(25):
                env.step(np.zeros((2, env.num_actions)))
            for i in range(2):
                exposure, publish, latency = (np.array(x) for x in zip(*env.depth.published[i], strict=True))
                assert np.all((latency >= 0.030 - 1e-9) & (latency <= 0.060 + 1e-9))
                period = np.diff(exposure)  # on the 2 ms physics grid, so within a sub-step of 1 / hz
                assert np.all(np.abs(period - 1 / env.depth.camera_hz[i]) <= 0.0021), (period, env.depth.camera_hz[i])
                assert np.all(publish >= exposure + latency - 1e-9)
        rates = np.concatenate(rates)
        assert np.all((rates >= 27.0) & (rates <= 33.0)) and len(np.unique(rates)) == len(rates)  # redrawn per reset
    finally:
        env.close()
