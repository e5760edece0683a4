import subprocess
import sys


def test_bad_config_is_refused_with_the_key_named(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("robot: g1\nsupervisor:\n  rate_hz: 5\n")
    proc = subprocess.run(
        [sys.executable, "-m", "parkour_safety.supervisor_node", "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "supervisor.rate_hz" in proc.stderr
    assert "Traceback" not in proc.stderr
