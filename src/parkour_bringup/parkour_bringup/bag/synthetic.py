"""Write a stack bag without a running graph, the way the policy node and the recorder would: for tests
and bench/bags.

A runner of a real bundle steps through a made-up but plausible walk (joint states around the
default pose, a command that changes, a reset, depth frames released every few ticks), and the bag
gets exactly the messages the graph would have recorded: tick inputs, joint targets, depth images,
the bundle announcement and joint states. ``legacy``: as a stack before its own message types
recorded them (:mod:`parkour_bringup.bag.legacy`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from parkour_bringup.bag import legacy as legacy_format  # the module; ``legacy`` names the flag below
from parkour_bringup.bag.reader import write_checksums
from parkour_bringup.bag.topics import (
    BUNDLE_TOPIC,
    DEPTH_TOPIC,
    JOINT_STATES_TOPIC,
    RECORDED_TOPICS,
    TARGETS_TOPIC,
    TICK_INPUTS_TOPIC,
    TickInputs,
    in_namespace,
)
from parkour_bringup.bag.typestore import stack_typestore
from parkour_control.messages import bundle_info_message, tick_inputs_message
from parkour_core.bundle import load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.runner import PolicyRunner, RobotState


class BagWriter:
    """A rosbag2 MCAP bag written from rosbags message objects, or from rclpy messages serialized as the
    recorder receives them. ``legacy``: the stack's own topics with the types an older stack recorded.
    Topics are given by their root names; a ``namespace`` in ``custom_data`` puts them under it."""

    def __init__(self, path: Path, custom_data: dict[str, str], legacy: bool = False) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer

        self.path, self.legacy = Path(path), legacy
        self.typestore = stack_typestore()
        self.types = self.typestore.types
        self.writer = Writer(path, version=8, storage_plugin=StoragePlugin.MCAP)
        for k, v in custom_data.items():
            self.writer.set_custom_data(k, v)
        self.writer.open()
        self.msgtypes = {t.topic: t.msgtype for t in RECORDED_TOPICS}
        if legacy:
            self.msgtypes |= legacy_format.MSGTYPES
        namespace = custom_data.get("namespace", "/")
        self.connections = {
            topic: self.writer.add_connection(in_namespace(topic, namespace), msgtype, typestore=self.typestore)
            for topic, msgtype in self.msgtypes.items()
        }

    def write(self, topic: str, t_ns: int, msg) -> None:
        raw = self.typestore.serialize_cdr(msg, self.msgtypes[topic])
        self.writer.write(self.connections[topic], t_ns, raw)

    def write_ros(self, topic: str, t_ns: int, msg) -> None:
        """An rclpy message, serialized by rclpy: the bytes a recorder subscribed to the node would get."""
        from rclpy.serialization import serialize_message

        self.writer.write(self.connections[topic], t_ns, bytes(serialize_message(msg)))

    def close(self) -> None:
        self.writer.close()
        if not self.legacy:  # as the recorder closes a bag; an older stack's bag had no checksums
            write_checksums(self.path)

    # message builders -----------------------------------------------------------------
    def header(self, t_ns: int, frame_id: str = ""):
        time = self.types["builtin_interfaces/msg/Time"](sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)
        return self.types["std_msgs/msg/Header"](stamp=time, frame_id=frame_id)

    def joint_state(self, t_ns: int, frame_id: str, names, position, velocity=()):
        return self.types["sensor_msgs/msg/JointState"](
            header=self.header(t_ns, frame_id),
            name=list(names),
            position=np.asarray(position, dtype=np.float64),
            velocity=np.asarray(velocity, dtype=np.float64),
            effort=np.zeros(0, dtype=np.float64),
        )

    def write_tick_inputs(self, t_ns: int, inputs: TickInputs, bundle_name: str) -> None:
        """A tick's inputs as the policy node publishes them (or as an older one packed them)."""
        if self.legacy:
            self.write(TICK_INPUTS_TOPIC, t_ns, legacy_format.packed_tick_inputs_message(self.types, inputs))
        else:
            self.write_ros(TICK_INPUTS_TOPIC, t_ns, tick_inputs_message(inputs, bundle_name))

    def write_bundle(self, t_ns: int, bundle) -> None:
        """A bundle's announcement on /policy/bundle (an older one's JSON holds name, path, kp, kd)."""
        if self.legacy:
            m = bundle.manifest
            announcement = {"name": m.name, "path": str(bundle.path), "kp": list(m.kp), "kd": list(m.kd)}
            self.write(BUNDLE_TOPIC, t_ns, self.string(json.dumps(announcement)))
        else:
            self.write_ros(BUNDLE_TOPIC, t_ns, bundle_info_message(bundle))

    def depth_image(self, t_ns: int, image: np.ndarray):
        h, w = image.shape
        return self.types["sensor_msgs/msg/Image"](
            header=self.header(t_ns, "camera"),
            height=h,
            width=w,
            encoding="32FC1",
            is_bigendian=0,
            step=w * 4,
            data=np.frombuffer(image.astype(np.float32).tobytes(), dtype=np.uint8),
        )

    def string(self, text: str):
        return legacy_format.string_message(self.types, text)


