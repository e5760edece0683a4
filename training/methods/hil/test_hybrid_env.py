"""The hybrid env: tracking and adversarial envs in one batch with one observation layout; the
features read a simulated robot and a reference the same way; the adapter's goal is the env's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from training.envs.privileged import PRIVILEGED_TERMS, PrivilegedInput, build_privileged, term_slices
from training.envs.randomization import NOMINAL
from training.envs.reference import Terrain, squat_reference, with_terrain
from training.envs.tracking import TrackingConfig
from training.methods.hil.features import (
    BLOCK_SLICES,
    STATE_DIM,
    TRANSITION_DIM,
    MotionLibrary,
    env_states,
    reference_states,
    state_features,
)
from training.methods.hil.hybrid_env import (
    ADVERSARIAL,
    GOAL_DIM,
    OBS_DIM,
    TRACKING,
    HybridEnv,
    HybridEnvConfig,
    _heading_goal,
    hybrid_observation,
    tracking_goal_from_privileged,
)
from training.methods.hil.task import HILTeacherAdapter
from training.motion_matching import quat
from training.php_teacher.task import TrackingTeacher

BOX = Terrain(np.array([[0.8, 0.0, 0.1]]), np.array([[0.2, 0.5, 0.1]]), np.array([0.3]))


@pytest.fixture(scope="module")
def reference():
    return with_terrain(squat_reference(seconds=1.0), BOX, "squat_box")


def test_tracking_goal_is_read_exactly_from_the_privileged_observation() -> None:
    rng = np.random.default_rng(0)
    n, j = 16, 29
    pelvis_q = quat.normalize(rng.normal(size=(n, 4)))
    ref_q = quat.normalize(rng.normal(size=(n, 4)))
    pelvis_pos, ref_pos = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    zeros = np.zeros((n, j))
    inp = PrivilegedInput(
        zeros, zeros, ref_pos, ref_q, pelvis_pos, pelvis_q, rng.normal(size=(n, 3)), rng.normal(size=(n, 3)),
        zeros, zeros, np.zeros(j), zeros, np.zeros((n, 1, 3)), -np.ones((n, 1, 3)), np.zeros((n, 1)),
    )  # fmt: skip
    p = build_privileged(inp).astype(np.float64)
    expected = _heading_goal(pelvis_pos, quat.yaw(pelvis_q), ref_pos, quat.yaw(ref_q))
    np.testing.assert_allclose(tracking_goal_from_privileged(p), expected, atol=1e-5)
    obs = hybrid_observation(p)
    assert obs.shape == (n, OBS_DIM) and obs.dtype == np.float32
    s = term_slices(PRIVILEGED_TERMS)
    np.testing.assert_allclose(obs[:, -GOAL_DIM - 121 : -GOAL_DIM], p[:, s["height_scan"]], atol=1e-6)


def test_features_read_a_simulated_robot_like_its_reference(reference) -> None:
    env = HybridEnv([reference], TrackingConfig(num_envs=2, nthread=1, randomization=NOMINAL), HybridEnvConfig(1, 1))
    try:
        env.env.reset(start_frames=np.array([0, 20]), ref_ids=np.array([0, 0]))
        sim = state_features(env_states(env.env))
        ref = state_features(reference_states(reference, np.array([0, 20]), env.env.cfg.max_boxes))
    finally:
        env.close()
    assert sim.shape == ref.shape == (2, STATE_DIM)
    for block in ("joint_pos", "joint_vel", "root_height", "root_lin_vel_h", "gravity_b", "key_bodies_h", "scene"):
        np.testing.assert_allclose(sim[:, BLOCK_SLICES[block]], ref[:, BLOCK_SLICES[block]], atol=2e-3, err_msg=block)
    # The box is 0.6-1.0 m ahead (the squat faces +x): the forward scene samples see its 0.2 m top.
    scene = ref[0, BLOCK_SLICES["scene"]]
    assert scene[0] == 0.0 and np.max(scene) == pytest.approx(0.2, abs=1e-6)
    library = MotionLibrary([reference], policy_dt_s=0.02, slots=8)
    assert library.transitions.shape == (reference.num_frames - 1, TRANSITION_DIM)


def test_hybrid_env_batches_both_kinds_with_one_observation_layout(reference) -> None:
    calls: list[int] = []

    def style(x: np.ndarray) -> np.ndarray:
        calls.append(len(x))
        assert x.shape[1] == TRANSITION_DIM
        return np.full(len(x), 0.25)

    cfg = HybridEnvConfig(num_tracking=2, num_adversarial=2)
    tracking = TrackingConfig(num_envs=99, nthread=1, randomization=NOMINAL)  # num_envs comes from cfg
    env = HybridEnv([reference], tracking, cfg, style_reward_fn=style)
    policy = TrackingTeacher(torch.nn.Sequential(torch.nn.Linear(OBS_DIM, 16), torch.nn.ELU(), torch.nn.Linear(16, 29)))
    try:
        obs = env.reset()
        assert obs.shape == (4, OBS_DIM) and env.num_envs == 4
        assert list(env.kind) == [TRACKING, TRACKING, ADVERSARIAL, ADVERSARIAL]
        # Tracking envs: the goal a privileged-observation adapter computes is the env's own.
        privileged = env.env.observe()
        np.testing.assert_allclose(obs[:2], hybrid_observation(privileged)[:2], atol=1e-6)
        adapter = HILTeacherAdapter(policy)
        with torch.no_grad():
            np.testing.assert_allclose(
                adapter.act_inference(torch.from_numpy(privileged))[:2].numpy(),
                policy.act_inference(torch.from_numpy(obs))[:2].numpy(),
                atol=1e-6,
            )
        # Adversarial envs: the goal points at the clip's last root position.
        target = reference.root_pos[-1]
        sim = env.env.sim
        expected = _heading_goal(sim.root_pos, quat.yaw(sim.root_quat), np.tile(target, (4, 1)), np.zeros(4))
        np.testing.assert_allclose(obs[2:, -GOAL_DIM:-2], expected[2:, :3], atol=1e-5)
        for _ in range(3):
            obs, reward, done, info = env.step(np.zeros((4, 29)))
            assert obs.shape == (4, OBS_DIM) and np.all(np.isfinite(obs))
            assert info["transitions"].shape == (4, TRANSITION_DIM)
            np.testing.assert_allclose(reward[:2], info["tracking_reward"][:2])
            np.testing.assert_allclose(reward[2:], 0.5 * info["task_reward"][2:] + 0.5 * 0.25)
            assert np.all((info["task_reward"] >= 0) & (info["task_reward"] <= 1))
            assert not done.any()  # the PD squat neither falls nor loses the reference in 3 steps
        assert calls == [2, 2, 2]  # the style reward is asked for the adversarial envs only
    finally:
        env.close()
