"""The climbing teacher: its env starts as the walking policy, its curriculum moves by success, and a run
resumed from its checkpoint equals one that never stopped."""

from __future__ import annotations

import dataclasses
import gzip
import json

import numpy as np
import pytest
import torch

from parkour_core.paths import repo_root
from training.configs.schema import ConfigError
from training.rl.runner import LATEST, TIMING_KEYS
from training.rl.train import resume, train
from training.tasks.climb_teacher.env import ClimbConfig, ClimbEnv

TINY = "climb_teacher_tiny"
REPO = repo_root()


def test_zero_residual_is_the_walking_policy() -> None:
    """With r = 0 the motors get the walking policy's action on its own observation."""
    env = ClimbEnv(ClimbConfig(num_envs=2, flat_fraction=1.0))
    try:
        env.observe()
        walker = env.walker_action.copy()
        env.step(np.zeros((2, env.num_actions)))
        np.testing.assert_array_equal(env.last_action, walker)
    finally:
        env.close()


def test_levels_move_by_success() -> None:
    env = ClimbEnv(ClimbConfig(num_envs=4, flat_fraction=0.0, start_level=2))
    try:
        ids = np.arange(4)
        top = len(env.cfg.levels) - 1
        env.level[:] = [2, 2, 2, top]
        env.update_levels(ids, np.array([True, False, False, False]), np.array([False, True, False, False]),
                          np.array([2, 0, 2, 1]))  # fmt: skip
        # passed every box: up; fell: down; neither, but passed both: stays; at the top, passed one of two: stays
        assert env.level.tolist() == [3, 1, 2, top]
    finally:
        env.close()


def test_next_box_is_the_first_not_passed() -> None:
    env = ClimbEnv(ClimbConfig(num_envs=1, flat_fraction=0.0))
    try:
        center, half = env.box_center[0], env.box_half[0]
        root = np.array([[center[0, 0] + half[0, 0] + 0.1, 0.0, 0.8]])  # just past the first box
        out = env.next_box(root, np.zeros(1))
        assert out[0, 4] == pytest.approx(2 * half[1, 2])  # the second box's height
        assert out[0, 5] == 1.0  # one box left
    finally:
        env.close()


