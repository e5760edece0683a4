"""A student_climb run's summary for results/: its student_step.json, the number of curve rows, and its
training env over the last third of the iterations (the student's own noisy rollouts): boxes passed per
5 cm bin, the course's speed and command. Run from the repository root:

    python results/training/student_climb/summarize.py runs/sc_fast2 results/training/student_climb/round2/sc_fast2.json
"""

import json
import sys
from pathlib import Path

import numpy as np

run, out = Path(sys.argv[1]), Path(sys.argv[2])
summary = json.loads((run / "student_step.json").read_text())
rows = [json.loads(line) for line in (run / "curve.jsonl").read_text().splitlines() if line.strip()]
last = rows[2 * len(rows) // 3 :]
cleared = np.sum([r["cleared_by_height"] for r in last], axis=0)
fell = np.sum([r["fell_by_height"] for r in last], axis=0)
passed = [round(float(c / (c + f)), 3) if c + f else None for c, f in zip(cleared, fell, strict=True)]
summary |= {
    "curve_rows": len(rows),
    "last_third": {
        "iterations": [last[0]["iteration"], last[-1]["iteration"] + 1],
        "height_bins_cm": [5, 10, 15, 20, 25, 30, 35, 40],
        "cleared_by_height": cleared.tolist(),
        "fell_by_height": fell.tolist(),
        "passed_fraction_by_height": passed,
        "course_speed_mps": round(float(np.nanmean([r["course_speed"] for r in last])), 3),
        "course_command_vx_mps": round(float(np.mean([r["course_command_vx"] for r in last])), 3),
        "note": "the student's own rollouts, sampled with its exploration noise; parkour eval runs the mean action",
    },
}
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(summary, indent=1) + "\n")
print(out, summary["last_third"]["passed_fraction_by_height"], summary["last_third"]["course_speed_mps"])
