"""rt/lowstate at 500 Hz between two processes: one-way latency and the rate achieved, ours and peers.

A writer process fills a Unitree ``unitree_hg`` LowState_ (G1: 29 motors in 35 slots, IMU) the way the
bridge does (``fill_lowstate`` + CRC) every 2 ms on an absolute schedule, stamps it with
CLOCK_MONOTONIC (shared by all processes of the machine) just before ``write``, and a reader process
stamps each sample as it wakes up with it. One-way latency = reader stamp - writer stamp: serialising,
the transport, deserialising and the reader's wake-up. Implementations, each a writer/reader pair
(:func:`_one_round`): ours (``parkour_core.dds.DdsLink``), unitree_sdk2py, and rclpy.

Rounds of ``--seconds`` per implementation, rotating the order, so load on the machine hits all
alike. The Cyclone domain is random in 150-199 (never the robot's 0 or the simulators' 1).

    .venv/bin/python bench/dds/lowstate.py --out bench/results/dds_lowstate.json
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.provenance import provenance
from parkour_core.stats import summary_ms, write_json

IMPLS = ("ours", "unitree_sdk2py", "rclpy")
PEER_NAMES = {
    "unitree_sdk2py": "unitree_sdk2py ChannelPublisher/Subscriber",
    "rclpy": "rclpy JointState over Fast DDS",
}
DISCOVERY_S = 1.5  # writer waits this long before the first sample
WARMUP_S = 0.5  # then writes this long unrecorded
TOPIC = "rt/lowstate"


# ------------------------------------------------------------------------------------------- writers
def _g1_state(rng: np.random.Generator) -> dict[str, Any]:
    from parkour_core.robots import get_robot

    spec = get_robot("g1")
    n = len(spec.motor_slots)
    return {
        "spec": spec,
        "q": rng.normal(0.0, 0.3, n),
        "dq": rng.normal(0.0, 1.0, n),
        "tau": rng.normal(0.0, 5.0, n),
        "quat": np.array([1.0, 0.0, 0.0, 0.0]),
        "gyro": rng.normal(0.0, 0.1, 3),
        "accel": np.array([0.0, 0.0, 9.81]),
    }


def _unitree_sender(impl: str, domain: int) -> tuple[Any, Any]:
    """(message, write function) for the two Cyclone DDS implementations."""
    from parkour_core.unitree import Crc, fill_lowstate, message_types, new_lowstate

    s = _g1_state(np.random.default_rng(0))
    state_type, _ = message_types(s["spec"])
    msg = new_lowstate(s["spec"])
    crc = Crc()
    if impl == "ours":
        from parkour_core.dds import DdsLink

        writer = DdsLink(domain, "lo").writer(TOPIC, state_type)
        write = writer.write
    else:
        from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelPublisher

        ChannelFactoryInitialize(domain, "lo")
        pub = ChannelPublisher(TOPIC, state_type)
        pub.Init()
        write = pub.Write

    def send(seq: int, tick_ms: int) -> int:
        fill_lowstate(msg, s["spec"], s["q"], s["dq"], s["tau"], s["quat"], s["gyro"], s["accel"], tick_ms)
        msg.crc = crc(msg)
        sent = time.monotonic_ns()
        msg.reserve = [sent >> 32, sent & 0xFFFFFFFF, seq & 0xFFFFFFFF, 0]
        write(msg)
        return sent

    return msg, send


def _rclpy_sender() -> Any:
    import rclpy
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from parkour_core.robots import get_robot

    rclpy.init()
    node = rclpy.create_node("bench_lowstate_writer")
    qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
    pub = node.create_publisher(JointState, "/bench/lowstate", qos)
    s = _g1_state(np.random.default_rng(0))
    names = [j.name for j in get_robot("g1").joints]
    msg = JointState()

    def send(seq: int, tick_ms: int) -> int:
        msg.name = names
        msg.position = s["q"].tolist()
        msg.velocity = s["dq"].tolist()
        msg.effort = s["tau"].tolist()
        msg.header.frame_id = str(seq)
        sent = time.monotonic_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(sent, 1_000_000_000)
        pub.publish(msg)
        return sent

    return send


def run_writer(impl: str, domain: int, hz: float, seconds: float, out: Path) -> int:
    send = _rclpy_sender() if impl == "rclpy" else _unitree_sender(impl, domain)[1]
    period_ns = round(1e9 / hz)
    time.sleep(DISCOVERY_S)
    warmup = round(WARMUP_S * hz)
    total = warmup + round(seconds * hz)
    sent = np.zeros(total, dtype=np.int64)
    call_ns = np.zeros(total, dtype=np.int64)
    late = 0
    next_ns = time.monotonic_ns()
    for seq in range(total):
        now = time.monotonic_ns()
        if next_ns > now:
            time.sleep((next_ns - now) * 1e-9)
        elif now - next_ns > period_ns:
            late += 1  # a whole period behind: skip ahead rather than burst
            next_ns = now
        sent[seq] = send(seq, seq * 2)
        call_ns[seq] = time.monotonic_ns() - sent[seq]
        next_ns += period_ns
    np.savez(out, sent_ns=sent[warmup:], write_call_ns=call_ns[warmup:], warmup=warmup, late=late)
    return 0


# ------------------------------------------------------------------------------------------- readers
class _Stop:
    def __init__(self) -> None:
        self.flag = False
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "flag", True))


def run_reader(impl: str, domain: int, out: Path) -> int:
    stop = _Stop()
    seqs: list[int] = []
    sent: list[int] = []
    recv: list[int] = []

    def record_unitree(sample: Any) -> None:
        now = time.monotonic_ns()
        r = sample.reserve
        sent.append((int(r[0]) << 32) | int(r[1]))
        seqs.append(int(r[2]))
        recv.append(now)

    if impl == "ours":
        from cyclonedds.core import ReadCondition, SampleState, WaitSet
        from cyclonedds.util import duration

        from parkour_core.dds import DdsLink
        from parkour_core.robots import get_robot
        from parkour_core.unitree import message_types

        state_type, _ = message_types(get_robot("g1"))
        reader = DdsLink(domain, "lo").reader(TOPIC, state_type)
        # DdsLink's reader as the supervisor opens it; the WaitSet only wakes this loop when data arrives
        # (the supervisor polls it on its 200 Hz tick instead).
        raw = reader._reader
        waitset = WaitSet(raw.participant)
        waitset.attach(ReadCondition(raw, SampleState.NotRead))
        print("ready", flush=True)
        while not stop.flag:
            if waitset.wait(duration(milliseconds=50)) > 0:
                sample = reader.take_latest()
                if sample is not None:
                    record_unitree(sample)
    elif impl == "unitree_sdk2py":
        from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelSubscriber

        from parkour_core.robots import get_robot
        from parkour_core.unitree import message_types

        state_type, _ = message_types(get_robot("g1"))
        ChannelFactoryInitialize(domain, "lo")
        sub = ChannelSubscriber(TOPIC, state_type)
        sub.Init(record_unitree, 0)  # queueLen 0: the handler runs in the listener callback
        print("ready", flush=True)
        while not stop.flag:
            time.sleep(0.05)
        sub.Close()
    else:
        import rclpy
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from rclpy.signals import SignalHandlerOptions
        from sensor_msgs.msg import JointState

        rclpy.init(signal_handler_options=SignalHandlerOptions.NO)  # SIGTERM ends the loop below
        node = rclpy.create_node("bench_lowstate_reader")
        qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)

        def on_state(msg: JointState) -> None:
            now = time.monotonic_ns()
            sent.append(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)
            seqs.append(int(msg.header.frame_id))
            recv.append(now)

        node.create_subscription(JointState, "/bench/lowstate", on_state, qos)
        print("ready", flush=True)
        while not stop.flag:
            rclpy.spin_once(node, timeout_sec=0.05)
    np.savez(out, seq=np.array(seqs, dtype=np.int64), sent_ns=np.array(sent), recv_ns=np.array(recv))
    return 0


# ------------------------------------------------------------------------------------------- driver
def _one_round(impl: str, domain: int, hz: float, seconds: float, tmp: Path, k: int) -> tuple[dict, dict]:
    """One round of ``impl``: a reader and a writer process, each recording to ``tmp``.

    - ours: ``parkour_core.dds.DdsLink`` (Cyclone DDS 0.10.2 configured the SDK's way on ``lo``, keep-last-1
      best-effort writer and reader); the reader blocks on a WaitSet and takes the newest sample, as the
      supervisor's ``take_latest`` does (older queued samples are dropped, counted as not delivered);
    - unitree_sdk2py: the SDK's own ``ChannelPublisher`` / ``ChannelSubscriber`` with a handler (its
      default QoS; the handler runs in Cyclone's listener thread), the same message;
    - rclpy: ``sensor_msgs/JointState`` (29 positions, velocities, efforts, names) over Fast DDS
      (``rmw_fastrtps_cpp``), keep-last-1 best effort, a subscription callback in a single-threaded
      executor: what the same state costs as a ROS message.
    """
    me = [sys.executable, str(Path(__file__).resolve()), "--impl", impl, "--domain", str(domain)]
    r_out, w_out = tmp / f"{impl}_{k}_reader.npz", tmp / f"{impl}_{k}_writer.npz"
    # the SDK writes a Cyclone trace file; keep the children's working directory out of the repository
    reader = subprocess.Popen(
        [*me, "--role", "reader", "--file", str(r_out)], stdout=subprocess.PIPE, text=True, cwd=tmp
    )
    assert reader.stdout is not None
    if reader.stdout.readline().strip() != "ready":
        reader.kill()
        raise SystemExit(f"{impl} reader failed to start (exit code {reader.wait()})")
    writer_cmd = [*me, "--role", "writer", "--file", str(w_out), "--hz", str(hz), "--seconds", str(seconds)]
    code = subprocess.run(writer_cmd, cwd=tmp, timeout=seconds + 60).returncode
    time.sleep(0.3)  # the last samples in flight
    reader.send_signal(signal.SIGTERM)
    if reader.wait(timeout=30) != 0 or code != 0:
        raise SystemExit(f"{impl}: reader exit {reader.returncode}, writer exit {code}")
    with np.load(r_out) as r, np.load(w_out) as w:
        return {k: r[k] for k in r.files}, {k: w[k] for k in w.files}


def _summarise(rounds: list[tuple[dict, dict]], hz: float) -> dict[str, Any]:
    lat, periods, calls = [], [], []
    sent_n = received_n = late = 0
    durations = 0.0
    for r, w in rounds:
        warmup = int(w["warmup"])
        keep = r["seq"] >= warmup
        lat.append((r["recv_ns"][keep] - r["sent_ns"][keep]) * 1e-9)
        sent_ns = w["sent_ns"]
        periods.append(np.diff(sent_ns) * 1e-9)
        calls.append(w["write_call_ns"] * 1e-9)
        sent_n += len(sent_ns)
        received_n += len(np.unique(r["seq"][keep]))
        late += int(w["late"])
        durations += (sent_ns[-1] - sent_ns[0]) * 1e-9
    return {
        "latency_ms": summary_ms(np.concatenate(lat)),
        "sent": sent_n,
        "received": received_n,
        "delivered_fraction": round(received_n / sent_n, 4) if sent_n else None,
        "send_rate_hz": round((sent_n - len(rounds)) / durations, 2) if durations else None,
        "send_period_ms": summary_ms(np.concatenate(periods)),
        "write_call_ms": summary_ms(np.concatenate(calls)),
        "late_periods": late,
        "target_hz": hz,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="result JSON")
    parser.add_argument("--hz", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=4.0, help="recorded seconds per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--domain", type=int, default=None, help="Cyclone DDS domain (default random 150-199)")
    parser.add_argument("--impl", choices=IMPLS, nargs="*", default=list(IMPLS))
    parser.add_argument("--role", choices=("writer", "reader"), help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role:
        (impl,) = args.impl
        if args.role == "writer":
            return run_writer(impl, args.domain, args.hz, args.seconds, args.file)
        return run_reader(impl, args.domain, args.file)
    if args.out is None:
        parser.error("--out is required")

    domain = args.domain if args.domain is not None else random.randint(150, 199)
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 199)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    os.environ.setdefault("AMENT_PREFIX_PATH", sys.prefix)
    results: dict[str, list] = {impl: [] for impl in args.impl}
    load_before = os.getloadavg()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.rounds):
            order = args.impl[k % len(args.impl) :] + args.impl[: k % len(args.impl)]
            for impl in order:
                results[impl].append(_one_round(impl, domain, args.hz, args.seconds, Path(tmp), k))
                print(f"round {k + 1}/{args.rounds}: {impl} done", flush=True)
    summaries = {impl: _summarise(rounds, args.hz) for impl, rounds in results.items()}
    report: dict[str, Any] = {
        **provenance(),
        "what": f"rt/lowstate (unitree_hg LowState_, G1) at {args.hz:g} Hz between two processes on loopback: "
        "one-way latency writer stamp (just before write) -> reader wake-up, CLOCK_MONOTONIC",
        "implementations": summaries,
        "rounds": args.rounds,
        "seconds_per_round": args.seconds,
        "cyclone_domain": domain,
        "ros_domain_id": int(os.environ["ROS_DOMAIN_ID"]),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.perf_counter() - started, 1),
        "summary": [],
    }
    if "ours" in summaries:
        ours = summaries["ours"]["latency_ms"]
        for peer in (p for p in args.impl if p != "ours"):
            lat = summaries[peer]["latency_ms"]
            report[f"ratio_p50_vs_{peer}"] = round(ours["p50"] / lat["p50"], 3)
            report[f"ratio_p99_vs_{peer}"] = round(ours["p99"] / lat["p99"], 3)
            report["summary"].append(
                {
                    "what": f"lowstate one-way latency at {args.hz:g} Hz (ours delivered "
                    f"{summaries['ours']['delivered_fraction']:.1%}, peer {summaries[peer]['delivered_fraction']:.1%})",
                    "unit": "ms",
                    "ours": {"p50": ours["p50"], "p99": ours["p99"]},
                    "peer": {"name": PEER_NAMES[peer], "p50": lat["p50"], "p99": lat["p99"]},
                }
            )
    write_json(args.out, report)
    for impl, s in summaries.items():
        lat = s["latency_ms"]
        print(
            f"{impl}: latency p50 {lat['p50']:.3f} p99 {lat['p99']:.3f} ms, delivered {s['delivered_fraction']}, "
            f"send rate {s['send_rate_hz']} Hz"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
