"""Inject every fault the supervisor handles, in simulation, and measure the time to the safe state.

Writes DIR/faults.json (the command, commit and date, and one entry per fault: the transition
reasons that count, the onset, the deadline from the config, time to safe, whether it returned,
limit violations, fell, ...), DIR/faults.md (a table) and each scenario's run folder. Exits non-zero
if any fault's first transition is not to its safe mode for its own rule by its deadline (or, for a
fault that ends, there is no timely return), any written command broke a limit, or the robot fell
where the fault should not make it fall.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from parkour_bringup.fault_suite import FAULTS, markdown_table, run_fault
from parkour_core.domains import claim_domains
from parkour_core.provenance import provenance

HELP = "run the fault-injection suite in simulation"


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("runs/faults"), help="output folder (default runs/faults)")
    p.add_argument("--only", default="", help="comma-separated fault names (default: all)")
    p.add_argument("--list", action="store_true", help="list the faults and exit")
    p.add_argument("--domain", type=int, default=None, help="Unitree DDS domain (default: one no graph here uses)")
    p.add_argument("--ros-domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: one no graph here uses)")


def run(args: argparse.Namespace) -> int:
    if args.list:
        for f in FAULTS:
            print(f"{f.name:24s} -> {'/'.join(f.safe_modes):7s} {f.what}")
        return 0
    chosen = [f for f in FAULTS if not args.only or f.name in args.only.split(",")]
    unknown = set(filter(None, args.only.split(","))) - {f.name for f in FAULTS}
    if unknown:
        raise ValueError(f"unknown faults {sorted(unknown)}; `parkour faults --list` shows them")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    domains = claim_domains(args.domain, args.ros_domain_id)  # held while the suite runs
    record = provenance()
    results = []
    for fault in chosen:
        print(f"parkour faults: {fault.name}: {fault.what}", flush=True)
        result = run_fault(fault, out, domains.ros, domains.dds)
        results.append(result)
        print(
            f"parkour faults: {fault.name}: {'pass' if result['passed'] else 'FAIL'} ({result.get('verdict')}), "
            f"time to safe {result.get('time_to_safe_ms')} of {result.get('deadline_ms')} ms, "
            f"violations {result.get('limit_violations')}, "
            f"fell {result.get('fell')} (expected {result['fall_expected']})",
            flush=True,
        )
    (out / "faults.json").write_text(json.dumps({**record, "faults": results}, indent=2) + "\n")
    (out / "faults.md").write_text(markdown_table(results))
    print(markdown_table(results))
    print(f"parkour faults: wrote {out / 'faults.json'} and {out / 'faults.md'}")
    failed = [r["fault"] for r in results if not r["passed"]]
    if failed:
        raise RuntimeError(f"{len(failed)} fault(s) not handled safely: {', '.join(failed)}")
    return 0
