"""RealSense depth capture without ROS: frame sources, exposure stamping, drop accounting, preprocessing.

``depth_node`` wires this to ROS topics; tests and ``bench/depth/capture.py`` drive the very same
code with frames injected through librealsense's software device (``software_camera.py``).

Pieces:

* a *source* opens a camera and hands out ``rs.depth_frame`` objects: :class:`PipelineSource`
  reads a real D435/D435i (``rs.pipeline``) or a ``.bag``/``.db3`` recording;
* :class:`DepthCapture` turns one frame into a :class:`DepthFrame`: the time the scene was
  sensed (``stamp_ns``, host clock, what ``header.stamp`` carries; per timestamp domain), frames
  lost before it, and the policy image from :func:`parkour_core.depth.preprocess_depth`;
* :class:`CaptureLoop` opens the source, reads frames, and reopens it after a drop-out;
* :class:`CaptureStats` counts and times all of that for ``/diagnostics`` and the metrics JSON.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyrealsense2 as rs
from numpy.typing import NDArray

from parkour_core.clock_sync import DeviceClockSync
from parkour_core.depth import DepthSpec, Float32Array, preprocess_depth
from parkour_core.stats import summary_ms

DOMAIN_NAMES = {
    rs.timestamp_domain.global_time: "global_time",
    rs.timestamp_domain.hardware_clock: "hardware_clock",
    rs.timestamp_domain.system_time: "system_time",
}
# D400 metadata timestamps are 32-bit microsecond counters.
US32 = 2**32
# Mid-exposure to readout is an exposure half plus readout: a few ms, never a second. A larger
# difference means one of the two metadata values is bad; then we stamp the readout start.
MAX_READOUT_DELAY_US = 1_000_000

# /diagnostics levels (diagnostic_msgs/DiagnosticStatus), here so this module stays ROS-free.
OK, WARN, ERROR = 0, 1, 2


class CameraAbsent(RuntimeError):
    """No matching camera right now (unplugged, USB reset, busy): worth retrying."""


class UnsupportedProfile(RuntimeError):
    """The camera cannot stream the configured z16 mode: retrying will not help."""


@dataclass(frozen=True)
class StreamRequest:
    """The z16 stream to open (``camera`` section of the config)."""

    width: int
    height: int
    fps: int
    serial: str = ""

    def describe(self) -> str:
        return f"z16 {self.width}x{self.height} @ {self.fps} fps"


def absent_message(serial: str, seen: Iterable[str] = ()) -> str:
    seen = sorted(seen)
    found = f"; connected: {', '.join(seen)}" if seen else ""
    return f"no RealSense found (serial {serial or 'any'}){found}: check USB/permissions"


def z16_profiles(sensor: rs.sensor) -> list[tuple[int, int, int]]:
    """(width, height, fps) of every z16 depth profile the sensor offers, sorted."""
    modes = set()
    for profile in sensor.get_stream_profiles():
        if profile.stream_type() == rs.stream.depth and profile.format() == rs.format.z16:
            video = profile.as_video_stream_profile()
            modes.add((video.width(), video.height(), profile.fps()))
    return sorted(modes)


def format_profiles(modes: Iterable[tuple[int, int, int]]) -> str:
    """'480x270 @ 6/15/30/60/90 fps, 848x480 @ 6/15/30 fps' from (width, height, fps) triples."""
    by_size: dict[tuple[int, int], list[int]] = {}
    for width, height, fps in sorted(modes):
        by_size.setdefault((width, height), []).append(fps)
    return ", ".join(f"{w}x{h} @ {'/'.join(str(f) for f in fps)} fps" for (w, h), fps in by_size.items()) or "none"


def check_profile(sensor: rs.sensor, request: StreamRequest, camera_name: str) -> None:
    """Raise :class:`UnsupportedProfile` naming the supported z16 modes if ``request`` is not one."""
    modes = z16_profiles(sensor)
    if (request.width, request.height, request.fps) not in modes:
        raise UnsupportedProfile(
            f"{camera_name} cannot stream {request.describe()}; supported z16 profiles: {format_profiles(modes)}. "
            "Set camera.width, camera.height and camera.fps to one of them."
        )


class DepthSource(Protocol):
    """Where depth frames come from: a real camera, a recording or a software device."""

    name: str  # what is open, for logs and /diagnostics

    def open(self) -> None:
        """Start streaming; raises CameraAbsent (retry later) or UnsupportedProfile (give up)."""

    def wait_for_frame(self, timeout_s: float) -> rs.depth_frame | None:
        """The next depth frame, or None if none came within ``timeout_s``."""

    def close(self) -> None:
        """Stop streaming; safe to call on a camera that has gone away."""


class PipelineSource:
    """A RealSense D435/D435i through ``rs.pipeline``, or a recording played back the same way.

    ``playback_path`` (a ``.bag`` or ``.db3`` file written by ``rs.recorder``) replaces the camera:
    the frames keep their recorded timestamps, domains, frame numbers and metadata.
    """

    def __init__(self, request: StreamRequest, playback_path: Path | None = None, real_time: bool = True) -> None:
        self.request = request
        self.playback_path = playback_path
        self.real_time = real_time
        self.name = f"recording {playback_path}" if playback_path else f"RealSense (serial {request.serial or 'any'})"
        self._pipeline: rs.pipeline | None = None

    def _find_device(self, ctx: rs.context) -> rs.device:
        if self.playback_path is not None:
            if not self.playback_path.is_file():
                raise CameraAbsent(f"recording {self.playback_path} does not exist")
            return ctx.load_device(str(self.playback_path))
        try:
            devices = list(ctx.query_devices())
            serials = [d.get_info(rs.camera_info.serial_number) for d in devices]
            for device, serial in zip(devices, serials, strict=True):
                if self.request.serial and serial != self.request.serial:
                    continue
                # Without a serial, take the first camera that has depth (not, say, a tracking camera).
                if self.request.serial or any(s.is_depth_sensor() for s in device.query_sensors()):
                    return device
        except RuntimeError as e:  # enumeration fails mid-unplug or without USB permissions
            raise CameraAbsent(f"cannot list RealSense devices ({e}): check USB/permissions") from None
        raise CameraAbsent(absent_message(self.request.serial, serials))

    def open(self) -> None:
        ctx = rs.context()
        device = self._find_device(ctx)
        serial = device.get_info(rs.camera_info.serial_number)
        model = device.get_info(rs.camera_info.name)
        name = f"{model} {serial}" + (f" from {self.playback_path}" if self.playback_path else "")
        check_profile(device.first_depth_sensor(), self.request, name)
        del device  # the pipeline opens it again; a playback file must not be held twice
        config = rs.config()
        if self.playback_path is not None:
            config.enable_device_from_file(str(self.playback_path), repeat_playback=False)
        else:
            config.enable_device(serial)
        config.enable_stream(rs.stream.depth, self.request.width, self.request.height, rs.format.z16, self.request.fps)
        pipeline = rs.pipeline(ctx)
        try:
            if self.playback_path is not None:
                # Paced or not from its first frame: set on the device the config resolves (and the pipeline
                # then starts), since frames set after the start may already have been played in real time
                # and dropped by a consumer that was not reading yet (a busy machine).
                config.resolve(rs.pipeline_wrapper(pipeline)).get_device().as_playback().set_real_time(self.real_time)
            profile = pipeline.start(config)
        except RuntimeError as e:  # unplugged between the query and the start, or busy in another process
            raise CameraAbsent(f"cannot start {name}: {e}") from None
        started = profile.get_device()
        if self.playback_path is not None:
            if started.as_playback().is_real_time() != self.real_time:
                started.as_playback().set_real_time(self.real_time)
        else:
            sensor = started.first_depth_sensor()
            # Host-mapped hardware timestamps; D400 firmware defaults to it, a previous user may not have.
            if sensor.supports(rs.option.global_time_enabled):
                sensor.set_option(rs.option.global_time_enabled, 1.0)
        self.name = name
        self._pipeline = pipeline

    def wait_for_frame(self, timeout_s: float) -> rs.depth_frame | None:
        if self._pipeline is None:
            raise RuntimeError(f"{self.name} is not open")
        ok, frames = self._pipeline.try_wait_for_frames(max(1, int(timeout_s * 1000)))
        if not ok:
            return None
        depth = frames.get_depth_frame()
        return depth if depth else None

    def close(self) -> None:
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            # The camera may be gone already (that is often why we close it).
            with contextlib.suppress(RuntimeError):
                pipeline.stop()


def ms_to_ns(ms: float) -> int:
    """librealsense milliseconds (a double near 1.7e12 in host time) -> integer nanoseconds, exactly."""
    whole = int(ms // 1)
    return whole * 1_000_000 + round((ms - whole) * 1e6)


def readout_delay_us(frame: rs.frame) -> int | None:
    """Microseconds from mid-exposure to readout start, from the frame's metadata, or None."""
    readout = rs.frame_metadata_value.frame_timestamp
    exposure = rs.frame_metadata_value.sensor_timestamp
    if not (frame.supports_frame_metadata(readout) and frame.supports_frame_metadata(exposure)):
        return None
    delay = (frame.get_frame_metadata(readout) - frame.get_frame_metadata(exposure)) % US32  # 32-bit counters wrap
    return delay if delay <= MAX_READOUT_DELAY_US else None


