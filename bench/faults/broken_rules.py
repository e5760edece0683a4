"""Does `parkour faults` fail when a supervisor rule is removed or slowed? One run per broken rule.

Each entry of ``rule_breaker/sitecustomize.py``'s BREAKS removes one row of the supervisor's
transition table or slows one threshold (x 1.5) in the processes of the graph, leaving the config,
and so the suite's deadlines, as they were; `parkour faults --only <its fault>` must then exit
non-zero. Writes bench/results/faults_broken_rules.json: per broken rule, the fault, whether the
suite caught it and the suite's verdict.

    .venv/bin/python bench/faults/broken_rules.py --out bench/results/faults_broken_rules.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BREAKER = Path(__file__).resolve().parent / "rule_breaker"
sys.path.insert(0, str(BREAKER))

from sitecustomize import BREAKS  # noqa: E402

from parkour_core.provenance import command_line, provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402


def run_broken(name: str, out: Path) -> dict:
    fault, what, _ = BREAKS[name]
    run_dir = out / name
    env = dict(os.environ, PARKOUR_BREAK_RULE=name)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BREAKER), env.get("PYTHONPATH", "")]))
    domain = random.randint(100, 199)
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "faults", "--only", fault, "--out", str(run_dir),
           "--ros-domain-id", str(domain)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    results = json.loads((run_dir / "faults.json").read_text())["faults"] if (run_dir / "faults.json").is_file() else []
    row = results[0] if results else {}
    return {
        "break": name,
        "what": what,
        "fault": fault,
        "exit_code": proc.returncode,
        "caught": proc.returncode != 0 and row.get("passed") is False,
        "verdict": row.get("verdict", (proc.stderr or proc.stdout).strip().splitlines()[-1:]),
        "time_to_safe_ms": row.get("time_to_safe_ms"),
        "deadline_ms": row.get("deadline_ms"),
        "transitions_after_injection": row.get("transitions_after_injection"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "faults_broken_rules.json")
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "faults_broken_rules", help="run folders")
    ap.add_argument("--only", default="", help="comma-separated break names (default: all)")
    args = ap.parse_args()
    names = [n for n in BREAKS if not args.only or n in args.only.split(",")]
    rows = []
    for name in names:
        row = run_broken(name, args.runs)
        print(f"{name}: {'caught' if row['caught'] else 'NOT CAUGHT'} by {row['fault']}: {row['verdict']}", flush=True)
        rows.append(row)
    caught = sum(r["caught"] for r in rows)
    write_json(args.out, {**provenance(command_line()), "caught": caught, "breaks": len(rows), "rows": rows})
    print(f"{caught}/{len(rows)} broken rules caught; wrote {args.out}")
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
