"""One torch thread for HIL's tests: on two shared, busy cores a second intra-op thread spin-waits
(a small discriminator fit runs many times slower with two threads than with one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
