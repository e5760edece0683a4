"""Equal skill sampling, and adaptive start sampling that follows failures (and can be turned off)."""

from __future__ import annotations

import numpy as np
import pytest

from training.algorithms.sampling import AdaptiveStartSampler, SkillSampler

SKILLS = ["climb_box_via_step", "climb_box_via_step_b", "step_up_box", "vault", "walk"]


def test_skills_are_drawn_equally() -> None:
    sampler = SkillSampler(SKILLS)
    draws = sampler.sample(10_000, np.random.default_rng(0))
    freq = np.bincount(draws, minlength=len(SKILLS)) / draws.size
    # Binomial std at p = 0.2, n = 10k is 0.004: 0.015 is > 3.5 sigma.
    np.testing.assert_allclose(freq, 0.2, atol=0.015)
    np.testing.assert_allclose(sampler.probabilities(), 0.2)


def test_skill_sampler_rejects_empty_and_duplicates() -> None:
    with pytest.raises(ValueError):
        SkillSampler([])
    with pytest.raises(ValueError):
        SkillSampler(["a", "a"])


def _fail_in_bins(sampler: AdaptiveStartSampler, bins: list[int], rng: np.random.Generator) -> None:
    """Episodes from every bin; those starting in ``bins`` fail."""
    starts = rng.random(2_000)
    failed = np.isin(sampler.bin_of(starts), bins)
    sampler.record(starts, failed)


def test_adaptive_sampling_concentrates_on_failure_bins() -> None:
    rng = np.random.default_rng(1)
    sampler = AdaptiveStartSampler(10, floor=0.2)
    _fail_in_bins(sampler, [3, 7], rng)
    probs = sampler.probabilities()
    assert probs.sum() == pytest.approx(1.0)
    # (1 - 0.2) / 2 + 0.2 / 10 = 0.42 each for the failing bins, the floor 0.02 elsewhere.
    np.testing.assert_allclose(probs[[3, 7]], 0.42, atol=0.03)
    np.testing.assert_allclose(np.delete(probs, [3, 7]), 0.02, atol=1e-12)
    draws = sampler.bin_of(sampler.sample(10_000, rng))
    freq = np.bincount(draws, minlength=10) / draws.size
    assert freq[[3, 7]].sum() > 0.8
    assert np.all(np.delete(freq, [3, 7]) > 0.0)  # the floor keeps every bin alive


def test_forgetting_moves_the_mass_to_new_failures() -> None:
    rng = np.random.default_rng(2)
    sampler = AdaptiveStartSampler(10, decay=0.5)
    _fail_in_bins(sampler, [1], rng)
    for _ in range(8):
        _fail_in_bins(sampler, [8], rng)
    probs = sampler.probabilities()
    assert probs[8] > 0.75
    assert probs[1] < 0.03


def test_disabled_sampler_is_uniform_whatever_failed() -> None:
    rng = np.random.default_rng(3)
    sampler = AdaptiveStartSampler(10, enabled=False)
    _fail_in_bins(sampler, [3, 7], rng)
    np.testing.assert_allclose(sampler.probabilities(), 0.1)
    freq = np.bincount(sampler.bin_of(sampler.sample(10_000, rng)), minlength=10) / 10_000
    np.testing.assert_allclose(freq, 0.1, atol=0.015)


def test_uniform_before_any_failure_and_phases_in_range() -> None:
    sampler = AdaptiveStartSampler(4)
    np.testing.assert_allclose(sampler.probabilities(), 0.25)
    phases = sampler.sample(1_000, np.random.default_rng(4))
    assert np.all((phases >= 0.0) & (phases < 1.0))
    with pytest.raises(ValueError):
        sampler.record(np.array([1.5]), np.array([True]))
