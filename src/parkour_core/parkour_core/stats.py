"""Timing statistics the way we report them: medians and tails, never one number."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def summary_ms(values_s: Sequence[float]) -> dict[str, float | int | None]:
    """p50/p99/max (ms) and the sample count of durations given in seconds."""
    if len(values_s) == 0:
        return {"p50": None, "p99": None, "max": None, "n": 0}
    a = np.asarray(values_s, dtype=np.float64) * 1000.0
    return {
        "p50": round(float(np.percentile(a, 50)), 4),
        "p99": round(float(np.percentile(a, 99)), 4),
        "max": round(float(a.max()), 4),
        "n": len(a),
    }


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
