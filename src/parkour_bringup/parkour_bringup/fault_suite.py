"""The fault-injection suite behind `parkour faults`: each fault, in simulation, while walking.

Every scenario runs the whole graph (bridge, supervisor, policy, script) from the same start:
stand up on the band, drop, activate, walk at 0.5 m/s; the script injects the fault at
``INJECT_AT_S`` of its clock (through the bridge's and the policy node's fault services, or a
request of its own), and logs when. A fault is handled when the supervisor's first transition
after the injection goes to the fault's safe mode, for one of the reasons that name the fault's
own rule, no later than a deadline derived from the run's config, counted from the fault's onset
as a node other than the supervisor recorded it where one can. :func:`judge` says what else a
fault's result records and requires.

Times are sim time: the graph runs on the simulator's clock, so a busy machine does not inflate them.
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
from parkour_core.bundles import policy_period_s, resolve_bundle
from parkour_core.config import StackConfig, load_config
from parkour_core.paths import config_dir

INJECT_AT_S = 6.0
# How far two nodes' sim clocks may disagree: each reads /clock on its own subscription, and the
# script node, unlike the supervisor and the policy, is not held in the bridge's lockstep.
CLOCK_SKEW_S = 0.02
RUN_S = 12.0  # sim seconds; the script's clock starts 1-3 s in, once robot state flows
WALK_STEPS = [
    {"at_s": 0.2, "request": "stand_up"},
    {"at_s": 2.5, "request": "release_band", "in_mode": "STAND"},
    {"at_s": 3.5, "request": "activate", "in_mode": "STAND"},
    {"at_s": 4.0, "cmd": [0.5, 0.0, 0.0]},
]

# The supervisor's transition reasons (parkour_core.safety.TRANSITIONS) that name each fault's rule.
TARGETS_UNUSABLE = "policy targets stale or not finite"
TARGETS_OUT_OF_RANGE = "policy targets far beyond joint limits"
RESUMED = "policy targets and depth fresh again"


@dataclass(frozen=True)
class Run:
    """One scenario's records: every node's metrics file and the config that ran."""

    cfg: StackConfig
    supervisor: dict[str, Any]
    bridge: dict[str, Any]
    policy: dict[str, Any]
    script: dict[str, Any]

    @staticmethod
    def load(run_dir: Path) -> Run:
        def read(name: str) -> dict[str, Any]:
            path = run_dir / name
            return json.loads(path.read_text()) if path.is_file() else {}

        return Run(load_config(run_dir / "config.yaml"), read("supervisor.json"), read("bridge.json"),
                   read("policy.json"), read("script.json"))  # fmt: skip

    @property
    def tick_s(self) -> float:
        return 1.0 / self.cfg.supervisor.rate_hz

    @property
    def policy_period_s(self) -> float:
        return policy_period_s(self.cfg.policy.bundle)

    def bridge_fault_start(self, name: str) -> float | None:
        starts = [f["t"] for f in self.bridge.get("faults", {}).get("triggered", []) if f["fault"] == name]
        return float(starts[0]) if starts else None

    def bridge_record(self, key: str) -> float | None:
        value = self.bridge.get("faults", {}).get(key)
        return None if value is None else float(value)

    def policy_fault_start(self, name: str) -> float | None:
        starts = [f["t"] for f in self.policy.get("faults_injected", []) if f["fault"] == name]
        return float(starts[0]) if starts else None

    def supervisor_received(self, request: str) -> float | None:
        times = [r["t"] for r in self.supervisor.get("requests", []) if r["request"] == request]
        return float(times[0]) if times else None

    def script_row(self, request: str) -> dict[str, Any] | None:
        rows = [r for r in self.script.get("log", []) if r.get("request") == request]
        return rows[0] if rows else None


@dataclass(frozen=True)
class Deadline:
    """The rule's own time limit: the transition must come within ``allowance(run)`` of ``onset(run)``."""

    onset: Callable[[Run], float | None]
    allowance_s: Callable[[Run], float]
    onset_is: str  # what the onset is, for people reading faults.json
    allowance_is: str


