"""The students that ship, a PHP-sized one and the imported policies: our runtime path against plain onnxruntime.

A control tick runs the policy; on ticks where the 30 Hz camera has published a frame a depth student's
backbone runs first. Models: ``student_walk`` and ``student_step`` (``models/``, as committed); ``php_random``,
a PHP-sized student (11.6M parameters) with RANDOM weights (seed 0): PHP's size, not a policy; ``imported``:
each policy ``import_bundle`` makes here (imported.py: holosoma's two walkers, a PHP-format pair, an rsl_rl
export; more with ``--import``). Implementations: ``ours_fp32``/``ours_int8`` (:class:`Ours`: PolicyRunner,
observation included), ``plain_ort_fp32`` (:class:`PlainOrt`: ``InferenceSession.run`` on the same files,
observation built beforehand), ``torch_eager``. All replay the same recorded ticks in alternating blocks
(:func:`measure`), the same intra-op threads (``--threads``, default 1, pinned); actions are compared with
plain onnxruntime over the whole rollout; ``overhead`` gives ours / plain per model against 1.1.

Run: ``.venv/bin/python bench/policy/run.py --out bench/results`` (policy.json and policy_step_hist.png;
recordings and int8 variants are cached under the temp folder). ``--no-int8 --no-torch --no-cold --ticks 200``
is a quick check that it runs.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import pickle
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # training/ is a package at the repository root, not an installed one
sys.path.insert(0, str(Path(__file__).resolve().parent))  # imported.py beside this file

from imported import imported_bundles  # noqa: E402  (bench/policy/imported.py)
from interleave import balanced_rounds, preceded_by  # noqa: E402  (bench/policy/interleave.py)

from parkour_core.bundle import MANIFEST, Bundle, BundleError, load_bundle  # noqa: E402
from parkour_core.gait import GaitClock  # noqa: E402
from parkour_core.obs import build_observation  # noqa: E402
from parkour_core.provenance import git_commit  # noqa: E402
from parkour_core.runner import PolicyRunner, observation_input  # noqa: E402
from parkour_core.stats import summary_ms, write_json  # noqa: E402
from training.export.calibration import (  # noqa: E402
    CALIBRATION_COUNT,
    CALIBRATION_SEED,
    CALIBRATION_TICKS,
    CHECK_SEEDS,
    CHECK_TICKS,
    SimRecording,
    calibration_frames,
    calibration_note,
    record_sim_rollout,
)
from training.export.parity import ParityError, Rollout, action_range, concat_rollouts  # noqa: E402
from training.export.student import (  # noqa: E402
    INT8_RELATIVE_TOLERANCE,
    build_random_student,
    export_random_student,
    quantize_bundle,
)

SEED = 0  # of the random PHP student
BENCH_SEED = CHECK_SEEDS[0]  # the recording every implementation replays (its head is part of the int8 check)
SHIPPED = ("student_walk", "student_step")
PHP_INPUTS_FROM = "student_step"
TARGET_P99_MS = 2.0  # PHP-sized student on one core
TARGET_OVERHEAD_RATIO = 1.1  # PolicyRunner / plain onnxruntime on the same files, p50 and p99
P99_BLOCKS = 5
CACHE = Path(tempfile.gettempdir()) / "parkour_bench"


# --------------------------------------------------------------------------------------- inputs
def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()[:12]


def _code_digest() -> bytes:
    """What a recording or an int8 variant depends on besides the bundle: the code that makes it."""
    import mujoco
    import onnxruntime

    files = sorted((ROOT / "training" / "export").glob("*.py")) + [
        ROOT / "src" / "parkour_sim" / "parkour_sim" / name for name in ("physics.py", "depth_camera.py", "scene.py")
    ]
    return b"".join(f.read_bytes() for f in files) + f"{mujoco.__version__} {onnxruntime.__version__}".encode()


def recording(bundle: Bundle, ticks: int, seed: int, cache: Path) -> SimRecording:
    """``bundle`` driving the simulated G1 for ``ticks``, cached under ``cache`` (simulating is slow).

    ``training.export.calibration``: RobotSim + SimDepthSensor (87x58 ray cast, training noise, 60-80 ms
    latency) on platform courses (5-20 cm, as ``parkour eval`` on low platforms), starting from the default
    pose. The recorded ticks (robot states, commands, depth frames) are then replayed open loop into every
    implementation, each keeping its own hidden state, previous action and gait clock, reset where the
    recording's episodes start. The PHP student replays ``student_step``'s recordings.
    """
    key = _digest(str(sorted(bundle.manifest.files.items())).encode(), _code_digest(), f"{ticks} {seed}".encode())
    path = cache / "recordings" / f"{bundle.manifest.name}_seed{seed}_{ticks}_{key}.pkl"
    if path.is_file():
        with path.open("rb") as f:
            return pickle.load(f)
    print(f"recording {ticks} ticks of {bundle.manifest.name} in the simulator (seed {seed})")
    rec = record_sim_rollout(bundle, ticks, seed=seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        pickle.dump(rec, f)
    return rec


def check_rollout(bundle: Bundle, bench: SimRecording, cache: Path) -> Rollout:
    """The int8 check's rollout (``calibration.CHECK_SEEDS``); the bench's own recording gives the first part
    (a recording of fewer ticks with the same seed is its head: nothing after the cut changes what came before)."""
    parts = []
    for seed in CHECK_SEEDS:
        if seed == BENCH_SEED and len(bench.rollout) >= CHECK_TICKS:
            parts.append(bench.rollout.head(CHECK_TICKS))
        else:
            parts.append(recording(bundle, CHECK_TICKS, seed, cache).rollout)
    return concat_rollouts(parts)


def _frames_digest(frames: list[np.ndarray], rollout: Rollout) -> str:
    states = np.array([np.concatenate([s.q, s.dq, s.quat_wxyz, s.gyro]) for s in rollout.states])
    return _digest(*(f.tobytes() for f in frames), states.tobytes(), _code_digest())


@dataclass
class Int8Verdict:
    passes: bool
    check: dict[str, Any]  # the exporter's int8_vs_fp32_onnx check (error, range, tolerance, ...)
    bundle: Bundle | None = None  # the int8 bundle, when it passes
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        keep = (
            "steps",
            "max_action_error",
            "tolerance",
            "relative_action_error",
            "relative_tolerance",
            "action_range",
            "max_abs_action",
            "rms_action_error",
            "p99_action_error",
            "max_hidden_error",
            "weights",
            "calibration_frames",
        )
        out: dict[str, Any] = {"passes": self.passes, **{k: self.check[k] for k in keep if k in self.check}}
        if self.message:
            out["message"] = self.message
        return out


def _failed(error: ParityError, frames: int) -> Int8Verdict:
    c = error.comparison
    check = {} if c is None else {**c.to_dict(), "tolerance": error.tolerance}
    check.update(relative_tolerance=INT8_RELATIVE_TOLERANCE, calibration_frames=frames)
    return Int8Verdict(False, check, None, str(error))


def int8_of_shipped(bundle: Bundle, frames: list[np.ndarray], check: Rollout, cache: Path) -> Int8Verdict:
    """The shipped fp32 bundle quantised (sim-calibrated) into the cache, checked on ``check``.

    Quantised from its fp32 ONNX (``quantize_bundle``), never overwriting ``models/``, calibrated on frames
    of another recording (``calibration.CALIBRATION_SEED``). ``ours_int8`` runs only where the variant
    passes the exporter's int8 check: worst action error at most
    ``training.export.student.INT8_RELATIVE_TOLERANCE`` of the fp32 actions' range, over the simulator
    recordings of ``calibration.CHECK_SEEDS`` (the first is the head of the timed recording).
    """
    out = cache / "int8" / f"{bundle.manifest.name}_{_frames_digest(frames, check)}"
    if not (out / MANIFEST).is_file():
        print(f"quantising {bundle.path} to int8 in {out}")
        try:
            quantize_bundle(bundle.path, out, "int8", frames, check, calibration=calibration_note())
        except ParityError as e:
            return _failed(e, len(frames))
    int8 = load_bundle(out)
    return Int8Verdict(True, int8.manifest.provenance["checks"]["int8_vs_fp32_onnx"], int8)


def php_bundles(frames: list[np.ndarray], check: Rollout, cache: Path) -> tuple[Bundle, Int8Verdict]:
    """The random PHP student: its fp32 bundle, and its int8 one if that passes (both cached).

    The PHP student is exported int8 directly (no shipped fp32 bundle to quantise), calibrated as
    :func:`int8_of_shipped`'s. Its actions stay within about +-0.1.
    """
    digest = _frames_digest(frames, check)
    fp32_dir = cache / f"student_random_php_seed{SEED}_fp32_{digest}"
    if not (fp32_dir / MANIFEST).is_file():
        print(f"exporting the PHP-sized random student (fp32) to {fp32_dir}")
        export_random_student(fp32_dir, size="php_student_gpu", seed=SEED, precision="fp32")
    int8_dir = cache / f"student_random_php_seed{SEED}_int8_{digest}"
    if not (int8_dir / MANIFEST).is_file():
        print(f"exporting the PHP-sized random student (int8, sim-calibrated) to {int8_dir}")
        try:
            export_random_student(
                int8_dir, size="php_student_gpu", seed=SEED, precision="int8", calibration_frames=frames,
                parity_rollout=check, calibration=calibration_note(),
            )  # fmt: skip
        except ParityError as e:
            return load_bundle(fp32_dir), _failed(e, len(frames))
    try:
        int8 = load_bundle(int8_dir)
    except BundleError as e:
        raise SystemExit(f"{int8_dir}: {e}; delete it and rerun") from None
    return load_bundle(fp32_dir), Int8Verdict(True, int8.manifest.provenance["checks"]["int8_vs_fp32_onnx"], int8)


def php_fp32_only(cache: Path) -> Bundle:
    """The random PHP student's fp32 bundle alone (``--no-int8``: no recordings to calibrate on)."""
    fp32_dir = cache / f"student_random_php_seed{SEED}_fp32"
    if not (fp32_dir / MANIFEST).is_file():
        print(f"exporting the PHP-sized random student (fp32) to {fp32_dir}")
        export_random_student(fp32_dir, size="php_student_gpu", seed=SEED, precision="fp32")
    return load_bundle(fp32_dir)


