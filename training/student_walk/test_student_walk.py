import numpy as np
import torch

from parkour_core.bundle import load_bundle
from parkour_core.runner import PolicyRunner, RobotState
from training.student_walk.run import RUN_SIZES, build_model, dagger_update, run_student_walk, sequence_batch
from training.student_walk.teacher import WALK_BUNDLE, WalkTeacher


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


def test_dagger_loss_falls_on_a_fixed_batch():
    size = RUN_SIZES["tiny"].student
    model = build_model(size, 0, 98, 29)
    g = torch.Generator().manual_seed(0)
    t, n = 8, 4
    buf = {
        "obs": torch.randn(t, n, 98, generator=g),
        "depth": torch.rand(t, n, 58, 87, generator=g),
        "hidden": torch.zeros(t, n, size.gru_hidden),
        "starts": torch.zeros(t, n, dtype=torch.bool),
        "teacher": torch.randn(t, n, 29, generator=g) * 0.5,
    }
    buf["starts"][0] = True
    batch = sequence_batch(buf)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = dagger_update(model, opt, batch, 8, 1, 1, g)
    for _ in range(20):
        last = dagger_update(model, opt, batch, 8, 1, 1, g)
    assert last < 0.7 * first


def test_tiny_run_writes_a_bundle_policy_runner_loads(tmp_path):
    result = run_student_walk(tmp_path, "tiny", seed=0, log=lambda s: None)
    assert len(result["iterations"]) == 3
    assert (tmp_path / "curves.png").is_file() and (tmp_path / "student_walk.json").is_file()
    bundle = load_bundle(tmp_path / "bundle")
    teacher = WalkTeacher(1)
    assert np.allclose(bundle.manifest.kp, teacher.kp)
    assert "amazon-far/holosoma" in bundle.manifest.provenance["teacher"]["source_repository"]
    runner = PolicyRunner(bundle)
    targets = runner.step(
        RobotState(teacher.default_q, np.zeros(29), np.array([1.0, 0, 0, 0]), np.zeros(3)), np.zeros(3)
    )
    assert np.all(np.isfinite(targets))
