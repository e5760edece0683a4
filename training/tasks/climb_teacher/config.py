"""The ``climb_teacher`` task's config: the shared sections and its own, ``climb``."""

from __future__ import annotations

from dataclasses import dataclass, field

from training.configs.fields import param
from training.configs.schema import ConfigError, TrainConfig, check_range_pair, check_weights, is_number
from training.tasks.climb_teacher.rewards import Weights


@dataclass(frozen=True)
class ClimbSection:
    """climb_teacher: the box courses, their curriculum and the residual on the walking policy
    (rewards in its rewards.py)."""

    boxes: int = param(2, 1, 8, doc="boxes per course")
    flat_fraction: float = param(0.1, 0.0, 1.0, doc="episodes on flat ground (the pace without boxes)")
    levels: list = param(  # noqa: RUF009
        [0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40], doc="box height (m) of each curriculum level"
    )
    height_jitter_m: float = param(0.025, 0.0, 0.2, doc="+- around the level's height, per box")
    start_level: int = param(0, 0, 100, doc="every environment's first level")
    speed_mps: list = param([0.3, 1.5], doc="[lo, hi] commanded speed along the course")  # noqa: RUF009
    first_m: list = param([1.0, 3.0], doc="[lo, hi] start to the first box's near face")  # noqa: RUF009
    spacing_m: list = param([2.5, 3.5], doc="[lo, hi] near face to near face")  # noqa: RUF009
    residual_scale: float = param(1.0, 0.0, 10.0, doc="action = walking policy's + this x the learner's")
    residual_on: str = param(
        "lower_body", choices=("legs", "lower_body", "all"), doc="the joints the learner's residual moves (+ waist)"
    )
    refusal_ends_episode: bool = param(
        True, doc="targets the supervisor would refuse end the episode as a failure (false: only penalised)"
    )
    residual_init_gain: float = param(
        0.01, 0.0, 1.0, doc="the actor's output layer scaled by this at the start: it begins as the walking policy"
    )
    reward_weights: dict = param(  # noqa: RUF009 - returns a field(default_factory=...)
        {}, doc="term -> weight over training.tasks.climb_teacher.rewards.Weights (a name it lacks is refused)"
    )


@dataclass(frozen=True)
class ClimbTrainConfig(TrainConfig):
    climb: ClimbSection = field(default_factory=ClimbSection)

    def validate(self) -> None:
        super().validate()
        cl = self.climb
        check_weights("climb.reward_weights", cl.reward_weights, Weights)
        check_range_pair("climb.speed_mps", cl.speed_mps, 0.0, 5.0)
        check_range_pair("climb.first_m", cl.first_m, 0.0, 20.0)
        check_range_pair("climb.spacing_m", cl.spacing_m, 0.8, 20.0)
        if (
            not cl.levels
            or not all(is_number(h) and 0.0 <= h <= 1.0 for h in cl.levels)
            or cl.levels != sorted(cl.levels)
        ):
            raise ConfigError(f"climb.levels: expected rising box heights in [0, 1] m, got {cl.levels!r}")
        if cl.start_level >= len(cl.levels):
            raise ConfigError(f"climb.start_level: {cl.start_level}, but climb.levels has {len(cl.levels)} levels")
        if self.env.physics_dt_s != 0.002 or self.env.control_hz != 50.0:
            raise ConfigError(
                f"env.physics_dt_s: {self.env.physics_dt_s} at {self.env.control_hz} Hz: climb_teacher runs the "
                "bridge's 2 ms step at the walking policy's 50 Hz (set env.physics_dt_s: 0.002, env.control_hz: 50)"
            )
