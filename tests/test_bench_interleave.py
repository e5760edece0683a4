"""bench/policy/interleave.py: the policy bench's turn order gives no implementation another's cold caches."""

from __future__ import annotations

from pathlib import Path

import pytest

INTERLEAVE_PY = Path(__file__).resolve().parents[1] / "bench" / "policy" / "interleave.py"


@pytest.fixture(scope="module")
def interleave(load_script):
    return load_script(INTERLEAVE_PY, "bench_interleave")


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("rounds", [7, 61])
def test_every_implementation_follows_each_other_one_equally_often(interleave, n, rounds):
    orders = interleave.balanced_rounds(n, rounds)
    assert len(orders) == rounds
    assert all(sorted(order) == list(range(n)) for order in orders)
    counts = interleave.preceded_by(orders, n)
    for x in range(n):
        others = [counts[x][a] for a in range(n) if a != x]
        assert max(others) - min(others) <= 1, (x, counts)
    assert len({counts[x][x] for x in range(n)}) == 1, counts


def test_a_fixed_rotation_is_what_it_replaces_and_is_unfair(interleave):
    """With four implementations rotated by one each round, the first follows the last in three rounds of four."""
    rotation = [[(r + i) % 4 for i in range(4)] for r in range(61)]
    counts = interleave.preceded_by(rotation, 4)
    assert counts[0][3] > 2 * counts[0][2]


def test_the_orders_are_the_same_on_every_run(interleave):
    assert interleave.balanced_rounds(4, 20) == interleave.balanced_rounds(4, 20)
