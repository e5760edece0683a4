"""Does loading a model stall the control loop? A 50 Hz loop steps the walking policy on one
thread (as policy_node's tick does) while another thread loads, verifies and warms up the
PHP-sized student (as a swap does), side by side with the same loop while nothing loads.

    .venv/bin/python bench/policy/swap.py --out bench/results/policy_swap.json

Reports loop periods (median, p99, max) and ticks later than 1.5 periods, with and without
loading, and how long each load took. Python threads share the GIL: this measures how much of
a load onnxruntime and hashlib do without holding it.

``cross_format``: whole swaps as policy_node makes them (parkour_control.swap: verify, fit, shadow run,
switch at a tick boundary), round and round across formats: holosoma's walker (models/g1_walk) -> an
mjlab export (``--mjlab-export``, default runs/mjlab_velocity/policy.onnx; else one built as
test_bundle_import_mjlab.py builds its files; ``cross_format.mjlab_export.kind`` says which) -> our depth
student (models/student_walk); loop periods during and outside swaps, load and request-to-switch times.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import platform
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # training/ is a package at the repository root, not an installed one

from parkour_control.swap import ShadowRun, load_candidate  # noqa: E402
from parkour_core.bundle import load_bundle  # noqa: E402
from parkour_core.bundles import resolve_bundle  # noqa: E402
from parkour_core.depth import DepthSpec  # noqa: E402
from parkour_core.provenance import provenance  # noqa: E402
from parkour_core.robots import G1  # noqa: E402
from parkour_core.runner import PolicyRunner, RobotState  # noqa: E402
from parkour_core.stats import summary_ms  # noqa: E402

PERIOD_S = 0.02
LATE = 1.5  # a period longer than this many periods is late (policy_meters.DEADLINE_FACTOR)
CAMERA_HZ = 30.0
SHADOW_TICKS = 25  # policy.shadow_ticks' default
MJLAB_EXPORT = ROOT / "runs" / "mjlab_velocity" / "policy.onnx"
MJLAB_TEST = ROOT / "src" / "parkour_core" / "test" / "test_bundle_import_mjlab.py"


def standing_state() -> RobotState:
    return RobotState(G1.default_q.copy(), np.zeros(29), np.array([1.0, 0, 0, 0]), np.zeros(3))


def control_loop(runner: PolicyRunner, seconds: float) -> list[float]:
    """Drift-free 50 Hz loop; returns the periods between tick starts."""
    state = standing_state()
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


def late(periods: list[float]) -> int:
    return int(sum(p > LATE * PERIOD_S for p in periods))


def while_loading(seconds: float, cache: Path) -> dict[str, Any]:
    """The walking policy's loop idle, then while the PHP-sized student loads over and over."""
    student = student_bundle(cache)
    walk = load_bundle(resolve_bundle("g1_walk"))
    runner = PolicyRunner(walk)

    idle = control_loop(runner, seconds)
    load_s: list[float] = []
    stop = threading.Event()

    def keep_loading() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            load_candidate(str(student), G1, walk, DepthSpec(), PolicyRunner)
            load_s.append(time.perf_counter() - started)

    loader = threading.Thread(target=keep_loading, daemon=True)
    loader.start()
    loading = control_loop(runner, seconds)
    stop.set()
    loader.join()
    return {
        "what": "50 Hz walking-policy loop while the PHP-sized student loads in another thread",
        "period_ms_idle": summary_ms(idle),
        "period_ms_while_loading": summary_ms(loading),
        "late_ticks_idle": late(idle),
        "late_ticks_while_loading": late(loading),
        "loads": len(load_s),
        "load_ms": summary_ms(load_s),
        "student_bytes": sum(f.stat().st_size for f in student.iterdir()),
    }


