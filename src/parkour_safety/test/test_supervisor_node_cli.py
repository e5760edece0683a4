import subprocess
import sys


def test_bad_config_is_refused_with_the_key_named(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("robot: g1\nsupervisor:\n  rate_hz: 5\n")
    proc = subprocess.run(
        [sys.executable, "-m", "parkour_safety.supervisor_node", "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "supervisor.rate_hz" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_depth_stamp_is_read_from_the_serialized_image():
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Image

    from parkour_safety.supervisor_node import serialized_header_stamp_s

    msg = Image()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 12, 345_000_000
    msg.header.frame_id = "camera_depth_optical_frame"
    msg.height, msg.width, msg.encoding, msg.data = 2, 2, "32FC1", bytes(16)
    assert serialized_header_stamp_s(serialize_message(msg)) == 12.345
