"""`parkour train run --backend` names the physics under a task's MDP: a task refuses, by name and in one line,
a backend its registration does not list, before anything runs."""

from __future__ import annotations

import pytest


def test_a_task_whose_mdp_runs_only_on_the_cpu_refuses_mujoco_warp_in_one_line(tmp_path, capsys, monkeypatch):
    """Every task runs on both backends, so one is registered here as a CPU-only task would be."""
    import dataclasses

    from parkour_bringup.cli import main
    from training import registry
    from training.configs import load_train_config

    config = "climb_teacher_tiny"
    registered = registry.get_task
    monkeypatch.setattr(
        registry, "get_task", lambda name: dataclasses.replace(registered(name), backends=("mujoco_cpu",))
    )

    out = tmp_path / "out"
    assert main(["train", "run", "--config", config, "--backend", "mujoco_warp", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    task = load_train_config(config).task
    assert err == [f"parkour train: error: {task} runs on env.backend mujoco_cpu, not mujoco_warp"]
    assert not out.exists()


def test_mjlab_is_no_longer_a_backend(capsys):
    from parkour_bringup.cli import main

    with pytest.raises(SystemExit):
        main(["train", "run", "--config", "php_teacher_tiny", "--backend", "mjlab", "--out", "unused"])
    assert "invalid choice: 'mjlab'" in capsys.readouterr().err
