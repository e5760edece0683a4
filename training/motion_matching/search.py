"""Constrained nearest-neighbour search over normalised features: an AABB index, not brute force.

Consecutive frames of a clip have similar features, so the rows of each search window (the
locomotion database, or one skill's entry windows) are cut into runs of ``box_size`` consecutive
frames, each bounded by an axis-aligned box. A query visits boxes in order of their lower-bound
distance and stops once that bound exceeds the best distance found (as in Holden et al.'s learned
motion matching). The answer equals the brute-force argmin, including the tie-break.

Tie-break: distances within ``tie_tol`` of the minimum count as equal, and the lowest database index
wins. The database stores every original clip before its mirror, so a symmetric query (standing
still, straight ahead) picks the original frame on every machine and every run, never whichever of
the pair floating-point noise happens to favour.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]
I64 = NDArray[np.int64]

TIE_TOL = 1e-9


class AabbIndex:
    def __init__(self, features: F, ids: I64, segments: list[I64] | None = None, box_size: int = 32):
        """``features`` (N, D) normalised rows with their database ``ids`` (N,); ``segments`` are runs of
        row positions that may share a box (defaults to one run); boxes never cross a run."""
        if len(features) == 0:
            raise ValueError("an empty search window")
        self.x = np.ascontiguousarray(features, dtype=np.float64)
        self.ids = np.asarray(ids, dtype=np.int64)
        runs = segments if segments is not None else [np.arange(len(features))]
        starts, stops = [], []
        for run in runs:
            run = np.asarray(run)
            if len(run) and not np.all(np.diff(run) == 1):
                raise ValueError("a segment must be consecutive row positions")
            for a in range(0, len(run), box_size):
                starts.append(int(run[a]))
                stops.append(int(run[min(a + box_size, len(run)) - 1]) + 1)
        self.starts = np.asarray(starts)
        self.stops = np.asarray(stops)
        self.lo = np.stack([self.x[a:b].min(axis=0) for a, b in zip(starts, stops, strict=True)])
        self.hi = np.stack([self.x[a:b].max(axis=0) for a, b in zip(starts, stops, strict=True)])

    def __len__(self) -> int:
        return len(self.x)

    def query(self, q: F, tie_tol: float = TIE_TOL) -> tuple[int, float]:
        """(database id, squared distance) of the nearest row to q, lowest id among ties."""
        gap = np.maximum(self.lo - q, 0.0) + np.maximum(q - self.hi, 0.0)
        bound = np.einsum("bd,bd->b", gap, gap)
        order = np.argsort(bound, kind="stable")
        best = np.inf
        cand_d: list[F] = []
        cand_i: list[I64] = []
        for b in order:
            if bound[b] > best + tie_tol:
                break
            a, z = self.starts[b], self.stops[b]
            diff = self.x[a:z] - q
            d = np.einsum("nd,nd->n", diff, diff)
            best = min(best, float(d.min()))
            keep = d <= best + tie_tol
            cand_d.append(d[keep])
            cand_i.append(self.ids[a:z][keep])
        return _pick(np.concatenate(cand_d), np.concatenate(cand_i), tie_tol)


def _pick(d: F, ids: I64, tie_tol: float) -> tuple[int, float]:
    best = float(d.min())
    tied = d <= best + tie_tol
    k = int(np.argmin(np.where(tied, ids, np.iinfo(np.int64).max)))
    return int(ids[k]), float(d[k])


def brute_force(features: F, ids: I64, q: F, tie_tol: float = TIE_TOL) -> tuple[int, float]:
    """The reference: every row's distance, then the same tie-break."""
    diff = features - q
    return _pick(np.einsum("nd,nd->n", diff, diff), np.asarray(ids, dtype=np.int64), tie_tol)


def brute_force_argmin(features: F, q: F) -> int:
    """Plain numpy argmin (the bench baseline): no index, no tie-break."""
    return int(np.argmin(((features - q) ** 2).sum(axis=1)))
