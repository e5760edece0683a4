"""The h1_walk task: its gait clock is the runtime's, its rewards read what they say, and a tiny run exports a
bundle the runtime runs with the targets training applied."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parkour_core.gait import GaitClock
from training.tasks.h1_walk import rewards
from training.tasks.h1_walk.config import H1WalkTrainConfig, nominal_config
from training.tasks.h1_walk.env import POLICY_TERMS, H1WalkEnv

STILL = {"velocity.push_interval_s": 1e9, "velocity.resample_s": 1e9}  # no pushes, one command an episode


@pytest.fixture(scope="module")
def env():
    e = H1WalkEnv(nominal_config({"env.num_envs": 3, **STILL}), nthread=1)
    yield e
    e.close()


def test_the_gait_clock_of_every_environment_is_the_runtimes(env):
    """The phase each robot observes is what the runtime's clock gives for the same commands, stop included."""
    start = sum(t.dims for t in POLICY_TERMS[: [t.name for t in POLICY_TERMS].index("sin_phase")])
    env.reset(np.arange(env.num_envs))
    env.command[:] = [0.5, 0.0, 0.0]
    env.gait.advance(env.command)  # as at construction: the first observation's phase
    clock = GaitClock(env.velocity.gait_period_s, env.dt_s)
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
    from training.tasks.h1_walk.env import ACTION_SCALE

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
        foot_height_m=np.zeros((n, 2)), foot_contact=np.ones((n, 2), dtype=bool), foot_vel_xy=np.zeros((n, 2, 2)),
        torque=np.zeros((n, 2)),
    )  # fmt: skip
    return dataclasses.replace(st, **changes)


