"""Quality checks of synthesized motions, written to ``quality.json``.

- ``max_joint_vel_jump_radps``: the largest change of joint velocity across a clip switch, with the
  inertialized output and with the raw database frames; the gap is what inertialization buys.
- ``foot_skate_m``: how far a foot slides horizontally per frame while it is on the terrain.
- ``entry_distance_hist``: where, relative to the obstacle, the character entered each skill.
  Motion matching's point is that a sparse clip gets entered from a dense range of approaches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from training.motion_matching.terrain import Boxes, ground_height

F = NDArray[np.float64]

CONTACT_HEIGHT_M = 0.06  # ankle origin within this of its flat-foot height above the surface = contact
ENTRY_BIN_M = 0.1


@dataclass
class MotionQuality:
    skill: str
    fps: float
    joints: F
    joints_raw: F
    switch_frames: NDArray[np.int64]
    feet: F  # (T, 2, 3) world
    terrain: Boxes
    entry_distance_m: float


def velocity_jumps(q: F, frames: NDArray[np.int64], fps: float) -> F:
    """Largest |v_after - v_before| over joints at each switch frame s (v from q[s]-q[s-1], q[s-1]-q[s-2])."""
    s = frames[(frames >= 2) & (frames < len(q))]
    if len(s) == 0:
        return np.zeros(0)
    v_after = (q[s] - q[s - 1]) * fps
    v_before = (q[s - 1] - q[s - 2]) * fps
    return np.abs(v_after - v_before).max(axis=1)


def foot_skate(feet: F, terrain: Boxes, foot_height: float = 0.035) -> F:
    """Horizontal slide (m) of each foot over each frame pair where it is in contact at both ends."""
    t, nf = feet.shape[:2]
    ground = ground_height(terrain, feet[:, :, :2].reshape(-1, 2)).reshape(t, nf)
    contact = feet[:, :, 2] - ground - foot_height < CONTACT_HEIGHT_M
    both = contact[1:] & contact[:-1]
    slide = np.linalg.norm(feet[1:, :, :2] - feet[:-1, :, :2], axis=-1)
    return slide[both]


def _stats(x: F) -> dict[str, float]:
    if len(x) == 0:
        return {"count": 0}
    return {"count": len(x), "mean": float(np.mean(x)), "p50": float(np.percentile(x, 50)),
            "p95": float(np.percentile(x, 95)), "max": float(np.max(x))}  # fmt: skip


def entry_histogram(dist: F, bin_m: float = ENTRY_BIN_M) -> dict[str, Any]:
    """Counts in bins of ``bin_m`` from 0; ``occupied_fraction``: share of bins between the smallest
    and largest distance that hold at least one entry (1.0 = no holes in the covered range)."""
    if len(dist) == 0:
        return {"count": 0}
    top = float(np.ceil((dist.max() + 1e-9) / bin_m) * bin_m)
    edges = np.round(np.arange(0.0, top + bin_m / 2, bin_m), 6)
    counts, _ = np.histogram(dist, bins=edges)
    first, last = int(np.floor(dist.min() / bin_m)), int(np.floor(dist.max() / bin_m - 1e-12))
    span = counts[first : max(last, first) + 1]
    return {
        "bin_m": bin_m,
        "edges_m": edges.tolist(),
        "counts": counts.astype(int).tolist(),
        "min_m": float(dist.min()),
        "max_m": float(dist.max()),
        "distinct_values": len(np.unique(np.round(dist, 4))),
        "occupied_fraction": float(np.mean(span > 0)) if len(span) else 1.0,
    }


def summarize(motions: list[MotionQuality]) -> dict[str, Any]:
    with_i = np.concatenate([velocity_jumps(m.joints, m.switch_frames, m.fps) for m in motions])
    without = np.concatenate([velocity_jumps(m.joints_raw, m.switch_frames, m.fps) for m in motions])
    # For scale: the same statistic at frames that are not switches (ordinary motion).
    baseline = []
    for m in motions:
        frames = np.setdiff1d(np.arange(2, len(m.joints)), m.switch_frames)
        baseline.append(velocity_jumps(m.joints, frames, m.fps))
    skate = np.concatenate([foot_skate(m.feet, m.terrain) for m in motions])
    dist = np.array([m.entry_distance_m for m in motions])
    per_skill = {
        s: entry_histogram(np.array([m.entry_distance_m for m in motions if m.skill == s]))
        for s in sorted({m.skill for m in motions})
    }
    return {
        "motions": len(motions),
        "switches": len(with_i),
        "max_joint_vel_jump_radps": {
            "with_inertialization": float(with_i.max()) if len(with_i) else 0.0,
            "without_inertialization": float(without.max()) if len(without) else 0.0,
            "with_inertialization_p95": float(np.percentile(with_i, 95)) if len(with_i) else 0.0,
            "without_inertialization_p95": float(np.percentile(without, 95)) if len(without) else 0.0,
            "non_switch_frames_p99": float(np.percentile(np.concatenate(baseline), 99)),
        },
        "foot_skate_m": {**_stats(skate), "contact_height_m": CONTACT_HEIGHT_M, "per": "contact frame pair (1/50 s)"},
        "entry_distance_hist": {"all": entry_histogram(dist), "per_skill": per_skill},
    }
