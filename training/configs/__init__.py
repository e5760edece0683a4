"""Typed training configurations: the schema (schema.py) and the shipped YAML files beside it."""

from training.configs.schema import (
    CONFIG_DIR,
    ConfigError,
    TrainConfig,
    describe_train_config,
    load_train_config,
    parse_train_config,
    shipped,
)

__all__ = [
    "CONFIG_DIR",
    "ConfigError",
    "TrainConfig",
    "describe_train_config",
    "load_train_config",
    "parse_train_config",
    "shipped",
]
