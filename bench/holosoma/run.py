"""Our walking-policy step against holosoma-inference's own loop, on the same ONNX and the same inputs.

The ONNX is holosoma-inference's ``models/loco/g1_29dof/ppo_g1_29dof.onnx``: ``models/g1_walk`` is
that file in a bundle (same SHA-256, checked here). Both sides see the same robot states and velocity
commands, tick by tick, in alternating blocks of ``--block`` ticks (rotating who goes first), so the
machine's load hits both alike. Ours: ``PolicyRunner.step`` on ``models/g1_walk`` (gait clock,
observation from the manifest's terms, onnxruntime with 1 intra-op thread, clip, scale, default pose),
in this process (.venv); holosoma: its own loop (:class:`Peer`), in a child process in .venv-bench.

Each keeps its own previous action and gait phase; ``max_target_diff_rad`` compares the joint targets
the two computed, tick by tick, over the whole run (the observation contract, checked end to end).

    .venv/bin/python bench/holosoma/run.py --out bench/results/holosoma_loop.json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.assets import resolve
from parkour_core.bundle import load_bundle
from parkour_core.hashing import sha256_file
from parkour_core.paths import repo_root
from parkour_core.provenance import provenance
from parkour_core.runner import PolicyRunner, RobotState
from parkour_core.stats import summary_ms, write_json

ONNX_REF = "holosoma_inference:models/loco/g1_29dof/ppo_g1_29dof.onnx"
BENCH_PY = repo_root() / ".venv-bench" / "bin" / "python"
PEER = Path(__file__).resolve().parent / "peer.py"
# Velocity commands (vx, vy, yaw rate), 250 ticks (5 s) each, cycled: walking, turning, standing still
# (which parks the gait phase on both sides), sideways.
COMMANDS = ((0.5, 0.0, 0.0), (0.3, 0.0, 0.5), (0.0, 0.0, 0.0), (0.8, 0.2, -0.3), (0.0, -0.3, 0.0))
SEGMENT_TICKS = 250


def make_inputs(default_q: np.ndarray, ticks: int, seed: int) -> dict[str, np.ndarray]:
    """Joints near the default pose, a base tilted up to 0.2 rad, commands in segments."""
    rng = np.random.default_rng(seed)
    n = len(default_q)
    axis = rng.normal(size=(ticks, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half = 0.5 * rng.uniform(0.0, 0.2, size=(ticks, 1))
    cmd = np.array([COMMANDS[(k // SEGMENT_TICKS) % len(COMMANDS)] for k in range(ticks)])
    return {
        "q": default_q + rng.normal(0.0, 0.15, (ticks, n)),
        "dq": rng.normal(0.0, 1.0, (ticks, n)),
        "quat_wxyz": np.concatenate([np.cos(half), np.sin(half) * axis], axis=1),
        "gyro": rng.normal(0.0, 0.5, (ticks, 3)),
        "cmd": cmd,
    }


class Peer:
    """holosoma's loop in its own venv, driven block by block over a pipe.

    Its ``LocomotionPolicy`` loop body (apply the velocity, advance the phase, ``policy_action()``:
    observation + ONNX + clip + scale + default pose + send) with only the robot interface and the
    operator inputs stubbed (bench/holosoma/peer.py), in .venv-bench (bench/holosoma/setup.sh installs its
    dependency tree there; the runtime venv has holosoma-inference as files only). Its ONNX session is its
    own (default SessionOptions). Its ``rl_inference`` (observation + ONNX + clip + scale) is timed as well.
    """

    def __init__(self, inputs_path: Path, out_path: Path, model: Path) -> None:
        cmd = [str(BENCH_PY), str(PEER), "--inputs", str(inputs_path), "--model", str(model), "--out", str(out_path)]
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self._expect("ready")

    def _expect(self, word: str) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != word:
            self.proc.kill()
            raise SystemExit(f"holosoma peer: expected {word!r}, got {line!r} (exit code {self.proc.poll()})")

    def run(self, start: int, stop: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"run {start} {stop}\n")
        self.proc.stdin.flush()
        self._expect("done")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        if self.proc.wait(timeout=60) != 0:
            raise SystemExit(f"holosoma peer exited with code {self.proc.returncode}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=repo_root() / "bench" / "results" / "holosoma_loop.json")
    parser.add_argument("--ticks", type=int, default=20000, help="timed ticks per side")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--block", type=int, default=50, help="ticks of one side before the other")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not BENCH_PY.is_file():
        raise SystemExit(f"{BENCH_PY} is missing: run bash bench/holosoma/setup.sh first")

    model = resolve(ONNX_REF)
    bundle = load_bundle(repo_root() / "models" / "g1_walk")
    m = bundle.manifest
    same_onnx = sha256_file(bundle.file(m.policy.file)) == sha256_file(model)
    if not same_onnx:
        raise SystemExit(f"models/g1_walk's ONNX is not {ONNX_REF}: rebuild it with make setup")
    runner = PolicyRunner(bundle, intra_op_threads=1)
    total = args.ticks + args.warmup
    inputs = make_inputs(np.asarray(m.default_joint_pos), total, args.seed)

    ours_s = np.full(total, np.nan)
    ours_targets = np.full((total, len(m.joint_names)), np.nan)
    load_before = os.getloadavg()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        inputs_path, peer_out = Path(tmp) / "inputs.npz", Path(tmp) / "peer.npz"
        np.savez(inputs_path, joint_names=np.array(m.joint_names), **inputs)
        peer = Peer(inputs_path, peer_out, model)

        def ours(start: int, stop: int) -> None:
            for k in range(start, stop):
                state = RobotState(inputs["q"][k], inputs["dq"][k], inputs["quat_wxyz"][k], inputs["gyro"][k])
                t0 = time.perf_counter()
                targets = runner.step(state, inputs["cmd"][k])
                ours_s[k] = time.perf_counter() - t0
                ours_targets[k] = targets

        for i, start in enumerate(range(0, total, args.block)):
            stop = min(start + args.block, total)
            sides = (ours, peer.run)
            for side in sides if i % 2 == 0 else sides[::-1]:
                side(start, stop)
        peer.close()
        with np.load(peer_out) as f:
            peer_res = {k: f[k] for k in f.files}

    w = args.warmup
    loop = peer_res["loop_s"][w:]
    inference = peer_res["inference_s"][w:]
    ours_ms, loop_ms, inf_ms = summary_ms(ours_s[w:]), summary_ms(loop), summary_ms(inference)
    diff = float(np.max(np.abs(ours_targets - peer_res["targets"])))

    def ratio(a: dict[str, Any], b: dict[str, Any], key: str) -> float:
        return round(a[key] / b[key], 3)

    report = {
        **provenance(),
        "what": "one 50 Hz walking-policy step on holosoma-inference's G1 ONNX, same states and commands: "
        "ours = PolicyRunner.step (models/g1_walk); peer = holosoma-inference LocomotionPolicy loop body "
        "(_apply_velocity + update_phase_time + policy_action, robot interface stubbed)",
        "onnx": ONNX_REF,
        "same_onnx_sha256": same_onnx,
        "ours_ms": ours_ms,
        "holosoma_loop_ms": loop_ms,
        "holosoma_rl_inference_ms": inf_ms,
        "ratio_p50": ratio(ours_ms, loop_ms, "p50"),
        "ratio_p99": ratio(ours_ms, loop_ms, "p99"),
        "ratio_vs_rl_inference_p50": ratio(ours_ms, inf_ms, "p50"),
        "ratio_vs_rl_inference_p99": ratio(ours_ms, inf_ms, "p99"),
        # p99 of five consecutive stretches: a burst of neighbours' load (4 ms: a scheduler slice) moves one
        # stretch's p99 and the whole run's, for whichever side it hits
        "p99_ms_by_stretch": {
            name: [round(float(np.percentile(c, 99)) * 1e3, 3) for c in np.array_split(t, 5)]
            for name, t in (("ours", ours_s[w:]), ("holosoma_loop", loop))
        },
        "max_target_diff_rad": diff,
        "ticks": args.ticks,
        "warmup_ticks": w,
        "interleave_block_ticks": args.block,
        "sessions": {
            "ours": "parkour_core.inference.make_session: 1 intra-op thread, sequential",
            "holosoma": f"its setup_policy: onnxruntime.InferenceSession(path), default SessionOptions "
            f"(intra_op_num_threads {int(peer_res['intra_op_threads'])}: 0 = one per core)",
        },
        "versions": {"onnxruntime_holosoma_venv": str(peer_res["onnxruntime"])},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.perf_counter() - started, 1),
        "summary": [
            {
                "what": "walking-policy step, holosoma's G1 ONNX (obs + inference)",
                "unit": "ms",
                "ours": {"p50": ours_ms["p50"], "p99": ours_ms["p99"]},
                "peer": {"name": "holosoma-inference loop body", "p50": loop_ms["p50"], "p99": loop_ms["p99"]},
            },
            {
                "what": "the same, peer's rl_inference only (obs + ONNX + clip + scale)",
                "unit": "ms",
                "ours": {"p50": ours_ms["p50"], "p99": ours_ms["p99"]},
                "peer": {"name": "holosoma-inference rl_inference", "p50": inf_ms["p50"], "p99": inf_ms["p99"]},
            },
        ],
    }
    write_json(args.out, report)
    print(
        f"ours p50 {ours_ms['p50']:.3f} p99 {ours_ms['p99']:.3f} ms | holosoma loop p50 {loop_ms['p50']:.3f} "
        f"p99 {loop_ms['p99']:.3f} ms (rl_inference p50 {inf_ms['p50']:.3f}) | ratio p50 {report['ratio_p50']} "
        f"p99 {report['ratio_p99']} | max target diff {diff:.2e} rad"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
