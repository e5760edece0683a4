"""Which skill and which reference time an episode starts from.

- :class:`SkillSampler`: every skill with equal probability (PHP's student sees all skills evenly).
- :class:`AdaptiveStartSampler`: the teachers' adaptive sampling. The reference motion's time
  [0, 1) is cut into bins; failures are counted (with exponential forgetting) in the bin the
  failed episode started from, and start times are drawn proportional to the counts, mixed with
  a uniform floor so no bin starves. ``enabled=False`` (the student) draws uniformly.

Both use a numpy ``Generator`` passed in, so runs are reproducible from one seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


class SkillSampler:
    """Skill indices drawn uniformly over ``skills``."""

    def __init__(self, skills: Sequence[str]) -> None:
        if not skills:
            raise ValueError("SkillSampler needs at least one skill")
        if len(set(skills)) != len(skills):
            raise ValueError(f"SkillSampler: duplicate skill names in {list(skills)}")
        self.skills = tuple(skills)

    def probabilities(self) -> NDArray[np.float64]:
        return np.full(len(self.skills), 1.0 / len(self.skills))

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return rng.integers(0, len(self.skills), size=n, dtype=np.int64)


class AdaptiveStartSampler:
    """Start phases in [0, 1) drawn from a histogram of where failed episodes started.

    ``p = (1 - floor) * counts / sum(counts) + floor / num_bins`` (uniform while nothing failed,
    or when disabled). ``decay`` multiplies the old counts at every :meth:`record`, so bins the
    policy has since mastered lose weight.
    """

    def __init__(self, num_bins: int, *, floor: float = 0.2, decay: float = 0.9, enabled: bool = True) -> None:
        if num_bins < 1:
            raise ValueError(f"num_bins must be >= 1, got {num_bins}")
        if not 0.0 <= floor <= 1.0:
            raise ValueError(f"floor must lie in [0, 1], got {floor}")
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"decay must lie in [0, 1], got {decay}")
        self.num_bins = num_bins
        self.floor = floor
        self.decay = decay
        self.enabled = enabled
        self.failures = np.zeros(num_bins)

    def bin_of(self, phases: NDArray[np.floating]) -> NDArray[np.int64]:
        phases = np.asarray(phases, dtype=np.float64)
        if np.any((phases < 0.0) | (phases > 1.0)):
            raise ValueError("start phases must lie in [0, 1]")
        return np.minimum((phases * self.num_bins).astype(np.int64), self.num_bins - 1)

    def record(self, start_phases: NDArray[np.floating], failed: NDArray[np.bool_]) -> None:
        """Account finished episodes: where each started, and whether it failed."""
        failed = np.asarray(failed, dtype=bool)
        bins = self.bin_of(start_phases)
        if bins.shape != failed.shape:
            raise ValueError(f"start_phases {bins.shape} and failed {failed.shape} differ in shape")
        self.failures = self.decay * self.failures + np.bincount(bins[failed], minlength=self.num_bins)

    def probabilities(self) -> NDArray[np.float64]:
        uniform = np.full(self.num_bins, 1.0 / self.num_bins)
        total = self.failures.sum()
        if not self.enabled or total <= 0.0:
            return uniform
        return (1.0 - self.floor) * self.failures / total + self.floor * uniform

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """``n`` start phases: a bin by :meth:`probabilities`, then uniform inside it."""
        bins = rng.choice(self.num_bins, size=n, p=self.probabilities())
        return (bins + rng.random(n)) / self.num_bins
