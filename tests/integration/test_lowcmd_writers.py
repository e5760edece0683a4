"""The supervisor is the only rt/lowcmd writer, and on the robot it writes nothing without --live."""

import subprocess
import sys

import pytest

from .conftest import graph_env, start_node, wait_for, write_config

pytestmark = pytest.mark.integration

COUNT_WRITERS = """
import sys
from parkour_core.dds import DdsLink
print(DdsLink(int(sys.argv[1]), "lo").count_writers("rt/lowcmd", float(sys.argv[2])))
"""


def count_lowcmd_writers(domain: int, env: dict[str, str], wait_s: float = 2.0) -> int:
    proc = subprocess.run(
        [sys.executable, "-c", COUNT_WRITERS, str(domain), str(wait_s)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.strip().splitlines()[-1])


def test_second_supervisor_refuses_to_start(tmp_path, domains):
    dds_domain, ros_domain = domains
    env = graph_env(ros_domain)
    config = write_config(tmp_path, "g1_sim.yaml", dds={"domain": dds_domain, "interface": "lo"})
    first = start_node("parkour_safety.supervisor_node", config, tmp_path / "first", env)
    try:
        wait_for(lambda: (tmp_path / "first" / "ready" / "supervisor").exists(), 60, "the first supervisor")
        second = subprocess.run(
            [sys.executable, "-m", "parkour_safety.supervisor_node", "--config", str(config)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 2
        assert "other rt/lowcmd writer" in second.stdout
    finally:
        first.terminate()
        first.wait(timeout=20)


@pytest.mark.parametrize("live", [False, True])
def test_robot_mode_writes_lowcmd_only_when_live(tmp_path, domains, live):
    dds_domain, ros_domain = domains
    env = graph_env(ros_domain)
    config = write_config(tmp_path, "g1_robot.yaml", dds={"domain": dds_domain, "interface": "lo"})
    run_dir = tmp_path / "run"
    extra = ("--live",) if live else ()
    sup = start_node("parkour_safety.supervisor_node", config, run_dir, env, *extra)
    try:
        wait_for(lambda: (run_dir / "ready" / "supervisor").exists(), 60, "the supervisor")
        assert count_lowcmd_writers(dds_domain, env) == (1 if live else 0)
    finally:
        sup.terminate()
        sup.wait(timeout=20)


MATCHED_READERS = """
import sys, time
from parkour_core.dds import DdsLink
from parkour_core.robots import get_robot
from parkour_core.unitree import message_types

state_type, _ = message_types(get_robot("g1"))
link = DdsLink(int(sys.argv[1]), "lo")
writer = link.writer("rt/lowstate", state_type)
before = writer.matched_readers()
reader = link.reader("rt/lowstate", state_type)
deadline = time.monotonic() + 20
while writer.matched_readers() < 1 and time.monotonic() < deadline:
    time.sleep(0.01)
print(before, writer.matched_readers())
"""


def test_a_lowstate_writer_counts_the_readers_it_has_matched(domains):
    """What the bridge waits for before it holds sim time for the policy's first tick: a policy whose
    rt/lowstate reader matched after the first samples went out has no state and cannot answer."""
    dds_domain, ros_domain = domains
    proc = subprocess.run(
        [sys.executable, "-c", MATCHED_READERS, str(dds_domain)],
        env=graph_env(ros_domain), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0 1"
