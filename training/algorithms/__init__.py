"""PHP's distillation algorithm: schedules, the hybrid loss's pure pieces, start-state sampling.

See README.md in this folder for how each piece maps to PHP's text; the update that runs them is
``training.rl.algorithms.HybridPPO``.
"""

from training.algorithms.hybrid import HybridConfig, dagger_mask
from training.algorithms.sampling import AdaptiveStartSampler, SkillSampler
from training.algorithms.schedules import schedule_at

__all__ = [
    "AdaptiveStartSampler",
    "HybridConfig",
    "SkillSampler",
    "dagger_mask",
    "schedule_at",
]
