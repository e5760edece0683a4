"""The fault-injection suite behind `parkour faults`: each fault, in simulation, while walking.

Every scenario runs the whole graph (bridge, supervisor, policy, script) from the same start:
stand up on the band, drop, activate, walk at 0.5 m/s; the script injects the fault at
``INJECT_AT_S`` of its clock (through the bridge's and the policy node's fault services, or a
request of its own), and logs when. What it measures, from the nodes' own records:

- ``time_to_safe_ms``: injection to the supervisor entering the fault's safe mode (sim time;
  the graph runs on the simulator's clock, so a busy machine does not inflate it);
- ``limit_violations``: joints of written rt/lowcmd commands beyond a limit, counted by the
  bridge on its own (parkour_sim.faults.command_violations), over the whole run: must be 0;
- ``fell`` against ``fall_expected``: DAMP at speed is expected to fall; a dead policy is not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from parkour_bringup.bundle_faults import nan_when_moving
from parkour_bringup.graph import GraphError, run_sim_graph
from parkour_core.bundles import resolve_bundle
from parkour_core.paths import config_dir

INJECT_AT_S = 6.0
CLOCK_SKEW_S = 0.02  # how far two nodes' sim clocks may disagree (see judge)
RUN_S = 12.0  # sim seconds; the script's clock starts 1-3 s in, once robot state flows
WALK_STEPS = [
    {"at_s": 0.2, "request": "stand_up"},
    {"at_s": 2.5, "request": "release_band", "in_mode": "STAND"},
    {"at_s": 3.5, "request": "activate", "in_mode": "STAND"},
    {"at_s": 4.0, "cmd": [0.5, 0.0, 0.0]},
]


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    safe_modes: tuple[str, ...]  # the supervisor modes that count as safe for this fault
    fall_expected: bool
    bundle: str = "g1_walk"
    inject: dict[str, Any] = field(default_factory=dict)  # the script step that injects it (at INJECT_AT_S)
    faults: dict[str, Any] = field(default_factory=dict)  # overrides of the config's faults section
    publish_joy: bool = False
    may_exit: frozenset[str] = frozenset()
    # Some faults are handled without a mode change (a refused swap): they judge the run themselves.
    judge: Callable[[Path, float], tuple[bool, float | None]] | None = None
    needs_bad_bundle: bool = False


def _swap_refused(run_dir: Path, inject_s: float) -> tuple[bool, float | None]:
    """Safe when the swap was refused and the old model kept driving (no mode change after it)."""
    script = json.loads((run_dir / "script.json").read_text())
    rows = [r for r in script["log"] if r.get("request") == "swap"]
    if not rows or rows[0].get("ok") is not False or "answered_t" not in rows[0]:
        return False, None
    sup = json.loads((run_dir / "supervisor.json").read_text())
    after = [t for t in sup["supervisor_transitions"] if t["t"] >= rows[0]["t"]]
    return not after, (rows[0]["answered_t"] - rows[0]["t"]) * 1e3


FAULTS: tuple[Fault, ...] = (
    Fault(
        "camera_stall",
        "the depth camera stops for 1.5 s and comes back (a depth-reading bundle is driving)",
        ("BLIND",),
        False,
        bundle="g1_walk_depth_gated",
        inject={"request": "fault", "fault": "camera_stall"},
    ),
    Fault(
        "lowstate_stall",
        "rt/lowstate stops arriving for 1 s (DDS cut)",
        ("DAMP",),
        True,
        inject={"request": "fault", "fault": "lowstate_stall"},
    ),
    Fault(
        "policy_killed",
        "the policy node's process dies",
        ("BLIND",),
        False,
        inject={"request": "fault", "fault": "policy_exit"},
        may_exit=frozenset({"policy"}),
    ),
    Fault(
        "policy_nan",
        "the policy publishes NaN targets",
        ("BLIND",),
        False,
        inject={"request": "fault", "fault": "policy_nan"},
    ),
    Fault(
        "targets_beyond_limits",
        "the policy's targets jump 1.5 rad past the joint limits",
        ("BLIND",),
        False,
        inject={"request": "fault", "fault": "policy_offset"},
        faults={"policy_offset_rad": 1.5},
    ),
    Fault(
        "push_over",
        "a 400 N sideways push for 0.3 s tips the robot over",
        ("DAMP",),
        True,
        inject={"request": "fault", "fault": "push"},
        faults={"push_force_n": [0.0, 400.0, 0.0], "push_for_s": 0.3},
    ),
    Fault(
        "estop_at_speed",
        "e-stop (the ROS service) while walking at 0.5 m/s",
        ("DAMP",),
        True,
        inject={"request": "estop"},
    ),
    Fault(
        "gamepad_lost",
        "the gamepad's messages stop while walking",
        ("BLIND",),
        False,
        inject={"request": "gamepad_lost"},
        publish_joy=True,
    ),
    Fault(
        "swap_fails",
        "a swap to a bundle that outputs NaN on live data (caught in its shadow run)",
        ("ACTIVE",),
        False,
        judge=_swap_refused,
        needs_bad_bundle=True,
    ),
)


def fault_config(fault: Fault, out: Path, bad_bundle: Path | None) -> Path:
    data = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    data["policy"]["bundle"] = fault.bundle
    data["faults"] = {"enabled": True, **fault.faults}
    steps = list(WALK_STEPS)
    if fault.inject:
        steps.append({"at_s": INJECT_AT_S, **fault.inject})
    if fault.needs_bad_bundle and bad_bundle is not None:
        steps.append({"at_s": INJECT_AT_S, "request": "swap", "bundle": str(bad_bundle)})
    data["script"] = {"steps": steps, "publish_joy": fault.publish_joy}
    data["run"] = {"duration_s": RUN_S}
    path = out / "config.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def injection_time(run_dir: Path) -> float:
    """Sim time at which the script sent the injection (the fault takes effect a little later)."""
    script = json.loads((run_dir / "script.json").read_text())
    sent = [r["t"] for r in script["log"] if r.get("request") in {"fault", "estop", "gamepad_lost", "swap"}]
    if not sent:
        raise GraphError(f"{run_dir}: the script never injected the fault")
    return float(sent[0])


def judge(fault: Fault, run_dir: Path) -> dict[str, Any]:
    sup = json.loads((run_dir / "supervisor.json").read_text())
    bridge = json.loads((run_dir / "bridge.json").read_text())
    inject_s = injection_time(run_dir)
    if fault.judge is not None:
        reached, time_to_safe_ms = fault.judge(run_dir, inject_s)
        reason = "handled without a mode change"
    else:
        # Each node reads sim time from its own /clock subscription: under load the supervisor's clock
        # can trail or lead the script's by a few /clock periods, and an e-stop acts inside the service
        # call, so its transition may carry a stamp a little before the script's log of the request.
        safe = [
            t
            for t in sup["supervisor_transitions"]
            if t["t"] >= inject_s - CLOCK_SKEW_S and t["to"] in fault.safe_modes
        ]
        reached = bool(safe)
        time_to_safe_ms = max(0.0, (safe[0]["t"] - inject_s) * 1e3) if safe else None
        reason = safe[0]["reason"] if safe else "never reached a safe mode"
    transitions = sup["supervisor_transitions"]
    after = [f"{t['from']}->{t['to']} ({t['reason']})" for t in transitions if t["t"] >= inject_s - CLOCK_SKEW_S]
    fell = bool(bridge["fell"])
    violations = int(bridge.get("lowcmd_limit_violations", 0))
    return {
        "fault": fault.name,
        "what": fault.what,
        "injected_at_s": round(inject_s, 4),
        "safe_modes": list(fault.safe_modes),
        "reached_safe": reached,
        "time_to_safe_ms": None if time_to_safe_ms is None else round(time_to_safe_ms, 1),
        "safe_reason": reason,
        "limit_violations": violations,
        "fell": fell,
        "fall_expected": fault.fall_expected,
        "transitions_after_injection": after,
        "final_mode": sup.get("final_mode"),
        "passed": reached and violations == 0 and (fault.fall_expected or not fell),
    }


def run_fault(fault: Fault, out: Path, ros_domain_id: int) -> dict[str, Any]:
    run_dir = out / fault.name
    run_dir.mkdir(parents=True, exist_ok=True)
    bad_bundle = nan_when_moving(resolve_bundle("g1_walk"), out / "bundles" / "nan_outputs")
    config = fault_config(fault, run_dir, bad_bundle if fault.needs_bad_bundle else None)
    try:
        run_sim_graph(config, run_dir, RUN_S, ros_domain_id, may_exit=fault.may_exit)
    except GraphError as e:
        return {"fault": fault.name, "what": fault.what, "passed": False, "reached_safe": False,
                "time_to_safe_ms": None, "limit_violations": None, "fell": None,
                "fall_expected": fault.fall_expected, "error": str(e).splitlines()[0]}  # fmt: skip
    return judge(fault, run_dir)


def markdown_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| fault | safe mode | time to safe (ms) | limit violations | fell | fall expected | result |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        t = "-" if r.get("time_to_safe_ms") is None else f"{r['time_to_safe_ms']:.1f}"
        lines.append(
            f"| {r['fault']} | {'/'.join(r.get('safe_modes', []))} | {t} | {r.get('limit_violations')} | "
            f"{r.get('fell')} | {r['fall_expected']} | {'pass' if r['passed'] else 'FAIL'} |"
        )
    return "\n".join(lines) + "\n"