INT8_NOT_RUN = Int8Verdict(False, {}, None, "not run (--no-int8)")


# ----------------------------------------------------------------------------- implementations
class Observer:
    """Builds an implementation's observation from its own previous action and gait clock (not timed)."""

    def __init__(self, bundle: Bundle) -> None:
        self.m = bundle.manifest
        self.default_q = np.asarray(self.m.default_joint_pos)
        self.last_action = np.zeros(len(self.m.joint_names))
        self.clock = GaitClock(self.m.gait_period_s, 1.0 / self.m.policy_hz) if self.m.gait_period_s else None

    def reset(self) -> None:
        self.last_action[:] = 0.0
        if self.clock is not None:
            self.clock.reset()

    def __call__(self, rollout: Rollout, k: int) -> np.ndarray:
        state, command = rollout.states[k], rollout.commands[k]
        phase = self.clock.advance(command) if self.clock is not None else np.zeros(0)
        inputs = observation_input(self.m, state, command, self.last_action, self.default_q, phase)
        return build_observation(self.m.obs_terms, inputs)

    def feed_back(self, action: np.ndarray) -> None:
        self.last_action = np.clip(action.astype(np.float64), -self.m.action_clip, self.m.action_clip)


class Ours:
    """PolicyRunner on a bundle: the policy node's whole path (set_depth on a new frame, step).

    Observation building included; ``ours_fp32`` on the fp32 bundle, ``ours_int8`` on the int8 variant.
    """

    def __init__(self, bundle: Bundle, threads: int) -> None:
        self.runner = PolicyRunner(bundle, intra_op_threads=threads)

    def reset(self) -> None:
        self.runner.reset()

    def paths(self) -> dict[str, Any]:
        """What the timed steps ran: the runner's paths, and how many steps built the observation with
        ``build_observation`` (inputs the compiled writer does not take)."""
        return {**self.runner.paths(), "steps_with_build_observation": self.runner.built_observations}

    def tick(self, rollout: Rollout, k: int) -> tuple[float, np.ndarray]:
        frame = rollout.depth_frames[k] if self.runner.backbone is not None else None
        started = time.perf_counter()
        if frame is not None:
            self.runner.set_depth(frame, stamp_s=k * rollout.tick_s)
        self.runner.step(rollout.states[k], rollout.commands[k])
        return time.perf_counter() - started, self.runner.last_action.copy()