def write_synthetic_bag(
    path: Path,
    bundle: str = "g1_walk_depth_gated",
    ticks: int = 100,
    robot: str = "g1",
    target_offset: float = 0.0,
    seed: int = 0,
    recording_starts_at: int = 0,
    depth_recorded_from: int = 0,
    legacy: bool = False,
    namespace: str = "/",
) -> Path:
    """A bag as if ``bundle`` had run ``ticks`` policy ticks; ``target_offset`` is added to every recorded target.

    ``recording_starts_at``: the recorder matched the policy late; earlier ticks and frames ran but are not
    in the bag. ``depth_recorded_from``: the recorder matched the camera later than the policy; frames
    released before that tick are not in the bag. ``legacy``: the types an older stack recorded.
    ``namespace``: the graph ran under it.
    """
    loaded = load_bundle(resolve_bundle(bundle))
    m = loaded.manifest
    runner = PolicyRunner(loaded, intra_op_threads=1)
    rng = np.random.default_rng(seed)
    n = len(m.joint_names)
    default_q = np.asarray(m.default_joint_pos)
    custom = {"robot": robot, "mode": "sim", "bundle": m.name, "bundle_path": str(loaded.path), "git_commit": "test"}
    if namespace != "/":
        custom["namespace"] = namespace
    writer = BagWriter(path, custom, legacy=legacy)
    writer.write_bundle(0, loaded)
    period_ns = round(1e9 / m.policy_hz)
    depth_shape = (m.depth.spec.height, m.depth.spec.width) if m.depth is not None else (58, 87)
    depth_stamp: float | None = None
    t_ns = 1_000_000_000
    for k in range(ticks):
        # As in a busy sim: once, two ticks run before sim time moves, so they share a stamp.
        t_ns = t_ns if k == ticks // 3 else 1_000_000_000 + k * period_ns
        reset = k in (0, ticks // 5)  # a new runner, then the supervisor entered ACTIVE
        recorded = k >= recording_starts_at
        if reset:
            runner.reset()
        if k % 3 == 0:  # a frame released every third tick, exposed 40 ms before
            frame_ns = t_ns - 40_000_000
            image = rng.uniform(-0.5, 0.5, size=depth_shape).astype(np.float32)
            if recorded and k >= depth_recorded_from:
                writer.write(DEPTH_TOPIC, frame_ns, writer.depth_image(frame_ns, image))
            depth_stamp = frame_ns // 1_000_000_000 + (frame_ns % 1_000_000_000) * 1e-9
            if runner.backbone is not None:
                runner.set_depth(image, depth_stamp)
        q = default_q + rng.normal(0.0, 0.05, n)
        dq = rng.normal(0.0, 0.3, n)
        yaw = 0.1 * np.sin(k / 20)
        quat = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
        gyro = rng.normal(0.0, 0.1, 3)
        command = np.array([0.5 if k > ticks // 4 else 0.0, 0.0, 0.3 if k > ticks // 2 else 0.0])
        targets = runner.step(RobotState(q, dq, quat, gyro), command) + target_offset
        if not recorded:
            continue
        writer.write(
            JOINT_STATES_TOPIC, t_ns - 2_000_000, writer.joint_state(t_ns - 2_000_000, "", m.joint_names, q, dq)
        )
        inputs = TickInputs(t_ns // 1_000_000_000, t_ns % 1_000_000_000, reset, depth_stamp, command, quat, gyro, q, dq)
        writer.write_tick_inputs(t_ns, inputs, m.name)
        writer.write(TARGETS_TOPIC, t_ns, writer.joint_state(t_ns, m.name, m.joint_names, targets))
    writer.close()
    return path
