"""The recorder node against a tiny live graph: raw messages to MCAP, latched topics, run metadata."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from parkour_bringup.bag.reader import open_bag
from parkour_core.domains import claim_domains
from parkour_core.hashing import sha256_file
from parkour_core.paths import config_dir, models_dir

# A ROS domain drawn per run: with a fixed one, test runs at once on the same machine join each other's graphs.
_DOMAINS = claim_domains()  # held while the tests run: no other graph or test run takes it
ROS_DOMAIN_ID = _DOMAINS.ros


def _wait(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_recorder_writes_what_was_published_with_run_metadata(tmp_path):
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from parkour_interfaces.msg import BundleInfo

    env = dict(os.environ, ROS_DOMAIN_ID=str(ROS_DOMAIN_ID), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    env.setdefault("AMENT_PREFIX_PATH", sys.prefix)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ROS_DOMAIN_ID)
    node = rclpy.create_node("bag_test_publisher", context=context)
    recorder = None
    try:
        latched = QoSProfile(
            depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
        )
        bundle_pub = node.create_publisher(BundleInfo, "/policy/bundle", latched)
        bundle_pub.publish(BundleInfo(name="g1_walk", kp=[40.0]))  # before the recorder exists: it must still get it
        joints_pub = node.create_publisher(JointState, "/robot/joint_states", 10)

        bag_dir = tmp_path / "bag"
        run_dir = tmp_path / "run"
        config = config_dir() / "g1_robot.yaml"
        cmd = [sys.executable, "-m", "parkour_bringup.bag.recorder", "--config", str(config)]
        cmd += ["--run-dir", str(run_dir), "--bag", str(bag_dir)]
        recorder = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _wait(lambda: (run_dir / "ready" / "recorder").exists() or recorder.poll() is not None, 60, "the recorder")
        assert recorder.poll() is None
        _wait(lambda: joints_pub.get_subscription_count() > 0, 30, "the recorder's subscription")
        time.sleep(1.0)  # the publisher sees the match first; give the recorder's side time to match too
        for k in range(50):
            msg = JointState()
            msg.header.stamp.sec = k
            msg.name = ["a", "b"]
            msg.position = [0.1 * k, -0.2 * k]
            joints_pub.publish(msg)
            time.sleep(0.01)
        time.sleep(1.0)  # reliable delivery of the last messages before the recorder stops
        recorder.send_signal(signal.SIGINT)
        output, _ = recorder.communicate(timeout=30)
        assert recorder.returncode == 0, output
    finally:
        if recorder is not None and recorder.poll() is None:
            recorder.kill()
        node.destroy_node()
        rclpy.shutdown(context=context)

    assert (bag_dir / "metadata.yaml").is_file()
    assert len(list(bag_dir.glob("*.mcap"))) == 1
    with open_bag(bag_dir) as bag:
        assert bag.topics["/robot/joint_states"] == 50
        assert bag.topics["/policy/bundle"] == 1
        joints = [m.msg for m in bag.messages(["/robot/joint_states"])]
        bundle = [(m.msgtype, m.msg.name, list(m.msg.kp)) for m in bag.messages(["/policy/bundle"])]
        meta = bag.custom_data
    assert [j.header.stamp.sec for j in joints] == list(range(50))
    np.testing.assert_array_equal(joints[7].position, [0.1 * 7, -0.2 * 7])
    assert list(joints[7].name) == ["a", "b"]
    assert bundle == [("parkour_interfaces/msg/BundleInfo", "g1_walk", [40.0])]
    assert meta["robot"] == "g1" and meta["bundle"] == "g1_walk"
    assert meta["bundle_manifest_sha256"] == sha256_file(models_dir() / "g1_walk" / "manifest.json")
    assert meta["config"] == Path(config).read_text()
    assert meta["git_commit"]


def test_parkour_bag_record_records_a_live_graph_for_a_duration(tmp_path):
    import threading

    import rclpy
    from sensor_msgs.msg import JointState

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ROS_DOMAIN_ID)
    node = rclpy.create_node("bag_test_live_graph", context=context)
    publisher = node.create_publisher(JointState, "/robot/joint_states", 10)
    stop = threading.Event()

    def publish_at_50_hz():
        while not stop.is_set():
            publisher.publish(JointState(name=["a"], position=[1.0]))
            time.sleep(0.02)

    thread = threading.Thread(target=publish_at_50_hz, daemon=True)
    thread.start()
    bag_dir = tmp_path / "live"
    try:
        cmd = [sys.executable, "-m", "parkour_bringup.cli", "bag", "record", str(bag_dir)]
        cmd += ["--duration", "4", "--ros-domain-id", str(ROS_DOMAIN_ID)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        stop.set()
        thread.join()
        node.destroy_node()
        rclpy.shutdown(context=context)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open_bag(bag_dir) as bag:
        assert bag.topics["/robot/joint_states"] > 0
        assert bag.robot == "g1" and bag.custom_data["mode"] == "robot"
