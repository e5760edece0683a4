"""A node process on ros_process's pattern writes its metrics and exits on SIGINT or SIGTERM.

The child starts with SIGINT ignored, as a process started in the background by a
non-interactive shell does (the way CI and the bringup's shells start nodes): without the
explicit handler it would never see the bringup's SIGINT.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from parkour_core.domains import claim_domains

_DOMAINS = (claim_domains(), claim_domains())  # held while the tests run: no other graph or test run takes them
ROS_DOMAIN_ID, SECOND_ROS_DOMAIN_ID = _DOMAINS[0].ros, _DOMAINS[1].ros
# A hang guard, not a timing: the child answers a signal within one spin wait (0.1 s).
HANG_S = 60.0

CHILD = textwrap.dedent(
    """
    import sys
    from parkour_core.ros_process import init_rclpy, spin_node
    import rclpy

    init_rclpy([])
    node = rclpy.create_node("ros_process_probe")
    ticks = []

    def tick():
        ticks.append(1)
        if len(ticks) == 3:
            print("spinning", flush=True)

    node.create_timer(0.02, tick)
    spin_node(node, lambda: open(sys.argv[1], "w").write(str(len(ticks))))
    print("exited cleanly", flush=True)
    """
)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_node_started_with_sigint_ignored_still_writes_metrics_and_exits(tmp_path: Path, signum: int) -> None:
    metrics = tmp_path / "metrics.txt"
    env = dict(os.environ, ROS_DOMAIN_ID=str(ROS_DOMAIN_ID), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(metrics)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        preexec_fn=_ignore_sigint,
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        assert first.strip() == "spinning", f"the probe node did not start: {first!r}"
        child.send_signal(signum)
        out, _ = child.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail(f"the node ignored {signal.Signals(signum).name}: still running {HANG_S:.0f} s later")
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, out
    assert "exited cleanly" in out
    assert int(metrics.read_text()) >= 3


TICKS_ON_SIM_TIME = textwrap.dedent(
    """
    import sys, time, json
    import rclpy
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock
    from parkour_core.ros_process import PeriodicTick, default_executor, init_rclpy

    init_rclpy([])
    node = rclpy.create_node("ticker", parameter_overrides=[Parameter("use_sim_time", value=True)])
    source = rclpy.create_node("clock_source")
    pub = source.create_publisher(Clock, "/clock", 10)
    ticks = []
    ticker = PeriodicTick(node, 0.02, lambda: ticks.append(node.get_clock().now().nanoseconds), sim_time=True)
    executor = default_executor()
    executor.add_node(node)
    while pub.get_subscription_count() == 0:
        executor.spin_once(timeout_sec=0.05)
    msg = Clock()
    # 2 ms steps to 0.2 s, every time published twice (a repeated /clock must not tick twice)
    for k in range(1, 101):
        msg.clock.sec, msg.clock.nanosec = 0, k * 2_000_000
        for _ in range(2):
            pub.publish(msg)
            deadline = time.monotonic() + 1.0
            seen = node.get_clock().now().nanoseconds
            while seen < k * 2_000_000 and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.01)
                seen = node.get_clock().now().nanoseconds
        executor.spin_once(timeout_sec=0.001)
    print(json.dumps(ticks))
    """
)


def test_a_periodic_tick_on_sim_time_runs_once_at_each_due_time() -> None:
    env = dict(os.environ, ROS_DOMAIN_ID=str(SECOND_ROS_DOMAIN_ID), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    proc = subprocess.run([sys.executable, "-c", TICKS_ON_SIM_TIME], capture_output=True, text=True, env=env,
                          timeout=HANG_S)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import json

    ticks = json.loads(proc.stdout.strip().splitlines()[-1])
    assert ticks == [k * 20_000_000 for k in range(1, 11)], ticks
    # The simulator holds sim time at the same grid: a tick it waits for is one the node runs.
    from parkour_core.tick_grid import TickGrid

    grid = TickGrid.on_sim_time(0.02)
    held_at = [round(due * 1e9) for k in range(1, 101) if (due := grid.reached(k * 0.002)) is not None]
    assert held_at == ticks
