"""What importing the training package does to the process."""

import os
import subprocess
import sys

PROBE = "import os, training; print(os.environ.get('OMP_WAIT_POLICY'))"


def _policy_after_import(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_torchs_openmp_threads_sleep_unless_told_otherwise() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    assert _policy_after_import(env) == "PASSIVE"
    assert _policy_after_import(env | {"OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE"
