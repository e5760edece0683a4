"""The hybrid loss's pure pieces: the DAgger mask, its latch, the masked MSE and the KL rule.

The update that uses them (``training.rl.algorithms.HybridPPO``) is tested in training/rl/test_algorithms.py.
"""

from __future__ import annotations

import pytest
import torch

from training.algorithms.hybrid import adapt_learning_rate, dagger_mask, latch_until_reset, masked_mse


def test_dagger_mask_is_the_teachers_original_termination() -> None:
    deviation = torch.tensor([0.0, 0.49, 0.5, 0.51, 0.9, 1.2])
    assert dagger_mask(deviation).tolist() == [True, True, True, False, False, False]
    assert dagger_mask(deviation, threshold=1.0).tolist() == [True] * 5 + [False]


def test_masked_mse_ignores_exactly_the_masked_samples() -> None:
    student = torch.tensor([[1.0, 1.0], [0.0, 0.0], [2.0, 0.0]], requires_grad=True)
    teacher = torch.tensor([[0.0, 1.0], [5.0, 5.0], [0.0, 0.0]])
    mask = torch.tensor([True, False, True])
    loss = masked_mse(student, teacher, mask)
    assert loss.item() == pytest.approx((0.5 + 2.0) / 2)  # per-sample means 0.5 and 2.0; sample 1 ignored
    loss.backward()
    assert student.grad is not None
    # d/ds of sum_i mask_i mean_j (s_ij - t_ij)^2 / sum(mask) = 2 (s - t) / (2 dims x 2 samples), 0 where masked.
    torch.testing.assert_close(student.grad, torch.tensor([[0.5, 0.0], [0.0, 0.0], [1.0, 0.0]]))
    # Any label under the mask leaves the loss unchanged.
    teacher_changed = teacher.clone()
    teacher_changed[1] = -100.0
    assert masked_mse(student, teacher_changed, mask).item() == loss.item()
    # Nothing imitable: zero loss, zero gradient, no NaN.
    none = masked_mse(student, teacher, torch.zeros(3, dtype=torch.bool))
    assert none.item() == 0.0
    assert torch.autograd.grad(none, student)[0].abs().sum().item() == 0.0


def test_latch_keeps_the_mask_off_until_the_episode_resets() -> None:
    #            t:    0     1      2     3      4
    mask = torch.tensor([[True, False, True, True, True]]).T  # [T=5, N=1]
    dones = torch.tensor([[False, False, True, False, False]]).T
    assert latch_until_reset(mask, dones)[:, 0].tolist() == [True, False, False, True, True]


def test_kl_rule() -> None:
    assert adapt_learning_rate(1e-3, 0.1, 0.01, enabled=True) == pytest.approx(1e-3 / 1.5)
    assert adapt_learning_rate(1e-3, 0.001, 0.01, enabled=True) == pytest.approx(1.5e-3)
    assert adapt_learning_rate(1e-3, 0.01, 0.01, enabled=True) == 1e-3
    assert adapt_learning_rate(1e-3, 0.0, 0.01, enabled=True) == 1e-3  # rsl-rl: no raise at KL 0
    assert adapt_learning_rate(1e-5, 1.0, 0.01, enabled=True) == 1e-5  # clamped
    assert adapt_learning_rate(1e-3, 0.1, 0.01, enabled=False) == 1e-3
    assert adapt_learning_rate(1e-3, 0.001, 0.01, enabled=False) == 1e-3
