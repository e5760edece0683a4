import numpy as np
import pytest

from parkour_core.bundle import load_bundle
from parkour_core.config import ConfigError
from parkour_core.gait import GaitClock
from parkour_core.runner import PolicyRunner, RobotState
from training.configs.schema import load_train_config
from training.envs.student import CameraConfig
from training.progress import read_curve
from training.rl.train import train
from training.tasks.student_walk.env import WalkConfig, WalkEnv, walk_student_manifest
from training.tasks.student_walk.task import WalkTask
from training.tasks.student_walk.teacher import WALK_BUNDLE, WalkTeacher


def test_batched_teacher_matches_policy_runner():
    n, rng = 3, np.random.default_rng(0)
    teacher = WalkTeacher(n)
    runners = [PolicyRunner(load_bundle(WALK_BUNDLE)) for _ in range(n)]
    command = np.array([[0.5, 0.1, 0.2], [0.0, 0.0, 0.0], [1.0, -0.1, -0.3]])
    last = np.zeros((n, 29))
    for _ in range(5):
        q = teacher.default_q + rng.normal(0, 0.1, (n, 29))
        dq, gyro = rng.normal(0, 0.5, (n, 29)), rng.normal(0, 0.3, (n, 3))
        quat = rng.normal([1, 0, 0, 0], 0.05, (n, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        actions = teacher.act(q, dq, quat, gyro, command, last)
        for i, r in enumerate(runners):
            targets = r.step(RobotState(q[i], dq[i], quat[i], gyro[i]), command[i])
            assert np.abs(r.last_action - actions[i]).max() < 1e-5
            assert np.abs(targets - (teacher.default_q + 0.25 * actions[i])).max() < 1e-5
        last = actions


def test_student_sees_the_gait_clock_a_policy_runner_would_run():
    """Each environment's phase is a GaitClock reset at its episode start and ticked once per step with
    the command in force (a reset of one environment restarts only its clock); the teacher given that
    phase acts as the teacher on its own clocks."""
    teacher, twin = WalkTeacher(2), WalkTeacher(2)
    manifest = walk_student_manifest("t", 16, 16, teacher.manifest)
    assert [t.name for t in manifest.obs_terms[-2:]] == ["sin_phase", "cos_phase"]
    env = WalkEnv(WalkConfig(num_envs=2, seed=3, camera=CameraConfig(width=12, height=8)), manifest)
    try:
        obs = env.reset()
        clocks = [GaitClock(manifest.gait_period_s, 1.0 / manifest.policy_hz) for _ in range(2)]
        expected = np.stack([c.advance(env.walk_command[i]) for i, c in enumerate(clocks)])
        for tick in range(40):
            assert np.allclose(env.gait_phase, expected)
            assert np.allclose(obs["policy"][:, -4:], np.concatenate([np.sin(expected), np.cos(expected)], axis=1))
            sim = env.tracking.sim
            args = (sim.q, sim.dq, sim.root_quat, sim.gyro, env.walk_command, env.tracking.last_action)
            actions = teacher.act(*args, env.gait_phase)
            assert np.allclose(actions, twin.act(*args))
            obs, done, _ = env.step_walk(actions)
            reset = done.copy()
            if tick == 15:  # as a fall does: a new command, then a reset of that environment alone
                env.resample(np.array([1]))
                obs = env.reset(np.array([1]))
                reset[1] = True
            for i in np.flatnonzero(reset):
                clocks[i].reset()
                twin.reset(np.array([i]))
            expected = np.stack([c.advance(env.walk_command[i]) for i, c in enumerate(clocks)])
        assert not np.allclose(env.gait_phase[0], env.gait_phase[1])  # env 1 restarted its stride
    finally:
        env.close()


def test_tiny_run_writes_a_bundle_policy_runner_loads(tmp_path):
    result = train("student_walk_tiny", tmp_path)
    assert len(result["iterations"]) == 3 and result["task"] == "student_walk"
    assert (tmp_path / "curves.png").is_file() and (tmp_path / "student_walk.json").is_file()
    assert [r["iteration"] for r in read_curve(tmp_path / "curve.jsonl")] == [0, 1, 2]
    assert (tmp_path / "model_latest.pt").is_file()
    bundle = load_bundle(tmp_path / "bundle")
    teacher = WalkTeacher(1)
    assert np.allclose(bundle.manifest.kp, teacher.kp)
    assert "amazon-far/holosoma" in bundle.manifest.provenance["teacher"]["source_repository"]
    runner = PolicyRunner(bundle)
    targets = runner.step(
        RobotState(teacher.default_q, np.zeros(29), np.array([1.0, 0, 0, 0]), np.zeros(3)), np.zeros(3)
    )
    assert np.all(np.isfinite(targets))


def test_the_task_steps_physics_at_the_configs_step_and_refuses_a_rate_other_than_its_teachers():
    task = WalkTask(load_train_config("student_walk_tiny", {"env.physics_dt_s": 0.005}), num_envs=1)
    try:
        sim = task.env.tracking.sim
        assert (sim.base_model.opt.timestep, sim.decimation, task.dt_s) == (0.005, 4, pytest.approx(0.02))
    finally:
        task.close()
    with pytest.raises(ConfigError, match=r"env.control_hz: 25 Hz, but the walking policy .* runs at 50 Hz"):
        WalkTask(load_train_config("student_walk_tiny", {"env.control_hz": 25.0}), num_envs=1)


def test_beta_falls_to_the_students_own_action_and_the_reference_envs_keep_the_teacher(tmp_path):
    rows = train("student_walk_tiny", tmp_path, {"run.max_iterations": 4})["iterations"]
    assert [r["beta"] for r in rows] == [1.0, 0.5, 0.0, 0.0]  # beta_end_fraction 0.5 of 4 iterations


def test_committed_students_load_and_run_their_gait_clock():
    """The trained students under models/ pass load_bundle's SHA-256 checks, were trained under
    the walking policy's gains and clock, and their provenance names the command, seed and commit."""
    from parkour_core.bundles import registry, resolve_bundle

    teacher = WalkTeacher(1)
    names = [n for n in ("student_walk", "student_step") if n in registry()]
    assert "student_walk" in names
    for name in names:
        path = resolve_bundle(name)
        bundle = load_bundle(path)
        m = bundle.manifest
        assert m.gait_period_s == teacher.manifest.gait_period_s
        assert np.allclose(m.kp, teacher.kp) and np.allclose(m.kd, teacher.kd)
        assert {"command", "seed", "wall_s", "git_commit"} <= m.provenance.keys()
        runner = PolicyRunner(bundle)
        targets = runner.step(
            RobotState(teacher.default_q, np.zeros(29), np.array([1.0, 0, 0, 0]), np.zeros(3)), np.array([0.5, 0, 0])
        )
        assert np.all(np.isfinite(targets))
