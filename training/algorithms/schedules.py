"""PHP's distillation schedules as pure functions of the iteration ``k`` out of ``K``.

PHP distils the per-skill teachers into one student with ``L = lambda_PPO L_PPO + lambda_D L_D``.
The DAgger weight decays linearly over the first half of training to a floor of 0.1::

    lambda_D(k) = max(0.1, 1 - k / (K / 2))

Our choices where the text leaves room (the paper is not in this workspace) are one function each:
:func:`ppo_weight`, :func:`termination_threshold`, :func:`adaptive_lr_enabled`.
"""

from __future__ import annotations

from dataclasses import dataclass

DAGGER_FLOOR = 0.1
"""lambda_D never drops below this."""

ADAPTIVE_LR_GATE = 0.1
"""The KL-adaptive learning rate runs only while lambda_PPO is above this."""

ORIGINAL_TERMINATION_M = 0.5
"""The teachers' termination threshold (m): the student is relaxed from it, the DAgger mask uses it."""

RELAXED_TERMINATION_M = 1.0
"""The student's termination threshold (m) from K / 2 on."""


def _check(k: int, total: int) -> None:
    if total <= 0:
        raise ValueError(f"total iterations K must be positive, got {total}")
    if k < 0:
        raise ValueError(f"iteration k must be >= 0, got {k}")


def ramp(k: int, total: int) -> float:
    """Training progress through the first half: 0 at k = 0, 1 at k = K / 2 and after."""
    _check(k, total)
    return min(1.0, k / (total / 2))


def dagger_weight(k: int, total: int) -> float:
    """lambda_D(k) = max(0.1, 1 - k / (K / 2))."""
    return max(DAGGER_FLOOR, 1.0 - ramp(k, total))


def ppo_weight(k: int, total: int) -> float:
    """lambda_PPO(k) = 1 - lambda_D(k), our reading of PHP.

    PHP gates the adaptive learning rate on ``lambda_PPO > 0.1``, so lambda_PPO must grow from (near) zero;
    the complement of lambda_D is the simplest weight that does, and it keeps the two weights summing to
    one. It is 0 at k = 0 and 0.9 from k = 0.45 K on.
    """
    return 1.0 - dagger_weight(k, total)


def termination_threshold(
    k: int, total: int, start: float = ORIGINAL_TERMINATION_M, end: float = RELAXED_TERMINATION_M
) -> float:
    """The student's tracking-error termination threshold (m), relaxed from ``start`` to ``end`` by K / 2.

    "Relaxed on the same schedule": the same linear ramp ``min(1, k / (K / 2))`` as lambda_D, from 0.5 m
    at k = 0 to 1.0 m at k = K / 2 and after. The 0.1 floor clips lambda_D from k = 0.45 K; the threshold
    keeps relaxing until K / 2.
    """
    return start + (end - start) * ramp(k, total)


def adaptive_lr_enabled(k: int, total: int) -> bool:
    """True once lambda_PPO > 0.1: only then may the KL rule (rsl-rl's) change the learning rate.

    That is for k > 0.05 K; before that the learning rate stays at its initial value.
    """
    return ppo_weight(k, total) > ADAPTIVE_LR_GATE


@dataclass(frozen=True)
class SchedulePoint:
    """Every scheduled quantity at one iteration, for the update step and the logs."""

    k: int
    total: int
    dagger_weight: float
    ppo_weight: float
    termination_threshold: float
    adaptive_lr: bool


def schedule_at(k: int, total: int) -> SchedulePoint:
    """All schedules at iteration ``k`` of ``total``."""
    return SchedulePoint(
        k=k,
        total=total,
        dagger_weight=dagger_weight(k, total),
        ppo_weight=ppo_weight(k, total),
        termination_threshold=termination_threshold(k, total),
        adaptive_lr=adaptive_lr_enabled(k, total),
    )
