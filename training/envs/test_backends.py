"""Every task whose MDP also runs on MuJoCo-Warp (its ``Task.backends``) observes, rewards and terminates there as
on the CPU, from the same states.

Each such task's tiny preset is built twice with the same seed, ``env.backend`` ``mujoco_cpu`` and
``mujoco_warp`` (warp's CPU device). Both take the same random actions for :data:`STEPS` steps; the MuJoCo-Warp
physics step is replaced by loading the state the CPU physics reached, so each step's MDP (observations,
rewards, terminations, and the resets, commands and draws that follow them) reads one physical state, each
backend through its own reads (positions, velocities, sensors and contacts after its own refresh, in float32 on
MuJoCo-Warp). Runs wherever ``mujoco_warp`` is installed (``make setup`` installs it); skipped without it.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from training import registry
from training.configs import load_train_config

pytest.importorskip("mujoco_warp")

STEPS = 200
TOLERANCE = 1e-5
ACTION_STD = 1.0  # random actions this large topple robots and push targets past limits: resets happen


def warp_tasks() -> list[str]:
    return sorted(name for name, task in registry.tasks().items() if "mujoco_warp" in task.backends)


def tiny_preset(task: registry.Task) -> str:
    names = [p.stem for p in task.preset_files() if p.stem.endswith("_tiny")]
    assert names, f"task {task.name} has no *_tiny preset"
    return names[0]


def build(name: str, backend: str) -> Any:
    task = registry.get_task(name)
    cfg = load_train_config(tiny_preset(task), {"env.backend": backend})
    return task.runner_class()(cfg)


def lockstep(cpu_task: Any, warp_task: Any) -> None:
    """After each CPU physics step, the MuJoCo-Warp physics takes the CPU's state instead of stepping."""
    cpu, warp = cpu_task.physics, warp_task.physics
    reached: dict[str, np.ndarray] = {}
    cpu_step = cpu.step

    def step_cpu(q_targets, push_force_w=None) -> None:
        cpu_step(q_targets, push_force_w)
        reached["states"] = cpu.get_states()

    def step_warp(q_targets, push_force_w=None) -> None:
        warp.set_states(reached["states"])

    cpu.step, warp.step = step_cpu, step_warp


def test_some_task_runs_on_mujoco_warp() -> None:
    assert "h1_walk" in warp_tasks()


@pytest.mark.parametrize("name", warp_tasks())
def test_the_task_trains_on_mujoco_warp_through_parkour_train_run(name: str, tmp_path) -> None:
    """Two iterations through the CLI: the runner, the checkpoint and the export, as on the CPU."""
    from parkour_bringup.cli import main

    config = tiny_preset(registry.get_task(name))
    args = ["train", "run", "--config", config, "--backend", "mujoco_warp", "--out", str(tmp_path / "run")]
    assert main(args) == 0
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["overrides"]["env.backend"] == "mujoco_warp"
    assert (tmp_path / "run" / "model_latest.pt").exists()


@pytest.mark.parametrize("name", warp_tasks())
def test_backends_agree_from_the_same_states(name: str) -> None:
    cpu_task, warp_task = build(name, "mujoco_cpu"), build(name, "mujoco_warp")
    try:
        lockstep(cpu_task, warp_task)
        rng = np.random.default_rng(0)
        worst: dict[str, float] = {}
        dones = 0
        for k in range(STEPS):
            actions = rng.normal(0.0, ACTION_STD, (cpu_task.num_envs, cpu_task.num_actions))
            obs_cpu, reward_cpu, done_cpu, _ = cpu_task.step(actions)
            obs_warp, reward_warp, done_warp, _ = warp_task.step(actions)
            np.testing.assert_array_equal(done_warp, done_cpu, err_msg=f"{name}: terminations differ at step {k}")
            dones += int(done_cpu.sum())
            for group in obs_cpu:
                worst[group] = max(worst.get(group, 0.0), float(np.abs(obs_warp[group] - obs_cpu[group]).max()))
            worst["reward"] = max(worst.get("reward", 0.0), float(np.abs(reward_warp - reward_cpu).max()))
        assert set(worst) == {*obs_cpu, "reward"}
        assert max(worst.values()) <= TOLERANCE, f"{name}: largest differences {worst}"
        assert dones > 0, f"{name}: no episode ended in {STEPS} steps; the resets went unchecked"
    finally:
        cpu_task.close()
        warp_task.close()