@dataclass(frozen=True)
class Return:
    """A fault that ends: back to ``mode`` for one of ``reasons`` within the deadline of its end."""

    mode: str
    reasons: tuple[str, ...]
    deadline: Deadline


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    safe_modes: tuple[str, ...]  # the supervisor modes that count as safe for this fault
    expected_reasons: tuple[str, ...]  # transition reasons that name this fault's rule
    deadline: Deadline
    fall_expected: bool
    bundle: str = "g1_walk"
    inject: dict[str, Any] = field(default_factory=dict)  # the script step that injects it (at INJECT_AT_S)
    faults: dict[str, Any] = field(default_factory=dict)  # overrides of the config's faults section
    publish_joy: bool = False
    may_exit: frozenset[str] = frozenset()
    returns: Return | None = None
    # Transitions that may come before the judged one: a consequence of the fault the supervisor is
    # right to act on first (a pushed robot's walking policy flails before the base tilts past the limit).
    may_precede: tuple[str, ...] = ()
    # Some faults are handled without a mode change (a refused swap): they judge the run themselves.
    judge: Callable[[Run, float], tuple[bool, float | None, str]] | None = None
    needs_bad_bundle: bool = False


def _swap_refused(run: Run, inject_s: float) -> tuple[bool, float | None, str]:
    """Safe when the swap was refused and the old model kept driving (no mode change after it)."""
    row = run.script_row("swap")
    if row is None or row.get("ok") is not False or "answered_t" not in row:
        return False, None, "the swap was not refused"
    after = [t for t in run.supervisor["supervisor_transitions"] if t["t"] >= row["t"]]
    if after:
        return False, None, f"the supervisor left {after[0]['from']} after the swap: {after[0]['reason']}"
    return True, (row["answered_t"] - row["t"]) * 1e3, str(row.get("reason", "refused"))


def _ticks(n: float) -> Callable[[Run], float]:
    return lambda run: n * run.tick_s


