import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from parkour_core.domains import claim_domains

REPO = Path(__file__).resolve().parents[2]


def graph_env(ros_domain_id: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        RMW_IMPLEMENTATION="rmw_fastrtps_cpp",
        AMENT_PREFIX_PATH=env.get("AMENT_PREFIX_PATH", sys.prefix),
        ROS_DOMAIN_ID=str(ros_domain_id),
        PYTHONUNBUFFERED="1",
    )
    return env


def claim_test_domains():
    """A test graph's Unitree DDS domain and ROS domain, claimed: no other graph on this machine uses them,
    not another test's, not a `parkour sim` a developer runs meanwhile (parkour_core.domains)."""
    return claim_domains()


@pytest.fixture
def domains():
    """:func:`claim_test_domains`, held until the test ends."""
    with claim_test_domains() as claim:
        yield claim.dds, claim.ros


def write_config(tmp_path: Path, base: str, **sections) -> Path:
    data = yaml.safe_load((REPO / "config" / base).read_text())
    for section, values in sections.items():
        if isinstance(values, dict):
            data.setdefault(section, {}).update(values)
        else:
            data[section] = values
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def start_node(module: str, config: Path, run_dir: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    run_dir.mkdir(parents=True, exist_ok=True)
    log = open(run_dir / f"{module.rsplit('.', 1)[-1]}.log", "w")  # noqa: SIM115
    cmd = [sys.executable, "-m", module, "--config", str(config), "--run-dir", str(run_dir), *extra]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)
