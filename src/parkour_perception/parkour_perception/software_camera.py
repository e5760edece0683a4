"""A D435-like depth camera built on librealsense's software device, for tests, benchmarks and replay.

:class:`SoftwareDepthCamera` is a real ``rs.software_device`` with one depth sensor: frames
given to :meth:`SoftwareDepthCamera.inject` come out of librealsense with the timestamp, domain,
frame number and metadata they were given, exactly as frames of a USB camera do.
:class:`SoftwareCameraSource` is a :class:`~parkour_perception.capture.DepthSource` over a
"USB port" that a camera can be plugged into and unplugged from, so drop-out and reconnect
run through the same :class:`~parkour_perception.capture.CaptureLoop` code as on the robot.

(``rs.pipeline`` does not see software devices; record one with ``rs.recorder`` and play the
file back through :class:`~parkour_perception.capture.PipelineSource` for the pipeline path.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pyrealsense2 as rs
from numpy.typing import NDArray

from parkour_perception.capture import CameraAbsent, StreamRequest, absent_message, check_profile

# Close to a D435 at 480x270 (87 x 58 deg field of view): only the shape matters downstream.
_HFOV_TAN = np.tan(np.radians(87.0) / 2.0)


def _intrinsics(width: int, height: int) -> rs.intrinsics:
    intrinsics = rs.intrinsics()
    intrinsics.width, intrinsics.height = width, height
    intrinsics.ppx, intrinsics.ppy = width / 2.0, height / 2.0
    intrinsics.fx = intrinsics.fy = float(width / 2.0 / _HFOV_TAN)
    intrinsics.model = rs.distortion.brown_conrady
    intrinsics.coeffs = [0.0, 0.0, 0.0, 0.0, 0.0]
    return intrinsics


class SoftwareDepthCamera:
    """One software depth camera offering the given z16 (width, height, fps) modes."""

    def __init__(
        self,
        modes: Iterable[tuple[int, int, int]] = ((480, 270, 60),),
        serial: str = "SW-D435-0001",
        depth_scale_m: float = 0.001,
        name: str = "Software D435",
    ) -> None:
        self.serial = serial
        self.name = f"{name} {serial}"
        self.depth_scale_m = depth_scale_m
        self.device = rs.software_device()
        self.device.register_info(rs.camera_info.serial_number, serial)
        self.device.register_info(rs.camera_info.name, name)
        self.sensor = self.device.add_sensor("Stereo Module")
        self.profiles: dict[tuple[int, int, int], rs.video_stream_profile] = {}
        for uid, (width, height, fps) in enumerate(modes):
            stream = rs.video_stream()
            stream.type, stream.index, stream.uid = rs.stream.depth, 0, uid
            stream.width, stream.height, stream.fps = width, height, fps
            stream.bpp, stream.fmt = 2, rs.format.z16
            stream.intrinsics = _intrinsics(width, height)
            profile = self.sensor.add_video_stream(stream, uid == 0)
            self.profiles[(width, height, fps)] = profile.as_video_stream_profile()
        # Makes it a depth sensor with a depth scale, like a D435's Stereo Module.
        self.sensor.add_read_only_option(rs.option.depth_units, depth_scale_m)
        self._active: rs.video_stream_profile | None = None
        self._started_sensor: rs.sensor | None = None
        self._recorder: rs.recorder | None = None
        self._lock = threading.Lock()

    def start(self, mode: tuple[int, int, int], queue: rs.frame_queue, record_path: Path | None = None) -> None:
        """Stream ``mode`` into ``queue``; with ``record_path`` (``.db3``) also record every frame.

        The recording plays back through ``rs.config.enable_device_from_file`` + ``rs.pipeline``
        with the injected timestamps, domains, frame numbers and metadata.
        """
        with self._lock:
            profile = self.profiles[mode]
            sensor: rs.sensor = self.sensor
            if record_path is not None:
                if record_path.suffix != ".db3":
                    raise ValueError(f"librealsense records to a .db3 file, got {record_path}")
                self._recorder = rs.recorder(str(record_path), self.device)
                sensor = self._recorder.query_sensors()[0]
            sensor.open(profile)
            sensor.start(queue)
            self._started_sensor = sensor
            self._active = profile

    def stop(self) -> None:
        """Stop streaming (and finish the recording, if any)."""
        with self._lock:
            sensor, self._started_sensor = self._started_sensor, None
            self._active = None
            if sensor is not None:
                sensor.stop()
                sensor.close()
            self._recorder = None  # releasing the recorder writes the file out

    def inject(
        self,
        depth: NDArray[np.uint16],
        timestamp_ms: float,
        domain: rs.timestamp_domain,
        frame_number: int,
        metadata: Mapping[rs.frame_metadata_value, int] | None = None,
    ) -> None:
        """Deliver one z16 frame as the camera would. Metadata set here sticks for later frames."""
        with self._lock:
            profile = self._active
            if profile is None:
                raise RuntimeError(f"{self.name} is not streaming: open it through a SoftwareCameraSource first")
            if depth.dtype != np.uint16 or depth.shape != (profile.height(), profile.width()):
                raise ValueError(
                    f"{self.name} streams uint16 {profile.height()}x{profile.width()}, got {depth.dtype} {depth.shape}"
                )
            for key, value in (metadata or {}).items():
                self.sensor.set_metadata(key, int(value))
            frame = rs.software_video_frame()
            frame.pixels = np.ascontiguousarray(depth)
            frame.stride = profile.width() * 2
            frame.bpp = 2
            frame.timestamp = float(timestamp_ms)
            frame.domain = domain
            frame.frame_number = int(frame_number)
            frame.profile = profile
            frame.depth_units = self.depth_scale_m
            self.sensor.on_video_frame(frame)


class SoftwareCameraSource:
    """A DepthSource over a port a :class:`SoftwareDepthCamera` can be plugged into and pulled from."""

    def __init__(self, request: StreamRequest, queue_capacity: int = 2) -> None:
        self.request = request
        self.name = f"software camera port (serial {request.serial or 'any'})"
        self.queue_capacity = queue_capacity
        self._plugged: SoftwareDepthCamera | None = None
        self._open: SoftwareDepthCamera | None = None
        self._queue: rs.frame_queue | None = None
        self._lock = threading.Lock()

    def plug(self, camera: SoftwareDepthCamera) -> None:
        with self._lock:
            self._plugged = camera

    def unplug(self) -> None:
        """The camera goes away: no more frames, and opening fails until another is plugged in."""
        with self._lock:
            self._plugged = None

    def open(self) -> None:
        with self._lock:
            camera = self._plugged
            if camera is None or (self.request.serial and camera.serial != self.request.serial):
                raise CameraAbsent(absent_message(self.request.serial, [camera.serial] if camera else []))
            check_profile(camera.sensor, self.request, camera.name)
            # A small queue keeps the newest frames when processing falls behind (like a camera:
            # the frame numbers then show the loss).
            queue = rs.frame_queue(self.queue_capacity)
            camera.start((self.request.width, self.request.height, self.request.fps), queue)
            self._open, self._queue, self.name = camera, queue, camera.name

    def wait_for_frame(self, timeout_s: float) -> rs.depth_frame | None:
        queue = self._queue
        if queue is None:
            raise RuntimeError(f"{self.name} is not open")
        ok, frame = queue.try_wait_for_frame(max(1, int(timeout_s * 1000)))
        return frame.as_depth_frame() if ok else None

    def close(self) -> None:
        with self._lock:
            camera, self._open, self._queue = self._open, None, None
        if camera is not None:
            camera.stop()


def synthetic_depth_mm(width: int, height: int, seed: int = 0) -> NDArray[np.uint16]:
    """A plausible z16 frame (mm): floor receding to 6 m, a 0.4 m box 1.2 m ahead, noise and holes.

    For tests and benchmarks that want realistic values (not a constant) at any resolution.
    """
    rng = np.random.default_rng(seed)
    rows = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None]
    cols = np.linspace(-1.0, 1.0, width, dtype=np.float32)[None, :]
    # A camera tilted down at a flat floor: depth grows towards the top of the image.
    depth_m = np.broadcast_to(0.6 / np.maximum(rows, 0.1), (height, width)).copy()
    depth_m = np.minimum(depth_m, 6.0)
    box = (np.abs(cols) < 0.3) & (rows > 0.35) & (rows < 0.75)
    depth_m[np.broadcast_to(box, depth_m.shape)] = 1.2
    depth_m += rng.normal(0.0, 0.01, size=depth_m.shape).astype(np.float32) * depth_m  # stereo noise grows with z
    depth_m[rng.random(depth_m.shape) < 0.03] = 0.0  # no stereo match
    depth_m[:, : max(1, width // 20)] = 0.0  # the left band without stereo overlap
    return np.clip(depth_m * 1000.0, 0, 65535).astype(np.uint16)
