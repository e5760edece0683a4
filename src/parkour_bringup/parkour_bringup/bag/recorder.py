"""recorder: writes every stack topic to an MCAP bag in the rosbag2 layout (``metadata.yaml`` + ``.mcap``).

Subscribes with ``raw=True`` so messages go to disk as the CDR bytes that arrived, never
deserialised; latched topics (``/policy/bundle``, ``/supervisor/*``) are subscribed transient-local
to get their last message. Subscribed by their relative names, the topics are those of the
recorder's own namespace, kept under the names the graph resolved. The bag's ``custom_data`` holds
the robot, the bundle and the SHA-256 of its manifest, the git commit, the config that ran and the
namespace. Each message is stamped with its receive time on the node clock (sim time under
``use_sim_time``). The bag folder must not exist: recording never overwrites. ``metadata.yaml`` is
written when the node stops (SIGINT). The stack's own types are recorded with their definitions
(:mod:`parkour_bringup.bag.typestore`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from parkour_bringup.bag.reader import write_checksums
from parkour_bringup.bag.topics import RECORDED_TOPICS
from parkour_core.config import ConfigError, StackConfig
from parkour_core.hashing import sha256_file
from parkour_core.interfaces import Qos, Topic
from parkour_core.nodeargs import mark_ready, parse_node_args
from parkour_core.provenance import git_commit
from parkour_core.ros_process import create_subscription, declare_from_config, init_rclpy, spin_node
from parkour_core.stats import write_json

# Deep enough for 200 Hz streams to ride out a stalled disk write without dropping reliable messages.
QUEUE_DEPTH = 200


def bag_custom_data(cfg: StackConfig, config_path: Path) -> dict[str, str]:
    """What a replay needs to know about the run: robot, bundle (path and manifest hash), commit, config."""
    from parkour_core.bundles import resolve_bundle

    data = {"robot": cfg.robot, "mode": cfg.mode, "bundle": cfg.policy.bundle, "git_commit": git_commit()}
    try:
        bundle_path = resolve_bundle(cfg.policy.bundle).resolve()
        data["bundle_path"] = str(bundle_path)
        data["bundle_manifest_sha256"] = sha256_file(bundle_path / "manifest.json")
    except Exception as e:  # a bad bundle is the policy node's to refuse; the bag just says so
        data["bundle_manifest_sha256"] = f"unavailable: {e}"
    data["config"] = Path(config_path).read_text()
    return data


class Recorder:
    def __init__(self, cfg: StackConfig, config_path: Path, bag_dir: Path, ros_args: list[str]) -> None:
        import rclpy
        from rosbags.rosbag2 import StoragePlugin, Writer

        from parkour_bringup.bag.typestore import stack_typestore

        if bag_dir.exists():
            raise FileExistsError(f"{bag_dir} exists; a recording never overwrites a bag (choose another folder)")
        bag_dir.parent.mkdir(parents=True, exist_ok=True)
        self.bag_dir = bag_dir
        typestore = stack_typestore()
        init_rclpy(ros_args)
        self.node = rclpy.create_node("bag_recorder")
        cfg = declare_from_config(self.node, cfg, "recorder").cfg  # robot, mode and bundle, from its parameters
        self.writer = Writer(bag_dir, version=8, storage_plugin=StoragePlugin.MCAP)
        for key, value in bag_custom_data(cfg, config_path).items():
            self.writer.set_custom_data(key, value)
        # The readers take the namespace off the topic names the bag holds (bag.topics.root_name).
        self.writer.set_custom_data("namespace", self.node.get_namespace())
        self.writer.open()
        self.counts: dict[str, int] = {}
        connections: dict[str, object] = {}
        for recorded in RECORDED_TOPICS:
            topic = Topic(recorded.name, recorded.msgtype, Qos(QUEUE_DEPTH, latched=recorded.latched))
            write = self._writer_for(recorded.topic, connections)
            subscription = create_subscription(self.node, topic, write, raw=True)
            # The name the graph resolved (namespace, remaps): the one a bag player publishes on again.
            connections[recorded.topic] = self.writer.add_connection(
                subscription.topic_name, recorded.msgtype, typestore=typestore
            )
            self.counts[subscription.topic_name] = 0

    def _writer_for(self, topic: str, connections: dict[str, object]):
        def write(raw: bytes) -> None:
            connection = connections[topic]
            self.writer.write(connection, self.node.get_clock().now().nanoseconds, raw)
            self.counts[connection.topic] += 1  # type: ignore[attr-defined]

        return write

    def close(self, run_dir: Path | None) -> None:
        self.writer.close()  # writes metadata.yaml: the bag is readable from here on
        write_checksums(self.bag_dir)
        if run_dir is not None:
            write_json(run_dir / "recorder.json", {"bag": str(self.bag_dir), "messages": self.counts})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--bag", type=Path, default=None, help="bag folder to create (default <run-dir>/bag)")
    own, rest = parser.parse_known_args(argv)
    args = parse_node_args(__doc__ or "", rest, "recorder")
    bag_dir = own.bag or (args.run_dir / "bag" if args.run_dir is not None else None)
    if bag_dir is None:
        print("recorder: give --bag DIR or --run-dir DIR", flush=True)
        return 2
    if args.config_path is None:
        print("recorder: give --config FILE, the stack config the bag records", flush=True)
        return 2
    try:
        recorder = Recorder(args.config, args.config_path, bag_dir.resolve(), args.ros_args)
    except (FileExistsError, FileNotFoundError, ConfigError) as e:  # a bag already there; no message definitions
        print(f"recorder: {e}", flush=True)
        return 2
    print(f"recorder: recording {len(RECORDED_TOPICS)} topics into {recorder.bag_dir}", flush=True)
    mark_ready(args.run_dir, "recorder")
    try:
        spin_node(recorder.node, lambda: recorder.close(args.run_dir))
    finally:
        print(f"recorder: wrote {recorder.bag_dir} ({json.dumps(recorder.counts)})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
