"""HPL's automatic terrain curriculum: per-environment levels moved by how far each episode got.

After an episode on a terrain of length L that covered a distance d (``completion = d / L``):

- promote (level + 1) when ``completion > promote_fraction`` (the robot crossed most of the tile);
- demote (level - 1) when ``completion < demote_fraction`` (0.5: it covered less than half);
- otherwise keep the level.

Levels are clipped to ``[0, levels - 1]``. As in HPL (and legged_gym's terrain curriculum), an
environment promoted past the hardest level is sent to a uniformly drawn level (``resample_at_top``)
so solved terrains keep being revisited instead of saturating. Pure numpy; the caller owns the rng.
A level maps to a difficulty in [0, 1] by :meth:`Curriculum.difficulty`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Ints = NDArray[np.int64]


@dataclass(frozen=True)
class CurriculumConfig:
    levels: int = 10
    promote_fraction: float = 0.8
    demote_fraction: float = 0.5
    initial_max_level: int = 0  # environments start uniformly in [0, initial_max_level]
    resample_at_top: bool = True

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise ValueError(f"levels must be >= 1, got {self.levels}")
        if not 0.0 <= self.demote_fraction <= self.promote_fraction <= 1.0:
            raise ValueError(
                f"need 0 <= demote_fraction ({self.demote_fraction}) <= promote_fraction ({self.promote_fraction}) <= 1"
            )


def update_levels(
    levels: Ints, completion: NDArray[np.float64], cfg: CurriculumConfig, rng: np.random.Generator | None = None
) -> Ints:
    """The next level of each finished episode's environment (see the module docstring)."""
    levels = np.asarray(levels, dtype=np.int64)
    completion = np.asarray(completion, dtype=np.float64)
    up = completion > cfg.promote_fraction
    down = completion < cfg.demote_fraction
    new = levels + up.astype(np.int64) - down.astype(np.int64)
    top = cfg.levels - 1
    if cfg.resample_at_top and rng is not None:
        past = new > top
        new[past] = rng.integers(0, cfg.levels, size=int(past.sum()))
    return np.clip(new, 0, top)


class Curriculum:
    """The levels of ``num_envs`` environments; ``record`` finished episodes, read ``levels``."""

    def __init__(self, num_envs: int, cfg: CurriculumConfig = CurriculumConfig(), seed: int = 0) -> None:
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.levels = self.rng.integers(0, min(cfg.initial_max_level, cfg.levels - 1) + 1, size=num_envs)
        self.promotions = 0
        self.demotions = 0

    def record(self, env_ids: Ints, completion: NDArray[np.float64]) -> Ints:
        """Move the levels of ``env_ids`` by their episodes' completion; returns their new levels."""
        env_ids = np.asarray(env_ids, dtype=np.int64)
        old = self.levels[env_ids]
        new = update_levels(old, completion, self.cfg, self.rng)
        self.promotions += int((np.asarray(completion) > self.cfg.promote_fraction).sum())
        self.demotions += int((new < old).sum())
        self.levels[env_ids] = new
        return new

    def difficulty(self, env_ids: Ints | None = None) -> NDArray[np.float64]:
        levels = self.levels if env_ids is None else self.levels[np.asarray(env_ids)]
        return levels / max(self.cfg.levels - 1, 1)

    def mean_level(self) -> float:
        return float(self.levels.mean())
