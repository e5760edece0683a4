"""PHP's distillation algorithm: schedules, the hybrid DAgger + PPO update, start-state sampling.

See README.md in this folder for how each piece maps to PHP's text and what is not wired yet.
"""

from training.algorithms.hybrid import (
    ActorCritic,
    HybridConfig,
    HybridPPODagger,
    MLPActorCritic,
    RolloutBatch,
    UpdateStats,
    dagger_mask,
)
from training.algorithms.sampling import AdaptiveStartSampler, SkillSampler
from training.algorithms.schedules import schedule_at

__all__ = [
    "ActorCritic",
    "AdaptiveStartSampler",
    "HybridConfig",
    "HybridPPODagger",
    "MLPActorCritic",
    "RolloutBatch",
    "SkillSampler",
    "UpdateStats",
    "dagger_mask",
    "schedule_at",
]
