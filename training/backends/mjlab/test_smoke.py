"""Our tasks on mjlab (MuJoCo-Warp on warp's CPU device): the PHP teacher on each reference's boxes
with the privileged height scan, and the H1 velocity task, each for two iterations; and what they
observe and reward, checked against our CPU code from the same state (checks.py).

Runs where ``.venv-mjlab`` exists (``bash training/backends/mjlab/setup.sh``); CI does not create it
(2.3 GB and about 9 minutes on 2 cores, for a backend meant for GPUs; see the README), so there the
tests are skipped and say so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
VENV_PY = ROOT / ".venv-mjlab" / "bin" / "python"
CHECKS = ROOT / "training" / "backends" / "mjlab" / "checks.py"

pytestmark = pytest.mark.skipif(
    not VENV_PY.exists(),
    reason="no .venv-mjlab (optional: `bash training/backends/mjlab/setup.sh` creates it; CI does not, see README)",
)


def _train(out: Path, config: str, *extra: str) -> dict:
    """Through the command a GPU run uses (``parkour train run --backend mjlab --device cuda``), on the CPU."""
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "train", "run", "--config", config, "--backend", "mjlab",
           "--device", "cpu", "--set", "run.max_iterations=2", "--set", "run.save_interval=2", *extra,
           "--out", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads((out / "mjlab_smoke.json").read_text())
    assert result["iterations"] == 2 and result["device"] == "cpu"
    assert result["env_steps_per_s"]["n"] == 1 and result["env_steps_per_s"]["median"] > 0
    assert list((out / "run").rglob("model_*.pt")), "mjlab's runner saved no checkpoint"
    return result


@pytest.fixture(scope="module")
def checks(tmp_path_factory) -> dict:
    """checks.py's three probes in one process (teacher scan, H1 terms, depth), about 40 s."""
    out = tmp_path_factory.mktemp("mjlab_checks")
    done = subprocess.run([str(VENV_PY), str(CHECKS), "all", "--out", str(out), "--num-envs", "4", "--steps", "60"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return {name: json.loads((out / f"{name}_check.json").read_text()) for name in ("teacher", "h1", "depth")}


def test_the_teacher_task_trains_on_mjlab_on_the_cpu(tmp_path):
    """The teacher on the two toy references (their boxes on their tiles, the height scan observed)."""
    result = _train(tmp_path / "mjlab", "smoke_cpu", "--num-envs", "4")
    assert result["task"] == "Parkour-PHP-Teacher-G1" and result["height_scan"] is True
    assert len(result["references"]) == 2
    assert result["env_steps"] == result["num_envs"] * 16 * 2  # smoke_cpu: 16 steps per env and iteration


def test_the_teacher_height_scan_reads_the_boxes_of_each_environments_reference(checks):
    c = checks["teacher"]
    assert c["scan_size"] == {"actor": c["expected_size"], "critic": c["expected_size"]} and c["expected_size"] == 121
    # Each environment stands on the tile of the reference it tracks, and both references are used.
    assert c["ref_id"] == c["terrain_column"] and sorted(set(c["ref_id"])) == [0, 1]
    for ref, seen, pelvis, off in zip(c["ref_id"], c["seen_box_height_m"], c["pelvis_height_m"], c["scan_off_box_mean"],
                                      strict=True):  # fmt: skip
        # In front of the box the scan reads pelvis height less the box's (10 cm or 20 cm); behind it the floor.
        assert seen == pytest.approx(c["box_height_m"][ref], abs=1e-3)
        assert off == pytest.approx(pelvis, abs=1e-3)
    # Point by point the CPU env's analytic scan of the same pose: its grid, order, frame and heights.
    assert c["max_abs_error_vs_cpu_scan_m"] < 1e-4
    assert c["actor_equals_critic_scan"]


def test_the_h1_task_trains_on_mjlab_on_the_cpu(tmp_path):
    """h1_walk from our own H1 MJCF, through the same command as its CPU backend."""
    result = _train(tmp_path / "h1", "h1_walk_tiny", "--num-envs", "4")
    assert result["task"] == "Parkour-H1-Velocity"
    assert result["env_steps"] == 4 * 8 * 2  # h1_walk_tiny: 8 steps per env and iteration


def test_the_h1_task_observes_and_rewards_what_h1_walk_does(checks):
    c = checks["h1"]
    assert c["action_joint_order_is_parkour_core"]
    assert c["actor_obs_size"] == c["expected_actor_obs_size"] and c["critic_obs_size"] == c["expected_critic_obs_size"]
    assert c["max_abs_error_actor_obs"] < 1e-4
    assert c["max_abs_error_gait_phase_rad"] < 1e-4
    assert c["resets"] > 0  # the gait clock's reset path ran
    assert set(c["max_rel_error_reward_terms"]) == set(c["reward_term_nonzero_steps"])
    for name, err in c["max_rel_error_reward_terms"].items():
        assert err < 1e-4, f"reward term {name}: relative error {err}"
        assert c["reward_term_nonzero_steps"][name] > 0, f"reward term {name} was zero on every step: no comparison"


def test_mjlab_gives_each_environment_a_58x87_depth_image(checks):
    """The students' depth on mjlab (the README's verdict): a camera sensor and a ray pattern of our camera."""
    c = checks["depth"]
    assert c["camera_sensor_image_shape"] == [c["num_envs"], 58, 87, 1]
    assert c["ray_sensor_rays_per_env"] == 58 * 87
    # The ray sensor with our CPU camera's rays is our depth image (87 x 58 deg).
    assert c["ray_sensor_vs_cpu_87x58deg"]["max_abs_error_m"] < 1e-4
    assert c["ray_sensor_vs_cpu_87x58deg"]["hole_mismatch_pixels"] == 0
    # mujoco_warp's renderer keeps pixels square: 87 x 58 pixels span 79.5 x 58 deg, not the D435's 87 x 58.
    assert c["camera_sensor_vs_cpu_square_pixel_fov"]["max_abs_error_m"] < 1e-4
    assert c["camera_sensor_vs_cpu_87x58deg"]["max_abs_error_m"] > 1e-2
