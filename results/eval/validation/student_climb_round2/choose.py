"""The rule, fixed before the validation eval ran. Candidates: student_climb_fast (as committed),
student_climb_fast2 (it, trained on) and student_climb_combo (student_climb_dagger3 trained on with
0.5-1.5 m/s commands). Cells: 1 m/s x 20/30/36 cm with 80 trials each (at_1mps/), 0.5 and 2 m/s x
20/30/36 cm with 40 trials each (other_speeds/). Student-alone rates. The student that meets more of the
two 1 m/s targets (20 cm >= 80 %, 36 cm >= 50 %); a tie goes to the mean over the nine cells, then to the
bundle listed first (the committed one). Run from the repository root."""

import json
from pathlib import Path

HERE = Path("results/eval/validation/student_climb_round2")
TARGETS = {0.2: 0.80, 0.36: 0.50}
rows = []
for part in ("at_1mps", "other_speeds"):
    d = json.loads((HERE / part / "compare.json").read_text())
    order = [b["label"] for b in d["bundles"] if "teacher" not in b["label"]]
    rows += d["rows"]


def rate(label: str, speed: float, height: float) -> float:
    (r,) = [r for r in rows if r["label"] == label and r["speed_mps"] == speed and abs(r["height_m"] - height) < 1e-6]
    return r["success_rate_student_alone"]


score = {}
for label in order:
    met = sum(rate(label, 1.0, h) >= t for h, t in TARGETS.items())
    cells = [rate(label, s, h) for s in (0.5, 1.0, 2.0) for h in (0.2, 0.3, 0.36)]
    score[label] = (met, sum(cells) / len(cells))
best = max(order, key=lambda k: (score[k], -order.index(k)))
print(best)
for k in order:
    print(
        f"{k}: 1 m/s targets met {score[k][0]} of 2 (20 cm {rate(k, 1.0, 0.2):.3f}, 36 cm {rate(k, 1.0, 0.36):.3f}), "
        f"mean over 9 cells {score[k][1]:.3f}"
    )
