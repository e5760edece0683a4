"""The robot runtime runs without torch and the training workspace (`scripts/setup.sh --robot`).

A robot computer installs requirements/robot.txt only. Here every runtime module is imported, the
supervisor's core is built as on the robot and a trained student is loaded and stepped, in a Python
whose import system refuses torch, onnx and `training`: any of them reached from the runtime fails
the test with the import that pulled it in.
"""

import subprocess
import sys

from parkour_core.paths import repo_root

BLOCKER = """
import sys
class NotOnTheRobot:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "onnx", "training"):
            raise ImportError(f"{name} is not part of the robot runtime (requirements/robot.txt)")
        return None
sys.meta_path.insert(0, NotOnTheRobot())
"""

RUNTIME = """
import importlib
for module in ("parkour_safety.supervisor_node", "parkour_control.policy_node", "parkour_perception.depth_node",
               "parkour_teleop.teleop_node", "parkour_teleop.script_node", "parkour_sim.bridge_node",
               "parkour_bringup.bag.recorder", "parkour_bringup.graph", "parkour_bringup.cli"):
    importlib.import_module(module)
import numpy as np
from parkour_core.bundle import load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.config import load_config
from parkour_core.paths import config_dir
from parkour_core.runner import PolicyRunner, RobotState
from parkour_core.supervisor_setup import build_core

core = build_core(load_config(config_dir() / "g1_robot.yaml"))
assert core.fallback is not None
runner = PolicyRunner(load_bundle(resolve_bundle("student_walk")), intra_op_threads=1)
spec = runner.bundle.robot
runner.set_depth(np.zeros((58, 87), dtype=np.float32), 0.0)
targets = runner.step(RobotState(spec.default_q, np.zeros(spec.num_joints), np.array([1.0, 0, 0, 0]), np.zeros(3)),
                      np.zeros(3))
assert np.all(np.isfinite(targets))
from parkour_bringup.cli import main
assert main(["model", "verify", "student_step"]) == 0
assert main(["train", "smoke", "--out", "/nonexistent"]) == 2  # a verb of the workspace: one clear line, not a crash
print("runtime ok")
"""


def test_the_runtime_imports_and_runs_without_torch_onnx_or_the_training_workspace():
    proc = subprocess.run([sys.executable, "-c", BLOCKER + RUNTIME], cwd=repo_root(), capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0 and "runtime ok" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_the_blocker_does_block():
    proc = subprocess.run([sys.executable, "-c", BLOCKER + "import torch"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "not part of the robot runtime" in proc.stderr
