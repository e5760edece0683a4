import numpy as np
import pytest
import torch

from parkour_core.bundle import load_bundle
from parkour_core.runner import PolicyRunner, RobotState
from training.configs.schema import ConfigError, load_train_config
from training.envs.student import CameraConfig
from training.rl.train import train
from training.tasks.student_step.config import CourseSection
from training.tasks.student_step.env import StepEnv
from training.tasks.student_step.task import HEIGHT_BIN_NAMES_CM, by_height, step_up_rate
from training.tasks.student_step.teacher import ReflexConfig, StepTeacher, lift_angles
from training.tasks.student_walk.bundle import CHECKPOINT, load_checkpoint, save_checkpoint
from training.tasks.student_walk.env import WalkConfig, walk_student_manifest
from training.tasks.student_walk.teacher import WalkTeacher

# One 10 cm platform, its near face at x = 1 m, not yawed.
CENTER, HALF, YAW = np.array([[1.4, 0.0, 0.05]]), np.array([[0.4, 1.5, 0.05]]), np.zeros(1)
STILL = np.zeros(3)


def feet(x_left, z_left=0.05, vx_left=1.0):
    pos = np.array([[x_left, 0.1, z_left], [0.0, -0.1, 0.05]])
    vel = np.array([[vx_left, 0.0, 0.0], [0.0, 0.0, 0.0]])
    return pos, vel


def test_reflex_lifts_a_swinging_foot_just_before_the_edge_by_the_height_rule():
    cfg = ReflexConfig()
    lift = lift_angles(*feet(0.8), STILL, CENTER, HALF, YAW, cfg)
    assert lift[0] == pytest.approx(cfg.lift_base_rad + cfg.lift_per_m * 0.10)
    assert lift[1] == 0.0  # the stance foot, far from the edge, is left alone


@pytest.mark.parametrize(
    "x, z, vx, why",
    [
        (0.5, 0.05, 1.0, "too far before the face"),
        (1.2, 0.05, 1.0, "already past the face"),
        (0.8, 0.30, 1.0, "already above the top plus clearance"),
        (0.8, 0.05, 0.05, "not swinging: no faster than the base"),
    ],
)
def test_reflex_stays_out_of_the_way(x, z, vx, why):
    assert lift_angles(*feet(x, z, vx), STILL, CENTER, HALF, YAW)[0] == 0.0, why


def test_reflex_works_in_the_box_frame_of_a_yawed_box():
    yaw = np.array([np.pi / 2])  # the box's axis is +y: the face is at y = -0.4 + center
    center = np.array([[0.0, 1.4, 0.05]])
    pos = np.array([[0.1, 0.8, 0.05], [0.0, 0.0, 0.05]])
    vel = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    assert lift_angles(pos, vel, STILL, center, HALF, yaw)[0] > 0.0
    assert lift_angles(pos, vel[:, [1, 0, 2]], STILL, center, HALF, yaw)[0] == 0.0  # swinging along x: no


def test_no_boxes_no_lift():
    assert np.all(lift_angles(*feet(0.8), STILL, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0)) == 0.0)


def _course_env(num_envs: int, **course) -> StepEnv:
    """A small StepEnv whose episodes are all courses."""
    manifest = walk_student_manifest("t", 16, 16, WalkTeacher(1).manifest)
    return StepEnv(WalkConfig(num_envs=num_envs, seed=0, camera=CameraConfig(width=12, height=8)), manifest,
                   CourseSection(walk_fraction=0.0, **course))  # fmt: skip


