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

ROS_DOMAIN_ID = 61
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
