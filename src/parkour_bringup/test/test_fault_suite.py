"""How `parkour faults` judges a run, on hand-written node records (the suite itself runs in
tests/integration/test_faults.py)."""

import json

import pytest

from parkour_bringup.fault_suite import FAULTS, fault_config, judge, markdown_table
from parkour_core.config import load_config

BY_NAME = {f.name: f for f in FAULTS}


def write_run(run_dir, transitions, fell=False, violations=0, script_log=None):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "supervisor.json").write_text(
        json.dumps({"supervisor_transitions": transitions, "final_mode": transitions[-1]["to"]})
    )
    (run_dir / "bridge.json").write_text(json.dumps({"fell": fell, "lowcmd_limit_violations": violations}))
    log = script_log if script_log is not None else [{"t": 8.0, "request": "fault", "fault": "x", "sent": True}]
    (run_dir / "script.json").write_text(json.dumps({"log": log}))


def t(time_s, frm, to, reason="r"):
    return {"t": time_s, "from": frm, "to": to, "reason": reason}


def test_time_to_safe_is_from_the_injection_to_the_first_safe_transition(tmp_path):
    write_run(tmp_path, [t(5.0, "STAND", "ACTIVE"), t(8.126, "ACTIVE", "BLIND", "policy targets stale")])
    r = judge(BY_NAME["policy_killed"], tmp_path)
    assert r["reached_safe"] and r["passed"]
    assert r["time_to_safe_ms"] == pytest.approx(126.0)
    assert r["safe_reason"] == "policy targets stale"


def test_a_transition_before_the_injection_does_not_count(tmp_path):
    write_run(tmp_path, [t(5.0, "ACTIVE", "BLIND"), t(5.6, "BLIND", "ACTIVE")])
    r = judge(BY_NAME["policy_killed"], tmp_path)
    assert not r["reached_safe"] and not r["passed"] and r["time_to_safe_ms"] is None


def test_an_unexpected_fall_fails_even_when_safe(tmp_path):
    write_run(tmp_path, [t(8.1, "ACTIVE", "BLIND")], fell=True)
    assert not judge(BY_NAME["policy_nan"], tmp_path)["passed"]
    write_run(tmp_path, [t(8.1, "ACTIVE", "DAMP")], fell=True)
    assert judge(BY_NAME["estop_at_speed"], tmp_path)["passed"]  # e-stop at speed is expected to fall


def test_any_limit_violation_fails(tmp_path):
    write_run(tmp_path, [t(8.1, "ACTIVE", "DAMP")], fell=True, violations=1)
    r = judge(BY_NAME["lowstate_stall"], tmp_path)
    assert r["reached_safe"] and not r["passed"]


def test_refused_swap_is_safe_only_if_the_old_model_kept_driving(tmp_path):
    swap = [{"t": 8.0, "request": "swap", "bundle": "b", "sent": True, "ok": False, "answered_t": 8.03}]
    write_run(tmp_path, [t(5.0, "STAND", "ACTIVE")], script_log=swap)
    r = judge(BY_NAME["swap_fails"], tmp_path)
    assert r["passed"] and r["time_to_safe_ms"] == pytest.approx(30.0)
    write_run(tmp_path, [t(5.0, "STAND", "ACTIVE"), t(8.2, "ACTIVE", "BLIND")], script_log=swap)
    assert not judge(BY_NAME["swap_fails"], tmp_path)["passed"]
    accepted = [dict(swap[0], ok=True)]
    write_run(tmp_path, [t(5.0, "STAND", "ACTIVE")], script_log=accepted)
    assert not judge(BY_NAME["swap_fails"], tmp_path)["passed"]


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
def test_every_scenario_config_is_valid_and_injects_once(tmp_path, fault):
    cfg = load_config(fault_config(fault, tmp_path, tmp_path / "bad_bundle"))
    assert cfg.faults.enabled and cfg.mode == "sim"
    injections = [s for s in cfg.script.steps if s.request in ("fault", "estop", "gamepad_lost", "swap")]
    assert len(injections) == 1


def test_markdown_table_has_a_row_per_fault():
    rows = [{"fault": "a", "safe_modes": ["DAMP"], "time_to_safe_ms": 1.0, "limit_violations": 0, "fell": True,
             "fall_expected": True, "passed": True}]  # fmt: skip
    table = markdown_table(rows)
    assert table.count("\n") == 3 and "| a | DAMP | 1.0 | 0 | True | True | pass |" in table
