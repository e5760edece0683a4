"""How `parkour faults` judges a run, on hand-written node records (the suite itself runs in
tests/integration/test_faults.py)."""

import json

import pytest

from parkour_bringup.fault_suite import FAULTS, fault_config, judge, markdown_table
from parkour_core.config import load_config
from parkour_core.safety import TRANSITIONS

BY_NAME = {f.name: f for f in FAULTS}
TICK_S = 0.005  # config/g1_sim.yaml: supervisor.rate_hz 200
INJECT_S = 8.0


def write_run(run_dir, fault, transitions, fell=False, violations=0, script_log=None, bridge_faults=None,
              policy_faults=(), requests=()):  # fmt: skip
    """A scenario's records as the nodes write them, with the scenario's own config."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fault_config(fault, run_dir, run_dir / "bad_bundle")
    (run_dir / "supervisor.json").write_text(
        json.dumps(
            {
                "supervisor_transitions": transitions,
                "final_mode": transitions[-1]["to"] if transitions else "DAMP",
                "requests": list(requests),
            }
        )
    )
    faults = {"triggered": [], **(bridge_faults or {})}
    (run_dir / "bridge.json").write_text(
        json.dumps({"fell": fell, "lowcmd_limit_violations": violations, "faults": faults})
    )
    (run_dir / "policy.json").write_text(json.dumps({"faults_injected": list(policy_faults)}))
    log = script_log if script_log is not None else [{"t": INJECT_S, "request": "fault", "fault": "x", "sent": True}]
    (run_dir / "script.json").write_text(json.dumps({"log": log}))


def t(time_s, frm, to, reason="r"):
    return {"t": time_s, "from": frm, "to": to, "reason": reason}


def stalled_lowstate(tmp_path, *transitions):
    fault = BY_NAME["lowstate_stall"]
    stall = {"triggered": [{"fault": "lowstate_stall", "t": INJECT_S + 0.004}]}
    write_run(tmp_path, fault, [t(5.0, "STAND", "ACTIVE"), *transitions], fell=True, bridge_faults=stall)
    return judge(fault, tmp_path)


def test_the_deadline_comes_from_the_config_and_counts_from_the_onset(tmp_path):
    r = stalled_lowstate(tmp_path, t(INJECT_S + 0.108, "ACTIVE", "DAMP", "lowstate stale"))
    assert r["passed"] and r["reached_safe"], r
    assert r["deadline_ms"] == pytest.approx(100.0 + 2 * TICK_S * 1e3)  # lowstate_timeout_s 0.1 + 2 ticks
    assert r["onset_s"] == pytest.approx(INJECT_S + 0.004)
    assert r["time_to_safe_ms"] == pytest.approx(104.0)
    assert r["injection_to_safe_ms"] == pytest.approx(108.0)
    assert r["expected_reasons"] == ["lowstate stale"]


def test_a_late_transition_fails(tmp_path):
    r = stalled_lowstate(tmp_path, t(INJECT_S + 0.004 + 0.111, "ACTIVE", "DAMP", "lowstate stale"))
    assert not r["passed"] and not r["reached_safe"] and "deadline" in r["verdict"], r


def test_the_safe_mode_for_another_reason_fails(tmp_path):
    # A broken lowstate timeout: the robot falls and the tilt rule damps it, in time but for its own reason.
    r = stalled_lowstate(tmp_path, t(INJECT_S + 0.05, "ACTIVE", "DAMP", "base tilt beyond limit (fall)"))
    assert not r["passed"] and "reason" in r["verdict"], r


def test_only_the_first_transition_after_the_injection_is_judged(tmp_path):
    r = stalled_lowstate(
        tmp_path,
        t(INJECT_S + 0.01, "ACTIVE", "BLIND", "policy targets stale or not finite"),
        t(INJECT_S + 0.105, "BLIND", "DAMP", "lowstate stale"),
    )
    assert not r["passed"] and "not to DAMP" in r["verdict"], r


def test_a_pushed_robot_may_degrade_to_blind_before_it_falls_but_must_damp_on_the_tilt(tmp_path):
    fault = BY_NAME["push_over"]
    tilt = {"tilt_exceeded_at_s": INJECT_S + 0.7}
    flailing = t(INJECT_S + 0.4, "ACTIVE", "BLIND", "policy targets far beyond joint limits")
    write_run(tmp_path, fault, [flailing, t(INJECT_S + 0.705, "BLIND", "DAMP", "base tilt beyond limit (fall)")],
              fell=True, bridge_faults=tilt)  # fmt: skip
    r = judge(fault, tmp_path)
    assert r["passed"] and r["time_to_safe_ms"] == pytest.approx(5.0), r
    # Another degradation first, or the fall damped for another reason, fails.
    stale = t(INJECT_S + 0.4, "ACTIVE", "BLIND", "policy targets stale or not finite")
    write_run(tmp_path, fault, [stale, t(INJECT_S + 0.705, "BLIND", "DAMP", "base tilt beyond limit (fall)")],
              fell=True, bridge_faults=tilt)  # fmt: skip
    assert not judge(fault, tmp_path)["passed"]
    write_run(tmp_path, fault, [flailing, t(INJECT_S + 0.705, "BLIND", "DAMP", "joint velocity beyond limit")],
              fell=True, bridge_faults=tilt)  # fmt: skip
    assert not judge(fault, tmp_path)["passed"]


def test_a_transition_before_the_injection_does_not_count(tmp_path):
    fault = BY_NAME["policy_killed"]
    write_run(tmp_path, fault, [t(5.0, "ACTIVE", "BLIND", "policy targets stale or not finite"),
                                t(5.6, "BLIND", "ACTIVE", "policy targets and depth fresh again")],
              bridge_faults={"policy_last_target_s": INJECT_S + 0.01})  # fmt: skip
    r = judge(fault, tmp_path)
    assert not r["reached_safe"] and not r["passed"] and r["time_to_safe_ms"] is None


def test_a_dead_policy_is_timed_from_its_last_target(tmp_path):
    fault = BY_NAME["policy_killed"]
    records = {"policy_last_target_s": INJECT_S + 0.03}
    write_run(tmp_path, fault, [t(INJECT_S + 0.135, "ACTIVE", "BLIND", "policy targets stale or not finite")],
              bridge_faults=records)  # fmt: skip
    r = judge(fault, tmp_path)
    assert r["passed"] and r["time_to_safe_ms"] == pytest.approx(105.0), r
    write_run(tmp_path, fault, [t(INJECT_S + 0.145, "ACTIVE", "BLIND", "policy targets stale or not finite")],
              bridge_faults=records)  # fmt: skip
    assert not judge(fault, tmp_path)["passed"]


def test_a_missing_onset_fails(tmp_path):
    fault = BY_NAME["policy_nan"]
    write_run(tmp_path, fault, [t(INJECT_S + 0.02, "ACTIVE", "BLIND", "policy targets stale or not finite")])
    r = judge(fault, tmp_path)
    assert not r["passed"] and "onset" in r["verdict"], r


def test_nan_targets_are_due_within_two_policy_periods_of_the_policy_s_corruption(tmp_path):
    fault = BY_NAME["policy_nan"]
    onset = [{"fault": "policy_nan", "t": INJECT_S + 0.002}]
    write_run(tmp_path, fault, [t(INJECT_S + 0.041, "ACTIVE", "BLIND", "policy targets stale or not finite")],
              policy_faults=onset)  # fmt: skip
    r = judge(fault, tmp_path)
    assert r["passed"] and r["deadline_ms"] == pytest.approx(40.0), r  # g1_walk runs at 50 Hz
    write_run(tmp_path, fault, [t(INJECT_S + 0.043, "ACTIVE", "BLIND", "policy targets stale or not finite")],
              policy_faults=onset)  # fmt: skip
    assert not judge(fault, tmp_path)["passed"]


def test_an_estop_acts_within_one_tick_of_reaching_the_supervisor(tmp_path):
    fault = BY_NAME["estop_at_speed"]
    log = [{"t": INJECT_S, "request": "estop", "sent": True}]
    received = [{"t": INJECT_S + 0.012, "request": "estop", "source": "service", "mode": "ACTIVE", "then": "DAMP"}]
    write_run(tmp_path, fault, [t(INJECT_S + 0.012, "ACTIVE", "DAMP", "e-stop from the ROS service")], fell=True,
              script_log=log, requests=received)  # fmt: skip
    r = judge(fault, tmp_path)
    assert r["passed"] and r["time_to_safe_ms"] == 0.0 and r["injection_to_safe_ms"] == pytest.approx(12.0), r
    write_run(tmp_path, fault, [t(INJECT_S + 0.018, "ACTIVE", "DAMP", "e-stop from the ROS service")], fell=True,
              script_log=log, requests=received)  # fmt: skip
    assert not judge(fault, tmp_path)["passed"]


def camera_stall(tmp_path, *transitions, resumed_at=INJECT_S + 1.6):
    fault = BY_NAME["camera_stall"]
    records = {"triggered": [{"fault": "camera_stall", "t": INJECT_S + 0.003}], "camera_resumed_at_s": resumed_at}
    write_run(tmp_path, fault, [t(5.0, "STAND", "ACTIVE"), *transitions], bridge_faults=records)
    return judge(fault, tmp_path)


def test_a_camera_stall_must_also_return_to_active_in_time(tmp_path):
    stale = t(INJECT_S + 0.2, "ACTIVE", "BLIND", "depth stale")
    back = t(INJECT_S + 1.6 + 0.505, "BLIND", "ACTIVE", "policy targets and depth fresh again")
    r = camera_stall(tmp_path, stale, back)
    assert r["passed"] and r["returned"], r
    assert r["return_deadline_ms"] == pytest.approx(510.0) and r["time_to_return_ms"] == pytest.approx(505.0)
    assert not camera_stall(tmp_path, stale)["passed"]  # stuck in BLIND
    late = t(INJECT_S + 1.6 + 0.52, "BLIND", "ACTIVE", "policy targets and depth fresh again")
    r = camera_stall(tmp_path, stale, late)
    assert not r["passed"] and not r["returned"], r
    r = camera_stall(tmp_path, stale, back, resumed_at=None)  # the camera never came back: no onset to judge from
    assert not r["passed"] and not r["returned"], r


def test_an_unexpected_fall_fails_even_when_safe(tmp_path):
    fault = BY_NAME["policy_nan"]
    onset = [{"fault": "policy_nan", "t": INJECT_S}]
    write_run(tmp_path, fault, [t(INJECT_S + 0.02, "ACTIVE", "BLIND", "policy targets stale or not finite")],
              fell=True, policy_faults=onset)  # fmt: skip
    r = judge(fault, tmp_path)
    assert r["reached_safe"] and not r["passed"], r


def test_any_limit_violation_fails(tmp_path):
    fault = BY_NAME["lowstate_stall"]
    stall = {"triggered": [{"fault": "lowstate_stall", "t": INJECT_S}]}
    write_run(tmp_path, fault, [t(INJECT_S + 0.1, "ACTIVE", "DAMP", "lowstate stale")], fell=True, violations=1,
              bridge_faults=stall)  # fmt: skip
    r = judge(fault, tmp_path)
    assert r["reached_safe"] and not r["passed"]


def test_refused_swap_is_safe_only_if_the_old_model_kept_driving(tmp_path):
    fault = BY_NAME["swap_fails"]
    swap = [{"t": INJECT_S, "request": "swap", "bundle": "b", "sent": True, "ok": False, "answered_t": INJECT_S + 0.03}]
    write_run(tmp_path, fault, [t(5.0, "STAND", "ACTIVE")], script_log=swap)
    r = judge(fault, tmp_path)
    assert r["passed"] and r["time_to_safe_ms"] == pytest.approx(30.0)
    write_run(tmp_path, fault, [t(5.0, "STAND", "ACTIVE"), t(INJECT_S + 0.2, "ACTIVE", "BLIND")], script_log=swap)
    assert not judge(fault, tmp_path)["passed"]
    accepted = [dict(swap[0], ok=True)]
    write_run(tmp_path, fault, [t(5.0, "STAND", "ACTIVE")], script_log=accepted)
    assert not judge(fault, tmp_path)["passed"]
    slow = [dict(swap[0], answered_t=INJECT_S + 0.6)]  # (25 shadow ticks + 2) x 20 ms = 540 ms
    write_run(tmp_path, fault, [t(5.0, "STAND", "ACTIVE")], script_log=slow)
    assert not judge(fault, tmp_path)["passed"]


@pytest.mark.parametrize("fault", [f for f in FAULTS if f.expected_reasons], ids=lambda f: f.name)
def test_each_expected_reason_is_a_rule_of_the_supervisor_into_the_fault_s_safe_mode(fault):
    rules = {(row.reason, row.target.value) for row in TRANSITIONS}
    for reason in fault.expected_reasons:
        assert any((reason, mode) in rules for mode in fault.safe_modes), (fault.name, reason)
    if fault.returns is not None:
        assert all((reason, fault.returns.mode) in rules for reason in fault.returns.reasons)


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
def test_every_scenario_config_is_valid_and_injects_once(tmp_path, fault):
    cfg = load_config(fault_config(fault, tmp_path, tmp_path / "bad_bundle"))
    assert cfg.faults.enabled and cfg.mode == "sim"
    injections = [s for s in cfg.script.steps if s.request in ("fault", "estop", "gamepad_lost", "swap")]
    assert len(injections) == 1


def test_markdown_table_has_a_row_per_fault():
    row = {"fault": "a", "safe_modes": ["DAMP"], "expected_reasons": ["lowstate stale"], "time_to_safe_ms": 1.0,
           "deadline_ms": 110.0, "limit_violations": 0, "fell": True, "fall_expected": True,
           "passed": True}  # fmt: skip
    table = markdown_table([row])
    assert table.count("\n") == 3
    assert "| a | DAMP | lowstate stale | 1.0 | 110.0 | - | 0 | True | True | pass |" in table
