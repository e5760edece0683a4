"""The step-up task's torch terms (step_terms.py) against the CPU code they restate, from the same state:
the reflex against ``lift_angles`` on random feet around random courses, and the reward, the platforms
passed, the lane exits and the heights falls are charged to against ``StepEnv.step_course`` stepping
robots placed along their courses. Runs in the runtime .venv (torch, no mjlab)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from training.backends.mjlab import step_terms
from training.configs import load_train_config
from training.envs.reference import Terrain
from training.envs.supervision import SUPERVISOR
from training.tasks.student_step.env import CourseConfig, StepEnv
from training.tasks.student_step.task import course_config
from training.tasks.student_step.teacher import lift_angles
from training.tasks.student_walk.env import platform_course, walk_student_manifest
from training.tasks.student_walk.task import walk_config
from training.tasks.student_walk.teacher import WalkTeacher

ANKLE_PITCH = 4  # the left ankle pitch: the joint the step-up reflex drives past its limit


def _padded(terrains: list[Terrain], slots: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(terrains)
    center, half, yaw = np.zeros((n, slots, 3)), np.full((n, slots, 3), -1.0), np.zeros((n, slots))
    for i, t in enumerate(terrains):
        center[i, : len(t)], half[i, : len(t)], yaw[i, : len(t)] = t.center, t.half_size, t.yaw
    return center, half, yaw


def test_the_reflex_in_torch_is_lift_angles():
    rng = np.random.default_rng(0)
    course = CourseConfig()
    n = 400
    terrains = [
        platform_course(rng, course.layout, rng.uniform(0.04, 0.22, rng.integers(1, 5))) if i % 7 else Terrain()
        for i in range(n)
    ]
    # Most feet just before a near face (the reflex's band), the rest anywhere; swinging forward or not.
    foot_pos = np.stack(
        [rng.uniform(-0.5, 10.0, (n, 2)), rng.uniform(-1.8, 1.8, (n, 2)), rng.uniform(0.0, 0.35, (n, 2))], -1
    )
    for i, ter in enumerate(terrains):
        for leg in range(2):
            if len(ter) and rng.random() < 0.7:
                b = rng.integers(len(ter))
                along = -ter.half_size[b, 0] + rng.uniform(-0.45, 0.1)
                axis = np.array([np.cos(ter.yaw[b]), np.sin(ter.yaw[b])])
                foot_pos[i, leg, :2] = ter.center[b, :2] + along * axis + rng.uniform(-1.0, 1.0) * axis[::-1] * [-1, 1]
    foot_vel = rng.normal(0.3, 0.8, (n, 2, 3))
    base_vel = rng.normal(0.0, 0.5, (n, 3))
    center, half, yaw = _padded(terrains, 4)
    expected = np.stack([lift_angles(foot_pos[i], foot_vel[i], base_vel[i], t.center, t.half_size, t.yaw)
                         for i, t in enumerate(terrains)])  # fmt: skip
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    got = step_terms.lift_angles(t(foot_pos), t(foot_vel), t(base_vel), t(center), t(half), t(yaw)).numpy()
    assert (expected > 0).mean() > 0.05, "too few feet in the reflex's band: the comparison proves little"
    assert np.abs(got - expected).max() < 1e-12


class _SnapshotStepEnv(StepEnv):
    """StepEnv that keeps the state ``step_course`` reads its reward from: platforms_passed is called right
    there (after step_walk's resets, before the lane's)."""

    def platforms_passed(self):
        sim = self.tracking.sim
        self.snapshot = (sim.root_pos, sim.root_quat, sim.root_lin_vel_w, sim.gyro)
        return super().platforms_passed()


@pytest.mark.parametrize("supervisor_limits", [False, True])
def test_the_step_reward_in_torch_is_step_courses(supervisor_limits):
    cfg = load_train_config("student_step_tiny")
    n = 8
    manifest = walk_student_manifest("student_step", 16, 32, WalkTeacher(1).manifest)
    course = dataclasses.replace(course_config(cfg), supervisor_limits=supervisor_limits)
    env = _SnapshotStepEnv(walk_config(cfg, n), manifest, course)
    sim, rng = env.tracking.sim, np.random.default_rng(1)
    contract, robot = env.tracking.contract, env.tracking.robot
    env.reset()
    seen = {"newly": 0, "left_lane": 0, "fell": 0, "fell_pending": 0, "walk_steps": 0}
    if supervisor_limits:
        seen["refused"] = 0
    worst = {"reward": 0.0, "track": 0.0}
    t = lambda a: torch.as_tensor(np.array(a), dtype=torch.float64)  # noqa: E731
    for step in range(60):
        # Robots put along their courses, some beside the lane, some too low to stand (falls).
        for i in range(n):
            x, y = (
                rng.uniform(-0.5, 10.0),
                rng.choice([rng.uniform(-1.2, 1.2), rng.uniform(1.4, 2.5) * rng.choice([-1, 1])]),
            )
            z = 0.3 if rng.random() < 0.1 else 0.95
            yaw = rng.uniform(-0.6, 0.6)
            sim.set_state(i, np.array([x, y, z]), np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]),
                          np.asarray(manifest.default_joint_pos), np.array([rng.uniform(0, 1.5), rng.normal(0, .3), 0]),
                          np.array([0.0, 0.0, rng.normal(0, 0.4)]), np.zeros(29))  # fmt: skip
        command, on_course = env.walk_command.copy(), env.on_course.copy()
        cleared, heights = env.cleared.copy(), env.platform_heights()
        center, half, yaw_b = _padded([sim.terrains[i] if on_course[i] else Terrain() for i in range(n)],
                                      course.platforms)  # fmt: skip
        # The ankle pitch's target anywhere from inside its limit to well past the supervisor's tolerance.
        targets = np.tile(contract.default_q, (n, 1))
        targets[:, ANKLE_PITCH] = robot.q_max[ANKLE_PITCH] + rng.uniform(-0.3, 1.0, n)
        actions = contract.actions_for(targets) if supervisor_limits else np.zeros((n, 29))
        _, reward, done, info = env.step_course(actions)
        root_pos, root_quat, lin_vel, gyro = env.snapshot
        got = step_terms.step_reward(
            t(root_pos), t(root_quat), t(lin_vel), t(gyro[:, 2]), t(command), t(on_course).bool(), t(cleared).bool(),
            t(heights), t(center), t(half), t(yaw_b), t(info["fell"]).bool(), t(done & ~info["left_lane"]).bool(),
            env.tracking.dt_s, course, env.reward_cfg,
        )  # fmt: skip
        worst["reward"] = max(worst["reward"], float(np.abs(got.reward.numpy() - reward).max()))
        worst["track"] = max(worst["track"], float(np.abs(got.track.numpy() - info["track"]).max()))
        assert np.array_equal(got.left_lane.numpy(), info["left_lane"]), step
        assert np.array_equal(heights[got.newly.numpy()], info["cleared_heights"]), step
        fell_heights = got.attempted_height.numpy()[got.fell_pending.numpy()]
        assert np.array_equal(fell_heights, info["fell_heights"]), step
        seen["newly"] += int(got.newly.sum())
        seen["left_lane"] += int(info["left_lane"].sum())
        seen["fell"] += int(info["fell"].sum())
        seen["fell_pending"] += int(got.fell_pending.sum())
        seen["walk_steps"] += int((~on_course).sum())
        if supervisor_limits:
            limits = [t(v) for v in (contract.default_q, robot.q_min, robot.q_max)]
            tolerance = SUPERVISOR.target_limit_tolerance_rad
            refused = step_terms.refused(t(actions), limits[0], contract.action_scale, *limits[1:], tolerance)
            # The env's refusals are those of robots whose episode did not end otherwise in the step.
            ended_otherwise = done & ~info["refused"]
            assert np.array_equal(refused.numpy() & ~ended_otherwise, info["refused"]), step
            seen["refused"] += int(info["refused"].sum())
            low, high = (t(b) for b in sim.target_bounds)
            clamped = step_terms.supervised_actions(t(actions), limits[0], contract.action_scale, low, high)
            assert np.allclose(clamped.numpy(), env.supervised_actions(actions), atol=1e-12), step
    env.close()
    assert worst["reward"] < 1e-9 and worst["track"] < 1e-9, worst
    assert all(v > 0 for v in seen.values()), f"a case never happened, so it was not compared: {seen}"
