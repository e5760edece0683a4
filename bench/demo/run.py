"""`make demo`'s run, kept: repeated, with provenance.

Runs exactly what `make demo` runs (``parkour sim`` with the Makefile's ``DEMO_ARGS``, read from it)
``--runs`` times into scratch folders (runs are not bit-reproducible: the graph's processes interleave
differently each time) and writes, per run, which boxes it reached, stood on and cleared, whether and
why it fell, how it ended (the final mode, when the band was hooked back on), and the first run's whole
report, path plot and filmstrip.

    .venv/bin/python bench/demo/run.py   # bench/results/demo.json, demo_base_path.png, demo_filmstrip.png (5 min)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from parkour_core.paths import repo_root
from parkour_core.provenance import provenance
from parkour_core.stats import write_json


def demo_args(makefile: Path | None = None) -> list[str]:
    """The Makefile's ``DEMO_ARGS``: one place says what `make demo` runs."""
    import re
    import shlex

    text = (makefile or repo_root() / "Makefile").read_text()
    match = re.search(r"^DEMO_ARGS := (.*)$", text, re.MULTILINE)
    if match is None:
        raise ValueError("the Makefile has no DEMO_ARGS line")
    return shlex.split(match.group(1))


DEMO_ARGS = demo_args()


def run_demo(out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", *DEMO_ARGS, "--no-bag", "--out", str(out)]
    done = subprocess.run(cmd, cwd=repo_root(), capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"parkour sim exited {done.returncode}:\n{done.stdout}{done.stderr}")
    report = json.loads((out / "report.json").read_text())
    for files in ("plots", "bag", "render"):  # what was written where, not how the run went
        report.pop(files, None)
    return report


def outcome(report: dict[str, Any]) -> dict[str, Any]:
    # The script damps the robot at the end, hung on its band: a DAMP it did not ask for is the supervisor's.
    falls = [t for t in report["supervisor_transitions"] if t["to"] == "DAMP" and t["reason"] != "damp requested"]
    return {
        "boxes": {
            b["box"]: "cleared"
            if b["cleared"]
            else "on top"
            if b["on_top"]
            else "reached"
            if b["reached"]
            else "not reached"
            for b in report.get("boxes", [])
        },
        "fell": report["fell"],
        "fell_at_s": report["fell_at_s"],
        "blind_s": report["time_in_mode_s"].get("BLIND", 0.0),
        "to_blind": [t["reason"] for t in report["supervisor_transitions"] if t["to"] == "BLIND"],
        "to_damp": falls[0]["reason"] if falls else None,
        "forward_displacement_m": report["forward_displacement_m"],
        "final_mode": report["final_mode"],
        "band_hung_at_s": report["band_hung_at_s"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=repo_root() / "bench" / "results" / "demo.json")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    record = provenance()
    outcomes, first = [], None
    with tempfile.TemporaryDirectory() as scratch:
        for k in range(args.runs):
            run = Path(scratch) / f"demo{k}"
            report = run_demo(run)
            outcomes.append(outcome(report))
            print(f"run {k}: {outcomes[-1]}", flush=True)
            if first is None:
                first = report
                shutil.copy(run / "base_path.png", args.out.with_name("demo_base_path.png"))
                if (run / "filmstrip.png").is_file():  # rendering failed: the run's report says why
                    shutil.copy(run / "filmstrip.png", args.out.with_name("demo_filmstrip.png"))
    boxes = list(outcomes[0]["boxes"]) if outcomes else []
    write_json(
        args.out,
        {
            **record,
            "what": "make demo: parkour sim " + " ".join(DEMO_ARGS),
            "runs": outcomes,
            "first_report": first,
            "summary": [
                {
                    "what": f"{box} cleared",
                    "ours": f"{sum(o['boxes'][box] == 'cleared' for o in outcomes)}/{len(outcomes)}",
                }
                for box in boxes
            ]
            + [{"what": "fell", "ours": f"{sum(o['fell'] for o in outcomes)}/{len(outcomes)}"}],
        },
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
