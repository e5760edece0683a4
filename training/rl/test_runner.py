"""The runner's budget, hooks and what a killed run keeps."""

import signal
import subprocess
import sys
import textwrap
import time

import torch

from training.progress import read_curve
from training.rl.env import NumpyVecEnv
from training.rl.runner import CURVE, LATEST, Budget, Runner
from training.rl.test_algorithms import Reach, distillation_cfg


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int | None]] = []

    def before_iteration(self, runner, k, total, fraction):
        self.calls.append((k, total))

    def after_iteration(self, runner, k, row):
        return row | {"seen": k}


def test_a_time_box_fixes_k_from_the_pace_and_the_hooks_see_it(tmp_path):
    hooks = Recorder()
    runner = Runner(NumpyVecEnv(Reach()), distillation_cfg(), tmp_path, hooks=hooks)
    rows = runner.train(Budget(minutes=0.05, pace_iterations=2))
    assert len(rows) >= 4
    assert [r["total_iterations"] for r in rows[:2]] == [None, None]
    total = rows[2]["total_iterations"]
    assert isinstance(total, int) and total >= 3 and all(r["total_iterations"] == total for r in rows[2:])
    assert [c[1] for c in hooks.calls[:3]] == [None, None, None] and all(c[1] == total for c in hooks.calls[3:])
    assert [r["seen"] for r in rows] == list(range(len(rows)))
    assert [r["iteration"] for r in read_curve(tmp_path / CURVE)] == list(range(len(rows)))


KILLED = textwrap.dedent("""
    import sys
    from training.rl.env import NumpyVecEnv
    from training.rl.runner import Budget, Runner
    from training.rl.test_algorithms import Reach, distillation_cfg
    cfg = distillation_cfg()
    cfg["save_interval"] = 2
    Runner(NumpyVecEnv(Reach()), cfg, sys.argv[1]).train(Budget(iterations=10_000_000))
""")


def test_a_killed_run_keeps_its_curve_and_last_checkpoint(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            (tmp_path / CURVE).exists() and len(read_curve(tmp_path / CURVE)) >= 6
        ):
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    rows = read_curve(tmp_path / CURVE)
    assert len(rows) >= 6 and [r["iteration"] for r in rows] == list(range(len(rows)))
    saved = torch.load(tmp_path / LATEST, weights_only=False)
    assert saved["iter"] >= 3 and "student_state_dict" in saved
