"""`make demo`'s run, kept: the step-up student through the box course, its report with provenance.

Runs exactly what `make demo` runs (parkour sim, student_step, box_course, the straight script, 20 s)
into a scratch folder and writes the report's numbers, the boxes cleared and the run's plots.

    .venv/bin/python bench/demo/run.py      # bench/results/demo.json, demo_base_path.png (about 2 min)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from parkour_core.paths import repo_root
from parkour_core.provenance import provenance
from parkour_core.stats import write_json

DEMO_ARGS = ["--bundle", "student_step", "--scene", "box_course",
             "--script", "sim/scripts/box_course_straight.yaml", "--duration", "30"]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=repo_root() / "bench" / "results" / "demo.json")
    args = ap.parse_args()
    record = provenance()
    with tempfile.TemporaryDirectory() as scratch:
        run = Path(scratch) / "demo"
        cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", *DEMO_ARGS, "--no-bag", "--out", str(run)]
        done = subprocess.run(cmd, cwd=repo_root(), capture_output=True, text=True, timeout=1200)
        if done.returncode != 0:
            print(done.stdout + done.stderr, file=sys.stderr)
            return done.returncode
        report = json.loads((run / "report.json").read_text())
        report.pop("plots", None)
        report.pop("bag", None)
        shutil.copy(run / "base_path.png", args.out.with_name("demo_base_path.png"))
    write_json(
        args.out,
        {
            **record,
            "what": "make demo: parkour sim " + " ".join(DEMO_ARGS),
            "report": report,
            "summary": [
                {"what": "boxes cleared", "ours": [b["height_m"] for b in report.get("boxes", []) if b["cleared"]]},
                {"what": "fell", "ours": report["fell"]},
            ],
        },
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
