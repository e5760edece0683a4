"""The h1_walk task: its gait clock is the runtime's, its rewards read what they say, and a tiny run exports a
bundle the runtime runs with the targets training applied."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parkour_core.gait import GaitClock
from training.h1_walk import rewards
from training.h1_walk.env import POLICY_TERMS, H1WalkConfig, H1WalkEnv


@pytest.fixture(scope="module")
def env():
    e = H1WalkEnv(H1WalkConfig(num_envs=3, nthread=1, push_interval_s=1e9, resample_s=1e9))
    yield e
    e.close()


def test_the_gait_clock_of_every_environment_is_the_runtimes(env):
    """The phase each robot observes is what the runtime's clock gives for the same commands, stop included."""
    start = sum(t.dims for t in POLICY_TERMS[: [t.name for t in POLICY_TERMS].index("sin_phase")])
    env.reset(np.arange(env.num_envs))
    env.command[:] = [0.5, 0.0, 0.0]
    env.gait.advance(env.command)  # as at construction: the first observation's phase
    clock = GaitClock(env.cfg.gait_period_s, env.dt_s)
    clock.advance(np.array([0.5, 0.0, 0.0]))
    commands = [np.array([0.5, 0.0, 0.0])] * 7 + [np.zeros(3)] * 3 + [np.array([0.0, 0.0, 0.3])] * 5
    for command in commands:
        env.command[:] = command
        obs, _, done, _ = env.step(np.zeros((env.num_envs, env.num_actions)))
        expected = clock.advance(command)
        assert not done.any()
        np.testing.assert_allclose(obs["policy"][:, start : start + 2], np.tile(np.sin(expected), (3, 1)), atol=1e-6)


def test_targets_are_clamped_as_the_supervisor_clamps_and_those_it_refuses_end_the_episode(env):
    """Robot 0 asks 0.45 rad past a joint's upper limit (clamped, kept), robot 1 0.55 rad (refused: on the
    robot the supervisor would take it out of ACTIVE), robot 2 the default pose."""
    from training.envs.supervision import SUPERVISOR
    from training.h1_walk.env import ACTION_SCALE

    assert SUPERVISOR.target_limit_tolerance_rad == 0.5
    env.reset(np.arange(env.num_envs))
    joint = 0
    actions = np.zeros((env.num_envs, env.num_actions))
    for i, past in enumerate((0.45, 0.55)):
        actions[i, joint] = (env.q_max[joint] + past - env.default_q[joint]) / ACTION_SCALE
    _, _, done, info = env.step(actions)
    applied = env.sim.datas[0].ctrl[env.sim.actuators]  # robot 1 is reset already
    assert applied[joint] == pytest.approx(env.q_max[joint] - SUPERVISOR.joint_margin_rad)
    assert info["refused"].tolist() == [False, True, False] and done.tolist() == [False, True, False]
    assert not info["fell"].any() and not info["time_outs"].any()
    penalty = rewards.terms(env.state(), env.context())["target_limits"]
    assert penalty[0] == pytest.approx(0.45) and penalty[2] == 0.0


def test_standing_means_both_feet_down_and_walking_alternates_them():
    assert not rewards.swinging(np.full((1, 2), np.pi)).any()
    phases = np.linspace(-np.pi, np.pi, 200, endpoint=False)
    swing = rewards.swinging(np.stack([phases, np.fmod(phases + 2 * np.pi, 2 * np.pi) - np.pi], axis=-1))
    assert not (swing[:, 0] & swing[:, 1]).any()  # never both in the air
    assert 0.4 < swing[:, 0].mean() < 0.5


def _state(n: int, **changes) -> rewards.State:
    st = rewards.State(
        q=np.zeros((n, 2)), dq=np.zeros((n, 2)), root_quat=np.tile([1.0, 0, 0, 0], (n, 1)),
        gravity=np.tile([0.0, 0.0, -1.0], (n, 1)),
        base_lin_vel=np.zeros((n, 3)), base_ang_vel=np.zeros((n, 3)), base_height_m=np.full(n, 1.0),
        foot_height_m=np.zeros((n, 2)), foot_contact=np.ones((n, 2), dtype=bool),
    )  # fmt: skip
    return dataclasses.replace(st, **changes)