FAULTS: tuple[Fault, ...] = (
    Fault(
        "camera_stall",
        "the depth camera stops for 1.5 s and comes back (a depth-reading bundle is driving)",
        ("BLIND",),
        ("depth stale",),
        Deadline(
            lambda run: run.bridge_fault_start("camera_stall"),
            lambda run: run.cfg.depth.stale_after_s + 2 * run.tick_s,
            "the bridge's camera stops delivering frames",
            "depth.stale_after_s + 2 supervisor ticks",
        ),
        False,
        bundle="g1_walk_depth_gated",
        inject={"request": "fault", "fault": "camera_stall"},
        returns=Return(
            "ACTIVE",
            (RESUMED,),
            Deadline(
                lambda run: run.bridge_record("camera_resumed_at_s"),
                lambda run: run.cfg.supervisor.blind_resume_after_s + 2 * run.tick_s,
                "the first frame exposed after the stall reaches /camera/depth/policy",
                "supervisor.blind_resume_after_s + 2 supervisor ticks",
            ),
        ),
    ),
    Fault(
        "lowstate_stall",
        "rt/lowstate stops arriving for 1 s (DDS cut)",
        ("DAMP",),
        ("lowstate stale",),
        Deadline(
            lambda run: run.bridge_fault_start("lowstate_stall"),
            lambda run: run.cfg.supervisor.lowstate_timeout_s + 2 * run.tick_s,
            "the bridge stops sending rt/lowstate",
            "supervisor.lowstate_timeout_s + 2 supervisor ticks",
        ),
        True,
        inject={"request": "fault", "fault": "lowstate_stall"},
    ),
    Fault(
        "policy_killed",
        "the policy node's process dies",
        ("BLIND",),
        (TARGETS_UNUSABLE,),
        Deadline(
            lambda run: run.bridge_record("policy_last_target_s"),
            lambda run: run.cfg.supervisor.target_timeout_s + 2 * run.tick_s,
            "the stamp of the dead policy's last target",
            "supervisor.target_timeout_s + 2 supervisor ticks",
        ),
        False,
        inject={"request": "fault", "fault": "policy_exit"},
        may_exit=frozenset({"policy"}),
    ),
    Fault(
        "policy_nan",
        "the policy publishes NaN targets",
        ("BLIND",),
        (TARGETS_UNUSABLE,),
        Deadline(
            lambda run: run.policy_fault_start("policy_nan"),
            lambda run: 2 * run.policy_period_s,
            "the policy node corrupts its output",
            "2 policy periods",
        ),
        False,
        inject={"request": "fault", "fault": "policy_nan"},
    ),
    Fault(
        "targets_beyond_limits",
        "the policy's targets jump 1.5 rad past the joint limits",
        ("BLIND",),
        (TARGETS_OUT_OF_RANGE,),
        Deadline(
            lambda run: run.policy_fault_start("policy_offset"),
            lambda run: 2 * run.policy_period_s,
            "the policy node corrupts its output",
            "2 policy periods",
        ),
        False,
        inject={"request": "fault", "fault": "policy_offset"},
        faults={"policy_offset_rad": 1.5},
    ),
    Fault(
        "push_over",
        "a 400 N sideways push for 0.3 s tips the robot over",
        ("DAMP",),
        ("base tilt beyond limit (fall)",),
        Deadline(
            lambda run: run.bridge_record("tilt_exceeded_at_s"),
            _ticks(2),
            "the first rt/lowstate sent with the base tilted past supervisor.max_tilt_rad",
            "2 supervisor ticks",
        ),
        True,
        inject={"request": "fault", "fault": "push"},
        faults={"push_force_n": [0.0, 400.0, 0.0], "push_for_s": 0.3},
        may_precede=(TARGETS_OUT_OF_RANGE,),
    ),
    Fault(
        "estop_at_speed",
        "e-stop (the ROS service) while walking at 0.5 m/s",
        ("DAMP",),
        ("e-stop from the ROS service",),
        Deadline(
            lambda run: run.supervisor_received("estop"),
            _ticks(1),
            "the e-stop request reaches the supervisor",
            "1 supervisor tick",
        ),
        True,
        inject={"request": "estop"},
    ),
    Fault(
        "gamepad_lost",
        "the gamepad's messages stop while walking",
        ("BLIND",),
        ("gamepad lost",),
        Deadline(
            lambda run: (run.script_row("gamepad_lost") or {}).get("last_joy_t"),
            lambda run: run.cfg.supervisor.gamepad_timeout_s + 2 * run.tick_s + CLOCK_SKEW_S,
            "the script's last /teleop/joy (its clock)",
            "supervisor.gamepad_timeout_s + 2 supervisor ticks + the clock skew allowed to the script node",
        ),
        False,
        inject={"request": "gamepad_lost"},
        publish_joy=True,
    ),
    Fault(
        "swap_fails",
        "a swap to a bundle that outputs NaN on live data (caught in its shadow run)",
        ("ACTIVE",),
        (),
        Deadline(
            lambda run: (run.script_row("swap") or {}).get("t"),
            lambda run: (run.cfg.policy.shadow_ticks + 2) * run.policy_period_s,
            "the swap request (the script's clock)",
            "(policy.shadow_ticks + 2) policy periods",
        ),
        False,
        judge=_swap_refused,
        needs_bad_bundle=True,
    ),
)


def fault_config(fault: Fault, out: Path, bad_bundle: Path | None, dds_domain: int | None = None) -> Path:
    """``dds_domain``: the Unitree DDS domain of the run (default g1_sim.yaml's)."""
    data = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    if dds_domain is not None:
        data["dds"]["domain"] = dds_domain
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


