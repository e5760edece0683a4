"""The ``student_walk`` task's config: the shared sections, checked for the depth student's DAgger."""

from __future__ import annotations

from dataclasses import dataclass

from training.configs.schema import ConfigError, TrainConfig, check_depth_student


@dataclass(frozen=True)
class WalkTrainConfig(TrainConfig):
    def validate(self) -> None:
        super().validate()
        check_depth_student(self)
        if self.distill.num_mini_batches > self.env.num_envs:
            raise ConfigError(
                f"distill.num_mini_batches: {self.distill.num_mini_batches} exceeds env.num_envs "
                f"{self.env.num_envs} (each mini-batch is a group of environments)"
            )
