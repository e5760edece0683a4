"""Every shipped training config loads; a wrong type, a value out of range or an unknown key fails
with the key named in the message."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from training.algorithms.hybrid import DAGGER_COEF
from training.configs import ConfigError, TrainConfig, describe_train_config, load_train_config, shipped


def test_every_shipped_yaml_loads() -> None:
    names = {p.stem for p in shipped()}
    assert {"smoke_cpu", "php_teacher_gpu", "php_student_gpu"} <= names
    for path in shipped():
        assert isinstance(load_train_config(path), TrainConfig)


def test_paper_scale_values() -> None:
    teacher, student = load_train_config("php_teacher_gpu"), load_train_config("php_student_gpu")
    for cfg in (teacher, student):
        assert cfg.env.num_envs == 16384
        assert cfg.run.max_iterations == 20000
        assert cfg.policy.actor_hidden == cfg.policy.critic_hidden == [2048, 1024, 512, 256, 128]
        assert cfg.policy.activation == "elu"
        assert cfg.termination.tracking_error_m == 0.5
    assert student.ppo.learning_rate == 3e-4
    assert student.distill.enabled and student.distill.dagger_coef == DAGGER_COEF == 10.0
    assert not student.sampling.adaptive and teacher.sampling.adaptive
    hybrid = student.hybrid_config()
    assert (hybrid.num_epochs, hybrid.num_mini_batches, hybrid.learning_rate) == (2, 96, 3e-4)


def test_smoke_is_toy_sized() -> None:
    cfg = load_train_config("smoke_cpu")
    assert cfg.env.num_envs <= 16 and cfg.run.max_iterations <= 5 and cfg.run.device == "cpu"
    assert max(cfg.policy.actor_hidden) <= 128


def _write(tmp_path: Path, data: dict) -> Path:
    """``data`` as a config file, of the php_teacher task unless it names another."""
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({"task": "php_teacher", **data}))
    return path


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"env": {"num_envs": "many"}}, "env.num_envs"),  # wrong type
        ({"env": {"num_envs": 2.5}}, "env.num_envs"),  # not an integer
        ({"ppo": {"use_clipped_value_loss": 1}}, "ppo.use_clipped_value_loss"),  # int for bool
        ({"policy": {"actor_hidden": 512}}, "policy.actor_hidden"),  # scalar for list
        ({"policy": {"actor_hidden": [512, "wide"]}}, "policy.actor_hidden"),  # bad list item
        ({"env": {"num_envs": 0}}, "env.num_envs"),  # out of range
        ({"ppo": {"gamma": 1.5}}, "ppo.gamma"),
        ({"reward": {"weight_joint_limit": 10.0}}, "reward.weight_joint_limit"),  # a penalty must be <= 0
        ({"run": {"device": "tpu"}}, "run.device"),  # not a choice
        ({"randomization": {"static_friction": [1.3, 0.4]}}, "randomization.static_friction"),  # lo > hi
        ({"randomization": {"push_max_vel": [0.1, 0.1]}}, "randomization.push_max_vel"),  # wrong length
        ({"env": {"physics_dt_s": 0.003}}, "env.physics_dt_s"),  # does not divide 20 ms
        ({"ppo": {"learning_rate": 0.5}}, "ppo.learning_rate"),  # outside [min_lr, max_lr]
        ({"env": {"num_envs": 2}, "ppo": {"num_steps_per_env": 2, "num_mini_batches": 8}}, "ppo.num_mini_batches"),
        ({"kind": "student"}, "distill.enabled"),
        ({"termination": {"relaxed_tracking_error_m": 0.3}}, "termination.relaxed_tracking_error_m"),
    ],
)
def test_bad_value_names_the_key(tmp_path: Path, data: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_train_config(_write(tmp_path, data))


def test_unknown_keys_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ppo: unknown keys \['learning_rat'\]"):
        load_train_config(_write(tmp_path, {"ppo": {"learning_rat": 1e-3}}))
    with pytest.raises(ConfigError, match=r"unknown keys \['trainer'\]"):
        load_train_config(_write(tmp_path, {"trainer": {}}))


def test_message_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, {"env": {"num_envs": -1}})
    with pytest.raises(ConfigError, match=str(path)):
        load_train_config(path)


def test_train_run_gives_a_yaml_error_as_one_line_naming_the_file(tmp_path: Path, capsys) -> None:
    from parkour_bringup.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("task: php_teacher\nenv:\n  num_envs: [4\n")
    assert main(["train", "run", "--config", str(bad), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"parkour train: error: {bad}:4:1: not valid YAML: expected ',' or ']', but got '<stream end>' "
                   "(while parsing a flow sequence at 3:13)"]  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_overrides_are_checked() -> None:
    assert load_train_config("smoke_cpu", {"env.num_envs": 4}).env.num_envs == 4
    with pytest.raises(ConfigError, match=r"env\.num_envs"):
        load_train_config("smoke_cpu", {"env.num_envs": "four"})


def test_missing_file_lists_the_shipped_configs() -> None:
    with pytest.raises(ConfigError, match="smoke_cpu"):
        load_train_config("no_such_config")


def test_describe_lists_every_section() -> None:
    lines = describe_train_config()
    assert any(line.startswith("ppo.num_mini_batches: int") for line in lines)
    assert any(line.startswith("randomization.static_friction: list") for line in lines)
