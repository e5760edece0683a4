"""The student path of PolicyRunner on a real two-model recurrent bundle (g1_walk_depth_gated)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import BundleError, load_bundle, seal_manifest
from parkour_core.bundles.depth_gated_walk import HIDDEN_SHAPE, LATENT_DIM, build
from parkour_core.runner import PolicyRunner, RobotState


@pytest.fixture(scope="module")
def student_dir(g1_walk_dir: Path, tmp_path_factory) -> Path:
    return build(g1_walk_dir, tmp_path_factory.mktemp("student") / "g1_walk_depth_gated")


@pytest.fixture
def runner(student_dir: Path) -> PolicyRunner:
    return PolicyRunner(load_bundle(student_dir))


def state(seed: int = 0) -> RobotState:
    rng = np.random.default_rng(seed)
    return RobotState(rng.normal(0, 0.1, 29), rng.normal(0, 0.5, 29), np.array([1.0, 0, 0, 0]), rng.normal(0, 0.2, 3))


def image(value: float) -> np.ndarray:
    return np.full((58, 87), value, dtype=np.float32)


def test_manifest_describes_a_recurrent_depth_student(runner):
    m = runner.manifest
    assert m.uses_depth and m.recurrent
    assert m.hidden_shape == HIDDEN_SHAPE and m.depth is not None and m.depth.latent_dim == LATENT_DIM
    assert runner.hidden.shape == HIDDEN_SHAPE and not runner.hidden.any()
    assert runner.latent_stamp_s is None  # the warm-up's depth is forgotten


def test_backbone_runs_on_set_depth_and_latent_keeps_its_stamp(runner):
    runner.set_depth(image(0.25), stamp_s=12.5)
    np.testing.assert_allclose(runner.latent, np.full((1, LATENT_DIM), 0.25), atol=1e-6)
    assert runner.latent_stamp_s == 12.5


def test_hidden_state_carries_between_ticks_and_reset_clears_it(runner):
    runner.set_depth(image(0.0), 0.0)
    runner.step(state(), np.zeros(3))
    first = runner.hidden.copy()
    runner.step(state(), np.zeros(3))
    assert not np.allclose(runner.hidden, first)  # tanh(h + 0.1) moved on
    np.testing.assert_allclose(first, np.tanh(0.1))
    runner.reset()
    assert not runner.hidden.any() and not runner.last_action.any()
    runner.step(state(), np.zeros(3))
    np.testing.assert_allclose(runner.hidden, first)  # deterministic after a reset


def test_reset_keeps_the_depth_view(runner):
    runner.set_depth(image(0.1), 3.0)
    runner.reset()
    assert runner.latent_stamp_s == 3.0
    np.testing.assert_allclose(runner.latent, 0.1, atol=1e-6)


def test_nan_depth_reaches_the_actions(runner):
    runner.set_depth(image(np.nan), 1.0)
    assert np.all(np.isnan(runner.step(state(), np.zeros(3))))


def test_actions_match_the_blind_walking_policy(runner, g1_walk_dir):
    blind = PolicyRunner(load_bundle(g1_walk_dir))
    runner.set_depth(image(0.3), 0.0)
    for k in range(10):
        s, walk = state(k), np.array([0.5, 0.0, 0.0])
        np.testing.assert_allclose(runner.step(s, walk), blind.step(s, walk), atol=1e-6)


def edit(bundle: Path, change) -> None:
    path = bundle / "manifest.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    seal_manifest(bundle)  # edited on purpose: the runner's refusal is under test, not the seal's


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d["recurrent"].update(hidden_shape=[1, 1, 9]), "h_in"),
        (lambda d: d["depth"].update(latent_dim=16), "latent"),
        (lambda d: d["depth"].update(width=88), "depth"),
        (lambda d: d["models"]["policy"]["inputs"].pop("latent"), "latent"),
        (lambda d: d["models"]["policy"]["outputs"].pop("hidden"), "hidden"),
        (lambda d: d.pop("depth"), "come together"),
    ],
)
def test_student_contract_and_io_are_checked(student_dir, tmp_path, change, match):
    copy = tmp_path / "student"
    shutil.copytree(student_dir, copy)
    edit(copy, change)
    with pytest.raises(BundleError, match=match):
        PolicyRunner(load_bundle(copy))