@dataclass
class DepthFrame:
    """One processed frame: what depth_node publishes."""

    stamp_ns: int  # when the scene was sensed, host clock (UNIX ns): header.stamp
    arrival_ns: int  # when the frame reached the host
    clock_domain: str  # global_time | hardware_clock | system_time
    exposure_timestamp: str  # sensor_timestamp (mid-exposure) | frame_timestamp (readout start) | arrival
    frame_number: int
    dropped_before: int  # frames the camera numbered but never delivered, just before this one
    depth_scale_m: float
    policy: Float32Array  # (spec.height, spec.width) normalised image
    raw: NDArray[np.uint16] | None  # the z16 frame, when kept
    ready_ns: int  # host time the policy image was ready

    @property
    def stamp_s(self) -> float:
        return self.stamp_ns * 1e-9


class CaptureStats:
    """Counters and timings shared by the capture thread and the diagnostics timer."""

    def __init__(self, history: int = 100_000) -> None:
        self._lock = threading.Lock()
        self.camera = ""
        self.state = "starting"  # starting | absent | streaming | gap | unsupported | stopped
        self.state_detail = ""
        self.frames = 0
        self.dropped_frames = 0
        self.frame_counter_restarts = 0
        self.gaps = 0
        self.reconnects = 0
        self.open_attempts = 0
        self.last_gap_s: float | None = None
        self.gap_durations_s: list[float] = []
        self.clock_domain = ""
        self.exposure_timestamp = ""
        self.domain_frames: dict[str, int] = {}
        self.clock_drift_ppm: float | None = None
        self.clock_resets = 0
        self.clock_wraps = 0
        self.latency_s: deque[float] = deque(maxlen=history)  # exposure -> publish, newest kept
        self.preprocess_s: deque[float] = deque(maxlen=history)
        self._window_latency_s: list[float] = []
        self._window_frames = 0
        self._window_dropped = 0
        self._window_start = time.monotonic()

    def set_state(self, state: str, detail: str = "", camera: str | None = None) -> None:
        with self._lock:
            self.state, self.state_detail = state, detail
            if camera is not None:
                self.camera = camera

    def record_frame(self, frame: DepthFrame, preprocess_s: float, clock: DeviceClockSync | None) -> None:
        with self._lock:
            self.frames += 1
            self._window_frames += 1
            self.dropped_frames += frame.dropped_before
            self._window_dropped += frame.dropped_before
            self.clock_domain = frame.clock_domain
            self.exposure_timestamp = frame.exposure_timestamp
            self.domain_frames[frame.clock_domain] = self.domain_frames.get(frame.clock_domain, 0) + 1
            self.preprocess_s.append(preprocess_s)
            if clock is not None and frame.clock_domain == "hardware_clock":
                self.clock_drift_ppm = clock.drift_ppm
                self.clock_resets, self.clock_wraps = clock.resets, clock.wraps

    def record_latency(self, latency_s: float) -> None:
        """Exposure-to-publish time of one frame (the node calls this after publishing)."""
        with self._lock:
            self.latency_s.append(latency_s)
            self._window_latency_s.append(latency_s)

    def record_gap_start(self) -> None:
        with self._lock:
            self.gaps += 1

    def record_gap_end(self, duration_s: float) -> None:
        with self._lock:
            self.last_gap_s = duration_s
            self.gap_durations_s.append(duration_s)

    def report(self) -> tuple[int, str, dict[str, str]]:
        """(level, message, values) for /diagnostics since the previous report; starts a new window."""
        now = time.monotonic()
        with self._lock:
            window_s = max(now - self._window_start, 1e-9)
            latency = summary_ms(self._window_latency_s)
            fps = self._window_frames / window_s
            dropped_window = self._window_dropped
            self._window_latency_s, self._window_frames, self._window_dropped = [], 0, 0
            self._window_start = now
            values = {
                "camera": self.camera,
                "state": self.state,
                "clock_domain": self.clock_domain or "none yet",
                "exposure_timestamp": self.exposure_timestamp or "none yet",
                "latency_p50_ms": _fmt(latency["p50"]),
                "latency_p99_ms": _fmt(latency["p99"]),
                "fps": f"{fps:.1f}",
                "frames": str(self.frames),
                "dropped_frames": str(self.dropped_frames),
                "dropped_frames_window": str(dropped_window),
                "gaps": str(self.gaps),
                "last_gap_s": _fmt(self.last_gap_s),
                "reconnects": str(self.reconnects),
                "clock_drift_ppm": _fmt(self.clock_drift_ppm),
                "clock_resets": str(self.clock_resets),
            }
            if self.state != "streaming":
                return (
                    ERROR,
                    f"no depth frames: {self.state}" + (f" ({self.state_detail})" if self.state_detail else ""),
                    values,
                )
            if self.clock_domain == "system_time":
                return (
                    WARN,
                    "stamps are arrival times (system_time domain), not exposure: enable the camera's "
                    "metadata/global time (librealsense RSUSB backend or the kernel metadata patch)",
                    values,
                )
            if dropped_window:
                return WARN, f"{dropped_window} frames dropped in the last {window_s:.1f} s", values
            return OK, f"streaming {fps:.0f} fps, {self.clock_domain}", values

    def summary(self) -> dict[str, Any]:
        """Everything, for the node's metrics JSON."""
        with self._lock:
            return {
                "camera": self.camera,
                "state": self.state,
                "frames": self.frames,
                "dropped_frames": self.dropped_frames,
                "frame_counter_restarts": self.frame_counter_restarts,
                "gaps": self.gaps,
                "gap_durations_s": [round(g, 3) for g in self.gap_durations_s],
                "reconnects": self.reconnects,
                "open_attempts": self.open_attempts,
                "frames_per_clock_domain": dict(self.domain_frames),
                "exposure_timestamp": self.exposure_timestamp,
                "clock_drift_ppm": self.clock_drift_ppm,
                "clock_resets": self.clock_resets,
                "clock_wraps": self.clock_wraps,
                "exposure_to_publish_ms": summary_ms(list(self.latency_s)),
                "preprocess_ms": summary_ms(list(self.preprocess_s)),
            }


