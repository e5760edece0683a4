"""`parkour sim-to-sim`: the report computed from small hand-written run records, its refusals in one line,
the runtime side without torch or the training workspace, and one short real run (integration)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from parkour_bringup import cli
from parkour_bringup.commands.sim_to_sim_cmd import summary_line
from parkour_bringup.sim_to_sim import (
    JointLog,
    build_report,
    bundle_claims,
    command_within_claims,
    interventions,
    joint_margins,
    markdown,
    mode_series,
    run_summary,
)
from parkour_core.paths import repo_root
from parkour_core.robots import get_robot

G1 = get_robot("g1")
KNEE = G1.joint_names.index("left_knee_joint")
HIP_ROLL = G1.joint_names.index("right_hip_roll_joint")
ANKLE = G1.joint_names.index("left_ankle_pitch_joint")

TRANSITIONS = [
    {"t": 0.2, "from": "DAMP", "to": "STAND_UP", "reason": "stand up requested"},
    {"t": 2.2, "from": "STAND_UP", "to": "STAND", "reason": "stand-up complete"},
    {"t": 2.5, "from": "STAND", "to": "ACTIVE", "reason": "activate requested"},
    {"t": 8.0, "from": "ACTIVE", "to": "BLIND", "reason": "policy targets far beyond joint limits"},
]
REQUESTS = [
    {"t": 0.2, "request": "stand_up", "source": "service", "mode": "DAMP", "then": "STAND_UP"},
    {"t": 2.5, "request": "activate", "source": "service", "mode": "STAND", "then": "ACTIVE"},
]


def joint_log(seconds=10.0, hz=100.0):
    """The default pose throughout; the left knee 0.05 rad from its upper limit at 5 s, the right hip roll at
    its torque limit from 5 s to 6 s, and wild values (which must not count) while the supervisor has it."""
    t = np.arange(0.0, seconds, 1.0 / hz)
    q = np.tile(G1.default_q, (len(t), 1))
    dq = np.zeros_like(q)
    tau = np.zeros_like(q)
    dq[:, ANKLE] = 0.5 * G1.dq_max[ANKLE]
    q[np.isclose(t, 5.0), KNEE] = G1.q_max[KNEE] - 0.05
    tau[(t >= 5.0) & (t < 6.0), HIP_ROLL] = -88.0
    before, after = t < 2.5, t >= 8.0
    q[before | after, KNEE] = G1.q_max[KNEE] + 1.0  # outside the bundle's command: not the bundle's
    tau[before | after, :] = G1.tau_max
    return JointLog(t, q, dq, tau)


def test_the_mode_at_each_sample_follows_the_transitions():
    modes = mode_series(TRANSITIONS, np.array([0.0, 0.2, 2.4, 2.5, 7.9, 8.0, 9.0]))
    assert list(modes) == ["DAMP", "STAND_UP", "STAND", "ACTIVE", "ACTIVE", "BLIND", "BLIND"]


def test_margins_count_only_the_time_the_bundle_commands_and_name_the_tightest_joints():
    limits = G1.tau_max.copy()
    limits[HIP_ROLL] = 88.0  # holosoma's G1 clamps its hip roll motors there
    m = joint_margins(joint_log(), G1, TRANSITIONS, fell_at_s=None, torque_limits=limits)
    assert m["samples"] == 550 and m["seconds"] == pytest.approx(5.5) and m["sample_hz"] == pytest.approx(100.0)
    assert m["tightest"]["position"] == {"joint": "left_knee_joint", "position_margin_rad": pytest.approx(0.05)}
    knee = next(r for r in m["joints"] if r["joint"] == "left_knee_joint")
    assert knee["nearest_limit"] == "upper" and knee["position_margin_at_s"] == pytest.approx(5.0)
    assert m["tightest"]["torque"] == {"joint": "right_hip_roll_joint", "peak_torque_of_limit": 1.0}
    assert m["joints_at_torque_limit"] == ["right_hip_roll_joint"]
    hip = next(r for r in m["joints"] if r["joint"] == "right_hip_roll_joint")
    assert hip["torque_at_limit_share"] == pytest.approx(100 / 550, abs=1e-4) and hip["torque_limit_nm"] == 88.0
    assert m["tightest"]["speed"] == {"joint": "left_ankle_pitch_joint", "peak_speed_of_limit": 0.5}
    assert m["joints_outside_limits"] == []


def test_against_the_robots_own_effort_limit_the_same_torque_is_not_at_the_limit():
    m = joint_margins(joint_log(), G1, TRANSITIONS, fell_at_s=None)
    assert m["joints_at_torque_limit"] == []
    assert m["tightest"]["torque"]["peak_torque_of_limit"] == pytest.approx(88.0 / 139.0, abs=1e-4)


def test_a_fall_ends_the_time_that_counts():
    m = joint_margins(joint_log(), G1, TRANSITIONS, fell_at_s=4.0)
    assert m["samples"] == 150  # 2.5 s to 4.0 s
    assert m["tightest"]["position"]["position_margin_rad"] > 0.05  # the knee came close only at 5 s
    assert joint_margins(joint_log(), G1, TRANSITIONS, fell_at_s=2.0)["samples"] == 0


def test_every_transition_is_listed_with_its_cause_and_who_caused_it():
    supervisor = {
        "supervisor_transitions": TRANSITIONS,
        "requests": REQUESTS,
        "final_mode": "BLIND",
        "limit_clamps": 7,
        "limit_clamps_by_kind": {"position": 5, "velocity": 0, "torque": 2, "total": 7},
        "faults": {"tilt": {"onsets": 0, "ticks": 0}, "targets_out_of_range": {"onsets": 1, "ticks": 3}},
        "targets_rejected": 0,
        "fallback": {"steps": 100},
    }
    i = interventions(supervisor, {"lowcmd_limit_violations": 0})
    assert [tr["by"] for tr in i["transitions"]] == ["operator", "routine", "operator", "supervisor"]
    assert i["by_supervisor"] == [{**TRANSITIONS[3], "by": "supervisor"}]
    assert i["limit_clamps_by_kind"] == {"position": 5, "torque": 2}
    assert i["faults"] == {"targets_out_of_range": {"onsets": 1, "ticks": 3}}
    assert i["fallback_steps"] == 100 and i["lowcmd_limit_violations"] == 0


HOLOSOMA_MANIFEST = {
    "name": "g1_walk_fastsac",
    "robot": "g1",
    "action_scale": 0.25,
    "rates": {"policy_hz": 50.0},
    "gait": {"period_s": 1.0},
    "provenance": {
        "source": "holosoma-inference 0.1.3, models/loco/g1_29dof/fastsac_g1_29dof.onnx",
        "trained_with": "holosoma FastSAC",
        "command_ranges": {
            "lin_vel_x": [-1.0, 1.0],
            "lin_vel_y": [-1.0, 1.0],
            "ang_vel_yaw": [-0.5, 0.5],
            "heading": [-3.14, 3.14],
        },
        "import": {"format": "holosoma", "verified": ["a", "b"], "assumed": ["terms in alphabetical order"]},
    },
}


def test_the_claims_read_command_ranges_under_each_trainers_names():
    c = bundle_claims(HOLOSOMA_MANIFEST)
    assert c["command_ranges_vx_vy_yaw"] == {"vx": [-1.0, 1.0], "vy": [-1.0, 1.0], "yaw_rate": [-0.5, 0.5]}
    assert c["provenance"]["trained_with"] == "holosoma FastSAC"
    assert c["imported_from"] == "holosoma" and c["import_assumed"] == ["terms in alphabetical order"]
    assert command_within_claims([1.0, 0.0, 0.4], c) is True
    assert command_within_claims([0.4, 0.0, 0.6], c) is False
    ours = bundle_claims({"provenance": {"command_ranges": {"vx": [-0.5, 1.0], "vy": [-0.3, 0.3]}}})
    assert command_within_claims([1.2, 0.0, 0.0], ours) is False
    assert command_within_claims([1.0, 0.0, 3.0], ours) is True  # no yaw-rate range claimed
    student = bundle_claims({"command": {"speed_levels_mps": [0.0, 0.5, 1.0, 1.5]}})
    assert command_within_claims([1.0, 0.0, 0.4], student) is True
    assert command_within_claims([2.0, 0.0, 0.0], student) is False
    assert command_within_claims([1.0, 0.0, 0.0], bundle_claims({})) is None


def walk_records(vx_measured, fell_at=None):
    """bridge.json, script.json and report.json of a walk at ``vx_measured`` under 0.5 then 1.0 m/s."""
    t = np.arange(0.02, 20.0, 0.02)
    vx = np.where(t >= 3.0, vx_measured, 0.0)
    x = np.cumsum(vx) * 0.02
    bridge = {
        "trajectory": {"t": t.tolist(), "x": x.tolist(), "y": [0.0] * len(t), "yaw": [0.0] * len(t),
                       "vx": vx.tolist(), "vy": [0.0] * len(t)},
        "fell": fell_at is not None, "fell_at_s": fell_at, "robot_model": "holosoma", "lowcmd_limit_violations": 0,
    }  # fmt: skip
    script = {"log": [{"t": 3.0, "cmd": [0.5, 0.0, 0.0]}, {"t": 10.0, "cmd": [1.0, 0.0, 0.0]}]}
    return bridge, script, {"active_from_s": 2.5, "final_mode": "ACTIVE"}


def test_the_report_puts_each_commanded_segment_beside_the_claim_and_each_model():
    script = [{"at_s": 3.0, "cmd": [0.5, 0.0, 0.0]}, {"at_s": 10.0, "cmd": [1.0, 0.0, 0.0]},
              {"at_s": 15.0, "cmd": [0.4, 0.0, 0.6]}]  # fmt: skip
    supervisor = {"supervisor_transitions": TRANSITIONS[:3], "requests": REQUESTS, "final_mode": "ACTIVE"}
    bridge, walk, report = walk_records(0.5)
    runs = {"holosoma": run_summary(bridge, walk, report, supervisor, joint_log(), G1)}
    bridge, walk, report = walk_records(0.4, fell_at=12.0)
    runs["mjlab"] = run_summary(bridge, walk, report, supervisor, None, G1)
    report = build_report(bundle_claims(HOLOSOMA_MANIFEST), runs, script)
    rows = {tuple(r["command"]): r for r in report["tracking"]}
    assert rows[(0.5, 0.0, 0.0)]["within_claimed_ranges"] is True
    assert rows[(0.5, 0.0, 0.0)]["holosoma"]["speed_rms_error"] == pytest.approx(0.0, abs=1e-9)
    assert rows[(0.5, 0.0, 0.0)]["mjlab"]["mean_vx"] == pytest.approx(0.4)
    assert rows[(1.0, 0.0, 0.0)]["holosoma"]["mean_vx"] == pytest.approx(0.5)
    assert rows[(1.0, 0.0, 0.0)]["mjlab"]["seconds"] == pytest.approx(12.0 - 11.5, abs=0.03)  # settle, then fell
    assert rows[(0.4, 0.0, 0.6)]["within_claimed_ranges"] is False
    assert rows[(0.4, 0.0, 0.6)]["holosoma"] is None  # never commanded in this run
    page = markdown(report)
    assert "| trained_with | holosoma FastSAC |" in page
    assert "| [0.4, 0.0, 0.6] | NO | not reached | not reached |" in page
    assert "| mjlab | yes, at 12.0 s |" in page
    assert "- 2.50 s STAND -> ACTIVE: activate requested (operator)" in page
    assert "**mjlab**: no joint states recorded" in page
    line = summary_line(runs["mjlab"])
    assert line.startswith("fell at 12.0 s, speed RMS error") and "no joint states" in line and ", ," not in line
    json.dumps(report)  # the report is plain JSON


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no_such_bundle"], "'no_such_bundle' is neither a bundle folder nor a registered bundle"),
        (["g1_walk", "--robot", "h1"], "bundle 'g1_walk' was trained for robot 'g1', but this is a 'h1'"),
        (["g1_walk", "--robot-models", "holosoma,isaac"], "--robot-models isaac: the g1 has no model 'isaac'"),
        (["g1_walk", "--duration", "0"], "--duration 0: sim seconds per run must be in (0, 600]"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_anything_runs(capsys, tmp_path, argv, message):
    assert cli.main(["sim-to-sim", *argv, "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("parkour sim-to-sim: error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_report_already_there_is_not_overwritten(capsys, tmp_path):
    (tmp_path / "sim_to_sim.json").write_text("{}")
    assert cli.main(["sim-to-sim", "g1_walk", "--out", str(tmp_path)]) == 1
    assert "sim_to_sim.json exists: pick a new --out" in capsys.readouterr().err
    assert (tmp_path / "sim_to_sim.json").read_text() == "{}"


BLOCKER = """
import sys
class NotOnTheRobot:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "onnx", "training"):
            raise ImportError(f"{name} is not part of the robot runtime")
        return None
