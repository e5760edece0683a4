"""Map a device clock (a camera's hardware timestamps) onto the host clock, with drift. Pure Python, no ROS.

Each sample pairs a device time with the host time at which the same event reached the host
(a frame's arrival)::

    host_arrival = device_time + offset(device_time) + transport_latency

The transport latency is never negative and is mostly a small floor plus positive jitter (USB
scheduling, a busy host). So the lowest ``host_arrival - device_time`` values trace
``offset + minimum latency``: a lower envelope. We keep the minimum of each ``bucket_s`` slice
of device time over the last ``window_s`` (the min filter rejects jitter) and fit a line through
those minima (the slope is the drift of the device crystal against the host clock: quartz drifts
by tens of ppm). Mapping a device time through that line gives the host time the event would have
been seen with the minimum latency: for an exposure timestamp, the sensing time plus the (constant,
unknowable from here) minimum transport latency. Wraps and resets: :meth:`DeviceClockSync.add`.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

# D400 hardware timestamps are 32-bit microsecond counters.
US32_WRAP_PERIOD_S = 2**32 * 1e-6


@dataclass(frozen=True)
class ClockFit:
    """host_time = device_time + offset_s + drift * (device_time - reference_device_s)."""

    offset_s: float
    drift: float  # d(offset)/d(device time): host seconds gained per device second
    reference_device_s: float

    def offset_at(self, device_s: float) -> float:
        return self.offset_s + self.drift * (device_s - self.reference_device_s)


class DeviceClockSync:
    """Lower-envelope offset and drift estimate from (device time, host arrival time) samples.

    ``window_s``: device seconds of history used for the fit; ``bucket_s``: one minimum is kept
    per bucket of device time; the drift is fitted only once the minima span ``min_drift_span_s``
    (a line through minima a second apart is noise) and is ignored beyond ``max_drift_ppm``
    (no crystal drifts that far: such a fit means the samples are bad, not the clock). A bucket
    minimum more than ``outlier_s`` above the fitted line is left out of the fit.
    ``max_step_s``: a sample arriving this much earlier or later than the fitted envelope
    predicts means the device clock wrapped (by ``wrap_period_s``) or restarted; it is well above
    any transport delay of a working camera (depth_node reconnects after ``frame_timeout_s``).
    """

    def __init__(
        self,
        window_s: float = 30.0,
        bucket_s: float = 0.5,
        min_drift_span_s: float = 5.0,
        max_drift_ppm: float = 1000.0,
        max_step_s: float = 1.0,
        outlier_s: float = 0.001,
        wrap_period_s: float | None = US32_WRAP_PERIOD_S,
    ) -> None:
        if not (0.0 < bucket_s <= window_s):
            raise ValueError(f"need 0 < bucket_s <= window_s, got bucket_s={bucket_s}, window_s={window_s}")
        if max_step_s <= 0.0:
            raise ValueError(f"max_step_s must be positive, got {max_step_s}")
        if wrap_period_s is not None and wrap_period_s <= 2.0 * max_step_s:
            raise ValueError(f"wrap_period_s {wrap_period_s} must be well above max_step_s {max_step_s}")
        self.window_s = window_s
        self.bucket_s = bucket_s
        self.min_drift_span_s = min_drift_span_s
        self.max_drift = max_drift_ppm * 1e-6
        self.max_step_s = max_step_s
        self.outlier_s = outlier_s
        self.wrap_period_s = wrap_period_s
        self.wraps = 0
        self.resets = 0
        self.samples = 0
        self._wrap_base_s = 0.0
        self._last: tuple[float, float] | None = None  # (unwrapped device s, host s) of the newest sample
        # bucket index -> (unwrapped device s, host - device) of the bucket's lowest offset sample
        self._minima: OrderedDict[int, tuple[float, float]] = OrderedDict()
        self._fit: ClockFit | None = None

    @property
    def ready(self) -> bool:
        return self._fit is not None

    @property
    def fit(self) -> ClockFit:
        if self._fit is None:
            raise RuntimeError("no device clock sample yet: call add() with a frame's device and arrival times first")
        return self._fit

    @property
    def drift_ppm(self) -> float:
        return self.fit.drift * 1e6

    def add(self, device_s: float, host_arrival_s: float) -> str:
        """Feed one sample; returns ``"ok"``, ``"wrap"`` or ``"reset"`` (what this sample revealed).

        Device clocks misbehave in two ways, both told apart from transport jitter by how far a sample
        lands from the fitted envelope:

        * wrap: a 32-bit microsecond counter rolls over every 2**32 us (71.6 min); the samples are
          unwrapped so the fit stays continuous;
        * reset: the device rebooted or re-enumerated (USB reset) and its clock restarted; every earlier
          sample is discarded and the estimate starts again from the next sample.
        """
        if not (math.isfinite(device_s) and math.isfinite(host_arrival_s)):
            raise ValueError(f"clock sample must be finite, got device {device_s}, host {host_arrival_s}")
        event = "ok"
        unwrapped = device_s + self._wrap_base_s
        if self._fit is not None:
            # How much later than the fitted envelope this sample arrived: normally a few ms of
            # transport jitter; a whole wrap period if the counter rolled over; anything else
            # that large means the device clock restarted or jumped.
            excess_latency = host_arrival_s - (unwrapped + self._fit.offset_at(unwrapped))
            if abs(excess_latency) > self.max_step_s:
                period = self.wrap_period_s
                if period is not None and abs(excess_latency - period) <= self.max_step_s:
                    self._wrap_base_s += period
                    unwrapped += period
                    self.wraps += 1
                    event = "wrap"
                else:
                    self.clear()
                    self.resets += 1
                    unwrapped = device_s
                    event = "reset"
        self._last = (unwrapped, host_arrival_s)
        self.samples += 1

        offset = host_arrival_s - unwrapped
        bucket = math.floor(unwrapped / self.bucket_s)
        kept = self._minima.get(bucket)
        changed = kept is None or offset < kept[1]
        if changed:
            self._minima[bucket] = (unwrapped, offset)
        oldest_kept = math.floor((unwrapped - self.window_s) / self.bucket_s)
        while self._minima and next(iter(self._minima)) < oldest_kept:
            self._minima.popitem(last=False)
            changed = True
        if changed or self._fit is None:  # most samples are above the envelope and change nothing
            self._fit = self._fit_minima()
        return event

    def clear(self) -> None:
        """Forget every sample (a new device or a new connection); counters are kept."""
        self._wrap_base_s = 0.0
        self._last = None
        self._minima.clear()
        self._fit = None

    def _fit_minima(self) -> ClockFit:
        points = sorted(self._minima.values())
        reference = points[-1][0]
        envelope = min(p[1] for p in points)
        # The newest bucket may hold only a frame or two, all of them late: its minimum is not
        # the envelope yet, so the slope comes from the completed buckets.
        complete = points[:-1]
        if len(complete) >= 3 and complete[-1][0] - complete[0][0] >= self.min_drift_span_s:
            line = _line_fit(complete)
            # A bucket during which every frame was late (the host stalled) sits above the
            # line: drop such buckets once and refit.
            inliers = [p for p in complete if p[1] - (line[0] + line[1] * p[0]) <= self.outlier_s]
            if 3 <= len(inliers) < len(complete):
                line = _line_fit(inliers)
            intercept, drift = line
            if abs(drift) <= self.max_drift:
                return ClockFit(intercept + drift * reference, drift, reference)
        # Too little history for a slope (or an implausible one): the plain lower envelope.
        return ClockFit(envelope, 0.0, reference)

    def unwrap(self, device_s: float) -> float:
        """A raw device time on the unwrapped axis: the wrap count that puts it nearest the newest sample."""
        if self._last is None:
            raise RuntimeError("no device clock sample yet: call add() first")
        unwrapped = device_s + self._wrap_base_s
        if self.wrap_period_s is not None:
            turns = round((self._last[0] - unwrapped) / self.wrap_period_s)
            unwrapped += turns * self.wrap_period_s
        return unwrapped

    def to_host(self, device_s: float) -> float:
        """Host time of a raw device time (e.g. a mid-exposure timestamp near the newest sample)."""
        unwrapped = self.unwrap(device_s)
        return unwrapped + self.fit.offset_at(unwrapped)


def _line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of offset against device time."""
    # Offsets are host epoch times (~1.7e9 s): sum them relative to the first point, or the sums
    # alone would lose tens of microseconds.
    d0, o0 = points[0]
    mean_d = sum(p[0] - d0 for p in points) / len(points)
    mean_o = sum(p[1] - o0 for p in points) / len(points)
    sxx = sum((p[0] - d0 - mean_d) ** 2 for p in points)
    sxy = sum((p[0] - d0 - mean_d) * (p[1] - o0 - mean_o) for p in points)
    slope = sxy / sxx
    return o0 + mean_o - slope * (d0 + mean_d), slope
