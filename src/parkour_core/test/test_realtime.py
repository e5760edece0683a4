"""CPU affinity and SCHED_FIFO from config: set where allowed, and said why not where not."""

import os
import subprocess
import sys

import pytest

from parkour_core.config import ConfigError, load_config
from parkour_core.paths import config_dir

CHILD = """
import os, sys
import resource
from parkour_core.realtime import apply_realtime
from parkour_core.stats import CpuMeter
if sys.argv[1] == "drop":
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (8 << 20, 8 << 20))
    os.setgid(65534); os.setuid(65534)  # nobody: no CAP_SYS_NICE, no CAP_IPC_LOCK, memlock 8 MiB
for line in apply_realtime([0], 10, "probe", lock_memory=True):
    print(line)
print(sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0) == os.SCHED_FIFO, CpuMeter().report()["memory_locked"])
"""


@pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="Linux scheduling calls")
def test_without_the_permission_the_priority_is_refused_with_what_to_do():
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to an unprivileged user")
    out = subprocess.run([sys.executable, "-c", CHILD, "drop"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pinned to CPUs [0]" in out.stdout
    assert "permission denied" in out.stdout and "CAP_SYS_NICE" in out.stdout
    assert "lock_memory not set: RLIMIT_MEMLOCK is 8388608 bytes" in out.stdout and "memlock unlimited" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[0] False False"


@pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="Linux scheduling calls")
def test_with_the_permission_both_are_set():
    if os.geteuid() != 0:
        pytest.skip("needs root (or CAP_SYS_NICE)")
    out = subprocess.run([sys.executable, "-c", CHILD, "keep"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "SCHED_FIFO priority 10" in out.stdout and "memory locked" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[0] True True"


def test_bad_affinity_is_a_config_error():
    with pytest.raises(ConfigError, match=r"supervisor\.cpu_affinity"):
        load_config(config_dir() / "g1_robot.yaml", {"supervisor.cpu_affinity": ["one"]})
    assert load_config(config_dir() / "g1_robot.yaml").policy.realtime_priority == 0  # off by default
    robot = load_config(config_dir() / "g1_robot.yaml")
    assert robot.supervisor.lock_memory and robot.policy.lock_memory  # a robot computer's controller
    assert not load_config(config_dir() / "g1_sim.yaml").supervisor.lock_memory
