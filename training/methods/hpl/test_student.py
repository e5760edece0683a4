"""The hpl_student task's environments in worker processes: the same observations, oracle labels and rewards
as the same shares in one process, and no worker left behind after close() or after a worker raises.
Its whole run through the runner is the HPL smoke's student stage (test_smoke.py)."""

from __future__ import annotations

import numpy as np
import pytest

from training.configs.schema import ConfigError, TrainConfig, load_train_config
from training.envs.privileged import privileged_size
from training.methods.hpl.oracle import untrained_oracle
from training.methods.hpl.smoke import curriculum_references
from training.methods.hpl.student import HPLStudentTask
from training.php_teacher.task import TrackingTeacher, references_for


def student_task(processes: bool) -> HPLStudentTask:
    cfg: TrainConfig = load_train_config("hpl_student_tiny", {"hpl.processes": processes})
    references = curriculum_references(references_for(load_train_config("php_teacher_tiny")), 3)
    oracle = TrackingTeacher(untrained_oracle(privileged_size(), 29, seed=3))
    return HPLStudentTask(cfg, references=references, teacher=oracle)


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_worker_processes_give_what_the_same_shares_give_in_one_process() -> None:
    local, workers = student_task(processes=False), student_task(processes=True)
    try:
        assert workers.workers.processes and all(p.is_alive() for p in workers.workers.processes)
        assert workers.workers.shares == local.workers.shares == [2, 2]
        assert_same(local.observe(), workers.observe())
        labels = workers.observe()["teacher_actions"]
        assert labels.shape == (4, 29) and np.abs(labels).sum() > 0  # the oracle labelled every environment
        rng = np.random.default_rng(0)
        for _ in range(12):
            actions = 0.3 * rng.normal(size=(4, 29))
            a, b = local.step(actions), workers.step(actions)
            assert_same(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
            np.testing.assert_array_equal(a[2], b[2])
            np.testing.assert_array_equal(a[3]["time_outs"], b[3]["time_outs"])
        assert len(workers.workers.call("frames")[1]) > 0  # each share keeps its calibration frames
    finally:
        local.close()
        workers.close()
    assert all(not p.is_alive() and p.exitcode is not None for p in workers.workers.processes)


def test_a_worker_that_raises_ends_every_worker() -> None:
    task = student_task(processes=True)
    processes = task.workers.processes
    with pytest.raises(RuntimeError, match=r"worker 0 raised:[\s\S]*Error"):
        task.step(np.zeros((4, 3)))  # 3 actions where the robot takes 29: the worker's env raises
    assert all(not p.is_alive() and p.exitcode is not None for p in processes)
    with pytest.raises(RuntimeError, match="after close"):
        task.workers.call("observe")
    task.close()  # closing again is harmless


def test_the_shares_must_split_the_environments() -> None:
    with pytest.raises(ConfigError, match=r"hpl\.workers: 3 shares do not split env\.num_envs 4"):
        load_train_config("hpl_student_tiny", {"hpl.workers": 3})
    with pytest.raises(ValueError, match=r"does not split over hpl\.workers 2"):  # --num-envs after the config
        HPLStudentTask(load_train_config("hpl_student_tiny"), num_envs=5, references=[])
