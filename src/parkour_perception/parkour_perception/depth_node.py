"""depth_node: the RealSense D435/D435i on the robot -> the policy's depth image.

Publishes ``/camera/depth/policy`` (sensor_msgs/Image 32FC1, ``depth`` size, normalised by
:func:`parkour_core.depth.preprocess_depth`) and, with ``camera.publish_raw``,
``/camera/depth/image_raw`` (16UC1 z16, same stamp); frame ``camera_depth_optical_frame``.
``header.stamp`` is the time the scene was sensed (mid-exposure, host clock; see
``parkour_perception.capture``), so consumers measure the depth's true age. ``/diagnostics``
about once a second: timestamp domain (WARN on system_time), exposure-to-publish latency,
fps, dropped frames, gaps and reconnects.

A camera that drops out (USB reset, unplug) is closed and reopened every
``camera.reconnect_period_s``; one absent at start is waited for. A camera that cannot stream
the configured ``camera.width x height @ fps`` ends the node with exit status 2 and the list of
modes it can stream. Stamps are host wall-clock (librealsense's clock): run this node on wall time
(robot mode).
"""

from __future__ import annotations

import os

# Before numpy loads: OpenBLAS would otherwise start a thread per core for preprocess_depth's
# two small matrix products. On a busy machine those threads spin against everything else and
# multiply the cost of a frame many times over (bench/depth/capture.py measures the preprocessing).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys
import threading
import time
from pathlib import Path

from parkour_core import interfaces as topics
from parkour_core.config import ConfigError, StackConfig
from parkour_core.nodeargs import mark_ready, parse_node_args
from parkour_core.ros_process import create_publisher, declare_from_config, init_rclpy
from parkour_core.stats import write_json
from parkour_perception.capture import (
    CaptureLoop,
    DepthCapture,
    DepthFrame,
    DepthSource,
    PipelineSource,
    StreamRequest,
    UnsupportedProfile,
)

FRAME_ID = "camera_depth_optical_frame"
DIAGNOSTICS_PERIOD_S = 1.0
EXIT_UNSUPPORTED_PROFILE = 2


def stream_request(cfg: StackConfig) -> StreamRequest:
    cam = cfg.camera
    return StreamRequest(width=cam.width, height=cam.height, fps=cam.fps, serial=cam.serial)


class DepthNode:
    def __init__(
        self, cfg: StackConfig, run_dir: Path | None, ros_args: list[str], source: DepthSource | None = None
    ) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
        from sensor_msgs.msg import Image

        init_rclpy(ros_args)
        self.node = rclpy.create_node("depth_node")
        self.log = self.node.get_logger()
        self.params = declare_from_config(self.node, cfg, "depth")  # the config it runs on is its parameters'
        cfg = self.params.cfg
        self.cfg = cfg
        self.run_dir = run_dir
        self.source = source if source is not None else PipelineSource(stream_request(cfg))
        self.policy_pub = create_publisher(self.node, topics.DEPTH)
        self.raw_pub = create_publisher(self.node, topics.DEPTH_RAW) if cfg.camera.publish_raw else None
        self.diag_pub = create_publisher(self.node, topics.DIAGNOSTICS)
        self._Image, self._DiagnosticArray, self._DiagnosticStatus, self._KeyValue = (
            Image,
            DiagnosticArray,
            DiagnosticStatus,
            KeyValue,
        )
        self.capture = DepthCapture(cfg.depth.spec(), keep_raw=cfg.camera.publish_raw)
        self.stats = self.capture.stats
        self.loop = CaptureLoop(
            self.source,
            self.capture,
            frame_timeout_s=cfg.camera.frame_timeout_s,
            reconnect_period_s=cfg.camera.reconnect_period_s,
            on_frame=self.publish,
            log=self._log,
        )
        self.diag_timer = self.node.create_timer(DIAGNOSTICS_PERIOD_S, self.publish_diagnostics)
        self._stop = threading.Event()

    def _log(self, level: str, message: str) -> None:
        # One call site per severity: rclpy refuses a call site that changes severity.
        if level == "error":
            self.log.error(message)
        elif level == "warn":
            self.log.warning(message)
        else:
            self.log.info(message)

    def _image(self, frame: DepthFrame, height: int, width: int, encoding: str, bytes_per_pixel: int, data: bytes):
        msg = self._Image()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(frame.stamp_ns, 1_000_000_000)
        msg.header.frame_id = FRAME_ID
        msg.height, msg.width, msg.encoding = height, width, encoding
        msg.is_bigendian = int(sys.byteorder == "big")
        msg.step = width * bytes_per_pixel
        msg.data = data
        return msg

    def publish(self, frame: DepthFrame) -> None:
        """Runs on the capture thread for every frame."""
        height, width = frame.policy.shape
        self.policy_pub.publish(self._image(frame, height, width, "32FC1", 4, frame.policy.tobytes()))
        if self.raw_pub is not None and frame.raw is not None:
            raw_h, raw_w = frame.raw.shape
            self.raw_pub.publish(self._image(frame, raw_h, raw_w, "16UC1", 2, frame.raw.tobytes()))
        self.stats.record_latency((time.time_ns() - frame.stamp_ns) * 1e-9)

    def publish_diagnostics(self) -> None:
        level, message, values = self.stats.report()
        status = self._DiagnosticStatus()
        status.level = bytes([level])
        status.name = "depth_node: camera"
        status.message = message
        status.hardware_id = values["camera"]
        status.values = [self._KeyValue(key=k, value=v) for k, v in values.items()]
        msg = self._DiagnosticArray()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.status = [status]
        self.diag_pub.publish(msg)

    def write_metrics(self) -> None:
        if self.run_dir is not None:
            write_json(self.run_dir / "depth.json", self.stats.summary())

    def spin(self) -> int:
        """Capture on its own thread, ROS callbacks here, until shutdown, stop() or a fatal camera error.

        Returns the exit status: 0, or EXIT_UNSUPPORTED_PROFILE when the camera cannot stream
        the configured mode.
        """
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        executor = SingleThreadedExecutor()
        executor.add_node(self.node)
        self.loop.start()
        try:
            while rclpy.ok() and self.loop.alive and not self._stop.is_set():
                executor.spin_once(timeout_sec=0.1)
        finally:
            self.loop.stop()
            executor.remove_node(self.node)
        error = self.loop.error
        if isinstance(error, UnsupportedProfile):
            self.log.error(str(error))
            return EXIT_UNSUPPORTED_PROFILE
        if error is not None:
            raise error
        return 0

    def stop(self) -> None:
        """Ask spin() to return (from another thread)."""
        self._stop.set()

    def close(self) -> None:
        import rclpy

        self.loop.stop()
        self.write_metrics()
        self.node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


def main(argv: list[str] | None = None, source: DepthSource | None = None) -> int:
    """``source`` replaces the RealSense (tests: a software camera); ``None`` opens ``camera.serial``."""
    from rclpy.executors import ExternalShutdownException

    args = parse_node_args(__doc__ or "", argv, "depth")
    try:
        node = DepthNode(args.config, args.run_dir, args.ros_args, source=source)
    except ConfigError as e:
        raise SystemExit(f"depth_node: bad parameter: {e}") from None
    mark_ready(args.run_dir, "depth")
    try:
        return node.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0
    finally:
        node.close()


if __name__ == "__main__":
    raise SystemExit(main())
