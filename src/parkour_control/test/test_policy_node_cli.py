import shutil
import subprocess
import sys

import yaml

from parkour_core.bundles import resolve_bundle
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
