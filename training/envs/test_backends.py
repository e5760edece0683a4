"""Every task whose MDP also runs on MuJoCo-Warp (its ``Task.backends``) observes, rewards and terminates there as
on the CPU, from the same states.

Each such task's tiny preset is built twice with the same seed, ``env.backend`` ``mujoco_cpu`` and
``mujoco_warp`` (warp's CPU device). Both take the same random actions for :data:`STEPS` steps; the MuJoCo-Warp
physics steps are replaced by the CPU's (``WarpMujoco.follow``), so each step's MDP (observations,
rewards, terminations, and the resets, commands and draws that follow them) reads one physical state, each
backend through its own reads (positions, velocities, sensors and contacts after its own refresh, in float32 on
MuJoCo-Warp). Runs wherever ``mujoco_warp`` is installed (``make setup`` installs it); skipped without it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
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


@pytest.fixture(scope="module")
def teachers(tmp_path_factory) -> Callable[[str], dict[str, Any]]:
    """The overrides a task's tiny preset needs: for a task that ``distils`` another, that task's tiny preset
    trained once on the CPU (its ``teacher.pt``)."""
    trained: dict[str, Path] = {}

    def overrides(name: str) -> dict[str, Any]:
        teacher = registry.get_task(name).distils
        if not teacher:
            return {}
        if teacher not in trained:
            from parkour_bringup.cli import main

            out = tmp_path_factory.mktemp(teacher)
            assert main(["train", "run", "--config", tiny_preset(registry.get_task(teacher)), "--out", str(out)]) == 0
            trained[teacher] = out / "teacher.pt"
        return {"distill.teacher_checkpoints": [str(trained[teacher])]}

    return overrides


def build(name: str, backend: str, overrides: dict[str, Any]) -> Any:
    task = registry.get_task(name)
    cfg = load_train_config(tiny_preset(task), {**overrides, "env.backend": backend})
    return task.runner_class()(cfg)


def lockstep(cpu_task: Any, warp_task: Any) -> None:
    """After each CPU control step, the MuJoCo-Warp physics takes the CPU's physics steps instead of its own."""
    cpu, warp = cpu_task.physics, warp_task.physics
    reached: dict[str, np.ndarray] = {}
    cpu_step = cpu.step

    def step_cpu(q_targets, push_force_w=None) -> None:
        cpu_step(q_targets, push_force_w)
        reached["substeps"] = cpu.substep_states.copy()

    def step_warp(q_targets, push_force_w=None) -> None:
        warp.follow(reached["substeps"])

    cpu.step, warp.step = step_cpu, step_warp


def test_some_task_runs_on_mujoco_warp() -> None:
    assert "h1_walk" in warp_tasks()


@pytest.mark.parametrize("name", warp_tasks())
def test_the_task_trains_on_mujoco_warp_through_parkour_train_run(name: str, tmp_path, teachers) -> None:
    """Two iterations through the CLI: the runner, the checkpoint and the export, as on the CPU."""
    from parkour_bringup.cli import main

    config = tiny_preset(registry.get_task(name))
    args = ["train", "run", "--config", config, "--backend", "mujoco_warp", "--out", str(tmp_path / "run")]
    args += [f"--set={key}={json.dumps(value)}" for key, value in teachers(name).items()]
    assert main(args) == 0
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["overrides"]["env.backend"] == "mujoco_warp"
    assert (tmp_path / "run" / "model_latest.pt").exists()


@pytest.mark.parametrize("name", warp_tasks())
def test_backends_agree_from_the_same_states(name: str, teachers) -> None:
    cpu_task, warp_task = (build(name, backend, teachers(name)) for backend in ("mujoco_cpu", "mujoco_warp"))
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