def _comparable(rows: list[dict]) -> str:
    """The rows without their timings, as JSON (so NaN equals NaN)."""
    return json.dumps([{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rows], sort_keys=True)


def test_resumed_run_equals_uninterrupted(tmp_path) -> None:
    """2 iterations + a resume of 2 = 4 iterations: weights, optimizer and every row (timings aside), resumed
    from a folder as it is committed."""
    whole = train(TINY, tmp_path / "whole", {"run.max_iterations": 4})
    split = tmp_path / "split"
    train(TINY, split, {"run.max_iterations": 2}, note="the first run")
    (split / "curve.jsonl").unlink()  # as a committed run folder holds it: one compressed file per run
    first_part = (split / "curve.000000.jsonl.gz").read_bytes()
    resumed = resume(split, {"run.max_iterations": 2}, note="resumed beside another run")
    assert _comparable(resumed["iterations"]) == _comparable(whole["iterations"])
    # Each run's note stays with its entry, the first run's through the resume.
    assert [r.get("note") for r in resumed["runs"]] == ["the first run", "resumed beside another run"]
    a = torch.load(tmp_path / "whole" / LATEST, weights_only=False)
    b = torch.load(split / LATEST, weights_only=False)
    for key in ("actor_state_dict", "critic_state_dict"):
        for name, value in a[key].items():
            torch.testing.assert_close(b[key][name], value, rtol=0, atol=0, msg=f"{key}.{name}")
    assert a["iter"] == b["iter"] == 3
    assert [r["iterations"] for r in resumed["runs"]] == [2, 2]
    assert sum(r["env_steps"] for r in resumed["runs"]) == sum(r["env_steps"] for r in whole["runs"])
    lines = (split / "curve.jsonl").read_text().splitlines()
    assert [json.loads(x)["iteration"] for x in lines] == [0, 1, 2, 3]
    # the first run's file is left byte for byte; the resumed run's holds only its own rows
    assert sorted(p.name for p in split.glob("curve.*.gz")) == ["curve.000000.jsonl.gz", "curve.000002.jsonl.gz"]
    assert (split / "curve.000000.jsonl.gz").read_bytes() == first_part
    second = gzip.decompress((split / "curve.000002.jsonl.gz").read_bytes()).decode().splitlines()
    assert [json.loads(x)["iteration"] for x in second] == [2, 3]


def test_resume_refuses_other_settings(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"no run\.json"):
        resume(tmp_path)
    train(TINY, tmp_path, {"run.max_iterations": 2})
    with pytest.raises(ConfigError, match=r"sets only run\.minutes, run\.max_iterations"):
        resume(tmp_path, {"ppo.learning_rate": 1e-3})


def test_policy_acts_as_the_env(tmp_path) -> None:
    """ClimbTeacherPolicy, ticked like the runtime on the env's states and told its boxes, sends the env's actions."""
    from training.envs.randomization import NOMINAL
    from training.tasks.climb_teacher.policy import ClimbTeacherPolicy

    env = ClimbEnv(ClimbConfig(num_envs=1, flat_fraction=0.0, randomization=NOMINAL))
    try:
        obs = env.observe()
        torch.manual_seed(0)
        layers = [torch.nn.Linear(obs["policy"].shape[1], 32), torch.nn.ELU(), torch.nn.Linear(32, env.num_actions)]
        mlp = torch.nn.Sequential(*layers)
        state = {f"mlp.{k}": v for k, v in mlp.state_dict().items()}
        cfg = {"residual_on": env.cfg.residual_on, "residual_scale": 0.5, "heading_gain": env.cfg.heading_gain}
        env.cfg = dataclasses.replace(env.cfg, residual_scale=0.5)
        torch.save({"actor_state_dict": state, "activation": "elu", "env": cfg}, tmp_path / "teacher.pt")
        policy = ClimbTeacherPolicy(tmp_path / "teacher.pt")
        policy.reset()
        b = int(env.num_boxes[0])
        boxes = [(env.box_center[0, k], env.box_half[0, k], float(env.box_yaw[0, k])) for k in range(b)]
        policy.bind(lambda: env.sim.root_pos[0], boxes)
        for _ in range(40):
            s = env.sim
            targets = policy.step(s.q[0], s.dq[0], s.root_quat[0], s.gyro[0], env.command[0])
            with torch.no_grad():
                residual = mlp(torch.as_tensor(obs["policy"])).numpy().astype(np.float64)
            obs, _, done, _ = env.step(residual)
            assert not done[0]
            np.testing.assert_allclose(policy.last_action, env.last_action, atol=1e-5)
            np.testing.assert_allclose(targets, env.default_q + env.action_scale * env.last_action[0], atol=1e-6)
    finally:
        env.close()


def test_tiny_distillation_from_a_trained_teacher(tmp_path) -> None:
    """student_step with distill.teacher_checkpoints: the trained teacher labels every step, and the bundle says so."""
    from parkour_core.bundle import load_bundle
    from parkour_core.hashing import sha256_file
    from training.configs.schema import load_train_config
    from training.tasks.climb_teacher.policy import ClimbTeacherLabels
    from training.tasks.student_step.task import StepTask

    train(TINY, tmp_path / "teacher", {"run.max_iterations": 1, "run.save_interval": 1})
    teacher = tmp_path / "teacher" / "teacher.pt"
    overrides = {"distill.teacher_checkpoints": [str(teacher)], "course.platforms": 2, "course.walk_fraction": 0.0,
                 "course.max_height_m": 0.4}  # fmt: skip
    task = StepTask(load_train_config("student_step_tiny", overrides))
    try:
        assert isinstance(task.teacher, ClimbTeacherLabels)
        assert all(len(t) == 2 for t in task.env.tracking.sim.terrains)  # two boxes, the teacher's courses
    finally:
        task.close()
    train("student_step_tiny", tmp_path / "student", overrides)
    provenance = load_bundle(tmp_path / "student" / "bundle").manifest.provenance["teacher"]
    assert provenance["trained_teacher_sha256"] == sha256_file(teacher) and "reflex" not in provenance


def test_report_windows_the_curve(tmp_path) -> None:
    from training.tasks.climb_teacher.report import main as report

    train(TINY, tmp_path / "run", {"run.max_iterations": 3})
    (tmp_path / "run" / "curve.jsonl").unlink()  # as committed: the compressed curve files only
    assert report(["--run", str(tmp_path / "run"), "--window", "2", "--out", str(tmp_path / "report")]) == 0
    result = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [w["iterations"] for w in result["windows"]] == [[0, 1], [2, 2]]
    assert result["env_steps"] == 3 * 4 * 8  # iterations x envs x steps per env (climb_teacher_tiny)
    assert len(result["windows"][0]["pass_rate_by_level"]) == len(result["levels_m"])
    assert (tmp_path / "report" / "report.png").stat().st_size > 1000


def test_reward_weights_are_set_by_name_and_a_misspelt_one_is_refused() -> None:
    from training.configs.schema import load_train_config
    from training.tasks.climb_teacher.rewards import Weights
    from training.tasks.climb_teacher.task import env_config

    weights = env_config(load_train_config(TINY, {"climb.reward_weights.stumble": -1})).weights
    assert weights.stumble == -1.0 and weights.progress == Weights().progress
    assert env_config(load_train_config(TINY)).weights == Weights()
    with pytest.raises(ConfigError, match="stumbel"):
        load_train_config(TINY, {"climb.reward_weights": {"stumbel": -1.0}})


def test_limits_follows_each_box_attempt_to_its_outcome() -> None:
    """The committed teacher at 30 cm (it passes most), two short episodes: every attempt closed as a pass,
    a fall or a time-out, a pass among them and every pass with a foot on the top, and the summary's groups
    count them all."""
    from training.tasks.climb_teacher.limits import GROUPS, run_height
    from training.tasks.climb_teacher.policy import load_teacher

    path = REPO / "models" / "climb_teacher" / "teacher.pt"
    result = run_height(load_teacher(path), 0.30, num_envs=2, episodes=2, seed=1, jitter_m=0.0)
    attempts = result["attempts"]
    assert all(a["outcome"] in ("pass", "fall", "timeout") for a in attempts)
    passes = [a for a in attempts if a["outcome"] == "pass"]
    assert passes and all(a["a_foot_got_on_top"] for a in passes)
    assert sum(result["summary"][g]["count"] for g in GROUPS) == len(attempts)