def _context(n: int, **changes) -> rewards.Context:
    ctx = rewards.Context(
        command=np.zeros((n, 3)), gait_phase=np.full((n, 2), np.pi), action=np.zeros((n, 2)),
        prev_action=np.zeros((n, 2)), target_excess=np.zeros((n, 2)), default_q=np.zeros(2),
        soft_min=np.full(2, -1.0), soft_max=np.full(2, 1.0),
        hip_joints=np.array([0]), base_height_target_m=1.0,
    )  # fmt: skip
    return dataclasses.replace(ctx, **changes)


def test_tracking_pays_the_commanded_velocity_and_the_gait_pays_feet_on_their_phase():
    command = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    st = _state(2, base_lin_vel=np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    t = rewards.terms(st, _context(2, command=command))
    assert t["lin_vel"][0] == pytest.approx(1.0) and t["lin_vel"][1] == pytest.approx(np.exp(-4.0))
    # standing clock: both feet should be down; one lifted foot loses half the contact reward
    lifted = _state(1, foot_contact=np.array([[True, False]]), foot_height_m=np.array([[0.0, 0.05]]))
    assert rewards.terms(lifted, _context(1))["contact"][0] == 1.0
    assert rewards.terms(_state(1), _context(1))["contact"][0] == 2.0
    # a swinging foot left on the floor is penalised by its missing lift
    swing = _context(1, gait_phase=np.array([[0.0, np.pi]]))
    dragged = _state(1, foot_contact=np.array([[False, True]]), foot_height_m=np.array([[0.0, 0.0]]))
    assert rewards.terms(dragged, swing)["swing_height"][0] == pytest.approx(rewards.SWING_HEIGHT_M**2)


def test_the_weights_name_every_term():
    values = rewards.terms(_state(1), _context(1))
    rewards.total(values, rewards.Weights())
    with pytest.raises(ValueError, match="alive"):
        rewards.total({k: v for k, v in values.items() if k != "alive"}, rewards.Weights())


def test_a_tiny_run_exports_a_bundle_the_runtime_runs_as_trained(tmp_path):
    from parkour_core.bundle import load_bundle
    from training.rl.train import train

    result = train("h1_walk_tiny", tmp_path)
    bundle = load_bundle(tmp_path / "bundle")
    assert bundle.manifest.robot == "h1" and bundle.manifest.gait_period_s == 0.8
    assert bundle.manifest.provenance["runtime_target_error_rad"] < 1e-4
    assert len(result["iterations"]) == 2 and (tmp_path / "curves.png").is_file()


def test_an_export_whose_runtime_reads_other_observations_writes_no_manifest(tmp_path, monkeypatch):
    """Break-check of the export's runtime check: the manifest lists the terms in another order."""
    import training.h1_walk.bundle as bundle_module
    from parkour_core.bundle import BundleError
    from training.configs.schema import load_train_config
    from training.h1_walk.task import H1WalkTask
    from training.rl.env import NumpyVecEnv
    from training.rl.runner import Runner

    cfg = load_train_config("h1_walk_tiny")
    task = H1WalkTask(cfg)
    runner = Runner(NumpyVecEnv(task), task.train_cfg(), tmp_path)
    terms = bundle_module.POLICY_TERMS
    monkeypatch.setattr(bundle_module, "POLICY_TERMS", (terms[1], terms[0], *terms[2:]))
    try:
        with pytest.raises(BundleError, match="runtime's targets differ"):
            task.finish(runner, tmp_path, "h1_walk_tiny")
    finally:
        task.close()
    assert not (tmp_path / "bundle" / "manifest.json").exists()


def test_an_h1_task_on_the_g1_is_refused():
    from training.configs.schema import ConfigError, load_train_config

    with pytest.raises(ConfigError, match="the H1 trains h1_walk"):
        load_train_config("h1_walk_tiny", {"env.robot": "g1"})
