"""eval.json, a markdown table and a PNG heatmap from the summarised cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from training.eval.protocol import FAILURES


def markdown_table(result: dict[str, Any]) -> str:
    cells = result["cells"]
    speeds = sorted({c["speed_mps"] for c in cells})
    heights = sorted({c["height_m"] for c in cells})
    by_key = {(c["speed_mps"], c["height_m"]): c for c in cells}
    ablated = " with its depth ablated (flat ground)" if result.get("depth_ablation") else ""
    if result.get("robot_model", "default") != "default":
        ablated += f" on the {result['robot_model']} model"
    lines = [
        f"Success rate of `{result['bundle']}`{ablated} ({result['trials_per_cell']} trials per cell; failures: "
        "falls / stops at the box / times out; `alone`: success counting only the trials the student drove "
        "without the supervisor's BLIND fallback, and in how many trials BLIND drove)",
        "",
        "| speed | " + " | ".join(f"{h * 100:.0f} cm" for h in heights) + " |",
        "| --- | " + " | ".join("---" for _ in heights) + " |",
    ]
    for v in speeds:
        row = []
        for h in heights:
            c = by_key[(v, h)]
            f = c["failure_modes"]
            rate = "n/a" if c["success_rate"] is None else f"{100 * c['success_rate']:.0f} %"
            text = f"{rate} ({' / '.join(str(f[k]) for k in FAILURES)})"
            if c.get("success_rate_student_alone") is not None:
                text += f"; alone {100 * c['success_rate_student_alone']:.0f} %, BLIND in {c['blind_trials']}"
            row.append(text)
        lines.append(f"| {v:g} m/s | " + " | ".join(row) + " |")
    course = result.get("course")
    if course:
        lines += [
            "",
            f"Courses of {min(course['obstacles'])}-{max(course['obstacles'])} boxes ({course['courses']}): "
            f"success {100 * course['success_rate']:.0f} %, distance p50 {course['distance_m']['p50']:.2f} m, "
            f"boxes cleared {course['obstacles_cleared_mean']:.2f} on average",
        ]
    return "\n".join(lines) + "\n"


def plot_heatmap(result: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = result["cells"]
    speeds = sorted({c["speed_mps"] for c in cells})
    heights = sorted({c["height_m"] for c in cells})
    grid = np.full((len(speeds), len(heights)), np.nan)
    for c in cells:
        if c["success_rate"] is not None:
            grid[speeds.index(c["speed_mps"]), heights.index(c["height_m"])] = c["success_rate"]
    fig, ax = plt.subplots(figsize=(1.8 + 1.4 * len(heights), 1.4 + 0.9 * len(speeds)))
    image = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="RdYlGn", aspect="auto")
    for i in range(len(speeds)):
        for j in range(len(heights)):
            text = "n/a" if np.isnan(grid[i, j]) else f"{100 * grid[i, j]:.0f}%"
            ax.text(j, i, text, ha="center", va="center", fontsize=11)
    ax.set_xticks(range(len(heights)), [f"{h * 100:.0f} cm" for h in heights])
    ax.set_yticks(range(len(speeds)), [f"{v:g} m/s" for v in speeds])
    ax.set_xlabel("obstacle height")
    ax.set_ylabel("commanded speed")
    ax.set_title(f"{result['bundle']}: success rate")
    fig.colorbar(image, ax=ax, fraction=0.05)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
