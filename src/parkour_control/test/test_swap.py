"""Swap logic on real bundles (the walking bundle and faulty copies of it) and real onnxruntime."""

from pathlib import Path

import numpy as np
import pytest

from parkour_bringup.bundle_faults import BAD_BUNDLES, nan_when_moving, renamed
from parkour_control.swap import ShadowRun, SwapError, load_candidate
from parkour_core.bundle import load_bundle, seal_manifest
from parkour_core.bundles import resolve_bundle
from parkour_core.depth import DepthSpec
from parkour_core.robots import G1
from parkour_core.runner import PolicyRunner, RobotState

SOURCE = resolve_bundle("g1_walk")


@pytest.fixture(scope="module")
def active():
    return load_bundle(SOURCE)


def moving_state() -> RobotState:
    return RobotState(G1.default_q.copy(), np.zeros(29), np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.2, -0.1, 0.05]))


def load(path: Path, active) -> PolicyRunner:
    return load_candidate(str(path), G1, active, DepthSpec(), PolicyRunner)


def test_good_copy_loads(tmp_path, active):
    runner = load(renamed(SOURCE, tmp_path / "copy"), active)
    assert runner.manifest.name == "g1_walk_copy"


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("hash_mismatch", "SHA-256"),
        ("missing_file", "missing"),
        ("wrong_joint_count", "joint_names"),
        ("wrong_robot", "robot"),
        ("wrong_shapes", "shape"),
    ],
)
def test_bad_bundles_are_refused_with_the_reason(tmp_path, active, fault, reason):
    bundle = BAD_BUNDLES[fault](SOURCE, tmp_path / fault)
    with pytest.raises(SwapError, match=reason):
        load(bundle, active)


def test_unknown_name_is_refused(active):
    with pytest.raises(SwapError, match="neither a bundle folder nor a registered bundle"):
        load(Path("/nonexistent/bundle"), active)


def test_other_rate_is_refused(tmp_path, active):
    import json

    bundle = renamed(SOURCE, tmp_path / "fast")
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["rates"]["policy_hz"] = 100.0
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    seal_manifest(bundle)  # edited on purpose: the rate's refusal is under test, not the seal's
    with pytest.raises(SwapError, match="needs a restart"):
        load(bundle, active)


def test_nan_bundle_passes_warm_up_and_fails_the_shadow_run(tmp_path, active):
    runner = load(nan_when_moving(SOURCE, tmp_path / "nan"), active)  # warm-up on a standing robot is finite
    shadow = ShadowRun(runner, ticks_needed=5)
    shadow.step(moving_state(), np.zeros(3), G1.default_q.copy())
    assert shadow.done.is_set()
    assert shadow.error is not None and "NaN" in shadow.error
    assert shadow.ticks == 0


def test_shadow_run_completes_and_reports_gap(tmp_path, active):
    runner = load(renamed(SOURCE, tmp_path / "copy"), active)
    shadow = ShadowRun(runner, ticks_needed=3)
    executed = G1.default_q + 0.05
    for _ in range(3):
        assert not shadow.done.is_set()
        shadow.step(moving_state(), np.zeros(3), executed)
    assert shadow.done.is_set() and shadow.error is None and shadow.ticks == 3
    assert shadow.max_target_gap_rad > 0.0
    shadow.step(moving_state(), np.zeros(3), executed)  # done: further ticks are ignored
    assert shadow.ticks == 3


def test_adopt_executed_sets_previous_action_to_what_the_robot_did(tmp_path, active):
    runner = load(renamed(SOURCE, tmp_path / "copy"), active)
    shadow = ShadowRun(runner, ticks_needed=1)
    executed = runner.default_q + runner.action_scale * np.linspace(-1.0, 1.0, 29)
    shadow.adopt_executed(executed)
    np.testing.assert_allclose(runner.last_action, np.linspace(-1.0, 1.0, 29), atol=1e-12)
