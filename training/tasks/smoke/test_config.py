"""The smoke chain's sizes: each preset names itself and its stages' presets; an unknown size says which exist."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from training.configs import ConfigError, load_train_config
from training.tasks.smoke.config import load_smoke_size, smoke_sizes


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_smoke_sizes_are_configs_that_name_each_stages_config() -> None:
    assert set(smoke_sizes()) == {"tiny", "smoke"}
    tasks = {"php_teacher": "php_teacher", "php_student": "php_student"}
    for name in smoke_sizes():
        size = load_smoke_size(name)
        assert size.size == name
        for stage, task in tasks.items():
            cfg = load_train_config(getattr(size, stage))
            assert cfg.task == task, (name, stage)
            assert (name == "tiny") == getattr(size, stage).endswith("_tiny")
    assert load_smoke_size("tiny").motions <= load_smoke_size("smoke").motions


def test_an_unknown_smoke_size_says_which_exist() -> None:
    with pytest.raises(ConfigError, match=r"smoke size 'huge' is not one of smoke, tiny"):
        load_smoke_size("huge")


def test_only_a_smoke_size_names_itself(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown keys \['smoke'\]"):
        load_train_config(_write(tmp_path, {"task": "php_teacher", "smoke": {"size": "medium"}}))
    with pytest.raises(ConfigError, match=r"smoke\.size"):
        load_train_config(_write(tmp_path, {"task": "smoke"}))
