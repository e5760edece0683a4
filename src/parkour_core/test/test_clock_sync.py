"""DeviceClockSync: the device-to-host mapping for hardware-clock camera timestamps."""

from __future__ import annotations

import numpy as np
import pytest

from parkour_core.clock_sync import US32_WRAP_PERIOD_S, DeviceClockSync

HOST_EPOCH_S = 1_700_000_000.0  # host times look like UNIX time, device times like seconds since power-up


def test_hand_computed_lower_envelope():
    # offset 1_700_000_000 - 10; latencies 5, 2, 7 ms in one bucket: the 2 ms sample is the envelope.
    sync = DeviceClockSync()
    sync.add(10.000, HOST_EPOCH_S + 0.005)
    sync.add(10.010, HOST_EPOCH_S + 0.012)
    sync.add(10.020, HOST_EPOCH_S + 0.027)
    assert sync.fit.drift == 0.0
    assert sync.fit.offset_s == pytest.approx(HOST_EPOCH_S - 10.0 + 0.002, abs=1e-7)
    # A mid-exposure time 8 ms before the first readout maps through the same offset.
    assert sync.to_host(9.992) == pytest.approx(HOST_EPOCH_S - 0.008 + 0.002, abs=1e-6)


def test_hand_computed_drift_line():
    # host = device * (1 + 100 ppm) + 1000 s with no jitter: the fit is that line exactly.
    sync = DeviceClockSync(window_s=30.0, bucket_s=1.0, min_drift_span_s=5.0)
    for device_s in np.arange(0.0, 20.0, 0.5):
        sync.add(float(device_s), 1000.0 + float(device_s) * (1 + 100e-6))
    assert sync.drift_ppm == pytest.approx(100.0, abs=1e-3)
    assert sync.to_host(25.0) == pytest.approx(1000.0 + 25.0 * (1 + 100e-6), abs=1e-7)


def test_no_drift_fit_before_enough_history():
    # 2 s of samples with a 100 ppm drift: too short to trust a slope, so the envelope is a constant.
    sync = DeviceClockSync(min_drift_span_s=5.0)
    for device_s in np.arange(0.0, 2.0, 0.1):
        sync.add(float(device_s), 50.0 + float(device_s) * (1 + 100e-6))
    assert sync.fit.drift == 0.0
    assert sync.fit.offset_s == pytest.approx(50.0, abs=1e-9)  # the first sample had the lowest offset


def _stream(rng, seconds, fps=60.0, drift_ppm=40.0, offset_s=HOST_EPOCH_S, floor_s=0.001, jitter_s=0.0005):
    """(device, host arrival) of a camera whose crystal runs drift_ppm fast against the host."""
    device = np.arange(0.0, seconds, 1.0 / fps) + 123.0
    latency = floor_s + rng.exponential(jitter_s, size=device.size)
    host = offset_s + device * (1.0 + drift_ppm * 1e-6) + latency
    return device, host


def test_drift_recovered_within_tolerance():
    rng = np.random.default_rng(1)
    sync = DeviceClockSync(window_s=30.0)
    device, host = _stream(rng, seconds=30.0, drift_ppm=40.0)
    for d, h in zip(device, host, strict=True):
        sync.add(float(d), float(h))
    assert sync.drift_ppm == pytest.approx(40.0, abs=5.0)
    # The mapping tracks "true host time + the minimum latency" to well under a millisecond.
    truth = HOST_EPOCH_S + device[-1] * (1 + 40e-6) + 0.001
    assert sync.to_host(float(device[-1])) == pytest.approx(truth, abs=2e-4)
    assert sync.resets == 0 and sync.wraps == 0


def test_jitter_rejected():
    # A third of the frames arrive 5-40 ms late (a busy host): the envelope ignores them.
    rng = np.random.default_rng(2)
    device, host = _stream(rng, seconds=10.0, drift_ppm=0.0, jitter_s=0.0001)
    late = rng.random(device.size) < 0.33
    host = host + late * rng.uniform(0.005, 0.040, size=device.size)
    sync = DeviceClockSync()
    errors = []
    for d, h in zip(device, host, strict=True):
        sync.add(float(d), float(h))
        errors.append(sync.to_host(float(d)) - (HOST_EPOCH_S + d + 0.001))
    assert max(abs(e) for e in errors[60:]) < 3e-4  # after the first second
    # Mean arrival delay of the late frames is 22 ms: a mean (not a minimum) would be off by ~7 ms.
    assert float(np.mean(host - device - HOST_EPOCH_S)) > 0.005


def test_device_reset_restarts_the_estimate():
    sync = DeviceClockSync()
    for i in range(120):
        sync.add(500.0 + i / 60, HOST_EPOCH_S + i / 60 + 0.001)
    # USB reset: the device clock restarts near zero while the host clock goes on.
    event = sync.add(0.05, HOST_EPOCH_S + 3.0 + 0.001)
    assert event == "reset"
    assert sync.resets == 1
    assert sync.to_host(0.05) == pytest.approx(HOST_EPOCH_S + 3.0 + 0.001, abs=1e-6)
    assert sync.add(0.05 + 1 / 60, HOST_EPOCH_S + 3.0 + 1 / 60 + 0.001) == "ok"
    assert sync.resets == 1


def test_counter_wrap_is_unwrapped():
    sync = DeviceClockSync()
    wrap = US32_WRAP_PERIOD_S
    start = wrap - 1.0  # one second before the 32-bit microsecond counter rolls over
    events = []
    for i in range(240):  # 4 s at 60 Hz, crossing the wrap
        unwrapped = start + i / 60
        raw = unwrapped % wrap
        events.append(sync.add(raw, HOST_EPOCH_S + unwrapped + 0.001))
    assert events.count("wrap") == 1 and sync.wraps == 1
    assert sync.resets == 0
    # A raw timestamp from just before the wrap (an exposure that straddled it) still maps right.
    assert sync.to_host(wrap - 0.004) == pytest.approx(HOST_EPOCH_S + wrap - 0.004 + 0.001, abs=1e-6)
    assert sync.to_host(2.5) == pytest.approx(HOST_EPOCH_S + wrap + 2.5 + 0.001, abs=1e-6)


def test_window_forgets_old_minima():
    # A very low offset 40 s ago must not pull today's estimate down: the window is 30 s.
    sync = DeviceClockSync(window_s=30.0)
    sync.add(0.0, 100.0 - 0.5)  # first sample: an envelope 0.5 s lower than what follows
    sync.add(0.5, 100.5 - 0.5)
    for i in range(2, 100):
        sync.add(i * 0.5, 100.0 + i * 0.5 + 0.0)  # the host clock was stepped by +0.5 s (NTP)
    assert sync.resets == 0  # a 0.5 s step is inside max_step_s: not a reset
    assert sync.to_host(49.5) == pytest.approx(149.5, abs=1e-6)


def test_no_sample_yet_is_a_clear_error():
    sync = DeviceClockSync()
    assert not sync.ready
    with pytest.raises(RuntimeError, match="no device clock sample"):
        sync.to_host(1.0)
    with pytest.raises(ValueError, match="finite"):
        sync.add(float("nan"), 1.0)
