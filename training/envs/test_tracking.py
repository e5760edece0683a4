import dataclasses

import numpy as np
import pytest

from training.envs.randomization import NOMINAL
from training.envs.reference import squat_reference
from training.envs.tracking import G1_CONTRACT, TrackingConfig, TrackingEnv, frames_from_phases


@pytest.fixture(scope="module")
def squat():
    return squat_reference(seconds=2.0)


def _run(env: TrackingEnv, squat, mode: str, steps: int = 50) -> tuple[float, float]:
    env.reset(start_frames=np.array([0]), ref_ids=np.array([0]))
    total = 0.0
    for _ in range(steps):
        replay = env.contract.actions_for(squat.joint_pos[env.frame + 1])
        action = replay if mode == "replay" else np.zeros((1, 29))
        _, reward, done, info = env.step(action)
        total += float(reward[0])
        assert not done[0]
    return float(info["tracking_error"][0]), total


def test_replayed_reference_tracks_and_zero_actions_or_no_torque_do_not(squat) -> None:
    cfg = TrackingConfig(num_envs=1, randomization=NOMINAL, auto_reset=False, termination_m=10.0)
    env = TrackingEnv([squat], cfg)
    replay_err, replay_reward = _run(env, squat, "replay")
    hold_err, hold_reward = _run(env, squat, "zero")
    env.close()
    limp = dataclasses.replace(G1_CONTRACT, kp=G1_CONTRACT.kp * 0.0, kd=G1_CONTRACT.kd * 0.0)
    env = TrackingEnv([squat], cfg, contract=limp)
    limp_err, limp_reward = _run(env, squat, "zero")
    env.close()
    # 1 s of a 0.8 rad squat (the pelvis goes down 13 cm): replaying it as PD targets keeps the
    # mean body error at a few cm; holding the default pose (zero actions) does not follow it; with
    # no torque gravity folds the robot.
    assert replay_err < 0.08
    assert hold_err > 1.5 * replay_err
    assert limp_err > 0.2
    assert replay_reward > hold_reward > limp_reward


def test_reset_step_termination_and_auto_reset(squat) -> None:
    cfg = TrackingConfig(num_envs=3, randomization=NOMINAL, termination_m=0.5)
    env = TrackingEnv([squat], cfg)
    obs = env.reset(start_frames=np.array([0, 40, 95]))
    assert obs.shape == (3, env.num_obs) and np.all(np.isfinite(obs))
    np.testing.assert_array_equal(env.frame, [0, 40, 95])
    assert np.all(env.current_tracking_error() < 1e-6)  # a reference start state tracks exactly
    # Env 2 starts 5 frames before the end: truncated after 5 steps, then reset elsewhere.
    for _ in range(5):
        obs, _, done, info = env.step(np.zeros((3, 29)))
        assert set(info["reward_terms"]) >= {"body_pos", "anchor_ori", "action_rate", "self_contact"}
    assert done[2] and info["truncated"][2] and not info["terminated"][2]
    assert info["final_obs"].shape == (1, env.num_obs)
    assert info["episode_start_phase"][2] == pytest.approx(95 / 100)
    # A tiny threshold terminates everyone at the next step.
    env.termination_m = 1e-4
    _, _, done, info = env.step(np.zeros((3, 29)))
    assert np.all(done & info["terminated"])
    env.close()
    frames = frames_from_phases([squat], np.array([0, 0, 0]), np.array([0.0, 0.5, 1.0]), min_episode_frames=10)
    np.testing.assert_array_equal(frames, [0, 45, 90])


def test_seeded_runs_are_identical_with_randomization(squat) -> None:
    def run(seed: int) -> np.ndarray:
        env = TrackingEnv([squat], TrackingConfig(num_envs=2, seed=seed, nthread=2))
        env.reset()
        rng = np.random.default_rng(0)
        out = []
        for _ in range(10):
            obs, reward, _, _ = env.step(rng.normal(0, 0.2, size=(2, 29)))
            out.append(np.concatenate([obs.ravel(), reward]))
        env.close()
        return np.array(out)

    a, b = run(5), run(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, run(6))
