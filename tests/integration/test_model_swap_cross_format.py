"""Swaps across trainers' formats in the running sim graph, and refusals that never reach the robot.

On the elastic band (an operator trying policies on the gantry) the G1 runs holosoma's walker
(models/g1_walk); the script swaps to an mjlab export imported with ``parkour model import mjlab``, asks
for three bundles that must be refused while it drives (where a refused import would have written, a
manifest cut short, a manifest edited to another joint order), swaps to our depth student
(models/student_walk), lowers it and walks. The imported bundle runs unsealed (its manifest.sha256
removed, as a bundle made by hand has none) and is reported so. A real rclpy listener records the typed
``/policy/bundle`` announcements and which bundle each ``/policy/joint_targets`` came from; each refusal
is one line, the mjlab policy keeps driving, the loop keeps its 50 Hz. test_model_swap.py covers the other refusals.
The mjlab file is built as test_bundle_import_mjlab.py builds its files, its output layer scaled down so
it hangs on the band near mjlab's default pose; parity with mjlab's environment is
training/backends/mjlab/test_velocity_parity.py's to check.
"""

import json
import re
import shutil
import subprocess
import sys
import threading

import pytest

from parkour_core import interfaces as topics
from parkour_core.bundle import MANIFEST_SEAL, seal_manifest
from parkour_core.bundles import resolve_bundle
from parkour_core.interfaces import Qos
from parkour_core.robots import G1

from .conftest import REPO, graph_env, write_config

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]  # torch.onnx

MJLAB_TEST = REPO / "src" / "parkour_core" / "test" / "test_bundle_import_mjlab.py"
STUDENT = "student_walk"
# Script time (s). On the band, as an operator tries a policy on the gantry: holosoma's walker is activated,
# the swaps and refusals follow, and the student is lowered to the ground and walks. The swaps are answered
# well within their spacing (a load and 25 shadow ticks, 0.5 s of sim time; a refusal, a load that fails),
# so none is refused as "another swap is in progress".
MJLAB_AT, REFUSALS_AT, STUDENT_AT = 4.0, (5.5, 6.0, 6.5), 7.5
STEPS = [
    {"at_s": 0.2, "request": "stand_up"},
    {"at_s": 2.5, "request": "activate", "in_mode": "STAND"},
    {"at_s": 9.0, "request": "release_band", "in_mode": "ACTIVE"},
    {"at_s": 9.5, "cmd": [0.4, 0.0, 0.0]},
]
# The script's clock starts 1-3 s in; the student walks from script time 9.5 s to the end.
DURATION_S = 16.0


@pytest.fixture(scope="module")
def mjlab_format(load_script):
    """The unit tests' mjlab-format builder (skips where torch or onnx is missing: a robot-only install)."""
    return load_script(MJLAB_TEST, "mjlab_format_for_swaps")


def parkour(ros_domain: int, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "parkour_bringup.cli", *args]
    env = graph_env(ros_domain)
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s)


def quiet_mjlab_export(mjlab_format, path):
    """An mjlab-format file with its output layer scaled by 0.01: actions near zero, mjlab's default pose."""
    import onnx
    from onnx import numpy_helper

    mjlab_format.mjlab_export(path)
    model = onnx.load(str(path))
    for init in model.graph.initializer:
        if init.name.startswith("mlp.2."):  # the output layer
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * 0.01, init.name))
    onnx.save(model, str(path))
    return path


def edited_copy(source, out, edit):
    shutil.copytree(source, out)
    path = out / "manifest.json"
    path.write_text(edit(path.read_text()))
    seal_manifest(out)  # edited on purpose: each copy is refused for what it breaks, not for the edit
    return out


def swapped_joint_order(text: str) -> str:
    data = json.loads(text)
    names = data["joint_names"]
    names[0], names[1] = names[1], names[0]
    data["name"] = "mjlab_joint_order"
    return json.dumps(data, indent=2)


class Listener:
    """/policy/bundle and /policy/joint_targets' frame_id, heard by a node of this process."""

    def __init__(self, ros_domain: int) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        from parkour_core.ros_process import create_subscription

        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=ros_domain)  # the environment's RMW and discovery range
        self.node = rclpy.create_node("test_swap_listener", context=self.context)
        self.announced: list[tuple[str, str, bool, list[float], bool]] = []
        self.drivers: list[list] = []  # [bundle name, targets heard] in the order they drove
        create_subscription(self.node, topics.BUNDLE, self._on_bundle)
        create_subscription(self.node, topics.JOINT_TARGETS, self._on_targets, Qos(100))
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _on_bundle(self, msg) -> None:
        self.announced.append((msg.name, msg.path, bool(msg.uses_depth), list(msg.kp), bool(msg.manifest_verified)))

    def _on_targets(self, msg) -> None:
        if not self.drivers or self.drivers[-1][0] != msg.header.frame_id:
            self.drivers.append([msg.header.frame_id, 0])
        self.drivers[-1][1] += 1

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()
        self.thread.join(timeout=5)


