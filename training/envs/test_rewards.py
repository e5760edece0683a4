import numpy as np
import pytest

from training.envs import rewards
from training.motion_matching import quat


def _bodies(rng: np.random.Generator, n: int = 3, b: int = 5) -> rewards.BodyState:
    q = quat.normalize(rng.normal(size=(n, b, 4)))
    return rewards.BodyState(rng.normal(size=(n, b, 3)), q, rng.normal(size=(n, b, 3)), rng.normal(size=(n, b, 3)))


def _input(robot: rewards.BodyState, ref: rewards.BodyState, **kw) -> rewards.RewardInput:
    n = robot.pos.shape[0]
    args = {
        "joint_pos": np.zeros((n, 2)),
        "joint_min": np.array([-1.0, -1.0]),
        "joint_max": np.array([1.0, 1.0]),
        "action": np.zeros((n, 2)),
        "prev_action": np.zeros((n, 2)),
        "self_contacts": np.zeros(n),
    }
    args.update(kw)
    return rewards.RewardInput(robot=robot, reference=ref, anchor=0, **args)


def test_every_tracking_term_is_one_at_zero_error_and_penalties_zero() -> None:
    state = _bodies(np.random.default_rng(0))
    terms = rewards.reward_terms(_input(state, state))
    for name in rewards.TRACKING_TERMS:
        np.testing.assert_allclose(terms[name], 1.0, atol=1e-9)
    for name in rewards.PENALTY_TERMS:
        np.testing.assert_allclose(terms[name], 0.0)
    assert rewards.total_reward(terms) == pytest.approx(6.0)


def test_kernel_is_exp_minus_one_at_one_sigma() -> None:
    cfg = rewards.RewardConfig()
    for name, sigma in [("body_pos", 0.3), ("body_ori", 0.4), ("body_lin_vel", 1.0), ("body_ang_vel", 3.14),
                        ("anchor_pos", 0.3), ("anchor_ori", 0.4)]:  # fmt: skip
        assert cfg.sigma(name) == sigma
        assert cfg.weight(name) == 1.0
        assert rewards.gaussian(np.array(sigma**2), sigma) == pytest.approx(np.exp(-1.0))
    assert (cfg.weight_action_rate, cfg.weight_joint_limit, cfg.weight_self_contact) == (-0.1, -10.0, -0.5)


def test_a_pelvis_offset_of_one_sigma_costs_the_anchor_term_only() -> None:
    state = _bodies(np.random.default_rng(1))
    moved = rewards.BodyState(state.pos + np.array([0.3, 0.0, 0.0]), state.quat, state.lin_vel, state.ang_vel)
    terms = rewards.reward_terms(_input(moved, state))
    np.testing.assert_allclose(terms["anchor_pos"], np.exp(-1.0))
    np.testing.assert_allclose(terms["body_pos"], 1.0)  # bodies are compared re-anchored
    yaw = quat.from_yaw(0.4)
    turned = rewards.BodyState(state.pos, quat.mul(np.broadcast_to(yaw, state.quat.shape), state.quat),
                               state.lin_vel, state.ang_vel)  # fmt: skip
    terms = rewards.reward_terms(_input(turned, state))
    np.testing.assert_allclose(terms["anchor_ori"], np.exp(-1.0))
    slow = rewards.BodyState(state.pos, state.quat, state.lin_vel + np.array([0.0, 1.0, 0.0]), state.ang_vel)
    np.testing.assert_allclose(rewards.reward_terms(_input(slow, state))["body_lin_vel"], np.exp(-1.0))


def test_regularizers() -> None:
    state = _bodies(np.random.default_rng(2), n=2)
    q = np.array([[0.0, 0.0], [0.95, -1.2]])  # soft limits at +-0.9
    terms = rewards.reward_terms(
        _input(state, state, joint_pos=q, action=np.array([[1.0, 0.0], [0.0, 0.0]]), self_contacts=np.array([0, 3]))
    )
    np.testing.assert_allclose(terms["joint_limit"], [0.0, 0.05 + 0.3])
    np.testing.assert_allclose(terms["action_rate"], [1.0, 0.0])
    np.testing.assert_allclose(rewards.weighted(terms)["self_contact"], [0.0, -1.5])


def test_termination_at_the_threshold() -> None:
    err = np.array([0.0, 0.5, 0.5001, 0.99, 1.2])
    np.testing.assert_array_equal(rewards.terminated(err), [False, False, True, True, True])
    np.testing.assert_array_equal(rewards.terminated(err, threshold_m=1.0), [False, False, False, False, True])
    robot = np.zeros((1, 4, 3))
    ref = robot + np.array([0.0, 0.0, 0.5])
    np.testing.assert_allclose(rewards.tracking_error(robot, ref), [0.5])