# ------------------------------------------------------------------------------------------ cross-format


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mjlab_test_module() -> Any:
    """src/parkour_core/test/test_bundle_import_mjlab.py as a module: its ``mjlab_export`` writes an ONNX as
    mjlab 1.6.0's exporter does (one builder for the tests and this bench). Needs torch and onnx."""
    spec = importlib.util.spec_from_file_location("parkour_mjlab_format", MJLAB_TEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # pytest.skip at import (no torch or onnx) is a BaseException
        raise SystemExit(f"swap.py: building an mjlab-format export needs torch and onnx ({e})") from None
    return module


def mjlab_bundle(export: Path, work: Path) -> tuple[Path, dict[str, Any]]:
    """The mjlab export imported as ``parkour model import mjlab`` imports it; and which export it was."""
    from parkour_core.bundles.importers import import_bundle

    if export.is_file():
        record: dict[str, Any] = {"kind": "real", "source": str(export), "sha256": _sha256(export)}
        meta = export.parent / "export.json"
        if meta.is_file():
            info = json.loads(meta.read_text())
            record["export"] = {k: info.get(k) for k in ("task", "device", "num_envs", "iterations", "env_steps")}
    else:
        src = work / "mjlab_src" / "policy.onnx"
        src.parent.mkdir(parents=True, exist_ok=True)
        mjlab_test_module().mjlab_export(src)
        record = {
            "kind": "synthetic",
            "source": f"{export} is absent: built as {MJLAB_TEST.relative_to(ROOT)} builds its files "
            "(mjlab 1.6.0's ONNX layout and metadata, random weights)",
            "sha256": _sha256(src),
        }
        export = src
    started = time.perf_counter()
    out = import_bundle("mjlab", str(export), work / "mjlab_walk")
    record["import_ms"] = round((time.perf_counter() - started) * 1e3, 1)
    return out, record


@dataclass
class Slot:
    """One bundle of the sequence: where it comes from and what the loop measured while it drove."""

    label: str
    format: str
    path: Path
    step_s: list[float] = field(default_factory=list)  # its own steps (depth frame included) while it drove
    periods_s: list[float] = field(default_factory=list)  # loop periods ending on a tick it drove


class Loop:
    """policy_node's tick without ROS: the active runner drives; a shadow candidate steps beside it on the
    same inputs; a switch waits for a tick boundary (policy_node.tick / _switch_if_ready)."""

    def __init__(self, runner: PolicyRunner, slot: Slot) -> None:
        self.runner, self.slot = runner, slot
        self.shadow: ShadowRun | None = None
        self.switch_to: tuple[ShadowRun, Slot] | None = None
        self.switched = threading.Event()
        self.last_targets: np.ndarray | None = None
        self.ticks = 0
        self.image: np.ndarray | None = None  # the newest depth frame
        self.starts: list[float] = []
        self.tick_slots: list[Slot] = []

    def tick(self, state: RobotState, command: np.ndarray, frame: np.ndarray | None) -> None:
        self.starts.append(time.perf_counter())
        if self.switch_to is not None:
            shadow, slot = self.switch_to
            if self.last_targets is not None:
                shadow.adopt_executed(self.last_targets)
            self.runner, self.slot, self.switch_to, self.shadow = shadow.runner, slot, None, None
            self.switched.set()
        runner = self.runner
        started = time.perf_counter()
        if frame is not None:
            self.image = frame
            if runner.backbone is not None:
                runner.set_depth(frame, self.starts[-1])
        targets = runner.step(state, command)
        self.slot.step_s.append(time.perf_counter() - started)
        self.tick_slots.append(self.slot)
        self.last_targets = targets
        self.ticks += 1
        shadow = self.shadow
        if shadow is not None and not shadow.done.is_set():
            if frame is not None and shadow.runner.backbone is not None:
                shadow.runner.set_depth(frame, self.starts[-1])
            shadow.step(state, command, targets)


def _wait(event: threading.Event, stop: threading.Event, timeout_s: float) -> bool:
    """Whether ``event`` was set within ``timeout_s``; raises :class:`Stopped` once the loop has ended."""
    deadline = time.perf_counter() + timeout_s
    while not event.wait(0.05):
        if stop.is_set():
            raise Stopped
        if time.perf_counter() > deadline:
            return False
    return True


class Stopped(Exception):
    """The loop ended while a swap was in progress: that swap is not counted."""


def swap_to(loop: Loop, slot: Slot, stop: threading.Event, timeout_s: float = 30.0) -> dict[str, Any]:
    """policy_node._swap_locked on the loop: load, verify and fit-check, shadow-run, switch."""
    requested = time.perf_counter()
    requested_tick = loop.ticks
    active, active_label = loop.runner.bundle, loop.slot.label
    candidate = load_candidate(str(slot.path), G1, active, DepthSpec(), PolicyRunner)
    loaded = time.perf_counter()
    if candidate.backbone is not None and loop.image is not None:
        candidate.set_depth(loop.image, loaded)
    shadow = ShadowRun(candidate, SHADOW_TICKS)
    loop.shadow = shadow
    if not _wait(shadow.done, stop, timeout_s) or shadow.error is not None:
        raise RuntimeError(f"swap to {slot.label}: shadow run failed: {shadow.error or 'timed out'}")
    loop.switched.clear()
    loop.switch_to = (shadow, slot)
    if not _wait(loop.switched, stop, timeout_s):
        raise RuntimeError(f"swap to {slot.label}: the loop reached no tick boundary")
    return {
        "from": active_label,
        "to": slot.label,
        "requested_at_tick": requested_tick,
        "switched_at_tick": loop.ticks,
        "load_ms": round((loaded - requested) * 1e3, 3),
        "request_to_switch_ms": round((time.perf_counter() - requested) * 1e3, 3),
        "shadow_ticks": shadow.ticks,
        "max_target_gap_rad": round(shadow.max_target_gap_rad, 4),
    }


def cross_format(seconds: float, dwell_s: float, slots: list[Slot]) -> dict[str, Any]:
    """The loop for ``seconds``, swapping to the next bundle of ``slots`` (round and round) ``dwell_s`` after
    each switch."""
    loop = Loop(PolicyRunner(load_bundle(slots[0].path, robot=G1)), slots[0])
    state, command = standing_state(), np.array([0.5, 0.0, 0.0])
    frame = np.random.default_rng(0).uniform(0.2, 1.0, (58, 87)).astype(np.float32)
    swaps: list[dict[str, Any]] = []
    errors: list[str] = []
    stop = threading.Event()

    def keep_swapping() -> None:
        k = 0
        while not stop.wait(dwell_s):
            k = (k + 1) % len(slots)
            try:
                swaps.append(swap_to(loop, slots[k], stop))
            except Stopped:
                return
            except Exception as e:  # reported in the result; the loop goes on
                errors.append(f"{type(e).__name__}: {e}")
                return

    swapper = threading.Thread(target=keep_swapping, daemon=True)
    deadline = time.perf_counter()
    end = deadline + seconds
    next_frame = deadline
    swapper.start()
    while deadline < end:
        now = time.perf_counter()
        if now < deadline:
            time.sleep(deadline - now)
        released = deadline >= next_frame
        if released:
            next_frame += 1.0 / CAMERA_HZ
        loop.tick(state, command, frame if released else None)
        deadline += PERIOD_S
    stop.set()
    swapper.join()

    periods = np.diff(loop.starts)
    windows = [(s["requested_at_tick"], s["switched_at_tick"]) for s in swaps]
    in_swap = np.zeros(len(periods), dtype=bool)
    for a, b in windows:  # period k ends on tick k + 1
        in_swap[max(a - 1, 0) : b] = True
    during, otherwise = periods[in_swap].tolist(), periods[~in_swap].tolist()
    for k, period in enumerate(periods):
        loop.tick_slots[k + 1].periods_s.append(float(period))
    by_target: dict[str, list[dict[str, Any]]] = {}
    for s in swaps:
        by_target.setdefault(s["to"], []).append(s)
    return {
        "what": "50 Hz loop swapping holosoma -> mjlab -> our student, round and round, as policy_node swaps",
        "sequence": [s.label for s in slots],
        "shadow_ticks": SHADOW_TICKS,
        "dwell_s": dwell_s,
        "ticks": loop.ticks,
        "swaps": len(swaps),
        "swap_errors": errors,
        "period_ms_during_swaps": summary_ms(during),
        "period_ms_otherwise": summary_ms(otherwise),
        "late_ticks_during_swaps": late(during),
        "late_ticks_otherwise": late(otherwise),
        "bundles": {
            s.label: {
                "format": s.format,
                "path": str(s.path),
                "step_ms_while_driving": summary_ms(s.step_s),
                "period_ms_while_driving": summary_ms(s.periods_s),
                "late_ticks_while_driving": late(s.periods_s),
                "swaps_to": len(by_target.get(s.label, [])),
                "load_ms": summary_ms([x["load_ms"] / 1e3 for x in by_target.get(s.label, [])]),
                "request_to_switch_ms": summary_ms(
                    [x["request_to_switch_ms"] / 1e3 for x in by_target.get(s.label, [])]
                ),
            }
            for s in slots
        },
        "swap_log": swaps,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("bench/results/policy_swap.json"))
    parser.add_argument("--seconds", type=float, default=10.0, help="each loop of the loading part")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "parkour_bench_swap")
    parser.add_argument("--cross-seconds", type=float, default=30.0, help="the cross-format loop")
    parser.add_argument("--dwell", type=float, default=1.0, help="seconds each bundle drives between swaps")
    parser.add_argument("--mjlab-export", type=Path, default=MJLAB_EXPORT, help="mjlab's policy.onnx, if made")
    parser.add_argument("--student", default="student_walk", help="our student (a registered name or folder)")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)

    mjlab, mjlab_record = mjlab_bundle(args.mjlab_export, args.cache)
    slots = [
        Slot("holosoma g1_walk", "holosoma", resolve_bundle("g1_walk")),
        Slot(f"mjlab {mjlab_record['kind']}", "mjlab", mjlab),
        Slot(f"ours {args.student}", "ours", resolve_bundle(args.student)),
    ]
    loading = while_loading(args.seconds, args.cache)
    crossing = cross_format(args.cross_seconds, args.dwell, slots)
    crossing["mjlab_export"] = mjlab_record

    result = {
        **provenance(),
        **loading,
        "cross_format": crossing,
        "summary": [
            {
                "what": "50 Hz loop period while a PHP student loads (a model swap)",
                "ours": loading["period_ms_while_loading"],
                "peer": {"name": "the same loop, idle", **loading["period_ms_idle"]},
            },
            {
                "what": f"50 Hz loop period across swaps holosoma -> mjlab ({mjlab_record['kind']}) -> student",
                "ours": crossing["period_ms_during_swaps"],
                "peer": {"name": "the same loop, no swap in progress", **crossing["period_ms_otherwise"]},
            },
        ],
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "cross_format"}, indent=2))
    print(json.dumps({k: v for k, v in crossing.items() if k != "swap_log"}, indent=2))
    if crossing["swap_errors"]:
        print(f"swap.py: a cross-format swap failed: {crossing['swap_errors'][0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