class PlainOrt:
    """Default onnxruntime sessions on the bundle's files, ``threads`` intra-op threads, our own hidden state.

    Fed an observation built beforehand, so only its ``run`` calls are timed: the backbone's on a new
    frame (depth students), the policy's every tick with the latent and hidden state where it has them.
    """

    def __init__(self, bundle: Bundle, threads: int) -> None:
        import onnxruntime as ort

        m = bundle.manifest

        def session(file: str) -> Any:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            return ort.InferenceSession(str(bundle.file(file)), options, providers=["CPUExecutionProvider"])

        self.backbone = session(m.depth_backbone.file) if m.depth_backbone is not None else None
        self.student = session(m.policy.file)
        if m.depth_backbone is not None:
            self.depth_in = m.depth_backbone.inputs["depth"]
            self.latent_out = m.depth_backbone.outputs["latent"]
        self.inputs = m.policy.inputs
        self.outputs = [m.policy.outputs["action"]] + ([m.policy.outputs["hidden"]] if m.hidden_shape else [])
        self.latent = np.zeros((1, m.depth.latent_dim), dtype=np.float32) if m.depth is not None else None
        self.hidden_shape = m.hidden_shape
        self.hidden = np.zeros(m.hidden_shape, dtype=np.float32) if m.hidden_shape else None
        self.observer = Observer(bundle)
        self.observe_s: list[float] = []

    def reset(self) -> None:
        if self.hidden_shape:
            self.hidden = np.zeros(self.hidden_shape, dtype=np.float32)
        self.observer.reset()

    def tick(self, rollout: Rollout, k: int) -> tuple[float, np.ndarray]:
        before = time.perf_counter()
        obs = self.observer(rollout, k)
        frame = rollout.depth_frames[k] if self.backbone is not None else None
        started = time.perf_counter()
        if frame is not None:
            self.latent = self.backbone.run([self.latent_out], {self.depth_in: frame[None]})[0]
        feeds = {self.inputs["obs"]: obs[None]}
        if self.latent is not None:
            feeds[self.inputs["latent"]] = self.latent
        if self.hidden is not None:
            feeds[self.inputs["hidden"]] = self.hidden
        outputs = self.student.run(self.outputs, feeds)
        if self.hidden is not None:
            self.hidden = outputs[1]
        elapsed = time.perf_counter() - started
        self.observe_s.append(started - before)
        action = outputs[0]
        self.observer.feed_back(action[0])
        return elapsed, action[0]