def injection_time(run: Run) -> float:
    """Sim time at which the script sent the injection (the fault takes effect a little later)."""
    sent = [r["t"] for r in run.script.get("log", []) if r.get("request") in {"fault", "estop", "gamepad_lost", "swap"}]
    if not sent:
        raise GraphError("the script never injected the fault")
    return float(sent[0])


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 1)


def _judge_transition(
    transition: dict[str, Any] | None, modes: tuple[str, ...], reasons: tuple[str, ...], onset: float | None,
    allowance_s: float,
) -> tuple[bool, str]:  # fmt: skip
    """Whether ``transition`` is the expected one, in time; else why not."""
    if onset is None:
        return False, "its onset is missing from the run's records"
    if transition is None:
        return False, f"no transition after the onset (expected {'/'.join(modes)})"
    got = f"{transition['from']}->{transition['to']} ({transition['reason']})"
    if transition["to"] not in modes:
        return False, f"first transition {got}, not to {'/'.join(modes)}"
    if transition["reason"] not in reasons:
        return False, f"first transition {got}: reason is not one of {list(reasons)}"
    took_ms, deadline_ms = (transition["t"] - onset) * 1e3, allowance_s * 1e3
    if took_ms > deadline_ms + 1e-6:
        return False, f"{got} {took_ms:.1f} ms after the onset, deadline {deadline_ms:.1f} ms"
    return True, got


def judge(fault: Fault, run_dir: Path) -> dict[str, Any]:
    """The fault's result from its run folder: whether it was handled in time, and what else it must show.

    - ``onset``: when the fault took effect in sim time (the bridge's last rt/lowstate before a stall,
      the policy's last target before it died, the first rt/lowstate showing the fall, ...);
    - ``deadline_ms``: the rule's threshold from the config plus a margin in supervisor ticks; a
      transition later than that fails, and so does one for another reason (a broken lowstate
      timeout still ends in DAMP once the robot falls over, but for the tilt rule);
    - ``returned``: faults that end (the camera comes back) must also return to ACTIVE in time;
    - ``limit_violations``: joints of written rt/lowcmd commands beyond a limit, counted by the
      bridge on its own (parkour_sim.faults.command_violations), over the whole run: must be 0;
    - ``fell`` against ``fall_expected``: DAMP at speed is expected to fall; a dead policy is not.
    """
    run = Run.load(run_dir)
    inject_s = injection_time(run)
    transitions = run.supervisor["supervisor_transitions"]
    # Each node reads sim time from its own /clock subscription, and an e-stop acts inside the service
    # call: a transition the injection caused may carry a stamp a little before the script's log of it.
    after = [t for t in transitions if t["t"] >= inject_s - CLOCK_SKEW_S]
    preceding = 0
    while preceding < len(after) and after[preceding]["reason"] in fault.may_precede:
        preceding += 1
    judged = after[preceding:]
    onset = fault.deadline.onset(run)
    allowance_s = fault.deadline.allowance_s(run)
    returned = None
    time_to_return = None
    return_deadline = None
    if fault.judge is not None:
        handled, time_to_safe_ms, why = fault.judge(run, inject_s)
        deadline_ms = allowance_s * 1e3
        if handled and time_to_safe_ms is not None and time_to_safe_ms > deadline_ms + 1e-6:
            handled, why = False, f"answered {time_to_safe_ms:.1f} ms after the request, deadline {deadline_ms:.1f} ms"
    else:
        first = judged[0] if judged else None
        handled, why = _judge_transition(first, fault.safe_modes, fault.expected_reasons, onset, allowance_s)
        time_to_safe_ms = _ms(first["t"] - onset) if (first is not None and onset is not None) else None
        if fault.returns is not None:
            back = fault.returns
            resume = back.deadline.onset(run)
            return_deadline = back.deadline.allowance_s(run)
            second = judged[1] if len(judged) > 1 else None
            returned, why_back = _judge_transition(second, (back.mode,), back.reasons, resume, return_deadline)
            if second is not None and resume is not None:
                time_to_return = _ms(second["t"] - resume)
            if handled and not returned:
                handled, why = False, f"no timely return to {back.mode}: {why_back}"
    fell = bool(run.bridge["fell"])
    violations = int(run.bridge.get("lowcmd_limit_violations", 0))
    result = {
        "fault": fault.name,
        "what": fault.what,
        "injected_at_s": round(inject_s, 4),
        "safe_modes": list(fault.safe_modes),
        "expected_reasons": list(fault.expected_reasons),
        "may_precede": list(fault.may_precede),
        "onset_s": None if onset is None else round(onset, 4),
        "onset_is": fault.deadline.onset_is,
        "deadline_ms": _ms(allowance_s),
        "deadline_is": fault.deadline.allowance_is,
        "reached_safe": handled,
        "time_to_safe_ms": time_to_safe_ms,
        "injection_to_safe_ms": _ms(judged[0]["t"] - inject_s) if judged and fault.judge is None else time_to_safe_ms,
        "verdict": why,
        "limit_violations": violations,
        "fell": fell,
        "fall_expected": fault.fall_expected,
        "transitions_after_injection": [f"{t['from']}->{t['to']} ({t['reason']})" for t in after],
        "final_mode": run.supervisor.get("final_mode"),
        "passed": handled and violations == 0 and (fault.fall_expected or not fell),
    }
    if fault.returns is not None:
        back = fault.returns
        result |= {
            "returned": returned,
            "return_mode": back.mode,
            "return_reasons": list(back.reasons),
            "return_deadline_ms": _ms(return_deadline),
            "return_deadline_is": back.deadline.allowance_is,
            "time_to_return_ms": time_to_return,
        }
    return result


