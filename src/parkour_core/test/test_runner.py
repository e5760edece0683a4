from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import BundleError, load_bundle, seal_manifest
from parkour_core.hashing import sha256_file
from parkour_core.runner import PolicyRunner, RobotState


@pytest.fixture(scope="module")
def runner(g1_walk_dir: Path) -> PolicyRunner:
    return PolicyRunner(load_bundle(g1_walk_dir))


@pytest.fixture
def fresh(runner: PolicyRunner) -> PolicyRunner:
    runner.reset()
    return runner


def layout(runner: PolicyRunner) -> dict[str, slice]:
    out, start = {}, 0
    for t in runner.manifest.obs_terms:
        out[t.name] = slice(start, start + t.dims)
        start += t.dims
    return out


def some_state(runner: PolicyRunner, seed: int = 0) -> RobotState:
    rng = np.random.default_rng(seed)
    n = len(runner.default_q)
    quat = np.array([1.0, 0.03, -0.02, 0.1])
    return RobotState(
        q=runner.default_q + rng.normal(0, 0.05, n),
        dq=rng.normal(0, 0.5, n),
        quat_wxyz=quat / np.linalg.norm(quat),
        gyro=rng.normal(0, 0.2, 3),
    )


def edit_manifest(bundle: Path, edit) -> None:
    path = bundle / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    seal_manifest(bundle)  # edited on purpose: the runner's refusal is under test, not the seal's


def test_step_returns_29_finite_targets(fresh):
    targets = fresh.step(some_state(fresh), np.array([0.5, 0.0, 0.0]))
    assert targets.shape == (29,)
    assert targets.dtype == np.float64
    assert np.all(np.isfinite(targets))
    # A walking policy near the default pose asks for targets near it (within 1 rad), not garbage.
    assert np.max(np.abs(targets - fresh.default_q)) < 1.0


def test_targets_are_default_plus_scaled_action(fresh):
    targets = fresh.step(some_state(fresh), np.array([0.3, 0.0, 0.2]))
    m = fresh.manifest
    expected = fresh.default_q + m.action_scale * np.clip(fresh.last_action, -m.action_clip, m.action_clip)
    np.testing.assert_allclose(targets, expected)
    assert np.any(fresh.last_action != 0.0)


def test_reset_zeroes_last_action_and_gait(fresh):
    for _ in range(3):
        fresh.step(some_state(fresh), np.array([0.5, 0.0, 0.0]))
    assert np.any(fresh.last_action != 0.0)
    fresh.reset()
    np.testing.assert_array_equal(fresh.last_action, np.zeros(29))
    np.testing.assert_array_equal(fresh.gait.phase, [0.0, np.pi])


def test_observation_layout(fresh):
    m = fresh.manifest
    assert m.obs_size == 100
    sl = layout(fresh)
    assert sum(s.stop - s.start for s in sl.values()) == 100
    scale = {t.name: t.scale for t in m.obs_terms}
    state = some_state(fresh, seed=3)
    command = np.array([0.4, -0.1, 0.3])
    first = fresh.step(state, command)
    raw = fresh.last_action.copy()
    obs = fresh.observe(state, command).astype(np.float64)
    assert obs.shape == (100,)
    # 'actions' holds the previous tick's raw action (before action_scale, not the joint targets).
    np.testing.assert_allclose(obs[sl["actions"]], raw * scale["actions"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fresh.default_q + m.action_scale * raw, first)
    np.testing.assert_allclose(obs[sl["dof_pos"]], (state.q - fresh.default_q) * scale["dof_pos"], atol=1e-6)
    np.testing.assert_allclose(obs[sl["dof_vel"]], state.dq * scale["dof_vel"], atol=1e-6)
    np.testing.assert_allclose(obs[sl["base_ang_vel"]], state.gyro * scale["base_ang_vel"], atol=1e-6)
    np.testing.assert_allclose(obs[sl["command_lin_vel"]], command[:2], atol=1e-6)
    np.testing.assert_allclose(obs[sl["command_ang_vel"]], command[2:], atol=1e-6)
    assert obs[sl["projected_gravity"]][2] < -0.9
    # Two ticks after reset with a walking command: phase = 2 * step.
    step = fresh.gait.step_rad
    np.testing.assert_allclose(obs[sl["sin_phase"]], np.sin([2 * step, 2 * step - np.pi]), atol=1e-6)
    np.testing.assert_allclose(obs[sl["cos_phase"]], np.cos([2 * step, 2 * step - np.pi]), atol=1e-6)


def test_standing_command_observes_parked_phase(fresh):
    sl = layout(fresh)
    obs = fresh.observe(some_state(fresh), np.zeros(3))
    np.testing.assert_allclose(obs[sl["sin_phase"]], [0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(obs[sl["cos_phase"]], [-1.0, -1.0], atol=1e-6)


def test_deterministic_after_reset(fresh):
    states = [some_state(fresh, seed=s) for s in range(4)]
    cmd = np.array([0.5, 0.0, 0.0])
    a = [fresh.step(s, cmd).copy() for s in states]
    fresh.reset()
    b = [fresh.step(s, cmd).copy() for s in states]
    np.testing.assert_array_equal(np.array(a), np.array(b))


def test_previous_action_feeds_back(fresh):
    state = some_state(fresh, seed=7)
    cmd = np.array([0.5, 0.0, 0.0])
    fresh.step(state, cmd)
    fresh.gait.reset()  # same phase as the first tick; only last_action differs now
    second = fresh.step(state, cmd)
    fresh.reset()
    first = fresh.step(state, cmd)
    assert not np.allclose(first, second)


def test_obs_dims_disagree_with_onnx_input(bundle_copy):
    # The manifest is not hashed, so only the runner's ONNX check can catch this.
    edit_manifest(bundle_copy, lambda d: d["observation"]["terms"][2].__setitem__("dims", 2))
    bundle = load_bundle(bundle_copy)
    assert bundle.manifest.obs_size == 101
    with pytest.raises(
        BundleError, match=r"ONNX input 'actor_obs' has shape \[1, 100\], the manifest implies \[1, 101\]"
    ):
        PolicyRunner(bundle)


def test_wrong_output_name(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d["models"]["policy"]["outputs"].__setitem__("action", "actions"))
    with pytest.raises(BundleError, match=r"no output named 'actions' \(it has \['action'\]\)"):
        PolicyRunner(load_bundle(bundle_copy))


def test_wrong_input_name(bundle_copy):
    edit_manifest(bundle_copy, lambda d: d["models"]["policy"].__setitem__("inputs", {"obs": "obs"}))
    with pytest.raises(BundleError, match=r"no input named 'obs' \(it has \['actor_obs'\]\)"):
        PolicyRunner(load_bundle(bundle_copy))


def test_unloadable_onnx(bundle_copy):
    path = bundle_copy / "policy.onnx"
    path.write_bytes(b"this is not an onnx model")
    edit_manifest(bundle_copy, lambda d: d["files"].__setitem__("policy.onnx", sha256_file(path)))
    with pytest.raises(BundleError, match=r"onnxruntime cannot load policy\.onnx"):
        PolicyRunner(load_bundle(bundle_copy))