class TorchEager:
    """The same weights in torch, ``threads`` threads, for reference (``checkpoint.pt`` for the trained
    students, the seed for the random one)."""

    def __init__(self, bundle: Bundle, backbone: Any, student: Any) -> None:
        import torch

        self.torch = torch
        self.backbone, self.student = backbone.eval(), student.eval()
        m = bundle.manifest
        assert m.depth is not None and m.hidden_shape is not None
        self.latent = torch.zeros(1, m.depth.latent_dim)
        self.hidden_shape = m.hidden_shape
        self.hidden = torch.zeros(m.hidden_shape)
        self.observer = Observer(bundle)

    def reset(self) -> None:
        self.hidden = self.torch.zeros(self.hidden_shape)
        self.observer.reset()

    def tick(self, rollout: Rollout, k: int) -> tuple[float, np.ndarray]:
        obs = self.observer(rollout, k)
        frame = rollout.depth_frames[k]
        started = time.perf_counter()
        with self.torch.inference_mode():
            if frame is not None:
                self.latent = self.backbone(self.torch.from_numpy(frame[None]))
            action, self.hidden = self.student(self.torch.from_numpy(obs[None]), self.latent, self.hidden)
        elapsed = time.perf_counter() - started
        out = action[0].numpy()
        self.observer.feed_back(out)
        return elapsed, out


def trained_torch_modules(bundle: Bundle) -> tuple[Any, Any]:
    """The trained student's torch modules from the ``checkpoint.pt`` beside its ONNX files (the critic,
    which stage 2 trained, is left out: it is not part of the policy)."""
    import torch

    from training.export.models import DepthBackbone, RecurrentStudent
    from training.tasks.student_walk.bundle import CHECKPOINT, pair_size

    saved = torch.load(bundle.path / CHECKPOINT, map_location="cpu", weights_only=False)
    size = pair_size(saved["state_dict"])
    m = bundle.manifest
    backbone, student = DepthBackbone(size), RecurrentStudent(m.obs_size, size, len(m.joint_names))
    for prefix, module in (("backbone.", backbone), ("student.", student)):
        state = {k[len(prefix) :]: v for k, v in saved["state_dict"].items() if k.startswith(prefix)}
        module.load_state_dict(state)
    return backbone, student


# ----------------------------------------------------------------------------------- measuring
@dataclass
class Measured:
    times: dict[str, list[float]]
    actions: dict[str, np.ndarray]
    new_frame: np.ndarray  # per timed tick
    overruns: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def measure(impls: dict[str, Any], rollout: Rollout, warmup: int, block: int, period_s: float = 0.0) -> Measured:
    """``block`` ticks of one implementation, then the next, in the orders of
    :func:`interleave.balanced_rounds` (each implementation follows each other one equally often, so none
    is charged another's cold caches more than its peers are): 1 interleaves tick by tick, so every step
    finds the caches the other models left (the PHP student's ``cold_cache`` pass: every step starts on
    the caches the other model's 46 MB filled); larger blocks (``--block``, 50) let each run in the steady
    state a policy node has, while all share the same stretch of machine noise.
    Ticks before ``warmup`` run but are not timed. Each implementation resets where the rollout's episodes
    start."""
    names = list(impls)
    total = len(rollout)
    starts = set(rollout.starts)
    times: dict[str, list[float]] = {name: [] for name in names}
    actions: dict[str, list[np.ndarray]] = {name: [] for name in names}
    overruns = 0
    next_tick = time.perf_counter()
    block = max(1, block)
    starts_of_rounds = range(0, total, block)
    orders = balanced_rounds(len(names), len(starts_of_rounds))
    for start, order in zip(starts_of_rounds, orders, strict=True):
        for i in order:
            name = names[i]
            impl: Callable[[Rollout, int], tuple[float, np.ndarray]] = impls[name].tick
            for k in range(start, min(start + block, total)):
                if k in starts:
                    impls[name].reset()
                elapsed, action = impl(rollout, k)
                actions[name].append(np.asarray(action, dtype=np.float64))
                if k >= warmup:
                    times[name].append(elapsed)
        # With a period, paced like the policy node's timer; pacing raises every p50 with colder caches and
        # does not shield the tails, so the default runs back to back.
        next_tick += period_s
        pause = next_tick - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        elif period_s > 0:
            overruns += 1
            next_tick = time.perf_counter()
    new_frame = np.array([f is not None for f in rollout.depth_frames[warmup:]])
    counts = preceded_by(orders, len(names))
    followed = {x: {a: counts[i][j] for j, a in enumerate(names) if counts[i][j]} for i, x in enumerate(names)}
    arrays = {n: np.array(a) for n, a in actions.items()}
    return Measured(times, arrays, new_frame, overruns, {"blocks_after": followed})