def test_swaps_holosoma_to_imported_mjlab_to_our_student_and_refusals_never_reach_the_policy(
    tmp_path, domains, mjlab_format, monkeypatch
):
    dds_domain, ros_domain = domains
    for key, value in graph_env(ros_domain).items():  # this process's listener joins the graph's domain
        monkeypatch.setenv(key, value)
    # A refused import writes nothing: not the bundle, not a folder above it, not its work folder.
    (tmp_path / "exports").mkdir()
    g1_23 = [j for j in G1.joint_names if not re.fullmatch(r".*_wrist_(pitch|yaw)_joint|waist_(roll|pitch)_joint", j)]
    bad_src, _ = mjlab_format.mjlab_export(tmp_path / "exports" / "g1_23dof.onnx", joints=g1_23)
    never = tmp_path / "refused" / "mjlab_23dof"
    proc = parkour(ros_domain, "model", "import", "mjlab", str(bad_src), "--out", str(never))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stdout + proc.stderr
    assert "DoF count: the policy drives 23 joints, the g1 has 29" in lines[0], lines
    assert not (tmp_path / "refused").exists()

    src = quiet_mjlab_export(mjlab_format, tmp_path / "exports" / "policy.onnx")
    mjlab = tmp_path / "bundles" / "mjlab_walk"
    proc = parkour(ros_domain, "model", "import", "mjlab", str(src), "--out", str(mjlab))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    not_json = edited_copy(mjlab, tmp_path / "bundles" / "not_json", lambda text: text[: len(text) // 2])
    reordered = edited_copy(mjlab, tmp_path / "bundles" / "joint_order", swapped_joint_order)
    (mjlab / MANIFEST_SEAL).unlink()  # unsealed: it runs, and is reported unverified
    refused = {  # bundle -> words its refusal must hold
        str(never): "is neither a bundle folder nor a registered bundle",
        str(not_json): "is not valid JSON",
        str(reordered): "joint_names do not match the g1 SDK order (same joints in another order)",
    }
    student = resolve_bundle(STUDENT)
    requests = [(MJLAB_AT, str(mjlab)), *zip(REFUSALS_AT, refused, strict=True), (STUDENT_AT, STUDENT)]
    steps = STEPS + [{"at_s": t, "request": "swap", "bundle": b} for t, b in requests]
    config = write_config(tmp_path, "g1_sim.yaml", script={"steps": steps})
    out = tmp_path / "run"
    cmd = ["sim", "--config", str(config), "--duration", str(DURATION_S), "--no-render", "--no-bag"]
    cmd += ["--out", str(out), "--domain", str(dds_domain), "--ros-domain-id", str(ros_domain)]

    listener = Listener(ros_domain)
    try:
        sim = parkour(ros_domain, *cmd, timeout_s=900)
    finally:
        listener.close()
    logs = {p.stem: p.read_text() for p in sorted((out / "logs").glob("*.log"))} if out.exists() else {}
    tails = "\n".join(text[-2000:] for text in logs.values())
    assert sim.returncode == 0, sim.stdout[-3000:] + sim.stderr[-3000:] + tails

    # The policy node's answers: the two swaps switched, the three refusals each in one line.
    policy = json.loads((out / "policy.json").read_text())
    swaps = policy["swaps"]
    assert [s["requested"] for s in swaps] == [b for _, b in requests], tails
    assert [s["ok"] for s in swaps] == [True, False, False, False, True], swaps
    for s, (bundle, words) in zip(swaps[1:4], refused.items(), strict=True):
        assert s["message"].startswith("refused: ") and words in s["message"] and "\n" not in s["message"], s
        said = [line for line in logs["policy"].splitlines() if f"swap to {bundle!r} refused" in line]
        assert len(said) == 1 and "[ERROR]" in said[0] and "'mjlab_walk' keeps running" in said[0], said
    assert policy["bundle_name"] == STUDENT and policy["manifest_verified"] is True
    assert [s["manifest_verified"] for s in swaps] == [False, None, None, None, True], swaps
    assert "(manifest unsealed: no manifest.sha256)" in swaps[0]["message"], swaps[0]

    # Announced on /policy/bundle in turn, each before its targets: holosoma's, mjlab's, ours; nothing refused.
    names = [a[0] for a in listener.announced]
    assert names == ["g1_walk", "mjlab_walk", STUDENT], listener.announced
    assert [a[1] for a in listener.announced] == [str(resolve_bundle("g1_walk")), str(mjlab), str(student)]
    assert [a[2] for a in listener.announced] == [False, False, True]  # only the student reads depth
    assert [a[4] for a in listener.announced] == [True, False, True]  # the mjlab import runs unsealed
    imported = json.loads((mjlab / "manifest.json").read_text())
    assert listener.announced[1][3] == pytest.approx(imported["kp"])
    # The targets came from those three, in that order, and mjlab's kept coming through the refusals.
    drivers = [name for name, _ in listener.drivers]
    assert drivers == ["g1_walk", "mjlab_walk", STUDENT], listener.drivers
    spacing_ticks = round((STUDENT_AT - MJLAB_AT) / 0.02)
    assert listener.drivers[1][1] > spacing_ticks // 2, listener.drivers

    # The loop kept its 50 Hz on the sim clock from the first swap to the last, refusals included.
    first, last = swaps[0]["requested_at_tick"], swaps[-1]["switched_at_tick"]
    assert last - first >= spacing_ticks, (first, last)
    periods = [p for k, p in zip(policy["period_ticks"], policy["periods_ms"], strict=True) if first <= k <= last]
    assert len(periods) >= last - first - 1 and max(periods) <= 20.0 + 1e-6, max(periods)
    assert policy["deadline_misses"] == 0 and policy["nonfinite_ticks"] == 0

    # The supervisor stayed ACTIVE from activation to the end, and the student walked the robot on.
    supervisor = json.loads((out / "supervisor.json").read_text())
    reasons = [t["reason"] for t in supervisor["supervisor_transitions"]]
    assert reasons == ["stand up requested", "stand-up complete", "activate requested"], reasons
    assert supervisor["final_mode"] == "ACTIVE"
    report = json.loads((out / "report.json").read_text())
    assert report["fell"] is False and report["final_mode"] == "ACTIVE", report
    assert report["forward_displacement_m"] > 0.3, report["forward_displacement_m"]