def test_both_physics_read_the_same_boxes_feet_and_pushes() -> None:
    """The interface itself, where the tiny presets do not reach: boxes written per environment (a 10 cm slab
    under one robot, a yawed box against another's feet and shins, none under the third), what each reads of
    them (contacts of feet and other bodies with a box and the floor, self-contacts, bodies), and a push."""
    from parkour_core.robots import G1
    from training.envs.mujoco_cpu import BatchedMujoco
    from training.envs.mujoco_warp import WarpMujoco
    from training.envs.reference import Terrain

    slab = Terrain(np.array([[0.0, 0.0, 0.05]]), np.array([[0.4, 0.4, 0.05]]), np.array([0.0]))
    wall = Terrain(np.array([[0.14, 0.0, 0.2], [3.0, 0.0, 0.1]]), np.array([[0.05, 0.5, 0.2], [0.2, 0.2, 0.1]]),
                   np.array([0.3, 0.0]))  # fmt: skip
    terrains, lift = [slab, wall, Terrain()], [0.1, 0.0, 0.0]
    backends = [BatchedMujoco(3, G1, max_boxes=2, nthread=1), WarpMujoco(3, G1, max_boxes=2)]
    model = backends[0].base_model
    feet = [model.body(b).id for b in G1.foot_bodies]
    geom_part = np.where(model.geom_bodyid == 0, -1, 2)
    for k, body in enumerate(feet):
        geom_part[model.geom_bodyid == body] = k
    height = G1.standing_base_height_m - foot_clearance(backends[0], feet) - 0.002  # the soles 2 mm into the ground
    reads: list[dict[str, np.ndarray]] = []
    for sim in backends:
        for i, (terrain, dz) in enumerate(zip(terrains, lift, strict=True)):
            sim.set_terrain(i, terrain)
            zero, root = np.zeros(3), np.array([0.0, 0.0, height + dz])
            sim.set_state(i, root, np.array([1.0, 0.0, 0.0, 0.0]), G1.default_q, zero, zero, np.zeros(G1.num_joints))
        before = {
            "box": sim.contact_parts(geom_part, 3, int(sim.box_geoms[0])),
            "floor": sim.contact_parts(geom_part, 3, model.geom("floor").id),
            "self": sim.self_contacts(),
            "bodies": np.concatenate(sim.bodies(np.array(feet)), axis=-1),
        }
        sim.step(np.tile(G1.default_q, (3, 1)), np.tile([200.0, 0.0, 0.0], (3, 1)))
        reads.append(before | {"after": np.concatenate([sim.root_pos, sim.root_lin_vel_w], axis=-1)})
        sim.close()
    cpu, warp = reads
    # The course as built: feet on the slab and not the floor, something against the wall, the third on the floor.
    assert cpu["box"][0, :2].all() and not cpu["floor"][0].any() and cpu["box"][1].any()
    assert not cpu["box"][2].any() and cpu["floor"][2, :2].all()
    for name in ("box", "floor", "self"):
        np.testing.assert_array_equal(warp[name], cpu[name], err_msg=name)
    np.testing.assert_allclose(warp["bodies"], cpu["bodies"], atol=TOLERANCE)
    # One control step with the push on both: the robots standing on the slab and on the floor moved alike (float32
    # physics, a looser bound); the one whose feet start inside the wall is thrown out by each solver its own way.
    assert np.abs(cpu["after"][:, 3]).min() > 0.01
    np.testing.assert_allclose(warp["after"][[0, 2]], cpu["after"][[0, 2]], atol=1e-3)


def foot_clearance(sim: Any, feet: list[int]) -> float:
    """How far the lowest collision geom of ``feet`` (capsules lying flat) is above the floor at the standing
    height, in the default pose."""
    from parkour_core.robots import G1

    zero = np.zeros(3)
    sim.set_state(0, np.array([0.0, 0.0, G1.standing_base_height_m]), np.array([1.0, 0.0, 0.0, 0.0]), G1.default_q,
                  zero, zero, np.zeros(G1.num_joints))  # fmt: skip
    m, d = sim.base_model, sim.datas[0]
    collides = (m.geom_contype != 0) | (m.geom_conaffinity != 0)
    soles = np.flatnonzero(np.isin(m.geom_bodyid, feet) & collides)
    return float(np.min(d.geom_xpos[soles, 2] - m.geom_size[soles, 0]))


def test_the_gyro_is_the_base_rate_where_its_site_turns_with_the_base() -> None:
    """MuJoCo-Warp reads the base gyro as the free base's qvel[3:6] only where that is what the sensor measures."""
    import mujoco

    from parkour_core.robots import G1, H1
    from training.envs.mujoco_cpu import BatchedMujoco
    from training.envs.mujoco_warp import gyro_is_base_rate

    for robot in (G1, H1):
        sim = BatchedMujoco(1, robot, nthread=1)
        model = sim.base_model
        assert gyro_is_base_rate(model)
        site = int(model.sensor("base_gyro").objid[0])
        sim.set_state(0, np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0, 0.0]), robot.default_q,
                      np.zeros(3), np.array([0.3, -0.2, 0.5]), np.zeros(robot.num_joints))  # fmt: skip
        mujoco.mj_forward(model, sim.datas[0])
        assert np.abs(sim.datas[0].qvel[3:6]).max() > 0.1
        np.testing.assert_allclose(sim.gyro[0], sim.datas[0].qvel[3:6], atol=1e-12)  # what the sensor measures
        turned = copy.copy(model)
        turned.site_quat[site] = [np.cos(0.2), 0.0, 0.0, np.sin(0.2)]  # an IMU mounted yawed on the pelvis
        assert not gyro_is_base_rate(turned)
        sim.close()