def run_fault(fault: Fault, out: Path, ros_domain_id: int, dds_domain: int | None = None) -> dict[str, Any]:
    run_dir = out / fault.name
    run_dir.mkdir(parents=True, exist_ok=True)
    bad_bundle = nan_when_moving(resolve_bundle("g1_walk"), out / "bundles" / "nan_outputs")
    config = fault_config(fault, run_dir, bad_bundle if fault.needs_bad_bundle else None, dds_domain)
    try:
        run_sim_graph(config, run_dir, RUN_S, ros_domain_id, may_exit=fault.may_exit)
    except GraphError as e:
        return {
            "fault": fault.name,
            "what": fault.what,
            "passed": False,
            "reached_safe": False,
            "safe_modes": list(fault.safe_modes),
            "expected_reasons": list(fault.expected_reasons),
            "time_to_safe_ms": None,
            "deadline_ms": None,
            "limit_violations": None,
            "fell": None,
            "fall_expected": fault.fall_expected,
            "verdict": "the graph failed",
            "error": str(e).splitlines()[0],
        }
    return judge(fault, run_dir)


def markdown_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| fault | safe mode | reason | time to safe (ms) | deadline (ms) | returned in (ms) | limit violations "
        "| fell | fall expected | result |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    for r in results:
        reason = "/".join(r.get("expected_reasons", [])) or "refused, no mode change"
        back = "-"
        if "returned" in r:
            back = f"{ms(r.get('time_to_return_ms'))} of {ms(r.get('return_deadline_ms'))}" if r["returned"] else "no"
        lines.append(
            f"| {r['fault']} | {'/'.join(r.get('safe_modes', []))} | {reason} | {ms(r.get('time_to_safe_ms'))} | "
            f"{ms(r.get('deadline_ms'))} | {back} | {r.get('limit_violations')} | {r.get('fell')} | "
            f"{r['fall_expected']} | {'pass' if r['passed'] else 'FAIL'} |"
        )
    return "\n".join(lines) + "\n"