def _fmt(value: float | int | None) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


class DepthCapture:
    """Stamps, counts and preprocesses frames of one camera connection after another."""

    def __init__(
        self,
        spec: DepthSpec,
        keep_raw: bool = False,
        clock_sync: DeviceClockSync | None = None,
        stats: CaptureStats | None = None,
        host_time_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.spec = spec
        self.keep_raw = keep_raw
        self.clock_sync = clock_sync if clock_sync is not None else DeviceClockSync()
        self.stats = stats if stats is not None else CaptureStats()
        self.host_time_ns = host_time_ns  # librealsense host times are system-clock (UNIX) times
        self._last_frame_number: int | None = None

    def new_connection(self) -> None:
        """A (re)opened camera: its frame counter and clock may have restarted."""
        self._last_frame_number = None
        self.clock_sync.clear()

    def _dropped_before(self, frame_number: int) -> int:
        last, self._last_frame_number = self._last_frame_number, frame_number
        if last is None:
            return 0
        if frame_number <= last:  # the camera restarted its counter (e.g. a stream restart)
            self.stats.frame_counter_restarts += 1
            return 0
        return frame_number - last - 1

    def _stamp(self, frame: rs.frame, arrival_ns: int) -> tuple[int, str, str]:
        """(exposure time ns, domain name, which timestamp) of a frame, by its timestamp domain.

        * ``global_time``: librealsense already maps the camera clock to host time (ms). The frame
          timestamp marks the start of readout; when the frame carries both the ``frame_timestamp``
          (readout) and ``sensor_timestamp`` (middle of exposure) metadata, their difference moves the
          stamp back to mid-exposure through the same mapping;
        * ``hardware_clock``: camera clock only. :class:`parkour_core.clock_sync.DeviceClockSync` maps it
          to host time from (device time, arrival time) pairs, then mid-exposure is mapped the same way;
        * ``system_time``: the host clock when the frame arrived (no metadata): late by exposure and
          transfer, so it is reported as a warning on ``/diagnostics``.
        """
        domain = DOMAIN_NAMES.get(frame.get_frame_timestamp_domain(), "system_time")
        timestamp_ms = frame.get_timestamp()
        if domain == "system_time":
            return ms_to_ns(timestamp_ms), domain, "arrival"
        delay_us = readout_delay_us(frame)
        which = "frame_timestamp" if delay_us is None else "sensor_timestamp"
        delay_us = delay_us or 0
        if domain == "global_time":
            return ms_to_ns(timestamp_ms) - delay_us * 1000, domain, which
        # hardware_clock: the readout timestamp pairs with the arrival for the clock fit.
        device_s = timestamp_ms * 1e-3
        self.clock_sync.add(device_s, arrival_ns * 1e-9)
        return round(self.clock_sync.to_host(device_s - delay_us * 1e-6) * 1e9), domain, which

    def process(self, frame: rs.frame) -> DepthFrame:
        """One rs depth frame -> stamped, counted, preprocessed :class:`DepthFrame`."""
        now_ns = self.host_time_ns()
        arrival = rs.frame_metadata_value.time_of_arrival
        # librealsense notes the host time (whole ms) a frame arrived; without it, now (later, never earlier).
        arrival_ns = ms_to_ns(frame.get_frame_metadata(arrival)) if frame.supports_frame_metadata(arrival) else now_ns
        stamp_ns, domain, which = self._stamp(frame, arrival_ns)
        frame_number = int(frame.get_frame_number())
        depth = frame.as_depth_frame()
        depth_scale_m = float(depth.get_units())
        z16 = np.asanyarray(depth.get_data())
        start = time.perf_counter()
        policy = preprocess_depth(z16, self.spec, depth_scale_m)
        preprocess_s = time.perf_counter() - start
        result = DepthFrame(
            stamp_ns=stamp_ns,
            arrival_ns=arrival_ns,
            clock_domain=domain,
            exposure_timestamp=which,
            frame_number=frame_number,
            dropped_before=self._dropped_before(frame_number),
            depth_scale_m=depth_scale_m,
            policy=policy,
            raw=z16.copy() if self.keep_raw else None,  # the frame's memory goes back to librealsense
            ready_ns=self.host_time_ns(),
        )
        self.stats.record_frame(result, preprocess_s, self.clock_sync)
        return result


Log = Callable[[str, str], None]  # (level: info | warn | error, message)


class CaptureLoop:
    """Open the source, read frames, reopen after a drop-out; on its own thread until stopped.

    After a drop-out (no frame for ``frame_timeout_s``) it closes the source and reopens it every
    ``reconnect_period_s`` until stopped.
    ``on_frame`` runs on the capture thread for every processed frame. An
    :class:`UnsupportedProfile` ends the loop and is kept in :attr:`error` (the node exits
    non-zero); an absent camera is retried every ``reconnect_period_s`` for ever.
    """

    # How often the absent-camera message repeats (in attempts) after the first one.
    REMIND_EVERY = 30
    # Longest single wait on the source: keeps stop() responsive with long frame timeouts.
    POLL_S = 0.1

    def __init__(
        self,
        source: DepthSource,
        capture: DepthCapture,
        frame_timeout_s: float,
        reconnect_period_s: float,
        on_frame: Callable[[DepthFrame], None],
        log: Log,
    ) -> None:
        self.source = source
        self.capture = capture
        self.stats = capture.stats
        self.frame_timeout_s = frame_timeout_s
        self.reconnect_period_s = reconnect_period_s
        self.on_frame = on_frame
        self.log = log
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._connected_once = False
        self._gap_started: float | None = None  # monotonic time of the last frame before a drop-out

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run_guarded, name="depth-capture", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run_guarded(self) -> None:
        try:
            self.run(self._stop)
        except BaseException as e:  # handed to the node, which reports it and exits non-zero
            self.error = e
        finally:
            if self.stats.state != "unsupported":  # keep the reason the loop ended
                self.stats.set_state("stopped")

    def run(self, stop: threading.Event) -> None:
        failed_attempts = 0
        while not stop.is_set():
            self.stats.open_attempts += 1
            try:
                self.source.open()
            except CameraAbsent as e:
                if failed_attempts % self.REMIND_EVERY == 0:
                    self.log("warn", f"{e}; retrying every {self.reconnect_period_s:g} s")
                failed_attempts += 1
                self.stats.set_state("absent", str(e))
                stop.wait(self.reconnect_period_s)
                continue
            except UnsupportedProfile as e:
                self.stats.set_state("unsupported", str(e))
                raise
            failed_attempts = 0
            if self._connected_once:
                self.stats.reconnects += 1
                self.log("info", f"camera back: {self.source.name} (reconnect {self.stats.reconnects})")
            else:
                self.log("info", f"streaming from {self.source.name}")
            self._connected_once = True
            self.stats.set_state("streaming", camera=self.source.name)
            self.capture.new_connection()
            try:
                self._stream(stop)
            finally:
                self.source.close()
            if not stop.is_set():
                stop.wait(self.reconnect_period_s)

    def _stream(self, stop: threading.Event) -> None:
        opened = last_frame = time.monotonic()
        frames = 0
        while not stop.is_set():
            try:
                frame = self.source.wait_for_frame(min(self.POLL_S, self.frame_timeout_s))
            except RuntimeError as e:  # librealsense reports an unplugged camera this way
                self.log("warn", f"{self.source.name}: {e}")
                frame = None
            now = time.monotonic()
            if frame is None:
                if now - last_frame < self.frame_timeout_s:
                    continue
                if frames > 0:
                    self._gap_started = last_frame
                    self.stats.record_gap_start()
                    self.log(
                        "warn",
                        f"no depth frame for {now - last_frame:.2f} s from {self.source.name} "
                        f"(USB reset or unplugged?): closing it, reopening every {self.reconnect_period_s:g} s",
                    )
                elif self._gap_started is None:  # a gap in progress was reported already
                    self.log("warn", f"{self.source.name} opened but sent no frame in {now - opened:.2f} s; reopening")
                self.stats.set_state("gap", f"no frame for {now - last_frame:.2f} s")
                return
            if self._gap_started is not None:
                gap_s = now - self._gap_started
                self.stats.record_gap_end(gap_s)
                self.log("info", f"depth frames are back after a {gap_s:.2f} s gap")
                self._gap_started = None
                self.stats.set_state("streaming")
            last_frame = now
            frames += 1
            result = self.capture.process(frame)
            del frame  # hand the buffer back to librealsense before publishing
            self.on_frame(result)
