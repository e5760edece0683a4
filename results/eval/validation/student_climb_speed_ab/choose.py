"""The rule, fixed before the validation eval ran: the student with the highest mean student-alone rate over
all nine validation cells (0.5/1/2 m/s x 20/30/36 cm, 40 trials each); a tie goes to the 1 m/s cells' mean,
then to the bundle listed first (the fewest changes). Run from the repository root."""

import json
from pathlib import Path

d = json.loads(Path("results/eval/validation/student_climb_speed_ab/compare.json").read_text())
order = [b["label"] for b in d["bundles"] if "teacher" not in b["label"]]
score = {}
for label in order:
    rows = [r for r in d["rows"] if r["label"] == label]
    at1 = [r["success_rate_student_alone"] for r in rows if r["speed_mps"] == 1.0]
    score[label] = (sum(r["success_rate_student_alone"] for r in rows) / len(rows), sum(at1) / len(at1))
best = max(order, key=lambda k: (score[k], -order.index(k)))
print(best)
for k in order:
    print(f"{k}: mean over 9 cells {score[k][0]:.3f}, mean at 1 m/s {score[k][1]:.3f}")
