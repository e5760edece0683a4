"""Does loading a model stall the control loop? A 50 Hz loop steps the walking policy on one
thread (as policy_node's tick does) while another thread loads, verifies and warms up the
PHP-sized student (as a swap does), side by side with the same loop while nothing loads.

    .venv/bin/python bench/policy/swap.py --out bench/results/policy_swap.json

Reports loop periods (median, p99, max) and ticks later than 1.5 periods, with and without
loading, and how long each load took. Python threads share the GIL: this measures how much of
a load onnxruntime and hashlib do without holding it.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # training/ is a package at the repository root, not an installed one

from parkour_control.swap import load_candidate  # noqa: E402
from parkour_core.bundle import load_bundle  # noqa: E402
from parkour_core.bundles import resolve_bundle  # noqa: E402
from parkour_core.depth import DepthSpec  # noqa: E402
from parkour_core.provenance import provenance  # noqa: E402
from parkour_core.robots import G1  # noqa: E402
from parkour_core.runner import PolicyRunner, RobotState  # noqa: E402
from parkour_core.stats import summary_ms  # noqa: E402

PERIOD_S = 0.02


def control_loop(runner: PolicyRunner, seconds: float) -> list[float]:
    """Drift-free 50 Hz loop; returns the periods between tick starts."""
    state = RobotState(G1.default_q.copy(), np.zeros(29), np.array([1.0, 0, 0, 0]), np.zeros(3))
    command = np.array([0.5, 0.0, 0.0])
    starts: list[float] = []
    deadline = time.perf_counter()
    end = deadline + seconds
    while deadline < end:
        now = time.perf_counter()
        if now < deadline:
            time.sleep(deadline - now)
        starts.append(time.perf_counter())
        runner.step(state, command)
        deadline += PERIOD_S
    return [float(p) for p in np.diff(starts)]


def student_bundle(cache: Path) -> Path:
    from training.export import export_random_student

    path = cache / "student_php"
    if not (path / "manifest.json").is_file():
        export_random_student(path, "php_student_gpu", seed=0)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("bench/results/policy_swap.json"))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "parkour_bench_swap")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    student = student_bundle(args.cache)
    walk = load_bundle(resolve_bundle("g1_walk"))
    runner = PolicyRunner(walk)

    idle = control_loop(runner, args.seconds)
    load_s: list[float] = []
    stop = threading.Event()

    def keep_loading() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            load_candidate(str(student), G1, walk, DepthSpec(), PolicyRunner)
            load_s.append(time.perf_counter() - started)

    loader = threading.Thread(target=keep_loading, daemon=True)
    loader.start()
    loading = control_loop(runner, args.seconds)
    stop.set()
    loader.join()

    def late(periods: list[float]) -> int:
        return int(sum(p > 1.5 * PERIOD_S for p in periods))

    result = {
        **provenance(),
        "what": "50 Hz walking-policy loop while the PHP-sized student loads in another thread",
        "period_ms_idle": summary_ms(idle),
        "period_ms_while_loading": summary_ms(loading),
        "late_ticks_idle": late(idle),
        "late_ticks_while_loading": late(loading),
        "loads": len(load_s),
        "load_ms": summary_ms(load_s),
        "student_bytes": sum(f.stat().st_size for f in student.iterdir()),
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