def timing(t_s: list[float], new_frame: np.ndarray) -> dict[str, Any]:
    t = np.asarray(t_s)
    return {
        "ms": summary_ms(t),
        "ms_by_tick": {"with_new_frame": summary_ms(t[new_frame]), "student_only": summary_ms(t[~new_frame])},
        # p99 of consecutive stretches: one burst of neighbours' load moves a whole run's p99; these
        # show whether it was one burst or the steady state.
        "p99_ms_by_block": [round(float(np.percentile(b, 99)) * 1e3, 3) for b in np.array_split(t, P99_BLOCKS)],
    }


def ratios(ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, float]:
    return {q: round(ours["ms"][q] / peer["ms"][q], 3) for q in ("p50", "p99")}


def model_report(measured: Measured, peer: str, impls_run: dict[str, Any]) -> dict[str, Any]:
    reference = measured.actions[peer]
    impls = {name: timing(t, measured.new_frame) for name, t in measured.times.items()}
    return {
        "implementations": impls,
        "ours_paths": {name: impl.paths() for name, impl in impls_run.items() if isinstance(impl, Ours)},
        "ratios_vs_" + peer: {name: ratios(impls[name], impls[peer]) for name in impls if name.startswith("ours")},
        "max_action_error_vs_" + peer: {
            name: float(np.max(np.abs(a - reference))) for name, a in measured.actions.items() if name != peer
        },
        "max_abs_action_fp32": float(np.max(np.abs(reference))),
        "action_range_fp32": action_range(reference),
        "ticks": len(measured.new_frame),
        "ticks_with_new_frame": int(measured.new_frame.sum()),
        "tick_overruns": measured.overruns,
        # Which implementation's block ran right before each one's, counted: even rows are a fair interleave.
        "blocks_after": measured.extra["blocks_after"],
    }


# ------------------------------------------------------------------------------------ machine
def pin_to_cores(count: int, cpu: int | None) -> list[int] | None:
    """Run on ``count`` cores (the last ones by default) so every implementation has the same cores."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    chosen = [cpu] if cpu is not None and count == 1 else cores[-count:]
    os.sched_setaffinity(0, set(chosen))
    return chosen


def realtime_priority(priority: int) -> str:
    """SCHED_FIFO at ``priority``, as a robot runs its control loop: neighbours no longer preempt a step."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (AttributeError, PermissionError, OSError) as e:
        return f"not set ({e}); needs root or CAP_SYS_NICE"
    return f"SCHED_FIFO {priority}"


def machine() -> dict[str, Any]:
    import mujoco
    import onnxruntime
    import torch

    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "torch": torch.__version__,
        "mujoco": mujoco.__version__,
    }


COLORS = {"ours_fp32": "tab:blue", "ours_int8": "tab:orange", "plain_ort_fp32": "tab:green", "torch_eager": "tab:red"}


def plot(groups: dict[str, dict[str, list[float]]], path: Path, threads: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(len(groups), 4)
    rows = -(-len(groups) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 4.5 * rows), squeeze=False)
    for ax in axes.flat[len(groups) :]:
        ax.set_visible(False)
    for ax, (title, times) in zip(axes.flat, groups.items(), strict=False):
        top = max(float(np.percentile(np.asarray(t) * 1e3, 99.5)) for t in times.values())
        bins = np.linspace(0.0, top * 1.05, 100)
        for name, t in times.items():
            ms = np.asarray(t) * 1e3
            p50, p99 = np.percentile(ms, [50, 99])
            color = COLORS.get(name, "grey")
            label = f"{name}: p50 {p50:.3f}, p99 {p99:.3f} ms"
            ax.hist(ms, bins=bins, histtype="step", linewidth=1.5, color=color, label=label)
            ax.axvline(p99, color=color, linestyle="--", linewidth=1)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("control step (ms); dashed: p99")
        ax.set_ylabel("ticks")
        ax.legend(fontsize=7)
    fig.suptitle(f"policy every tick + depth backbone on a new frame, {threads} intra-op thread(s), alternating blocks")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------------------- main
