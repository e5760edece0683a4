"""Running observation normalization (rsl-rl's empirical normalization) for the pipeline's networks."""

from __future__ import annotations

import torch
from torch import nn


class EmpiricalNormalizer(nn.Module):
    """rsl-rl's empirical observation normalization: ``(x - mean) / (std + eps)`` with running moments.

    ``update`` is called on the collected observations only, so the statistics are fixed during an
    update; with ``enabled`` False it is the identity.
    """

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, size: int, enabled: bool = True, eps: float = 1e-2) -> None:
        super().__init__()
        self.enabled = enabled
        self.eps = eps
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.zeros(()))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        if not self.enabled:
            return
        x = x.reshape(-1, x.shape[-1])
        n = x.shape[0]
        total = self.count + n
        batch_mean, batch_var = x.mean(0), x.var(0, unbiased=False)
        delta = batch_mean - self.mean
        self.var.copy_((self.var * self.count + batch_var * n + delta.pow(2) * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.enabled:
            return x
        return (x - self.mean) / (self.var.sqrt() + self.eps)
