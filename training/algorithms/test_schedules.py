"""PHP's schedules at the points the text names, and the 0.1 floor."""

from __future__ import annotations

import itertools

import pytest

from training.algorithms.schedules import (
    adaptive_lr_enabled,
    dagger_weight,
    ppo_weight,
    schedule_at,
    termination_threshold,
)

K = 1000


@pytest.mark.parametrize(
    ("k", "lam_d", "lam_ppo", "threshold"),
    [(0, 1.0, 0.0, 0.5), (K // 4, 0.5, 0.5, 0.75), (K // 2, 0.1, 0.9, 1.0), (K, 0.1, 0.9, 1.0)],
)
def test_schedule_values(k: int, lam_d: float, lam_ppo: float, threshold: float) -> None:
    assert dagger_weight(k, K) == pytest.approx(lam_d)
    assert ppo_weight(k, K) == pytest.approx(lam_ppo)
    assert termination_threshold(k, K) == pytest.approx(threshold)


def test_dagger_weight_floor_is_reached_at_045_k_and_held() -> None:
    assert dagger_weight(440, K) > 0.1
    assert dagger_weight(450, K) == pytest.approx(0.1)
    assert all(dagger_weight(k, K) == pytest.approx(0.1) for k in range(450, 3 * K, 37))
    weights = [dagger_weight(k, K) for k in range(K + 1)]
    assert min(weights) == pytest.approx(0.1)
    assert all(a >= b for a, b in itertools.pairwise(weights))


def test_weights_sum_to_one_and_threshold_never_passes_its_end() -> None:
    for k in range(0, 2 * K, 13):
        assert dagger_weight(k, K) + ppo_weight(k, K) == pytest.approx(1.0)
        assert 0.5 <= termination_threshold(k, K) <= 1.0


def test_custom_threshold_range() -> None:
    assert termination_threshold(K // 4, K, start=0.3, end=0.7) == pytest.approx(0.5)


def test_adaptive_lr_gate_opens_when_ppo_weight_passes_01() -> None:
    # lambda_PPO = k / (K / 2) passes 0.1 at k = 0.05 K = 50.
    assert not adaptive_lr_enabled(0, K)
    assert not adaptive_lr_enabled(50, K)
    assert adaptive_lr_enabled(51, K)
    assert adaptive_lr_enabled(K, K)


def test_schedule_point_bundles_everything() -> None:
    point = schedule_at(K // 4, K)
    assert (point.dagger_weight, point.ppo_weight, point.adaptive_lr) == (pytest.approx(0.5), pytest.approx(0.5), True)
    assert point.termination_threshold == pytest.approx(0.75)


@pytest.mark.parametrize(("k", "total"), [(0, 0), (-1, 10)])
def test_bad_iterations_raise(k: int, total: int) -> None:
    with pytest.raises(ValueError):
        dagger_weight(k, total)
