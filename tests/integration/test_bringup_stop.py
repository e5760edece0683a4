"""`parkour robot` takes its graph down with it, however it is stopped.

The nodes run in sessions of their own, so the terminal's Ctrl-C reaches only the bringup, which
passes it on. Two ways that once left the supervisor and the policy node running, unwatched, with no
metrics written (the next bringup then met a second rt/lowcmd writer):
- the bringup was started with SIGINT ignored (in the background by a non-interactive shell, as CI
  and the stand-in harness start it) and so never saw the SIGINT;
- the bringup was killed (SIGKILL, a crash) before it could pass anything on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO, graph_env, wait_for, write_config

pytestmark = pytest.mark.integration

# Hang guards, not timings: the bringup waits up to 30 s for its nodes before it kills them.
READY_S = 90.0
GONE_S = 45.0
NODES = ("supervisor", "policy", "teleop")


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def processes_of(run_dir: Path) -> dict[int, str]:
    """The live processes started for ``run_dir`` (each node gets ``--run-dir``): pid, command line."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(run_dir) in cmdline and state != "Z":
            found[int(proc.name)] = cmdline.strip()
    return found


def start_bringup(tmp_path: Path, domains: tuple[int, int]) -> tuple[subprocess.Popen, Path]:
    dds_domain, ros_domain = domains
    config = write_config(tmp_path, "g1_robot.yaml", dds={"domain": dds_domain, "interface": "lo"},
                          camera={"enabled": False})  # fmt: skip
    run_dir = tmp_path / "run"
    log = open(tmp_path / "parkour_robot.log", "w")  # noqa: SIM115 - the child owns it
    bringup = subprocess.Popen(
        [sys.executable, "-m", "parkour_bringup.cli", "robot", "--robot", "g1", "--iface", "lo",
         "--config", str(config), "--out", str(run_dir)],
        stdout=log, stderr=subprocess.STDOUT, env=graph_env(ros_domain), cwd=REPO, preexec_fn=_ignore_sigint,
    )  # fmt: skip
    try:
        wait_for(lambda: all((run_dir / "ready" / n).exists() for n in NODES), READY_S, f"nodes {NODES} ready")
    except AssertionError:
        bringup.kill()
        raise
    return bringup, run_dir


def wait_gone(run_dir: Path) -> list[str]:
    """The command lines still running ``GONE_S`` after the bringup stopped."""
    deadline = time.monotonic() + GONE_S
    while (left := processes_of(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return sorted(left.values())


def kill_left(run_dir: Path) -> None:
    for pid in processes_of(run_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _killed_report(log: str, run_dir: Path) -> str:
    """Which nodes were killed, and the end of each one's log: a hang on the way out, diagnosable."""
    lines = [line for line in log.splitlines() if "were killed" in line]
    tails = [f"--- {p.name}:\n" + "\n".join(p.read_text(errors="replace").splitlines()[-15:])
             for p in sorted((run_dir / "logs").glob("*.log"))]  # fmt: skip
    return "\n".join(lines + tails)


def test_sigint_stops_a_bringup_that_inherited_sigint_ignored(tmp_path, domains):
    bringup, run_dir = start_bringup(tmp_path, domains)
    try:
        bringup.send_signal(signal.SIGINT)
        try:
            bringup.wait(timeout=GONE_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`parkour robot` ignored SIGINT: still running {GONE_S:.0f} s later")
        left = wait_gone(run_dir)
        assert not left, f"nodes outlived the bringup: {left}"
        written = sorted(p.stem for p in run_dir.glob("*.json"))
        assert set(NODES) <= set(written), f"metrics written: {written}"
        log = (tmp_path / "parkour_robot.log").read_text()
        assert "were killed" not in log, _killed_report(log, run_dir)
    finally:
        bringup.kill()
        kill_left(run_dir)


def test_the_nodes_stop_when_the_bringup_is_killed(tmp_path, domains):
    bringup, run_dir = start_bringup(tmp_path, domains)
    try:
        bringup.kill()
        bringup.wait()
        left = wait_gone(run_dir)
        assert not left, f"nodes outlived the killed bringup: {left}"
        written = sorted(p.stem for p in run_dir.glob("*.json"))
        assert set(NODES) <= set(written), f"the nodes did not stop cleanly (metrics written: {written})"
    finally:
        kill_left(run_dir)
