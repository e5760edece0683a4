"""depth_node with real rclpy/DDS, in-process, fed by a librealsense software device."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyrealsense2 as rs
import pytest
import yaml

from parkour_core.config import load_config
from parkour_core.depth import preprocess_depth
from parkour_core.domains import claim_domains
from parkour_core.interfaces import DEPTH, DEPTH_RAW, DIAGNOSTICS
from parkour_perception.capture import StreamRequest
from parkour_perception.depth_node import FRAME_ID, DepthNode, main
from parkour_perception.software_camera import SoftwareCameraSource, SoftwareDepthCamera

MD = rs.frame_metadata_value
HOST_EPOCH_MS = 1_700_000_000_000
# A ROS domain of its own, drawn per run, so that other graphs and test runs on this machine never reach these tests.
_DOMAINS = claim_domains()  # held while the tests run: no other graph or test run takes it
ROS_DOMAIN_ID = str(_DOMAINS.ros)


@pytest.fixture
def ros_env(monkeypatch):
    """The Makefile's RUN_ENV (tests/integration/conftest.py), set before rclpy starts."""
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.setenv("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.environ.get("AMENT_PREFIX_PATH", sys.prefix))
    monkeypatch.setenv("ROS_DOMAIN_ID", ROS_DOMAIN_ID)


def write_config(tmp_path: Path, **camera) -> Path:
    path = tmp_path / "config.yaml"
    base = {"width": 480, "height": 270, "fps": 60, "publish_raw": True, "frame_timeout_s": 0.5}
    path.write_text(yaml.safe_dump({"robot": "g1", "mode": "robot", "camera": {**base, **camera}}))
    return path


def test_node_publishes_the_policy_image_stamped_at_exposure(tmp_path, ros_env, scene, wait_for):
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import Image

    # A long frame timeout: nothing is injected while the probe waits for discovery.
    cfg = load_config(write_config(tmp_path, frame_timeout_s=5.0))
    camera = SoftwareDepthCamera()
    source = SoftwareCameraSource(StreamRequest(480, 270, 60))
    source.plug(camera)
    node = DepthNode(cfg, tmp_path / "run", [], source=source)
    probe = rclpy.create_node("depth_probe")
    received: dict[str, list] = {"policy": [], "raw": [], "diagnostics": []}
    probe.create_subscription(Image, DEPTH.name, received["policy"].append, 10)
    probe.create_subscription(Image, DEPTH_RAW.name, received["raw"].append, 10)
    probe.create_subscription(DiagnosticArray, DIAGNOSTICS.name, received["diagnostics"].append, 10)
    executor = SingleThreadedExecutor()
    executor.add_node(probe)
    exit_status: list[int] = []
    spinner = threading.Thread(target=lambda: exit_status.append(node.spin()))
    spinner.start()
    exposure_ns: dict[int, int] = {}  # frame number -> the exposure time it was injected with
    try:
        wait_for(lambda: node.stats.state == "streaming", 10.0, "depth_node to open the software camera")
        wait_for(lambda: node.policy_pub.get_subscription_count() > 0, 10.0, "the probe to match the publisher")
        frame_number = 0

        def got_frames() -> bool:
            nonlocal frame_number
            frame_number += 1
            host_readout_us = (HOST_EPOCH_MS + 250) * 1000 + 500 + frame_number * 16_000  # x.5 ms: exact in a double
            readout_us = 3_000_000 + frame_number * 16_000  # the camera's own clock, in the metadata
            camera.inject(
                scene,
                timestamp_ms=host_readout_us / 1000,
                domain=rs.timestamp_domain.global_time,
                frame_number=frame_number,
                metadata={MD.frame_timestamp: readout_us, MD.sensor_timestamp: readout_us - 7_500},
            )
            exposure_ns[frame_number] = (host_readout_us - 7_500) * 1000
            executor.spin_once(timeout_sec=0.05)
            return len(received["policy"]) >= 3 and len(received["raw"]) >= 1

        wait_for(got_frames, 20.0, "three /camera/depth/policy messages")
        wait_for(
            lambda: executor.spin_once(timeout_sec=0.05) or any(d.status[0].values for d in received["diagnostics"]),
            10.0,
            "a /diagnostics message",
        )
    finally:
        node.stop()
        spinner.join(10.0)
        probe.destroy_node()
        node.close()
    assert exit_status == [0]

    expected_policy = preprocess_depth(scene, cfg.depth.spec(), 0.001)
    injected = set(exposure_ns.values())
    for msg in received["policy"]:
        assert msg.encoding == "32FC1"
        assert (msg.height, msg.width) == (58, 87)
        assert msg.step == 87 * 4
        assert msg.header.frame_id == FRAME_ID
        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        assert stamp_ns in injected, f"stamp {stamp_ns} is not the exposure time of any injected frame"
        image = np.frombuffer(bytes(msg.data), dtype=np.float32).reshape(58, 87)
        np.testing.assert_array_equal(image, expected_policy)
    # The first frame went out stamped exactly at its injected mid-exposure time.
    first = received["policy"][0]
    assert first.header.stamp.sec * 1_000_000_000 + first.header.stamp.nanosec == exposure_ns[1]

    raw = received["raw"][0]
    assert raw.encoding == "16UC1" and (raw.height, raw.width) == (270, 480) and raw.step == 480 * 2
    np.testing.assert_array_equal(np.frombuffer(bytes(raw.data), dtype=np.uint16).reshape(270, 480), scene)

    status = next(d.status[0] for d in received["diagnostics"] if d.status[0].values)
    values = {kv.key: kv.value for kv in status.values}
    assert status.name == "depth_node: camera"
    assert values["clock_domain"] == "global_time"
    assert "latency_p50_ms" in values and "dropped_frames" in values and "reconnects" in values

    metrics = json.loads((tmp_path / "run" / "depth.json").read_text())
    assert metrics["frames"] >= 3
    assert metrics["frames_per_clock_domain"] == {"global_time": metrics["frames"]}


def test_main_exits_non_zero_listing_the_modes_on_an_unsupported_mode(tmp_path, ros_env, capfd):
    config = write_config(tmp_path, width=640, height=480, fps=30)
    source = SoftwareCameraSource(StreamRequest(640, 480, 30))
    source.plug(SoftwareDepthCamera(modes=[(480, 270, 60), (848, 480, 30)]))
    status = main(["--config", str(config), "--run-dir", str(tmp_path / "run")], source=source)
    assert status == 2
    err = capfd.readouterr().err
    assert "cannot stream z16 640x480 @ 30 fps; supported z16 profiles: 480x270 @ 60 fps, 848x480 @ 30 fps" in err
    assert json.loads((tmp_path / "run" / "depth.json").read_text())["state"] == "unsupported"


def test_entry_point_without_a_camera_says_so_and_keeps_retrying(tmp_path, ros_env, wait_for):
    # The real `depth_node` process with the real RealSense source: no camera has this serial.
    config = write_config(tmp_path, serial="000000000000", reconnect_period_s=0.1)
    run_dir = tmp_path / "run"
    log_path = tmp_path / "depth_node.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "parkour_perception.depth_node", "--config", str(config), "--run-dir", str(run_dir)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        try:
            wait_for(lambda: "no RealSense found" in log_path.read_text(), 30.0, "the absent-camera message")
            wait_for(lambda: (run_dir / "ready" / "depth").exists(), 10.0, "the ready marker")
            assert proc.poll() is None, "depth_node exited instead of retrying"
            proc.send_signal(signal.SIGINT)
            status = proc.wait(15.0)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert status == 0
    lines = [line for line in log_path.read_text().splitlines() if "no RealSense found" in line]
    assert len(lines) == 1
    assert lines[0].endswith("no RealSense found (serial 000000000000): check USB/permissions; retrying every 0.1 s")
    metrics = json.loads((run_dir / "depth.json").read_text())
    assert metrics["frames"] == 0 and metrics["open_attempts"] >= 1
