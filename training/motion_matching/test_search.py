import numpy as np
import pytest

from training.motion_matching.search import AabbIndex, brute_force


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aabb_index_equals_brute_force_on_random_data(seed):
    rng = np.random.default_rng(seed)
    # random walks (clip-like, temporally coherent) and pure noise
    walk = np.cumsum(rng.normal(0, 0.1, (3000, 27)), axis=0)
    noise = rng.normal(0, 1, (1000, 27))
    x = np.concatenate([walk, noise])
    ids = np.arange(len(x)) + 100
    segments = [np.arange(0, 1500), np.arange(1500, 3000), np.arange(3000, 4000)]
    index = AabbIndex(x, ids, segments, box_size=16)
    for _ in range(200):
        q = x[rng.integers(len(x))] + rng.normal(0, 0.3, 27)
        assert index.query(q) == brute_force(x, ids, q)


def test_tie_break_prefers_lowest_id_deterministically():
    base = np.random.default_rng(3).normal(size=(50, 4))
    # a frame and its "mirror" with identical features, stored later (higher id)
    x = np.concatenate([base, base])
    ids = np.arange(100)
    index = AabbIndex(x, ids, [np.arange(50), np.arange(50, 100)], box_size=8)
    for k in range(50):
        for _ in range(3):
            got = index.query(base[k] + 1e-13)
            assert got[0] == k
            assert got == brute_force(x, ids, base[k] + 1e-13)
    # order of rows in the index does not matter, only ids
    perm = np.concatenate([np.arange(50, 100), np.arange(50)])
    index2 = AabbIndex(x[perm], ids[perm], [np.arange(50), np.arange(50, 100)], box_size=8)
    assert index2.query(base[7])[0] == 7


def test_segments_must_be_consecutive():
    with pytest.raises(ValueError):
        AabbIndex(np.zeros((4, 2)), np.arange(4), [np.array([0, 2])])
