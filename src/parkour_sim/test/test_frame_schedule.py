"""When simulated depth frames are exposed and published (pure logic, sim time only)."""

import numpy as np
import pytest

from parkour_sim.depth_camera import FrameSchedule

DT = 0.002


def _run(schedule: FrameSchedule, seconds: float) -> tuple[list[float], list[tuple[float, object]]]:
    """Step sim time like the bridge; returns exposure times and (publish time, frame) pairs."""
    exposed, published = [], []
    for step in range(1, round(seconds / DT) + 1):
        now = step * DT
        if schedule.exposure_due(now):
            exposed.append(now)
            schedule.expose(now, len(exposed) - 1)
        published += [(now, f) for f in schedule.pop_due(now)]
    return exposed, published


def test_exposures_follow_the_rate_grid():
    schedule = FrameSchedule(30.0, 0.06, 0.08, np.random.default_rng(0))
    exposed, _ = _run(schedule, 2.0)
    # Grid points k/30 for k = 0..60 (the first step is at 0.002 s, the last at 2.0 s), each taken
    # at the first step at or after it: no drift, no double exposure.
    assert len(exposed) == 61
    grid = np.arange(0, 61) / 30.0
    lag = np.array(exposed) - grid
    assert lag.min() >= -1e-9 and lag.max() <= DT + 1e-9


def test_frames_are_published_latency_later_stamped_with_their_exposure():
    schedule = FrameSchedule(30.0, 0.06, 0.08, np.random.default_rng(1))
    exposed, published = _run(schedule, 3.0)
    assert [f.frame for _, f in published] == list(range(len(published)))  # in order, none lost
    assert len(exposed) - len(published) <= 3  # only the last latency's worth still in the queue
    for now, f in published:
        assert f.exposure_s == exposed[f.frame]  # the stamp is the exposure time
        assert 0.06 <= f.latency_s <= 0.08
        assert f.publish_s == pytest.approx(f.exposure_s + f.latency_s)
        assert f.publish_s - 1e-9 <= now < f.publish_s + DT  # published at the first step it is due
    latencies = np.array([f.latency_s for _, f in published])
    assert latencies.min() < 0.062 and latencies.max() > 0.078  # uniform over the range, not one value


def test_frames_stay_in_order_when_latency_spread_exceeds_the_period():
    # 90 Hz (11 ms) with latency 0-100 ms: drawn publish times would cross; a camera FIFO cannot.
    schedule = FrameSchedule(90.0, 0.0, 0.1, np.random.default_rng(2))
    _, published = _run(schedule, 2.0)
    frames = [f.frame for _, f in published]
    assert frames == sorted(frames)
    publish_times = [f.publish_s for _, f in published]
    assert publish_times == sorted(publish_times)
    assert any(f.publish_s > f.exposure_s + f.latency_s + 1e-9 for _, f in published)  # some were held


def test_same_seed_same_latencies():
    a = _run(FrameSchedule(30.0, 0.06, 0.08, np.random.default_rng(5)), 1.0)[1]
    b = _run(FrameSchedule(30.0, 0.06, 0.08, np.random.default_rng(5)), 1.0)[1]
    assert [f.publish_s for _, f in a] == [f.publish_s for _, f in b]


def test_a_late_caller_skips_missed_exposures_instead_of_bursting():
    schedule = FrameSchedule(30.0, 0.0, 0.0, np.random.default_rng(0))
    schedule.expose(0.0, "a")
    schedule.expose(0.5, "b")  # sim time jumped half a second
    assert not schedule.exposure_due(0.51)
    assert schedule.exposure_due(0.5 + 1 / 30)


def test_bad_rates_are_refused():
    with pytest.raises(ValueError):
        FrameSchedule(0.0, 0.06, 0.08, np.random.default_rng(0))
    with pytest.raises(ValueError):
        FrameSchedule(30.0, 0.08, 0.06, np.random.default_rng(0))
