"""The students on mjlab (MuJoCo-Warp on warp's CPU device): the walking and the step-up depth students
(through our runner, to their bundles), each for two iterations; and what they observe, checked against
our CPU code from the same state (checks.py, step_checks.py).

Runs where ``.venv-mjlab`` exists (``bash training/backends/mjlab/setup.sh``); CI does not create it
(a 2.3 GB install for a backend meant for GPUs; see docs/training/gpu.md), so there the tests are
skipped and say so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
VENV_PY = ROOT / ".venv-mjlab" / "bin" / "python"
CHECKS = ROOT / "training" / "backends" / "mjlab" / "checks.py"

pytestmark = pytest.mark.skipif(
    not VENV_PY.exists(),
    reason="no .venv-mjlab (optional: `bash training/backends/mjlab/setup.sh` creates it; CI does not, see README)",
)


def _run_checks(out: Path, probe: str, timeout_s: float) -> Path:
    """checks.py's ``probe`` in .venv-mjlab on 4 environments for 60 steps; its JSON lands in ``out``."""
    done = subprocess.run([str(VENV_PY), str(CHECKS), probe, "--out", str(out), "--num-envs", "4", "--steps", "60"],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def checks(tmp_path_factory) -> dict:
    """checks.py's walking-student probe."""
    out = _run_checks(tmp_path_factory.mktemp("mjlab_checks"), "student_walk", timeout_s=1200)
    names = ("student_walk",)
    return {name: json.loads((out / f"{name}_check.json").read_text()) for name in names} | {"dir": out}


def _train_tiny_on_mjlab(config: str, out: Path) -> dict:
    """``parkour train run --config CONFIG --backend mjlab``, 2 iterations at 2 environments; its ``<task>.json``."""
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "train", "run", "--config", config, "--backend", "mjlab",
           "--device", "cpu", "--set", "run.max_iterations=2", "--set", "run.save_interval=2", "--num-envs", "2",
           "--out", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads((out / f"{config.removesuffix('_tiny')}.json").read_text())


def test_the_walking_student_trains_on_mjlab_through_our_runner_and_writes_its_bundle(tmp_path):
    """student_walk_tiny on mjlab, 2 iterations at 2 environments: our runner's curve and checkpoint, then
    the bundle (written in this venv) with the CPU task's contract."""
    from parkour_core.bundle import load_bundle
    from parkour_core.runner import PolicyRunner, RobotState
    from training.progress import read_curve
    from training.tasks.student_walk.env import walk_student_manifest
    from training.tasks.student_walk.teacher import WalkTeacher

    out = tmp_path / "walk"
    result = _train_tiny_on_mjlab("student_walk_tiny", out)
    assert result["backend"] == "mjlab" and result["num_envs"] == 2 and result["teacher_envs"] == 1
    rows = result["iterations"]
    assert [r["iteration"] for r in rows] == [0, 1] and all(r["env_steps_per_s"] > 0 for r in rows)
    assert [r["beta"] for r in rows] == [1.0, 0.0]  # beta_end_fraction 0.5 of 2 iterations
    assert [r["iteration"] for r in read_curve(out / "curve.jsonl")] == [0, 1]
    assert (out / "model_latest.pt").is_file() and (out / "curves.png").is_file()
    bundle = load_bundle(out / "bundle")
    teacher = WalkTeacher(1)
    expected = walk_student_manifest("student_walk", 16, 32, teacher.manifest)  # student_walk_tiny's sizes
    m = bundle.manifest
    assert m.obs_terms == expected.obs_terms and m.gait_period_s == expected.gait_period_s
    assert np.allclose(m.kp, teacher.kp) and np.allclose(m.kd, teacher.kd) and m.depth == expected.depth
    assert "mjlab" in m.provenance["training"] and "parkour" in m.provenance["command"]
    targets = PolicyRunner(bundle).step(
        RobotState(teacher.default_q, np.zeros(29), np.array([1.0, 0, 0, 0]), np.zeros(3)), np.array([0.5, 0, 0])
    )
    assert np.all(np.isfinite(targets))


def test_the_walking_student_observes_on_mjlab_what_the_cpu_task_computes(checks):
    """From the same state: parkour_core's observation, its gait clock, our CPU camera (with the same mount
    jitter), the preprocessed image of the tick shown and FrameSchedule's choice of that tick; over
    time-outs and an explicit reset."""
    c = checks["student_walk"]
    assert c["policy_obs_size"] == c["expected_policy_obs_size"] == 102
    assert c["depth_shape"] == [c["num_envs"], 58, 87] and c["teacher_actions_shape"] == [c["num_envs"], 29]
    assert c["resets"] > c["num_envs"]  # every environment timed out at 0.5 s, and one was reset by hand
    assert c["max_abs_error_policy_obs"] < 1e-4
    assert c["max_abs_error_gait_phase_rad"] < 1e-5
    assert c["max_abs_error_raw_depth_m"] < 1e-4 and c["raw_depth_hole_mismatch_pixels"] == 0
    assert c["max_abs_error_policy_depth"] < 1e-4
    assert c["max_abs_error_exposure_stamp_s"] < 1e-9  # the frame FrameSchedule would show, at the policy ticks
    assert c["box_pixels_seen"] > 0  # some camera saw a platform
    assert c["new_frames_shown"] > c["compared_images"] // 3  # 30 Hz frames at 50 Hz ticks
    assert 0.0 < c["max_mount_jitter"][0] <= 0.025 and 0.0 < c["max_mount_jitter"][1] <= np.radians(2.5) + 1e-6


def test_the_walking_students_teacher_labels_on_mjlab_are_walk_teachers(checks):
    """The labels (the walking policy's ONNX graph as a torch MLP on its own terms) against WalkTeacher
    (onnxruntime, parkour_core's terms) on the same states, phases and commands."""
    from training.tasks.student_walk.teacher import WalkTeacher

    z = np.load(checks["dir"] / "student_walk_teacher.npz")
    steps, n = z["labels"].shape[:2]
    teacher = WalkTeacher(n)
    worst = 0.0
    for k in range(steps):
        expected = teacher.act(z["q"][k], z["dq"][k], z["quat"][k], z["gyro"][k], z["command"][k],
                               z["last_action"][k], z["phase"][k])  # fmt: skip
        worst = max(worst, float(np.abs(z["labels"][k] - expected).max()))
    assert steps > 60 and np.abs(z["labels"]).max() > 0.1
    assert worst < 1e-4, f"labels differ from WalkTeacher's by up to {worst}"


@pytest.fixture(scope="module")
def step_checks(tmp_path_factory) -> dict:
    """step_checks.py: the step-up task's reflex and privileged observation from the same state."""
    out = tmp_path_factory.mktemp("mjlab_step_checks")
    script = ROOT / "training" / "backends" / "mjlab" / "step_checks.py"
    done = subprocess.run([str(VENV_PY), str(script), "--out", str(out), "--num-envs", "4", "--steps", "200"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads((out / "student_step_check.json").read_text()) | {"dir": out}


def test_the_step_up_student_trains_on_mjlab_through_our_runner_and_writes_its_bundle(tmp_path):
    """student_step_tiny on mjlab, 2 iterations at 2 environments: HybridPPO with StepTask's hooks (the
    curriculum's cap, the step-up figures), the final weights, then the bundle written in this venv."""
    from parkour_core.bundle import load_bundle
    from parkour_core.runner import PolicyRunner, RobotState
    from training.progress import read_curve
    from training.tasks.student_walk.env import walk_student_manifest
    from training.tasks.student_walk.teacher import WalkTeacher

    out = tmp_path / "step"
    result = _train_tiny_on_mjlab("student_step_tiny", out)
    assert result["backend"] == "mjlab" and result["num_envs"] == 2 and result["bundle"] == str(out / "bundle")
    rows = result["iterations"]
    assert [r["iteration"] for r in rows] == [0, 1] and all(r["env_steps_per_s"] > 0 for r in rows)
    # The curriculum's cap: start_cap_m at 0, max_height_m from curriculum_fraction (0.3) of 2 iterations on.
    assert [r["height_cap_m"] for r in rows] == [pytest.approx(0.10), pytest.approx(0.22)]
    from training.tasks.student_step.task import HEIGHT_BINS_M

    for r in rows:
        assert len(r["cleared_by_height"]) == len(r["fell_by_height"]) == len(HEIGHT_BINS_M) - 1
        assert np.isfinite(r["track"]) and np.isfinite(r["reward_per_s"]) and "left_lane_per_1000_steps" in r
        assert "step_up_rate_window" in r and "schedule_iteration" in r and "dagger" in r
    assert [r["iteration"] for r in read_curve(out / "curve.jsonl")] == [0, 1]
    assert (out / "final_checkpoint.pt").is_file() and (out / "curves.png").is_file()
    bundle = load_bundle(out / "bundle")
    teacher = WalkTeacher(1)
    expected = walk_student_manifest("student_step", 16, 32, teacher.manifest)  # student_step_tiny's sizes
    m = bundle.manifest
    assert m.name == "student_step" and m.obs_terms == expected.obs_terms and m.depth == expected.depth
    assert np.allclose(m.kp, teacher.kp) and "mjlab" in m.provenance["training"]
    targets = PolicyRunner(bundle).step(
        RobotState(teacher.default_q, np.zeros(29), np.array([1.0, 0, 0, 0]), np.zeros(3)), np.array([0.5, 0, 0])
    )
    assert np.all(np.isfinite(targets))


def test_the_step_up_students_reflex_and_critic_observation_on_mjlab_are_the_cpu_tasks(step_checks):
    """From the same state: the reflex (lift_angles on C MuJoCo's feet over the tile's boxes) and the privileged
    group (build_privileged over the same boxes: the ray-cast scan reads the tile the pool says)."""
    c = step_checks
    assert c["privileged_size"] == 290 and c["teacher_actions_shape"] == [c["num_envs"], 29]
    assert c["course_env_steps"] > 0 and c["walk_env_steps"] > 0 and c["resets"] > 0 and c["tiles_seen"] > c["num_envs"]
    assert c["reflex_fired"] > 0, "no foot met a platform: the reflex was not compared"
    assert c["scan_on_box_points"] > 0, "no scan point on a box: the tiles' boxes were not compared"
    assert c["max_abs_error_lift_rad"] < 1e-5
    assert c["max_abs_error_privileged_without_scan"] < 1e-4
    assert c["max_abs_error_height_scan_m"] < 1e-4


def test_the_step_up_teachers_labels_on_mjlab_are_step_teachers(step_checks):
    """The labels against StepTeacher.act's sum (WalkTeacher on onnxruntime, commanded ``teacher_command`` of the
    student's command, plus lift_angles' offsets), clamped as ``StepEnv.supervised_actions`` clamps them."""
    from parkour_core.robots import G1
    from training.envs.supervision import SUPERVISOR
    from training.envs.tracking import G1_CONTRACT
    from training.tasks.student_step.teacher import LEG_PITCH_JOINTS, LIFT_PATTERN, lift_angles, teacher_command
    from training.tasks.student_walk.teacher import WalkTeacher

    gain = step_checks["teacher_command_gain"]
    assert gain != 1.0, "the walking policy's command gain is not exercised"
    assert step_checks["supervisor_limits"], "the labels' clamp is not exercised"
    low, high = G1.q_min + SUPERVISOR.joint_margin_rad, G1.q_max - SUPERVISOR.joint_margin_rad
    clamped = 0
    z = np.load(step_checks["dir"] / "student_step_teacher.npz")
    steps, n = z["labels"].shape[:2]
    teacher = WalkTeacher(n)
    scale = float(teacher.manifest.action_scale)
    worst, lifted = 0.0, 0
    for k in range(steps):
        command = teacher_command(z["command"][k], gain)
        expected = teacher.act(z["q"][k], z["dq"][k], z["quat"][k], z["gyro"][k], command, z["last_action"][k],
                               z["phase"][k])  # fmt: skip
        for i in range(n):
            real = z["half"][k, i, :, 0] > 0
            lift = lift_angles(z["foot_pos"][k, i], z["foot_vel"][k, i], z["base_vel"][k, i], z["center"][k, i][real],
                               z["half"][k, i][real], z["yaw"][k, i][real])  # fmt: skip
            for leg, joints in enumerate(LEG_PITCH_JOINTS):
                expected[i, list(joints)] += LIFT_PATTERN * lift[leg] / scale
            lifted += int((lift > 0).sum())
        targets = G1_CONTRACT.targets(expected)
        clamped += int(np.sum((targets < low) | (targets > high)))
        expected = G1_CONTRACT.actions_for(np.clip(targets, low, high))
        worst = max(worst, float(np.abs(z["labels"][k] - expected).max()))
    assert lifted > 0 and clamped > 0, (lifted, clamped)
    assert worst < 1e-4, f"labels differ from StepTeacher's by up to {worst}"
