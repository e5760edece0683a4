"""One trainer, two collector processes: weights reach the collectors, batches come back."""

from __future__ import annotations

import pytest

from training.methods.hpl.collectors import ToyTask, run_distributed, run_single


def test_weights_go_to_collectors_and_batches_come_back() -> None:
    task = ToyTask(num_envs=4)
    result = run_distributed(task, collectors=2, iterations=8, steps=8, lr=1e-2)
    assert len(result.iterations) == 8
    assert result.transitions == 8 * 2 * 8 * 4
    ranks = [r for row in result.iterations for r in row["ranks"]]
    # Batches come from the collectors only. Which collector delivers is up to the scheduler: on a
    # loaded machine one can still be importing torch after 8 iterations, so both are not required.
    assert ranks and set(ranks) <= {0, 1}
    versions = [v for row in result.iterations for v in row["versions"]]
    sums = [s for row in result.iterations for s in row["collector_weight_sums"]]
    assert max(versions) > 0  # collectors picked up updated weights
    for version, seen in zip(versions, sums, strict=True):  # and acted with exactly those weights
        assert seen == pytest.approx(result.version_checksums[version], rel=1e-6)
    for k, row in enumerate(result.iterations):
        assert all(v <= k for v in row["versions"])


def test_single_process_baseline_learns_the_toy_oracle() -> None:
    result = run_single(ToyTask(num_envs=16), iterations=30, steps=8, lr=2e-2)
    assert result.iterations[-1]["loss"] < 0.3 * result.iterations[0]["loss"]
