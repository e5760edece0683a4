"""The torch restatements the mjlab tasks observe through (policy_terms.py, depth.py) against the numpy
code they restate, on random states. Runs in the runtime .venv (torch, no mjlab)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from parkour_core.bundle import as_array, load_bundle
from parkour_core.command import DiscreteCommandSpec, discretise_command
from parkour_core.depth import DepthSpec, preprocess_depth
from parkour_core.gait import GaitClock
from parkour_core.obs import build_observation
from parkour_core.runner import RobotState, observation_input
from parkour_sim.depth_camera import DepthNoise, FrameSchedule
from training.backends.mjlab import policy_terms
from training.backends.mjlab.depth import DepthStream, Preprocess, rotvec_matrix
from training.envs.student import CameraConfig
from training.motion_matching import quat
from training.tasks.student_walk.env import walk_student_manifest
from training.tasks.student_walk.teacher import WALK_BUNDLE, WalkTeacher


def _state(rng: np.random.Generator, n: int, default_q: np.ndarray) -> dict[str, np.ndarray]:
    q = rng.normal([1, 0, 0, 0], 0.2, (n, 4))
    command = np.stack([rng.uniform(0, 1.6, n), rng.uniform(-0.6, 0.6, n), rng.uniform(-0.3, 0.3, n)], -1)
    command[:2] = 0.0  # standing still: level 0, sector 0
    command[2] = [0.25, 0.0, 0.0]  # a tie between levels 0 and 0.5 goes to the slower
    return {
        "q": (default_q + rng.normal(0, 0.2, (n, 29))).astype(np.float32),
        "dq": rng.normal(0, 2.0, (n, 29)).astype(np.float32),
        "quat": (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32),
        "gyro": rng.normal(0, 1.0, (n, 3)).astype(np.float32),
        "command": command.astype(np.float32),
        "last": rng.normal(0, 1.0, (n, 29)).astype(np.float32),
        "phase": rng.uniform(-np.pi, np.pi, (n, 2)).astype(np.float32),
    }


def _torch_input(s: dict[str, np.ndarray], default_q: np.ndarray, spec: DiscreteCommandSpec | None):
    t = {k: torch.from_numpy(v) for k, v in s.items()}
    return policy_terms.ObsInput(
        q=t["q"], dq=t["dq"], quat_wxyz=t["quat"], gyro=t["gyro"], command=t["command"], last_action=t["last"],
        default_q=torch.tensor(default_q, dtype=torch.float32), gait_phase=t["phase"],
        command_discrete=policy_terms.discretise_command(t["command"], spec),
    )  # fmt: skip


def test_student_and_teacher_observations_and_the_teacher_equal_parkour_core_and_onnxruntime():
    teacher = WalkTeacher(16)
    student = walk_student_manifest("t", 16, 16, teacher.manifest)
    s = _state(np.random.default_rng(0), 16, teacher.default_q)
    f64 = {k: v.astype(np.float64) for k, v in s.items()}
    for manifest in (student, teacher.manifest):
        o = observation_input(
            manifest, RobotState(f64["q"], f64["dq"], f64["quat"], f64["gyro"]), f64["command"], f64["last"],
            as_array(manifest.default_joint_pos), f64["phase"],
        )  # fmt: skip
        ours = policy_terms.build_observation(manifest.obs_terms, _torch_input(s, teacher.default_q, manifest.command))
        assert np.abs(ours.numpy() - build_observation(manifest.obs_terms, o)).max() < 1e-5
    labels = teacher.act(f64["q"], f64["dq"], f64["quat"], f64["gyro"], f64["command"], f64["last"], f64["phase"])
    bundle = load_bundle(WALK_BUNDLE)
    mlp = policy_terms.OnnxMlp(bundle.file(bundle.manifest.policy.file))
    obs = policy_terms.build_observation(bundle.manifest.obs_terms, _torch_input(s, teacher.default_q, None))
    assert np.abs(mlp(obs).numpy() - labels).max() < 1e-4


def test_discrete_command_and_gait_clock_equal_parkour_core():
    spec = DiscreteCommandSpec()
    rng = np.random.default_rng(1)
    command = rng.uniform(-2, 2, (200, 3)).astype(np.float32)
    command[:20, :2] = 0.0
    expected = np.stack([discretise_command(c.astype(np.float64), spec) for c in command])
    assert np.array_equal(policy_terms.discretise_command(torch.from_numpy(command), spec).numpy(), expected)
    n = 5
    ours, theirs = policy_terms.GaitClock(1.0, 0.02, n, "cpu"), GaitClock(1.0, 0.02, batch=n)
    for k in range(120):
        cmd = np.zeros((n, 3)) if k % 30 < 8 else rng.uniform(0, 1, (n, 3))
        if k == 50:
            ours.reset(torch.tensor([1, 3]))
            theirs.reset(np.array([1, 3]))
        ids = torch.tensor([0, 2]) if k % 7 == 0 else slice(None)
        sel = np.array([0, 2]) if k % 7 == 0 else slice(None)
        ours.advance(torch.tensor(cmd[sel], dtype=torch.float32), ids)
        if k % 7 == 0:  # parkour_core's batch clock advances all rows: advance a copy and keep the selected ones
            kept, standing = theirs.phase.copy(), theirs._standing.copy()
            theirs.advance(cmd)
            theirs.phase[[1, 3, 4]], theirs._standing[[1, 3, 4]] = kept[[1, 3, 4]], standing[[1, 3, 4]]
        else:
            theirs.advance(cmd)
        assert np.abs(np.angle(np.exp(1j * (ours.phase.numpy() - theirs.phase)))).max() < 1e-5


def test_preprocessing_noise_and_rotations_restate_the_cpu_code():
    rng = np.random.default_rng(2)
    spec = DepthSpec()
    for shape in ((12, 18), (24, 36), (58, 87), (60, 90)):
        raw = rng.uniform(0.0, 4.0, (3, *shape)).astype(np.float32)
        raw[raw < 0.4] = 0.0  # holes
        ours = Preprocess(shape, spec, "cpu")(torch.from_numpy(raw)).numpy()
        assert np.abs(ours - np.stack([preprocess_depth(r, spec) for r in raw])).max() < 1e-5
    from training.backends.mjlab.depth import add_depth_noise

    clean = torch.full((2000, 4, 4), 1.0)
    clean[:, 0, 0] = 0.0
    noisy = add_depth_noise(clean, DepthNoise(), torch.Generator().manual_seed(0))
    assert bool((noisy[:, 0, 0] == 0).all())  # a hole stays a hole
    kept = noisy[:, 1:, 1:]
    assert abs(float((kept == 0).float().mean()) - DepthNoise().hole_fraction) < 0.005
    assert abs(float(kept[kept > 0].std()) - np.hypot(0.03, 0.03 / np.sqrt(3))) < 0.003  # pixel noise + offset
    rv = rng.uniform(-0.05, 0.05, (6, 3))
    mats = rotvec_matrix(torch.tensor(rv)).numpy()
    for r, m in zip(rv, mats, strict=True):
        v = np.array([0.3, -0.2, 1.0])
        assert np.allclose(m @ v, quat.rotate(quat.from_rotvec(r), v), atol=1e-12)


class _Replay:
    """A numpy Generator stand-in for FrameSchedule that hands out the latencies the torch stream drew."""

    def __init__(self, values: list[float]) -> None:
        self.values = values

    def uniform(self, lo: float, hi: float) -> float:
        return self.values.pop(0)


def test_depth_stream_shows_what_the_cpu_frame_schedule_shows_at_the_policy_ticks():
    """Without noise, each tick's image and its exposure stamp are those of FrameSchedule called at the
    policy ticks with the same grid phase and latencies (the CPU env's DepthPipeline, 50 Hz calls)."""
    cfg = CameraConfig(width=6, height=4, noise=DepthNoise(0.0, 0.0, 0.0))
    spec = DepthSpec()
    n, dt = 3, 0.02
    stream = DepthStream(n, cfg, spec, "cpu", seed=4)
    drawn: list[list[float]] = [[] for _ in range(n)]
    latency = stream._latency

    def record(k: int) -> torch.Tensor:
        values = latency(k)
        ids = record.ids  # type: ignore[attr-defined]
        for i, v in zip(ids.tolist(), values.tolist(), strict=True):
            drawn[i].append(v)
        return values

    stream._latency = record  # type: ignore[method-assign]
    expose = stream._expose

    def expose_recording(ids, exposed_s, raw):
        record.ids = ids  # type: ignore[attr-defined]
        expose(ids, exposed_s, raw)

    stream._expose = expose_recording  # type: ignore[method-assign]
    images = [np.full((cfg.height, cfg.width), 0.5 + 0.01 * k, dtype=np.float32) for k in range(400)]
    ids = torch.arange(n)
    stream.reset(ids, torch.zeros(n, dtype=torch.float64), torch.from_numpy(np.stack([images[0]] * n)))
    starts = stream.start_s.clone()
    shown: list[tuple[np.ndarray, np.ndarray]] = [(stream.image.numpy().copy(), stream.image_exposure_s.numpy().copy())]
    for k in range(1, 300):
        now = torch.full((n,), k * dt, dtype=torch.float64)
        stream.tick(ids, now, torch.from_numpy(np.stack([images[k]] * n)))
        shown.append((stream.image.numpy().copy(), stream.image_exposure_s.numpy().copy()))
    for i in range(n):
        sched: FrameSchedule = FrameSchedule(cfg.hz, *cfg.latency_s, _Replay(list(drawn[i])), start_s=float(starts[i]))
        while sched.exposure_due(0.0):
            sched.expose(sched.next_exposure_s, images[0])
        image, stamp = None, None
        for k in range(300):
            now = k * dt
            if k and sched.exposure_due(now):
                sched.expose(now, images[k])
            due = sched.pop_due(now)
            if due:
                image, stamp = preprocess_depth(due[-1].frame, spec), due[-1].exposure_s
            assert image is not None and stamp is not None
            assert np.abs(shown[k][0][i] - image).max() < 1e-6, f"env {i} tick {k}"
            assert shown[k][1][i] == pytest.approx(stamp, abs=1e-9)
