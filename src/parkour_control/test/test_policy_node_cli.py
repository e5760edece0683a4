"""The policy node as a process: what it refuses before anything starts, and what it says of the bundle it runs."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml

from parkour_core import interfaces as topics
from parkour_core.bundle import MANIFEST_SEAL
from parkour_core.bundles import resolve_bundle
from parkour_core.domains import claim_domains
from parkour_core.paths import config_dir


def test_corrupt_bundle_is_refused_before_anything_starts(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(resolve_bundle("g1_walk"), bundle)
    data = bytearray((bundle / "policy.onnx").read_bytes())
    data[-1] ^= 0xFF
    (bundle / "policy.onnx").write_bytes(bytes(data))
    cfg = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    cfg["policy"]["bundle"] = str(bundle)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run(
        [sys.executable, "-m", "parkour_control.policy_node", "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "SHA-256" in proc.stdout


def _listen(ros_domain: int):
    """A node of this process on ``ros_domain`` keeping /policy/bundle and the policy's /diagnostics status."""
    import rclpy

    from parkour_core.ros_process import create_subscription

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    node = rclpy.create_node("test_policy_bundle_listener", context=context)
    heard: dict[str, list] = {"bundle": [], "diagnostics": []}
    create_subscription(node, topics.BUNDLE, heard["bundle"].append)
    create_subscription(
        node, topics.DIAGNOSTICS, lambda m: heard["diagnostics"].extend(s for s in m.status if "policy" in s.name)
    )
    return context, node, heard


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "unsealed"])
def test_the_running_bundle_is_reported_sealed_or_unsealed(tmp_path, sealed):
    """An unsealed bundle runs, and the node says so: BundleInfo, /diagnostics and policy.json."""
    from rclpy.executors import SingleThreadedExecutor

    bundle = tmp_path / "bundle"
    shutil.copytree(resolve_bundle("g1_walk"), bundle)
    if not sealed:
        (bundle / MANIFEST_SEAL).unlink()
    run_dir = tmp_path / "run"
    with claim_domains() as domains:
        cfg = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
        cfg["policy"]["bundle"] = str(bundle)
        cfg["dds"]["domain"] = domains.dds
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(cfg))
        env = dict(os.environ, ROS_DOMAIN_ID=str(domains.ros), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        cmd = [sys.executable, "-m", "parkour_control.policy_node", "--config", str(config), "--run-dir", str(run_dir)]
        log = open(tmp_path / "policy.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        context, node, heard = _listen(domains.ros)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        try:
            deadline = time.monotonic() + 90
            while not (heard["bundle"] and heard["diagnostics"]) and proc.poll() is None:
                assert time.monotonic() < deadline, "no /policy/bundle and /diagnostics from the policy node in 90 s"
                executor.spin_once(timeout_sec=0.1)
        finally:
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
            log.close()
            executor.shutdown()
            node.destroy_node()
            context.try_shutdown()
    output = (tmp_path / "policy.log").read_text()
    assert code == 0, output[-3000:]
    (announced,) = heard["bundle"]
    assert (announced.name, announced.path) == ("g1_walk", str(bundle))
    assert announced.manifest_verified is sealed
    status = heard["diagnostics"][-1]
    assert {v.key: v.value for v in status.values}["manifest_verified"] == str(sealed)
    assert ("manifest unsealed" in status.message) is not sealed, status.message
    policy = json.loads((run_dir / "policy.json").read_text())
    assert (policy["bundle"], policy["manifest_verified"]) == (str(bundle), sealed)
    assert ("has no manifest.sha256" in output) is not sealed, output[-3000:]  # load_bundle's warning, once