def _context(n: int, **changes) -> rewards.Context:
    ctx = rewards.Context(
        command=np.zeros((n, 3)), gait_phase=np.full((n, 2), np.pi), action=np.zeros((n, 2)),
        prev_action=np.zeros((n, 2)), target_excess=np.zeros((n, 2)), default_q=np.zeros(2),
        soft_min=np.full(2, -1.0), soft_max=np.full(2, 1.0),
        hip_joints=np.array([0]), base_height_target_m=1.0, pose_weights=np.array([0.0, 1.0]),
        air_time_s=np.zeros((n, 2)), first_contact=np.zeros((n, 2), dtype=bool), swing_s=0.4,
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


def test_progress_pays_speed_along_the_command_up_to_the_command_and_nothing_at_rest():
    command = np.array([[0.5, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, -0.4, 0.0], [0.0, 0.0, 0.5]])
    velocity = np.array([[0.3, 0.2, 0.0], [0.9, 0.0, 0.0], [0.0, 0.4, 0.0], [0.3, 0.0, 0.0]])
    got = rewards.terms(_state(4, base_lin_vel=velocity), _context(4, command=command))["progress"]
    # along the command only; capped at the commanded speed; backwards costs; no planar command: 0
    np.testing.assert_allclose(got, [0.3, 0.5, -0.4, 0.0])


def test_the_feet_follow_the_clock_lifted_in_swing_and_still_in_stance():
    """feet_phase's target: 0 through stance, SWING_HEIGHT_M at mid-swing; a foot that stays down in swing
    earns less; a sliding foot in contact, a short flight and a moved arm cost."""
    phases = np.linspace(-np.pi, np.pi, 361)
    target = rewards.swing_target(phases)
    assert np.all(target[~rewards.swinging(phases)] == 0.0) and target.max() == pytest.approx(rewards.SWING_HEIGHT_M)
    assert rewards.swing_target(np.array(0.0)) == pytest.approx(rewards.SWING_HEIGHT_M)
    swing = _context(2, gait_phase=np.array([[0.0, np.pi], [0.0, np.pi]]))
    lifted = _state(2, foot_height_m=np.array([[rewards.SWING_HEIGHT_M, 0.0], [0.0, 0.0]]))
    phase = rewards.feet_phase(lifted, swing)
    assert phase[0] == pytest.approx(1.0) and phase[1] == pytest.approx(np.exp(-(rewards.SWING_HEIGHT_M**2) / 0.01))
    sliding = _state(1, foot_vel_xy=np.array([[[0.3, 0.4], [0.0, 0.0]]]))
    assert rewards.feet_slip(sliding, _context(1))[0] == pytest.approx(0.25)
    flying = dataclasses.replace(sliding, foot_contact=np.zeros((1, 2), dtype=bool))
    assert rewards.feet_slip(flying, _context(1))[0] == 0.0
    walk = np.array([[0.5, 0.0, 0.0]])
    touchdown = _context(1, command=walk, air_time_s=np.array([[0.1, 0.0]]), first_contact=np.array([[True, False]]))
    assert rewards.feet_air_time(_state(1), touchdown)[0] == pytest.approx(0.1 - rewards.AIR_TIME_S)
    long = dataclasses.replace(touchdown, air_time_s=np.array([[2.0, 0.0]]))
    assert rewards.feet_air_time(_state(1), long)[0] == pytest.approx(0.4 - rewards.AIR_TIME_S)  # capped at swing_s
    assert rewards.feet_air_time(_state(1), dataclasses.replace(long, command=np.zeros((1, 3))))[0] == 0.0
    assert rewards.upper_pose(_state(1, q=np.array([[0.5, 0.5]])), _context(1))[0] == pytest.approx(0.25)


def test_the_weights_name_every_term_and_a_step_is_worth_at_least_nothing():
    values = rewards.terms(_state(1), _context(1))
    rewards.total(values, rewards.Weights())
    with pytest.raises(ValueError, match="alive"):
        rewards.total({k: v for k, v in values.items() if k != "alive"}, rewards.Weights())
    costly = {**values, "orientation": np.array([10.0])}
    assert rewards.total(costly, rewards.Weights())[0] == 0.0
    assert rewards.total(costly, rewards.Weights(), only_positive=False)[0] < 0.0


def test_contact_is_mujocos_and_a_body_on_the_floor_ends_the_episode():
    """Robot 0 stands (both soles on the floor), robot 1 stands on its left foot, robot 2 lies on its back."""
    env = H1WalkEnv(nominal_config({"env.num_envs": 3, **STILL}), nthread=1)
    try:
        zero, z = np.zeros(3), env.standing_height_m - 0.01  # soles 4 mm into the floor
        q = env.default_q.copy()
        env.sim.set_state(0, [0, 0, z], [1, 0, 0, 0], q, zero, zero, np.zeros(19))
        raised = q.copy()
        raised[env.robot.joint_names.index("right_hip_pitch_joint")] = -0.6
        raised[env.robot.joint_names.index("right_knee_joint")] = 1.2
        env.sim.set_state(1, [0, 0, z], [1, 0, 0, 0], raised, zero, zero, np.zeros(19))
        on_back = np.array([np.cos(-np.pi / 4), 0.0, np.sin(-np.pi / 4), 0.0])  # pitched 90 deg backwards
        env.sim.set_state(2, [0, 0, 0.05], on_back, q, zero, zero, np.zeros(19))
        st = env.state()
        assert st.foot_contact[0].tolist() == [True, True] and st.foot_contact[1].tolist() == [True, False]
        assert env.touched.tolist() == [False, False, True]
        assert st.foot_height_m[1, 1] > 0.05
        _, _, done, info = env.step(np.zeros((3, env.num_actions)))
        assert info["fell"][2] and done[2] and not info["fell"][0]
    finally:
        env.close()


def test_the_command_ranges_grow_with_tracking():
    env = H1WalkEnv(nominal_config({"env.num_envs": 8, "velocity.curriculum_start": 0.5}), nthread=1)
    try:
        assert env.command_ranges()[0] == (-0.25, 0.5) and np.all(np.abs(env.command[:, 0]) <= 0.5)
        env.update_curriculum(0.5)
        assert env.level == 0.5
        for _ in range(10):
            env.update_curriculum(0.9)
        assert env.level == 1.0 and env.command_ranges()[2] == (-1.0, 1.0)
    finally:
        env.close()


def test_the_policy_sees_noise_and_the_critic_the_clean_state():
    env = H1WalkEnv(nominal_config({"env.num_envs": 2, "velocity.obs_noise": 1.0}), nthread=1)
    try:
        obs, _, _, _ = env.step(np.zeros((2, env.num_actions)))
        clean = env.observe()
        size = env.policy_size
        np.testing.assert_array_equal(obs["critic"], clean["critic"])
        noise = obs["policy"] - clean["policy"]
        assert np.all(np.abs(noise) <= env.noise_scale + 1e-6) and np.any(noise != 0.0)
        assert obs["critic"].shape[1] == size + 4
    finally:
        env.close()


def _comparable(rows: list[dict]) -> str:
    import json

    from training.rl.runner import TIMING_KEYS

    return json.dumps([{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rows], sort_keys=True)


def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path):
    """2 iterations + a resume of 2 = 4 iterations: every row (timings aside) and the weights."""
    import torch

    from training.rl.runner import LATEST
    from training.rl.train import resume, train

    whole = train("h1_walk_tiny", tmp_path / "whole", {"run.max_iterations": 4})
    split = tmp_path / "split"
    train("h1_walk_tiny", split, {"run.max_iterations": 2})
    resumed = resume(split, {"run.max_iterations": 2})
    assert _comparable(resumed["iterations"]) == _comparable(whole["iterations"])
    a = torch.load(tmp_path / "whole" / LATEST, weights_only=False)
    b = torch.load(split / LATEST, weights_only=False)
    for name, value in a["actor_state_dict"].items():
        torch.testing.assert_close(b["actor_state_dict"][name], value, rtol=0, atol=0, msg=name)


def test_a_tiny_run_exports_a_bundle_the_runtime_runs_as_trained(tmp_path, monkeypatch):
    from parkour_core.bundle import load_bundle
    from training.rl.train import train

    monkeypatch.setattr("training.rl.runner.git_commit", lambda: "commit-at-the-runs-start")
    result = train("h1_walk_tiny", tmp_path)
    bundle = load_bundle(tmp_path / "bundle")
    assert bundle.manifest.robot == "h1" and bundle.manifest.gait_period_s == 0.8
    assert bundle.manifest.provenance["runtime_target_error_rad"] < 1e-4
    assert len(result["iterations"]) == 2 and (tmp_path / "curves.png").is_file()
    # The manifest names the training's commit (taken when the run started) and its env-steps.
    runs = bundle.manifest.provenance["runs"]
    assert [(r["commit"], r["iterations"]) for r in runs] == [("commit-at-the-runs-start", 2)]
    assert bundle.manifest.provenance["env_steps"] == runs[0]["env_steps"] > 0


def test_an_export_whose_runtime_reads_other_observations_writes_no_manifest(tmp_path, monkeypatch):
    """Break-check of the export's runtime check: the manifest lists the terms in another order."""
    import training.tasks.h1_walk.bundle as bundle_module
    from parkour_core.bundle import BundleError
    from training.configs.schema import load_train_config
    from training.rl.env import NumpyVecEnv
    from training.rl.runner import Runner
    from training.tasks.h1_walk.task import H1WalkTask

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


def test_an_h1_task_on_the_g1_is_refused_and_a_g1_task_on_the_h1():
    from training.configs.schema import ConfigError, load_train_config

    with pytest.raises(ConfigError, match=r"env\.robot: 'g1' with task h1_walk: it trains the h1"):
        load_train_config("h1_walk_tiny", {"env.robot": "g1"})
    with pytest.raises(ConfigError, match=r"env\.robot: 'h1' with task climb_teacher: it trains the g1"):
        load_train_config("climb_teacher_tiny", {"env.robot": "h1"})


def test_reward_weights_are_set_by_name_and_a_misspelt_one_is_refused():
    from training.configs.schema import ConfigError, load_train_config

    cfg = load_train_config("h1_walk_tiny", {"velocity.reward_weights.feet_phase": 3})
    assert isinstance(cfg, H1WalkTrainConfig)
    weights = cfg.velocity.weights()
    assert weights.feet_phase == 3.0 and weights.lin_vel == rewards.Weights().lin_vel
    with pytest.raises(ConfigError, match="feet_phaze"):
        load_train_config("h1_walk_tiny", {"velocity.reward_weights": {"feet_phaze": 1.0}})


def test_a_run_started_from_a_bundle_acts_as_the_bundle(tmp_path):
    """run.init naming an h1 bundle: the actor's mean action is the bundle's on the same observations."""
    import onnxruntime as ort
    import torch
    from rsl_rl.models import MLPModel

    from training.configs.schema import load_train_config
    from training.rl.env import NumpyVecEnv
    from training.rl.runner import Runner
    from training.tasks.h1_walk.task import H1WalkTask

    cfg = load_train_config("h1_walk", {"run.init": "models/h1_walk", "env.num_envs": 2})
    task = H1WalkTask(cfg)
    try:
        env = NumpyVecEnv(task, "cpu", cfg.as_dict())
        runner = Runner(env, task.train_cfg(), tmp_path, "cpu", hooks=task, figures=task.figures)
        task.initialize(runner)
        actor = runner.alg.get_policy()
        assert isinstance(actor, MLPModel)
        obs = np.random.default_rng(0).normal(size=(5, task.env.last_obs["policy"].shape[1])).astype(np.float32)
        ours = actor.cpu().eval().as_onnx(verbose=False)(torch.from_numpy(obs)).detach().numpy()
        session = ort.InferenceSession("models/h1_walk/policy.onnx", providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        theirs = np.concatenate([session.run(None, {name: row[None]})[0] for row in obs])  # exported at batch 1
        np.testing.assert_allclose(ours, theirs, atol=1e-5)
    finally:
        task.close()


def test_a_bundle_of_another_contract_cannot_start_the_actor(tmp_path):
    from parkour_core.bundle import BundleError
    from training.configs.schema import load_train_config
    from training.rl.env import NumpyVecEnv
    from training.rl.runner import Runner
    from training.tasks.h1_walk.task import H1WalkTask

    task = H1WalkTask(load_train_config("h1_walk_tiny", {"run.init": "models/student_walk"}))
    try:
        runner = Runner(NumpyVecEnv(task, "cpu", task.cfg.as_dict()), task.train_cfg(), tmp_path, "cpu", hooks=task)
        with pytest.raises(BundleError):
            task.initialize(runner)
    finally:
        task.close()
