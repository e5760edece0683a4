"""Parity with the trainer: an mjlab export, imported, observes and acts as mjlab's own environment.

export_velocity.py trains mjlab's G1 flat velocity task for two iterations on warp's CPU device and
exports it with mjlab's exporter; velocity_parity.py steps mjlab's play environment with mjlab's policy
and records each tick's state, observation, action and targets (in .venv-mjlab). Here, in the runtime
.venv, the exported file goes through ``parkour model import mjlab`` and each recorded state through
PolicyRunner: its observation (in mjlab's layout, by the import's declared mapping) and its joint
targets must equal mjlab's to 1e-5. Runs where ``.venv-mjlab`` exists (``bash
training/backends/mjlab/setup.sh``); elsewhere skipped, as the other mjlab tests.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from parkour_core.bundle import load_bundle
from parkour_core.bundles.importers import import_bundle, mjlab
from parkour_core.bundles.importers.common import onnx_io, parse_declaration, plan
from parkour_core.robots import G1
from parkour_core.runner import PolicyRunner, RobotState

ROOT = Path(__file__).resolve().parents[3]
VENV_PY = ROOT / ".venv-mjlab" / "bin" / "python"
HERE = ROOT / "training" / "backends" / "mjlab"
TOLERANCE = 1e-5

pytestmark = pytest.mark.skipif(
    not VENV_PY.exists(),
    reason="no .venv-mjlab (optional: `bash training/backends/mjlab/setup.sh` creates it; CI does not, see README)",
)


def _run(*args: str) -> None:
    done = subprocess.run([str(VENV_PY), *args], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def mjlab_run(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    """mjlab's export and 2 environments x 150 ticks of its play environment (the policy falls and is reset)."""
    out = tmp_path_factory.mktemp("mjlab_velocity")
    _run(str(HERE / "export_velocity.py"), "--out", str(out), "--iterations", "2", "--num-envs", "2")
    _run(str(HERE / "velocity_parity.py"), str(out / "model.pt"), "--out", str(out / "parity.npz"), "--steps", "150")
    return out / "policy.onnx", dict(np.load(out / "parity.npz"))


def parity(onnx: Path, rec: dict[str, np.ndarray], bundle_dir: Path) -> dict[str, float]:
    """The worst |difference| between PolicyRunner on the imported bundle and mjlab, over every recorded tick."""
    bundle = load_bundle(import_bundle("mjlab", str(onnx), bundle_dir))
    source = mjlab.read(str(onnx), None)
    inputs, outputs, _ = onnx_io(onnx)
    mapping = plan(parse_declaration(source.declaration), source, inputs["obs"][0][1], outputs["actions"][0][1])
    sdk = [list(rec["joint_names"]).index(j) for j in G1.joint_names]  # SDK joint k is mjlab joint sdk[k]
    default = np.asarray(bundle.manifest.default_joint_pos)
    scale = rec["action_scale"].astype(np.float64)[sdk]
    worst = {"obs": 0.0, "target": 0.0, "action": 0.0}
    for env in range(rec["obs"].shape[0]):
        runner = PolicyRunner(bundle)
        for t in range(rec["obs"].shape[1]):
            if rec["episode_step"][env, t] == 0:  # a new episode: mjlab zeroed its previous action
                runner.reset()
            state = RobotState(
                q=(rec["joint_pos"][env, t] + rec["encoder_bias"][env, t]).astype(np.float64)[sdk],  # encoder reading
                dq=rec["joint_vel"][env, t].astype(np.float64)[sdk],
                quat_wxyz=rec["quat_wxyz"][env, t].astype(np.float64),
                gyro=rec["pelvis_ang_vel_b"][env, t].astype(np.float64),
            )
            command = rec["command"][env, t].astype(np.float64)
            ours = mapping.trainer_obs(runner.observe(state, command)[None])[0]
            targets = runner.step(state, command)
            worst["obs"] = max(worst["obs"], float(np.abs(ours - rec["obs"][env, t]).max()))
            worst["target"] = max(worst["target"], float(np.abs(targets - rec["target"][env, t][sdk]).max()))
            action = (targets - default) / scale
            worst["action"] = max(worst["action"], float(np.abs(action - rec["action"][env, t][sdk]).max()))
    return worst


def test_the_imported_mjlab_export_observes_and_acts_as_mjlab_s_environment(mjlab_run, tmp_path):
    onnx, rec = mjlab_run
    worst = parity(onnx, rec, tmp_path / "mjlab_walk")
    print(f"max |runtime - mjlab|: observation {worst['obs']:.3g}, targets {worst['target']:.3g} rad, "
          f"action {worst['action']:.3g}")  # fmt: skip
    assert worst["obs"] <= TOLERANCE and worst["target"] <= TOLERANCE and worst["action"] <= TOLERANCE, worst
    assert (rec["episode_step"][:, 1:] == 0).any(), "no environment was reset: the reset path was not compared"
    assert np.abs(rec["action"]).max() > 0.05 and np.abs(rec["obs"]).max() > 1.0  # not a trivially zero run


def test_the_import_s_contract_is_mjlab_s_environment_s(mjlab_run, tmp_path):
    """Joint order, default pose, action scale and gains in the bundle against the values mjlab's env ran with
    (the metadata holds them to three decimals; the exact ones are mjlab's G1 constants)."""
    onnx, rec = mjlab_run
    m = load_bundle(import_bundle("mjlab", str(onnx), tmp_path / "b")).manifest
    sdk = [list(rec["joint_names"]).index(j) for j in G1.joint_names]
    assert list(rec["observation_names"]) == [t["name"] for t in m.provenance["import"]["observation"]["terms"]]
    np.testing.assert_allclose(m.default_joint_pos, rec["default_joint_pos"][sdk], atol=1e-7)
    np.testing.assert_allclose(m.kp, rec["stiffness"][sdk], rtol=1e-12)
    np.testing.assert_allclose(m.kd, rec["damping"][sdk], rtol=1e-12)
    scale = np.asarray(m.provenance["import"]["action"]["scale"])
    np.testing.assert_allclose(scale, rec["action_scale"], rtol=1e-7)  # mjlab holds it in float32
    assert 1.0 / m.policy_hz == pytest.approx(float(rec["step_dt"]))
