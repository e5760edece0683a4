"""eval.md, compare.md and the PNG heatmap from the summarised cells.

Every table leads with the student driving alone (``success_rate_student_alone``): a trial in which
the supervisor's fallback gait (BLIND) drove is not the student's success, so the successes BLIND
finished, and in how many trials it drove, are given beside the headline, never folded into it.
The header names the seed set the trials came from; the ``test`` set is for reporting a model
already chosen, never for choosing one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from training.eval.protocol import CUSTOM_SEED_SET, FAILURES, SEED_SETS


def percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.0f} %"


def height_text(height_m: float) -> str:
    return "flat" if height_m == 0 else f"{height_m * 100:.0f} cm"


def pace_text(speed_mps: float | None) -> str:
    return "n/a" if speed_mps is None else f"{speed_mps:.2f} m/s"


def blind_finished(cell: dict[str, Any]) -> float | None:
    """The share of a cell's trials that succeeded with BLIND driving part of them (older eval.json
    files have only ``success_rate`` and ``success_rate_student_alone``)."""
    if "success_rate_blind_finished" in cell:
        return cell["success_rate_blind_finished"]
    alone, rate = cell.get("success_rate_student_alone"), cell.get("success_rate")
    return None if alone is None or rate is None else rate - alone


def seed_set_line(result: dict[str, Any]) -> str:
    """Which seeds the trials came from, and what they may be used for."""
    name, root = result.get("seed_set"), result.get("seed")
    if name == "test":
        return (f"Seed set `test` (root {root}): held out to report a model already chosen. It must not be "
                "used to choose (a gain, a checkpoint, a bundle); choose on `validation`.")  # fmt: skip
    if name == "validation":
        return f"Seed set `validation` (root {root}): the set for choosing among models; report the choice on `test`."
    if name == CUSTOM_SEED_SET:
        return f"Seed root {root} given by hand (`custom`): neither the validation nor the test set {SEED_SETS}."
    return f"Seed root {root} (no seed set recorded)."


def course_text(heights_m: list[float]) -> str:
    return "course " + "-".join(f"{100 * h:.0f}" for h in heights_m) + " cm"


def cell_text(cell: dict[str, Any]) -> str:
    """The headline (success driving alone), the successes BLIND finished and in how many trials BLIND
    drove, then the failures."""
    failures = " / ".join(str(cell["failure_modes"][k]) for k in FAILURES)
    if cell.get("success_rate_student_alone") is None:  # no trials, or a file from before BLIND was counted
        return f"n/a alone; {percent(cell['success_rate'])} in all ({failures})"
    extra = f"+{percent(blind_finished(cell))} BLIND-finished (BLIND in {cell['blind_trials']})"
    pace = f"; pace {pace_text(cell['mean_pace_mps'])}" if "mean_pace_mps" in cell else ""
    return f"**{percent(cell['success_rate_student_alone'])}** {extra}; {failures}{pace}"


def markdown_table(result: dict[str, Any]) -> str:
    cells = result["cells"]
    speeds = sorted({c["speed_mps"] for c in cells})
    heights = sorted({c["height_m"] for c in cells})
    by_key = {(c["speed_mps"], c["height_m"]): c for c in cells}
    ablated = " with its depth ablated (flat ground)" if result.get("depth_ablation") else ""
    if result.get("robot_model", "default") != "default":
        ablated += f" on the {result['robot_model']} model"
    lines = [
        f"Success of `{result['bundle']}`{ablated} ({result['trials_per_cell']} trials per cell). Each cell: "
        "**the policy driving alone** (the headline: successes in trials the supervisor's BLIND fallback never "
        "drove, over all trials); + the successes BLIND finished, and in how many trials BLIND drove; then the "
        "failures: falls / stops at the box / times out; the pace: mean forward speed from activation to the "
        "trial's end, over the trials that did not fall.",
        "",
        seed_set_line(result),
        "",
        "| speed | " + " | ".join(height_text(h) for h in heights) + " |",
        "| --- | " + " | ".join("---" for _ in heights) + " |",
    ]
    for v in speeds:
        lines.append(f"| {v:g} m/s | " + " | ".join(cell_text(by_key[(v, h)]) for h in heights) + " |")
    for c in result.get("course_cells") or []:
        boxes = ", ".join(
            f"{height_text(h)} {n}" for h, n in zip(c["course_heights_m"], c["cleared_per_box"], strict=True)
        )
        lines += ["", f"Course cell at {c['speed_mps']:g} m/s ({course_text(c['course_heights_m'])} in that order, "
                  f"{c['trials']} trials): {cell_text(c)}; trials past each box: {boxes}"]  # fmt: skip
    course = result.get("course")
    if course:
        lines += [
            "",
            f"Courses of {min(course['obstacles'])}-{max(course['obstacles'])} boxes ({course['courses']}): "
            f"success {100 * course['success_rate']:.0f} %, distance p50 {course['distance_m']['p50']:.2f} m, "
            f"boxes cleared {course['obstacles_cleared_mean']:.2f} on average",
        ]
    return "\n".join(lines) + "\n"


COMPARE_COLUMNS = ("speed", "height", "bundle", "alone (headline)", "+ BLIND-finished", "BLIND trials",
                   "falls", "stops at box", "times out", "trials", "pace")  # fmt: skip


def compare_markdown(compare: dict[str, Any]) -> str:
    """compare.md: one row per bundle per cell, the student-alone rate first."""
    lines = [
        f"`parkour eval --bundles`: {len(compare['bundles'])} bundles over the same cells and trials "
        f"({compare['trials_per_cell']} per cell), in one command at commit `{compare['git_commit']}`. "
        "`alone` is the headline: successes in trials the supervisor's BLIND fallback never drove, over all trials; "
        "`pace`: mean forward speed from activation to the trial's end, over the trials that did not fall.",
        "",
        seed_set_line(compare),
        "",
        f"Command: `{compare['command']}`",
        "",
        "| " + " | ".join(COMPARE_COLUMNS) + " |",
        "| " + " | ".join("---" for _ in COMPARE_COLUMNS) + " |",
    ]
    for r in compare["rows"]:
        f = r["failure_modes"]
        lines.append("| " + " | ".join([
            f"{r['speed_mps']:g} m/s",
            course_text(r["course_heights_m"]) if "course_heights_m" in r else height_text(r["height_m"]),
            f"`{r['label']}`",
            f"**{percent(r['success_rate_student_alone'])}**", f"+{percent(r['success_rate_blind_finished'])}",
            str(r["blind_trials"]), *(str(f[k]) for k in FAILURES), str(r["trials"]),
            pace_text(r.get("mean_pace_mps")),
        ]) + " |")  # fmt: skip
    lines += ["", "| bundle | path | SHA-256 |", "| --- | --- | --- |"]
    for b in compare["bundles"]:
        if "teacher" in b:  # the privileged teacher: its file, under the walking policy's bundle
            lines.append(f"| `{b['label']}` (privileged) | {b['teacher']} | `{b['teacher_sha256']}` (teacher.pt) |")
        else:
            lines.append(f"| `{b['label']}` | {b['bundle_path']} | `{b['bundle_manifest_sha256']}` (manifest) |")
    return "\n".join(lines) + "\n"


def plot_heatmap(result: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = result["cells"]
    speeds = sorted({c["speed_mps"] for c in cells})
    heights = sorted({c["height_m"] for c in cells})
    grid = np.full((len(speeds), len(heights)), np.nan)
    helped = np.zeros_like(grid)
    for c in cells:
        if c.get("success_rate_student_alone") is not None:
            i, j = speeds.index(c["speed_mps"]), heights.index(c["height_m"])
            grid[i, j], helped[i, j] = c["success_rate_student_alone"], blind_finished(c) or 0.0
    fig, ax = plt.subplots(figsize=(1.8 + 1.4 * len(heights), 1.4 + 0.9 * len(speeds)))
    image = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="RdYlGn", aspect="auto")
    for i in range(len(speeds)):
        for j in range(len(heights)):
            text = "n/a" if np.isnan(grid[i, j]) else f"{100 * grid[i, j]:.0f}%"
            if helped[i, j] > 0:
                text += f"\n+{100 * helped[i, j]:.0f}% by BLIND"
            ax.text(j, i, text, ha="center", va="center", fontsize=11)
    ax.set_xticks(range(len(heights)), [height_text(h) for h in heights])
    ax.set_yticks(range(len(speeds)), [f"{v:g} m/s" for v in speeds])
    ax.set_xlabel("obstacle height")
    ax.set_ylabel("commanded speed")
    seeds = f", {result['seed_set']} seeds" if result.get("seed_set") else ""
    ax.set_title(f"{result['bundle']}\nsuccess driving alone{seeds}", fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.05)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
