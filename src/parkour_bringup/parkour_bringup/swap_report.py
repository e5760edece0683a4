"""Control-loop periods across model swaps: did any tick slip while a model loaded?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.stats import summary_ms


def swap_windows(swaps: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Tick ranges from each request to its answer (the load, verify, shadow run and switch)."""
    windows = []
    for s in swaps:
        start = s.get("requested_at_tick")
        end = s.get("switched_at_tick") or start
        if start is not None:
            windows.append((int(start), int(end) + 1))
    return windows


def split_periods(policy: dict[str, Any]) -> tuple[list[float], list[float]]:
    """Wall-clock periods (ms) inside swap windows and outside them."""
    periods = policy.get("periods_wall_ms", [])
    ticks = policy.get("period_ticks", [])
    windows = swap_windows(policy.get("swaps", []))
    inside, outside = [], []
    for tick, period in zip(ticks, periods, strict=False):
        (inside if any(a <= tick <= b for a, b in windows) else outside).append(period)
    return inside, outside


def write_swap_report(run_dir: Path) -> dict[str, Any]:
    """Adds ``swaps`` to report.json and draws swap_period_hist.png when the run swapped models."""
    policy_path = run_dir / "policy.json"
    if not policy_path.is_file():
        return {}
    policy = json.loads(policy_path.read_text())
    swaps = policy.get("swaps", [])
    if not swaps:
        return {}
    inside, outside = split_periods(policy)
    summary = {
        "count": len(swaps),
        "succeeded": sum(bool(s["ok"]) for s in swaps),
        "results": [{"bundle": s["requested"], "ok": s["ok"], "message": s["message"]} for s in swaps],
        "period_wall_ms_during_swaps": summary_ms([p / 1e3 for p in inside]),
        "period_wall_ms_otherwise": summary_ms([p / 1e3 for p in outside]),
    }
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    bins = np.linspace(0.0, max([40.0, *inside, *outside]), 60)
    ax.hist(outside, bins=bins, alpha=0.6, label=f"no swap in progress ({len(outside)} ticks)")
    ax.hist(inside, bins=bins, alpha=0.8, label=f"during {len(swaps)} swap requests ({len(inside)} ticks)")
    ax.set_xlabel("policy period, wall clock (ms)")
    ax.set_ylabel("ticks")
    ax.set_yscale("log")
    ax.set_title("Control-loop periods while models load, shadow-run and switch")
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "swap_period_hist.png", dpi=110)
    plt.close(fig)

    report_path = run_dir / "report.json"
    report = json.loads(report_path.read_text()) if report_path.is_file() else {}
    report["swaps"] = summary
    report.setdefault("plots", []).append("swap_period_hist.png")
    report_path.write_text(json.dumps(report, indent=2) + "\n")
    return summary