def test_course_episodes_hold_a_straight_command_and_credit_platforms_passed():
    env = _course_env(2)
    try:
        env.reset()
        assert env.on_course.all()
        lo, hi = env.course.speed_mps
        assert np.all((env.walk_command[:, 0] >= lo) & (env.walk_command[:, 0] <= hi))
        assert np.all(env.walk_command[:, 1:] == 0.0)
        heights = env.platform_heights()
        assert np.all((heights >= env.course.min_height_m) & (heights <= env.height_cap_m + 1e-9))
        assert not env.platforms_passed().any()  # the robot starts in front of every platform
        # Teleport robot 0 beyond its first platform's far face: that platform counts as passed.
        sim = env.tracking.sim
        t = sim.terrains[0]
        beyond = t.center[0, :2] + (t.half_size[0, 0] + 0.2) * np.array([np.cos(t.yaw[0]), np.sin(t.yaw[0])])
        sim.set_state(0, [*beyond, 0.9], sim.root_quat[0], sim.q[0], np.zeros(3), np.zeros(3), np.zeros(29))
        assert env.platforms_passed()[0, 0] and not env.platforms_passed()[1].any()
    finally:
        env.close()


def test_the_course_speed_range_is_the_configs_and_a_reversed_one_is_refused():
    assert load_train_config("student_climb").course.speed_mps == CourseSection().speed_mps
    wide = load_train_config("student_climb", {"course.speed_mps": [0.3, 1.5]})
    assert wide.course.speed_mps == [0.3, 1.5]
    with pytest.raises(ConfigError, match=r"course\.speed_mps: expected \[lo, hi\]"):
        load_train_config("student_climb", {"course.speed_mps": [1.5, 0.3]})


def test_the_teacher_is_commanded_its_gain_times_the_forward_speed_only():
    env = _course_env(2)
    try:
        env.reset()
        sim = env.tracking.sim
        last = np.zeros((2, env.num_actions))
        command = np.array([[0.8, 0.1, 0.2], [0.5, 0.0, 0.0]])
        labels = StepTeacher(2, sim, command_gain=2.0).act(command, last, env.gait_phase)
        plain = StepTeacher(2, sim)
        assert np.allclose(labels, plain.act(command * [2.0, 1.0, 1.0], last, env.gait_phase))
        assert not np.allclose(labels, plain.act(command, last, env.gait_phase), atol=1e-3)
        assert not np.allclose(labels, plain.act(command * 2.0, last, env.gait_phase), atol=1e-3)
    finally:
        env.close()


def _walk_then_step(tmp_path, **step_overrides):
    train("student_walk_tiny", tmp_path / "walk")
    overrides = {"run.init": str(tmp_path / "walk" / "bundle"), **step_overrides}
    return train("student_step_tiny", tmp_path / "step", overrides)


def test_training_figures_count_every_platform_from_5_to_40_cm_in_its_named_bin():
    heights = [0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.36, 0.40]
    counts = by_height(heights)
    assert sum(counts) == len(heights)
    assert [HEIGHT_BIN_NAMES_CM[i] for i, n in enumerate(counts) if n] == [5, 10, 15, 20, 25, 30, 35, 40]
    # A fall at 36 cm lowers the step-up rate as one at 10 cm does; 5 cm platforms are left out of it.
    row = {"cleared_by_height": by_height([0.05, 0.10]), "fell_by_height": by_height([0.36])}
    assert step_up_rate([row]) == 0.5


def test_init_refuses_weights_of_another_size(tmp_path):
    """A checkpoint of another config's student is refused by name, before any training."""
    from tensordict import TensorDict

    from training.configs.schema import load_train_config
    from training.rl.models import DepthRecurrentModel
    from training.rl.task_cfg import student_model_cfg

    obs = TensorDict({"policy": torch.zeros(2, 98), "depth": torch.zeros(2, 58, 87)}, batch_size=[2])
    groups = {"actor": ["policy", "depth"]}

    def model(config):
        kwargs = {k: v for k, v in student_model_cfg(load_train_config(config)).items() if k != "class_name"}
        return DepthRecurrentModel(obs, groups, "actor", 29, **kwargs)

    save_checkpoint(model("student_walk"), tmp_path / CHECKPOINT)
    with pytest.raises(ValueError, match="holds a student of sizes"):
        load_checkpoint(model("student_walk_tiny"), tmp_path)
    with pytest.raises(FileNotFoundError, match="--init"):
        load_checkpoint(model("student_walk_tiny"), tmp_path / "nowhere")


