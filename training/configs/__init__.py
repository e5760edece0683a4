"""Typed training configurations: the schema (schema.py); the presets live in each task's folder."""

from training.configs.schema import (
    ConfigError,
    TrainConfig,
    describe_train_config,
    load_train_config,
    parse_train_config,
    shipped,
)

__all__ = [
    "ConfigError",
    "TrainConfig",
    "describe_train_config",
    "load_train_config",
    "parse_train_config",
    "shipped",
]