PEER_NAME = "plain onnxruntime, fp32, same files"


def _row(what: str, ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:
    return {
        "what": what,
        "unit": "ms",
        "ours": {"p50": ours["ms"]["p50"], "p99": ours["ms"]["p99"]},
        "peer": {"name": PEER_NAME, "p50": peer["ms"]["p50"], "p99": peer["ms"]["p99"]},
    }


def summary_rows(
    models: dict[str, dict[str, Any]], threads: int, imported: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    cores = "one core" if threads == 1 else f"{threads} threads"
    rows = []
    for name, r in models.items():
        impls = r["implementations"]
        peer = impls["plain_ort_fp32"]
        random = name == "php_random"
        label = "PHP-sized student, RANDOM weights" if random else f"{name} (trained, ships fp32)"
        rows.append(_row(f"{label} control step, {cores}: ours fp32 PolicyRunner", impls["ours_fp32"], peer))
        if "ours_int8" in impls:
            note = "random weights" if random else "not shipped"
            rows.append(
                _row(f"{label}: ours int8 PolicyRunner (passes the int8 check; {note})", impls["ours_int8"], peer)
            )
        cold = r.get("cold_cache")
        if cold:
            what = f"{label}: ours {cold['ours_is'][5:]}, tick by tick after the other model (cold caches)"
            rows.append(_row(what, cold["ours"], cold["peer"]))
    for name, r in (imported or {}).items():
        impls = r["implementations"]
        what = f"{name} (imported from {r['format']}) control step, {cores}: ours PolicyRunner"
        rows.append(_row(what, impls["ours_fp32"], impls["plain_ort_fp32"]))
    return rows


def with_peer_observation(report: dict[str, Any], measured: Measured, peer: PlainOrt, warmup: int) -> dict[str, Any]:
    """The peer's observation building, timed beside (not inside) its runs: added tick by tick, a
    like-for-like peer of our whole path (which builds its observation inside the step)."""
    peer_obs = np.asarray(peer.observe_s[warmup:])
    with_obs = timing(list(np.asarray(measured.times["plain_ort_fp32"]) + peer_obs), measured.new_frame)
    report["plain_ort_fp32_plus_its_observation"] = with_obs
    report["ratios_vs_plain_ort_fp32_plus_its_observation"] = {
        ours: ratios(report["implementations"][ours], with_obs)
        for ours in report["implementations"]
        if ours.startswith("ours")
    }
    report["peer_observation_ms_not_timed"] = summary_ms(peer_obs)
    return report


def overhead_verdict(groups: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Ours fp32 / plain onnxruntime on the same files, p50 and p99, against :data:`TARGET_OVERHEAD_RATIO`:
    a reading of this run, never a pass/fail of a test."""
    ratio = {
        name: r["ratios_vs_plain_ort_fp32"]["ours_fp32"]
        for group in groups.values()
        for name, r in group.items()
    }  # fmt: skip
    return {
        "what": "PolicyRunner's own overhead: ours_fp32 / plain_ort_fp32, p50 and p99, per model",
        "target_at_most": TARGET_OVERHEAD_RATIO,
        "ratios": ratio,
        "within_target": {name: max(r.values()) <= TARGET_OVERHEAD_RATIO for name, r in ratio.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results", help="folder for policy.json + PNG")
    parser.add_argument("--cache", type=Path, default=CACHE, help="recordings and int8 variants (default %(default)s)")
    parser.add_argument("--ticks", type=int, default=3000, help="timed ticks per model (at 50 Hz: 3000 = 60 s)")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads of every session (and torch)")
    parser.add_argument(
        "--block",
        type=int,
        default=50,
        help="ticks of one implementation before the next (1: tick by tick, on the caches the others left)",
    )
    parser.add_argument("--period-ms", type=float, default=0.0, help="pace blocks on this grid (default: back to back)")
    parser.add_argument("--no-cold", action="store_true", help="skip the PHP student's tick-by-tick (cold cache) pass")
    parser.add_argument("--no-php", action="store_true", help="skip the PHP-sized random student")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch eager reference")
    parser.add_argument(
        "--no-int8", action="store_true", help="skip the int8 variants and the recordings that calibrate and check them"
    )
    parser.add_argument("--no-imported", action="store_true", help="skip the imported policies (imported.py)")
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="FORMAT:SRC[:SPEC]",
        help="one more imported policy to time, as `parkour model import FORMAT SRC --spec SPEC` reads it",
    )
    parser.add_argument("--cpu", type=int, help="core to pin to with --threads 1 (default: the last allowed core)")
    parser.add_argument("--realtime", type=int, metavar="PRIORITY", help="SCHED_FIFO at this priority (root)")
    args = parser.parse_args(argv)
    command = "python " + " ".join([str(Path(sys.argv[0]).resolve().relative_to(ROOT)), *sys.argv[1:]])
    started = time.perf_counter()
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")

    import torch

    torch.set_num_threads(args.threads)
    total = args.ticks + args.warmup
    shipped = {name: load_bundle(ROOT / "models" / name) for name in SHIPPED}
    inputs: dict[str, SimRecording] = {name: recording(b, total, BENCH_SEED, args.cache) for name, b in shipped.items()}
    verdicts = {name: INT8_NOT_RUN for name in shipped}
    php: tuple[Bundle, Int8Verdict] | None = None
    if not args.no_int8:
        frames: dict[str, list[np.ndarray]] = {}
        for name, bundle in shipped.items():
            frames[name] = calibration_frames(
                recording(bundle, CALIBRATION_TICKS, CALIBRATION_SEED, args.cache), CALIBRATION_COUNT
            )
        checks = {name: check_rollout(b, inputs[name], args.cache) for name, b in shipped.items()}
        verdicts = {name: int8_of_shipped(b, frames[name], checks[name], args.cache) for name, b in shipped.items()}
        if not args.no_php:
            php = php_bundles(frames[PHP_INPUTS_FROM], checks[PHP_INPUTS_FROM], args.cache)
    elif not args.no_php:
        php = (php_fp32_only(args.cache), INT8_NOT_RUN)
    imported, imports_skipped = ({}, {}) if args.no_imported else imported_bundles(
        ROOT, args.cache / "imported", args.imports
    )  # fmt: skip

    pinned = pin_to_cores(args.threads, args.cpu)
    scheduler = realtime_priority(args.realtime) if args.realtime is not None else "default (SCHED_OTHER)"
    load_before = os.getloadavg()
    models: dict[str, dict[str, Any]] = {}
    hist: dict[str, dict[str, list[float]]] = {}
    observe: dict[str, Any] = {}

    groups: list[tuple[str, Bundle, Int8Verdict, Rollout, Callable[[], tuple[Any, Any]] | None]] = [
        (name, b, verdicts[name], inputs[name].rollout, lambda b=b: trained_torch_modules(b))
        for name, b in shipped.items()
    ]
    if php is not None:
        groups.append(
            (
                "php_random",
                php[0],
                php[1],
                inputs[PHP_INPUTS_FROM].rollout,
                lambda: build_random_student("php_student_gpu", SEED),
            )
        )
    for name, bundle, verdict, rollout, torch_modules in groups:
        print(f"timing {name} ({len(rollout)} ticks)")
        impls: dict[str, Any] = {"ours_fp32": Ours(bundle, args.threads)}
        if verdict.passes and verdict.bundle is not None:
            impls["ours_int8"] = Ours(verdict.bundle, args.threads)
        impls["plain_ort_fp32"] = PlainOrt(bundle, args.threads)
        if not args.no_torch and torch_modules is not None:
            impls["torch_eager"] = TorchEager(bundle, *torch_modules())
        measured = measure(impls, rollout, args.warmup, args.block, args.period_ms / 1e3)
        report = model_report(measured, "plain_ort_fp32", impls)
        m = bundle.manifest
        report = {
            "bundle": _shown(bundle.path),
            "weights": "random (seed 0): not a policy" if name == "php_random" else "trained",
            "precision_shipped": m.provenance.get("precision") if name != "php_random" else None,
            "parameters": m.provenance.get("parameters", {}).get("total"),
            "inputs": inputs[PHP_INPUTS_FROM if name == "php_random" else name].describe(),
            "int8": verdict.to_dict(),
            **report,
        }
        report = with_peer_observation(report, measured, impls["plain_ort_fp32"], args.warmup)
        observe[name] = report.pop("peer_observation_ms_not_timed")
        if name == "php_random" and not args.no_cold:
            # The pessimistic case: the other model's 46 MB ran just before every step.
            ours_name = "ours_int8" if "ours_int8" in impls else "ours_fp32"
            cold_impls = {
                "ours": Ours(verdict.bundle if ours_name == "ours_int8" else bundle, args.threads),  # type: ignore[arg-type]
                "peer": PlainOrt(bundle, args.threads),
            }
            c = measure(cold_impls, rollout, args.warmup, 1, args.period_ms / 1e3)
            t_ours, t_peer = timing(c.times["ours"], c.new_frame), timing(c.times["peer"], c.new_frame)
            report["cold_cache"] = {
                "what": "the same ticks interleaved one by one: every step starts on caches the other model filled",
                "ours_is": ours_name,
                "ours": t_ours,
                "peer": t_peer,
                "ratios": ratios(t_ours, t_peer),
            }
        if name == "php_random":
            best = report["implementations"].get("ours_int8", report["implementations"]["ours_fp32"])
            report["target_p99_ms"] = TARGET_P99_MS
            report["meets_target"] = best["ms"]["p99"] <= TARGET_P99_MS
        models[name] = report
        hist[f"{name} ({'random weights' if name == 'php_random' else 'trained'})"] = measured.times

    imported_reports: dict[str, dict[str, Any]] = {}
    rollout = inputs[PHP_INPUTS_FROM].rollout
    for name, item in imported.items():
        print(f"timing {name}, imported from {item.format} ({len(rollout)} ticks)")
        impls = {"ours_fp32": Ours(item.bundle, args.threads), "plain_ort_fp32": PlainOrt(item.bundle, args.threads)}
        measured = measure(impls, rollout, args.warmup, args.block, args.period_ms / 1e3)
        m = item.bundle.manifest
        report = {
            "bundle": _shown(item.bundle.path),
            "format": item.format,
            "source": item.source,
            "files": sorted(m.files),
            "uses_depth": m.uses_depth,
            "recurrent": m.recurrent,
            "inputs": f"{PHP_INPUTS_FROM}'s recording (the G1's states, commands and depth frames), open loop",
            **model_report(measured, "plain_ort_fp32", impls),
        }
        imported_reports[name] = with_peer_observation(report, measured, impls["plain_ort_fp32"], args.warmup)
        hist[f"{name} (imported from {item.format})"] = measured.times

    result = {
        "what": "one 50 Hz control step (policy every tick, depth backbone when a 30 Hz frame is new) of the "
        "students that ship (models/student_walk, models/student_step: fp32), of a PHP-sized student with "
        "random weights and of the imported policies (imported); ours = parkour_core PolicyRunner on the bundle "
        "(fp32, and int8 where it passes the exporter's check), peer = plain onnxruntime (default "
        "SessionOptions) on the same files, the same thread count; inputs recorded from the simulator",
        "command": command,
        "git_commit": git_commit(),
        "date": date,
        "machine": machine(),
        "threads": {"intra_op": args.threads, "torch": args.threads},
        "pinned_cpus": pinned,
        "scheduler": scheduler,
        "interleave_block_ticks": args.block,
        "tick_period_ms": args.period_ms,
        "timed_region": {
            "ours": "PolicyRunner.set_depth (on a new frame) + PolicyRunner.step: observation building, gait "
            "clock, both ONNX runs, action clip and targets",
            "plain_ort_fp32": "its InferenceSession.run calls only; its observation is built before the timed "
            "region (cost: observation_ms_not_timed; added per tick: plain_ort_fp32_plus_its_observation)",
            "torch_eager": "backbone + student forward under inference_mode",
        },
        "observation_ms_not_timed": observe,
        "int8_check": {
            "relative_tolerance": INT8_RELATIVE_TOLERANCE,
            "rule": "max |int8 - fp32| action over every joint and tick of the check's recordings <= "
            "relative_tolerance x the fp32 actions' range there (p99.9 - p0.1 over all joints and ticks); both "
            "through PolicyRunner",
            "calibration": calibration_note(),
        },
        "models": models,
        "imported": imported_reports,
        "imported_skipped": imports_skipped,
        "overhead": overhead_verdict({"models": models, "imported": imported_reports}),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.perf_counter() - started, 1),
    }
    result["summary"] = summary_rows(models, args.threads, imported_reports)
    out_json = args.out / "policy.json"
    out_png = args.out / "policy_step_hist.png"
    write_json(out_json, result)
    plot(hist, out_png, args.threads)
    for name, r in {**models, **imported_reports}.items():
        impls_ms = ", ".join(f"{k} {v['ms']['p50']:.3f}/{v['ms']['p99']:.3f}" for k, v in r["implementations"].items())
        int8 = r.get("int8")
        if int8 is None:
            verdict_text = ""
        elif "max_action_error" not in int8:
            verdict_text = f" | int8 {int8.get('message', 'not run')}"
        else:
            verdict = "passes" if int8["passes"] else "FAILS"
            verdict_text = f" | int8 {verdict} ({int8['max_action_error']:.3g} vs {int8['tolerance']:.3g})"
        print(f"{name}: p50/p99 ms {impls_ms} | ratios {r['ratios_vs_plain_ort_fp32']}{verdict_text}")
    for name, why in imports_skipped.items():
        print(f"{name}: not timed ({why})")
    print(f"wrote {out_json} and {out_png} in {result['wall_s']} s")
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    raise SystemExit(main())