def test_tiny_run_starts_from_stage_one_and_writes_a_bundle(tmp_path, monkeypatch):
    monkeypatch.setattr("training.rl.runner.git_commit", lambda: "commit-at-the-runs-start")
    result = _walk_then_step(tmp_path, **{"course.teacher_command_gain": 1.8})
    assert result["teacher_command_gain"] == 1.8
    rows = result["iterations"]
    assert len(rows) == 3
    assert rows[0]["dagger_weight"] == 1.0 and rows[-1]["dagger_weight"] == pytest.approx(0.1)
    assert [r["schedule_iteration"] for r in rows] == [0, 1, 2]  # a gate of 0 always opens
    assert rows[-1]["height_cap_m"] > rows[0]["height_cap_m"]
    assert (tmp_path / "step" / "curves.png").is_file()
    bundle = load_bundle(tmp_path / "step" / "bundle")
    assert "reflex" in bundle.manifest.provenance["teacher"]
    assert "teacher command gain 1.8" in bundle.manifest.provenance["training"]
    assert bundle.manifest.provenance["command"]
    # The run's own commit, taken when it started, beside the exporter's HEAD.
    runs = bundle.manifest.provenance["runs"]
    assert [r["commit"] for r in runs] == ["commit-at-the-runs-start"] and runs[0]["iterations"] == 3
    assert bundle.manifest.provenance["env_steps"] == runs[0]["env_steps"] > 0
    # The starting weights were stage 1's: the first iteration's policy is stage 1's student.
    walk = torch.load(tmp_path / "walk" / "bundle" / CHECKPOINT, weights_only=True)["state_dict"]
    step = torch.load(tmp_path / "step" / "bundle" / CHECKPOINT, weights_only=True)["state_dict"]
    assert walk.keys() == step.keys()
    targets = PolicyRunner(bundle).step(
        RobotState(WalkTeacher(1).default_q, np.zeros(29), np.array([1.0, 0, 0, 0]), np.zeros(3)), np.zeros(3)
    )
    assert np.all(np.isfinite(targets))


def test_stage_two_starts_from_stage_one_weights(tmp_path):
    """With no update at all (zero learning rate) the exported student is stage 1's, tensor for tensor."""
    result = _walk_then_step(tmp_path, **{"ppo.learning_rate": 1e-7, "ppo.min_lr": 1e-7, "ppo.max_lr": 1e-7})
    assert result["init"]
    walk = torch.load(tmp_path / "walk" / "bundle" / CHECKPOINT, weights_only=True)["state_dict"]
    step = torch.load(tmp_path / "step" / "bundle" / CHECKPOINT, weights_only=True)["state_dict"]
    assert all(torch.allclose(walk[k], step[k], atol=1e-4) for k in walk)


def test_hybrid_schedule_waits_for_step_ups(tmp_path):
    """Below the gate's step-up rate lambda_D stays at 1 (the plain ramp would reach 0.1 by the third iteration)."""
    result = _walk_then_step(tmp_path, **{"distill.gate_rate": 1.01})
    rows = result["iterations"]  # no step-up rate reaches a gate of 1.01
    assert result["gate_rate"] == 1.01
    assert [r["schedule_iteration"] for r in rows] == [0, 0, 0]
    assert all(r["dagger_weight"] == 1.0 for r in rows)


def test_leaving_the_lane_ends_a_course_episode_without_the_fall_cost():
    env = _course_env(2)
    try:
        env.reset()
        sim = env.tracking.sim
        sim.set_state(0, [0.5, 2.0, 0.78], sim.root_quat[0], sim.q[0], np.zeros(3), np.zeros(3), np.zeros(29))
        _, reward, done, info = env.step_course(np.zeros((2, 29)))
        assert done[0] and info["left_lane"][0] and not info["fell"][0]
        assert reward[0] > -1.0  # not the fall's -5
        assert not done[1]
        assert abs(sim.root_pos[0, 1]) < 1.0  # reset onto the course
    finally:
        env.close()


