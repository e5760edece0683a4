"""The curriculum promotes above the promote fraction, demotes below half, clips, resamples past the top."""

from __future__ import annotations

import numpy as np
import pytest

from training.methods.hpl.curriculum import Curriculum, CurriculumConfig, update_levels

CFG = CurriculumConfig(levels=5, promote_fraction=0.8, demote_fraction=0.5, resample_at_top=False)


def test_promote_demote_keep_exactly_at_the_thresholds() -> None:
    levels = np.array([2, 2, 2, 2, 2, 2])
    completion = np.array([0.81, 0.8, 0.5, 0.49, 1.0, 0.0])
    assert update_levels(levels, completion, CFG).tolist() == [3, 2, 2, 1, 3, 1]


def test_levels_are_clipped() -> None:
    assert update_levels(np.array([0, 4]), np.array([0.1, 0.95]), CFG).tolist() == [0, 4]


def test_promotion_past_the_top_resamples_a_level() -> None:
    cfg = CurriculumConfig(levels=5, resample_at_top=True)
    rng = np.random.default_rng(0)
    new = update_levels(np.full(2000, 4), np.ones(2000), cfg, rng)
    assert new.min() == 0 and new.max() == 4
    assert np.bincount(new, minlength=5) / 2000 == pytest.approx(np.full(5, 0.2), abs=0.03)


def test_curriculum_moves_only_the_finished_environments() -> None:
    c = Curriculum(4, CFG, seed=0)
    assert c.levels.tolist() == [0, 0, 0, 0]
    c.record(np.array([1, 2]), np.array([0.9, 0.9]))
    c.record(np.array([2]), np.array([0.95]))
    c.record(np.array([2, 3]), np.array([0.2, 0.6]))
    assert c.levels.tolist() == [0, 1, 1, 0]
    assert c.difficulty().tolist() == [0.0, 0.25, 0.25, 0.0]
    assert c.mean_level() == 0.5 and c.promotions == 3 and c.demotions == 1


def test_bad_fractions_are_refused() -> None:
    with pytest.raises(ValueError, match="demote_fraction"):
        CurriculumConfig(promote_fraction=0.4, demote_fraction=0.5)
