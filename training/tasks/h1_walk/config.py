"""The ``h1_walk`` task's config: the shared sections and its own, ``velocity``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from training.configs.fields import param
from training.configs.schema import TrainConfig, check_range_pair, check_weights, load_train_config
from training.tasks.h1_walk.rewards import Weights


@dataclass(frozen=True)
class VelocitySection:
    """h1_walk: velocity commands, gait clock, pushes and falls (training.tasks.h1_walk.env; rewards in its
    rewards.py)."""

    vx: list = param([-0.5, 1.0], doc="[lo, hi] m/s, forward in the base frame")  # noqa: RUF009
    vy: list = param([-0.3, 0.3], doc="[lo, hi] m/s, left")  # noqa: RUF009
    yaw_rate: list = param([-0.5, 0.5], doc="[lo, hi] rad/s")  # noqa: RUF009
    zero_fraction: float = param(0.1, 0.0, 1.0, doc="commands that are zero (the gait clock parks: stand still)")
    resample_s: float = param(5.0, 0.1, 1e9, doc="a new command this often (1e9: one per episode)")
    gait_period_s: float = param(0.8, 0.2, 3.0, doc="the bundle's gait clock (unitree_rl_gym's H1: 0.8 s)")
    fall_height_m: float = param(0.6, 0.0, 2.0, doc="an episode ends with the base below this")
    fall_tilt_rad: float = param(0.8, 0.1, 3.14, doc="or tilted past this")
    joint_noise_rad: float = param(0.05, 0.0, 1.0, doc="+- on the default pose at reset")
    push_interval_s: float = param(5.0, 0.1, 1e9, doc="a base velocity kick this often")
    push_vel_mps: float = param(0.5, 0.0, 5.0, doc="+- planar kick")
    curriculum_start: float = param(0.5, 0.05, 1.0, doc="the command ranges times this at first (1: no curriculum)")
    curriculum_step: float = param(0.1, 0.0, 1.0, doc="added to that factor after an iteration that tracks well")
    curriculum_threshold: float = param(0.8, 0.0, 1.0, doc="mean planar tracking term (0..1) that widens the ranges")
    friction: list = param([0.5, 1.25], doc="[lo, hi] friction of floor and robot, per episode")  # noqa: RUF009
    added_mass_kg: list = param([-1.0, 3.0], doc="[lo, hi] mass added to the pelvis, per episode")  # noqa: RUF009
    com_offset_m: float = param(0.02, 0.0, 0.2, doc="+- the torso's centre of mass, each axis, per episode")
    motor_strength: list = param([0.9, 1.1], doc="[lo, hi] kp and kd times this, per episode")  # noqa: RUF009
    obs_noise: float = param(1.0, 0.0, 5.0, doc="policy observation noise, times unitree_rl_gym's H1 scales")
    only_positive_rewards: bool = param(True, doc="a step's reward is clipped at 0 (legged_gym)")
    reward_weights: dict = param(  # noqa: RUF009 - returns a field(default_factory=...)
        {}, doc="term -> weight over training.tasks.h1_walk.rewards.Weights (a name it lacks is refused)"
    )

    def weights(self) -> Weights:
        return dataclasses.replace(Weights(), **{k: float(w) for k, w in self.reward_weights.items()})


@dataclass(frozen=True)
class H1WalkTrainConfig(TrainConfig):
    ROBOTS: ClassVar[tuple[str, ...]] = ("h1",)
    velocity: VelocitySection = field(default_factory=VelocitySection)

    def validate(self) -> None:
        super().validate()
        v = self.velocity
        for key, pair in (("velocity.vx", v.vx), ("velocity.vy", v.vy), ("velocity.yaw_rate", v.yaw_rate)):
            check_range_pair(key, pair, -5.0, 5.0)
        check_range_pair("velocity.friction", v.friction, 0.05, 5.0)
        check_range_pair("velocity.added_mass_kg", v.added_mass_kg, -20.0, 20.0)
        check_range_pair("velocity.motor_strength", v.motor_strength, 0.1, 3.0)
        check_weights("velocity.reward_weights", v.reward_weights, Weights)


# The nominal robot (no randomization, observation noise or curriculum): what evaluation runs.
NOMINAL = {
    "velocity.friction": [1.0, 1.0], "velocity.added_mass_kg": [0.0, 0.0], "velocity.com_offset_m": 0.0,
    "velocity.motor_strength": [1.0, 1.0], "velocity.obs_noise": 0.0, "velocity.curriculum_start": 1.0,
}  # fmt: skip


def nominal_config(overrides: dict | None = None) -> H1WalkTrainConfig:
    """The ``h1_walk`` preset on the nominal robot, with ``overrides`` (dotted keys, as ``--set``)."""
    cfg = load_train_config("h1_walk", {**NOMINAL, **(overrides or {})})
    assert isinstance(cfg, H1WalkTrainConfig)
    return cfg