sys.meta_path.insert(0, NotOnTheRobot())
import parkour_bringup.sim_to_sim, parkour_bringup.commands.sim_to_sim_cmd
from parkour_bringup.cli import main
assert main(["sim-to-sim", "g1_walk", "--robot-models", "nope"]) == 1
print("runtime ok")
"""


def test_sim_to_sim_needs_neither_torch_nor_the_training_workspace():
    proc = subprocess.run([sys.executable, "-c", BLOCKER], cwd=repo_root(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "runtime ok" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.integration
def test_a_short_walk_writes_the_report(tmp_path):
    """The real graph: g1_walk on holosoma's G1 for 7 s of sim time (stand up, activate, release, 0.5 m/s)."""
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "parkour_bringup.cli", "sim-to-sim", "g1_walk", "--robot-models", "holosoma",
         "--duration", "7", "--out", str(out)],
        cwd=repo_root(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "sim_to_sim.json").read_text())
    run = report["runs"]["holosoma"]
    assert not run["walk"]["fell"]
    assert [tr["to"] for tr in run["interventions"]["transitions"]] == ["STAND_UP", "STAND", "ACTIVE"]
    assert run["interventions"]["by_supervisor"] == []
    margins = run["margins"]
    assert margins["sample_hz"] == pytest.approx(200.0, rel=0.05)  # every supervisor tick
    # every tick in ACTIVE, however late a busy host let the operator's requests land in the 7 s
    active_s = run["walk"]["time_in_mode_s"]["ACTIVE"]
    assert active_s > 2.0 and margins["seconds"] == pytest.approx(active_s, abs=0.05)
    assert margins["joints_outside_limits"] == []
    assert 0.0 < margins["tightest"]["torque"]["peak_torque_of_limit"] <= 1.0
    assert report["claims"]["imported_from"] == "holosoma"
    assert report["tracking"][0]["within_claimed_ranges"] is True
    assert report["tracking"][0]["holosoma"]["mean_vx"] > 0.2
    assert (out / "sim_to_sim.md").is_file() and (out / "sim_to_sim.png").is_file()
