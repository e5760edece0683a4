"""The order in which the policy bench's implementations take turns, one block of ticks each per round.

A block starts on the caches the block before it left: after the torch reference, say, the first ticks
of the next block run cold, and those ticks make a p99. A fixed rotation puts the same implementation
after the same other one in most rounds (with four, ``ours_fp32`` followed ``torch_eager`` in three
rounds of four and its peer never did), which charges one implementation another's cold starts.
:func:`balanced_rounds` picks each round's order so that, over the run, every implementation follows
each other one equally often (to within one block), round boundaries included.
"""

from __future__ import annotations

import itertools


def preceded_by(rounds: list[list[int]], n: int) -> list[list[int]]:
    """``counts[x][a]``: how many of implementation ``x``'s blocks ran right after one of ``a``'s."""
    counts = [[0] * n for _ in range(n)]
    sequence = [x for order in rounds for x in order]
    for before, x in itertools.pairwise(sequence):
        counts[x][before] += 1
    return counts


def _spread(counts: list[list[int]]) -> int:
    n = len(counts)
    spread = 0
    for x in range(n):
        others = [counts[x][a] for a in range(n) if a != x]
        spread += max(others) - min(others) if others else 0
    selves = [counts[x][x] for x in range(n)]
    return spread + max(selves) - min(selves)


def balanced_rounds(n: int, rounds: int) -> list[list[int]]:
    """``rounds`` orders of ``range(n)``, each chosen (first in lexicographic order on a tie) to keep the
    predecessor counts of :func:`preceded_by` as even as they can be after it. Deterministic."""
    orders = list(itertools.permutations(range(n)))
    counts = [[0] * n for _ in range(n)]
    chosen: list[list[int]] = []
    last: int | None = None
    for _ in range(rounds):
        best: tuple[int, tuple[int, ...], list[list[int]]] | None = None
        for order in orders:
            trial = [row[:] for row in counts]
            before = last
            for x in order:
                if before is not None:
                    trial[x][before] += 1
                before = x
            spread = _spread(trial)
            if best is None or spread < best[0]:
                best = (spread, order, trial)
        assert best is not None
        _, order, counts = best
        chosen.append(list(order))
        last = order[-1]
    return chosen
