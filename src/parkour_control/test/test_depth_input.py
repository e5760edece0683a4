import numpy as np
import pytest

from parkour_control.depth_input import DepthLatencyGate, FrameRate

IMAGE = np.zeros((58, 87), dtype=np.float32)


def test_without_emulation_frames_release_at_once():
    gate = DepthLatencyGate(None)
    gate.push(IMAGE, stamp_s=1.0)
    frame = gate.pop_ready(now_s=1.0)
    assert frame is not None and frame.stamp_s == 1.0
    assert gate.pop_ready(now_s=2.0) is None


def test_emulated_latency_holds_frame_until_its_age_is_in_the_trained_range():
    gate = DepthLatencyGate((0.06, 0.08), seed=3)
    gate.push(IMAGE, stamp_s=10.0)
    assert gate.pop_ready(now_s=10.059) is None
    frame = gate.pop_ready(now_s=10.081)
    assert frame is not None
    assert 0.06 <= frame.release_s - frame.stamp_s <= 0.08


def test_newest_ready_frame_wins_and_older_are_counted_superseded():
    gate = DepthLatencyGate(None)
    for stamp in (1.0, 1.033, 1.066):
        gate.push(IMAGE, stamp)
    frame = gate.pop_ready(now_s=1.07)
    assert frame is not None and frame.stamp_s == 1.066
    assert gate.superseded == 2


def test_frames_not_yet_due_stay_queued():
    gate = DepthLatencyGate((0.05, 0.05))
    gate.push(IMAGE, 1.0)
    gate.push(IMAGE, 1.033)
    first = gate.pop_ready(1.06)
    assert first is not None and first.stamp_s == 1.0
    second = gate.pop_ready(1.09)
    assert second is not None and second.stamp_s == 1.033


def test_frame_rate_from_stamps():
    rate = FrameRate()
    assert rate.fps == 0.0
    for k in range(31):
        rate.add(5.0 + k / 30.0)
    assert rate.frames == 31
    assert rate.fps == pytest.approx(30.0)
