import dataclasses

import numpy as np
import pytest

from parkour_core.obs import build_observation
from parkour_core.runner import RobotState, observation_input
from parkour_sim.depth_camera import DepthNoise
from training.envs.randomization import NOMINAL
from training.envs.reference import Terrain, standing_reference, with_terrain
from training.envs.student import CameraConfig, StudentConfig, StudentEnv, default_student_manifest
from training.envs.tracking import G1_CONTRACT, ActionContract, TrackingConfig


@pytest.fixture(scope="module")
def manifest():
    return default_student_manifest()  # imports training.export (torch): once per module


@pytest.fixture(scope="module")
def refs():
    stand = standing_reference(seconds=2.0)
    # A 0.4 m box 1 m ahead, in the camera's view (the D435 looks down about 48 deg).
    box = with_terrain(stand, Terrain(np.array([[1.0, 0.0, 0.2]]), np.array([[0.2, 0.6, 0.2]]), np.zeros(1)), "box")
    return stand, box


def _env(manifest, refs, n: int = 2, seed: int = 0, camera: CameraConfig | None = None, **kw) -> StudentEnv:
    tracking = TrackingConfig(num_envs=n, randomization=NOMINAL, auto_reset=False, seed=seed, **kw)
    return StudentEnv(list(refs), StudentConfig(tracking=tracking, camera=camera or CameraConfig()), manifest)


def test_contract_is_the_student_bundles(manifest) -> None:
    c = ActionContract.from_manifest(manifest)
    for field in dataclasses.fields(ActionContract):
        np.testing.assert_array_equal(getattr(c, field.name), getattr(G1_CONTRACT, field.name))


def test_observations_depth_latency_and_command(manifest, refs) -> None:
    env = _env(manifest, refs)
    obs = env.reset(start_frames=np.array([0, 0]), ref_ids=np.array([0, 1]))
    assert obs["policy"].shape == (2, manifest.obs_size)
    assert obs["depth"].shape == (2, 58, 87) and obs["privileged"].shape == (2, env.tracking.num_obs)
    age_list = []
    for _ in range(50):
        obs, _, done, info = env.step(np.zeros((2, 29)))
        age_list.append(info["depth_age_s"])
        assert not done.any() and not info["expert_terminated"].any()
    published = [f for frames in env.depth.published for f in frames]
    assert len(published) >= 2 * 25  # 30 Hz for 1 s, minus the frames still in flight
    for exposure, publish, latency in published:
        assert 0.06 <= latency <= 0.08
        assert publish - exposure >= latency - 1e-12
    period = 1.0 / 30.0
    exposures = np.array([f[0] for f in env.depth.published[0]])
    assert np.all(np.abs(np.diff(exposures) - period) <= 0.002 + 1e-9)  # on the 30 Hz grid, at 2 ms steps
    ages = np.array(age_list)
    # Age at use: the latency, plus waiting for the next 50 Hz tick, plus holding until the next frame.
    assert ages.min() >= 0.06 - 1e-9 and ages.max() <= 0.08 + 0.02 + period + 1e-9
    # The policy observation is parkour_core's, built from the same state.
    t = env.tracking
    o = observation_input(
        manifest, RobotState(t.sim.q[0], t.sim.dq[0], t.sim.root_quat[0], t.sim.gyro[0]), info["command"][0],
        t.last_action[0], G1_CONTRACT.default_q, np.zeros(0),
    )  # fmt: skip
    np.testing.assert_array_equal(obs["policy"][0], build_observation(manifest.obs_terms, o))
    np.testing.assert_allclose(info["command"][:, :2], 0.0, atol=1e-9)  # the standing reference commands nothing
    env.close()


def test_depth_image_sees_the_box(manifest, refs) -> None:
    clean = CameraConfig(noise=DepthNoise(0.0, 0.0, 0.0), extrinsic_pos_m=0.0, extrinsic_rot_deg=0.0)
    env = _env(manifest, refs, camera=clean)
    obs = env.reset(start_frames=np.array([0, 0]), ref_ids=np.array([0, 1]))
    flat, box = obs["depth"]
    closer = box < flat - 0.05
    assert closer.mean() > 0.05  # a sizeable part of the image sees the box, nearer than the floor
    assert not (box > flat + 1e-6).any()  # the box only hides floor, it never adds distance
    env.close()


def test_expert_termination_flag_under_a_relaxed_threshold(manifest, refs) -> None:
    env = _env(manifest, refs, n=1, termination_m=1.0)
    env.reset(start_frames=np.array([0]), ref_ids=np.array([0]))
    ref = refs[0]
    sim = env.tracking.sim
    sim.set_state(0, ref.root_pos[0] + [0.7, 0.0, 0.0], ref.root_quat[0], ref.joint_pos[0], np.zeros(3),
                  np.zeros(3), np.zeros(29))  # fmt: skip
    _, _, done, info = env.step(np.zeros((1, 29)))
    assert 0.5 < info["tracking_error"][0] < 1.0
    assert info["expert_terminated"][0] and not done[0]
    env.close()


def test_seeded_depth_is_reproducible(manifest, refs) -> None:
    def run(seed: int) -> np.ndarray:
        env = _env(manifest, refs, seed=seed)
        env.reset(start_frames=np.array([0, 0]), ref_ids=np.array([0, 1]))
        for _ in range(5):
            obs, *_ = env.step(np.zeros((2, 29)))
        env.close()
        return obs["depth"]

    a = run(3)
    np.testing.assert_array_equal(a, run(3))
    assert not np.array_equal(a, run(4))