ANKLE_PITCH = 4  # the left ankle pitch: the joint whose targets the step-up reflex drives past its limit


def _past_the_ankle_limit(env: StepEnv, excess_rad: list[float]) -> np.ndarray:
    """Actions at the default pose but the left ankle pitch's target ``excess_rad`` past its upper limit."""
    contract, robot = env.tracking.contract, env.tracking.robot
    targets = np.tile(contract.default_q, (len(excess_rad), 1))
    targets[:, ANKLE_PITCH] = robot.q_max[ANKLE_PITCH] + np.asarray(excess_rad)
    return contract.actions_for(targets)


def test_under_the_supervisors_limits_motors_get_clamped_targets_and_refused_ones_end_as_a_fall():
    from training.envs.supervision import SUPERVISOR

    tolerance = SUPERVISOR.target_limit_tolerance_rad
    env = _course_env(3, supervisor_limits=True)
    try:
        env.reset()
        sim, limit = env.tracking.sim, env.tracking.robot.q_max[ANKLE_PITCH] - SUPERVISOR.joint_margin_rad
        actions = _past_the_ankle_limit(env, [-0.2, tolerance - 0.1, tolerance + 0.1])
        _, reward, done, info = env.step_course(actions)
        assert info["refused"].tolist() == [False, False, True]
        assert info["fell"].tolist() == [False, False, True] and done.tolist() == [False, False, True]
        assert reward[2] == env.reward_cfg.fall
        ctrl = sim.datas[1].ctrl[sim.actuators]
        assert ctrl[ANKLE_PITCH] == pytest.approx(limit)  # clamped at the motor...
        assert np.allclose(env.tracking.last_action[1], actions[1])  # ...while the policy sees its own action
        assert sim.datas[0].ctrl[sim.actuators][ANKLE_PITCH] < limit
        labels = env.tracking.contract.targets(env.supervised_actions(actions))
        assert labels[:, ANKLE_PITCH] == pytest.approx([env.tracking.robot.q_max[ANKLE_PITCH] - 0.2, limit, limit])
    finally:
        env.close()


def test_without_the_supervisors_limits_targets_reach_the_motors_as_given():
    env = _course_env(1)
    try:
        env.reset()
        sim = env.tracking.sim
        excess = 0.6
        actions = _past_the_ankle_limit(env, [excess])
        _, _, done, info = env.step_course(actions)
        assert not info["refused"][0] and not done[0]
        assert sim.datas[0].ctrl[sim.actuators][ANKLE_PITCH] == pytest.approx(
            env.tracking.robot.q_max[ANKLE_PITCH] + excess
        )
        assert np.array_equal(env.supervised_actions(actions), actions)
    finally:
        env.close()


def test_the_critics_height_scan_sees_the_course_placed_by_the_task():
    """The privileged scan reads the boxes the simulator holds, not the (boxless) standing reference's."""
    from training.envs.privileged import term_slices

    env = _course_env(1)
    try:
        env.reset()
        sim = env.tracking.sim
        t = sim.terrains[0]
        on_top = [*t.center[0, :2], 0.78 + 2 * t.half_size[0, 2]]  # the pelvis over the first platform
        sim.set_state(0, on_top, sim.root_quat[0], sim.q[0], np.zeros(3), np.zeros(3), np.zeros(29))
        scan = env.tracking.observe()[0, term_slices()["height_scan"]]
        # Over the platform the pelvis stands its standing height above it, not above the floor.
        assert np.median(scan) == pytest.approx(0.78, abs=0.01)
    finally:
        env.close()


def test_a_walk_episode_after_a_course_draws_its_own_command():
    env = _course_env(1)
    try:
        env.reset()
        assert env.on_course[0] and env.command_age_s[0] == -np.inf
        env.course_rng = np.random.default_rng(0)
        env.course = CourseSection(walk_fraction=1.0)  # the next episode is a walk
        env.reset(np.array([0]))
        assert not env.on_course[0] and env.command_age_s[0] == 0.0
    finally:
        env.close()
