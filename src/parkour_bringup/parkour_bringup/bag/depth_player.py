"""depth_player: publishes a bag's depth frames into a closed-loop replay, in place of the sim camera.

Each recorded ``/camera/depth/policy`` frame is released when it arrived in the recorded run (its
receive time in the bag), moved onto the replay's clock by the alignment on operator requests
(``closed_loop.time_shift``), and restamped by the same shift, so the policy sees the frame as old
as it was when recorded. The shift is learnt as the replayed supervisor makes each request
(``/supervisor/transition``); before the first one nothing is published (the robot hangs damped).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from parkour_bringup.bag.closed_loop import operator_requests
from parkour_bringup.bag.reader import open_bag
from parkour_bringup.bag.topics import DEPTH_TOPIC, stamp_s
from parkour_core import interfaces as topics
from parkour_core.nodeargs import mark_ready, parse_node_args
from parkour_core.ros_process import create_publisher, create_subscription, init_rclpy, spin_node
from parkour_core.stats import write_json
from parkour_safety.messages import transition_from_message

TIMER_HZ = 200.0  # release resolution in sim time; frames come at 30 Hz


def load_frames(bag_path: Path) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(release times, exposure stamps, images) of the bag's policy depth frames, in release order."""
    release, stamps, images = [], [], []
    with open_bag(bag_path) as bag:
        for m in bag.messages([DEPTH_TOPIC]):
            if m.msg.encoding != "32FC1":
                continue
            release.append(m.log_time_ns * 1e-9)
            stamps.append(stamp_s(m.msg.header.stamp.sec, m.msg.header.stamp.nanosec))
            images.append(np.frombuffer(bytes(m.msg.data), dtype=np.float32).reshape(m.msg.height, m.msg.width))
    order = np.argsort(release, kind="stable")
    return np.asarray(release)[order], np.asarray(stamps)[order], [images[i] for i in order]


class DepthPlayer:
    def __init__(self, bag: Path, plan: Path, run_dir: Path | None, ros_args: list[str]) -> None:
        import rclpy
        from sensor_msgs.msg import Image

        from parkour_sim.bridge_node import fill_image

        self._fill_image = fill_image
        self.run_dir = run_dir
        self.recorded_requests = json.loads(plan.read_text())["requests"]
        self.release, self.stamps, self.images = load_frames(bag)
        self.next_frame = 0
        self.anchors: list[float] = []  # recorded request times already replayed
        self.shifts: list[float] = []
        self.published = 0
        self.skipped_before_anchor = 0
        init_rclpy(ros_args)
        self.node = rclpy.create_node("depth_player")
        self._Image = Image
        self.pub = create_publisher(self.node, topics.DEPTH, topics.SIM_CAMERA_QOS)  # as the simulated camera
        create_subscription(self.node, topics.TRANSITION, self._on_transition)
        self.replayed: list[dict] = []
        self.node.create_timer(1.0 / TIMER_HZ, self._tick)

    def _on_transition(self, msg) -> None:
        record = transition_from_message(msg)
        if (record["t"], record["from"], record["to"]) in {(r["t"], r["from"], r["to"]) for r in self.replayed}:
            return
        self.replayed.append(record)
        replayed = operator_requests(sorted(self.replayed, key=lambda r: r["t"]))
        self.anchors, self.shifts = [], []
        for rec, rep in zip(self.recorded_requests, replayed, strict=False):
            if rec["request"] != rep["request"]:
                break
            self.anchors.append(rec["t"])
            self.shifts.append(rep["t"] - rec["t"])

    def _shift(self, t: float) -> float:
        index = max(0, int(np.searchsorted(self.anchors, t, side="right")) - 1)
        return self.shifts[index]

    def _tick(self) -> None:
        if not self.shifts:
            return
        now = self.node.get_clock().now().nanoseconds * 1e-9
        while self.next_frame < len(self.release):
            i = self.next_frame
            if self.release[i] < self.anchors[0]:
                self.skipped_before_anchor += 1  # seen while the robot hung damped: nothing to replay
                self.next_frame += 1
                continue
            shift = self._shift(float(self.release[i]))
            if self.release[i] + shift > now:
                break
            self.pub.publish(self._fill_image(self._Image(), self.images[i], float(self.stamps[i]) + shift))
            self.published += 1
            self.next_frame += 1

    def write_metrics(self) -> None:
        if self.run_dir is not None:
            write_json(self.run_dir / "depth_player.json", {
                "frames_in_bag": len(self.release), "published": self.published,
                "skipped_before_first_request": self.skipped_before_anchor,
                "alignment_shifts_s": [round(s, 4) for s in self.shifts],
            })  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--bag", type=Path, required=True)
    parser.add_argument("--plan", type=Path, required=True, help="the replay's replay_plan.json")
    own, rest = parser.parse_known_args(argv)
    args = parse_node_args(__doc__ or "", rest)
    player = DepthPlayer(own.bag, own.plan, args.run_dir, args.ros_args)
    print(f"depth_player: {len(player.release)} frames from {own.bag}", flush=True)
    mark_ready(args.run_dir, "depth_player")
    spin_node(player.node, player.write_metrics)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
