"""Shared fixtures of the parkour_perception tests: real librealsense software devices, no mocks."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

import parkour_perception  # noqa: F401  (loads rclpy before pyrealsense2: see its __init__)
from parkour_core.depth import DepthSpec


def _wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def wait_for() -> Callable[[Callable[[], bool], float, str], None]:
    """Poll until a condition holds; the timeout only bounds a hung test, it is never what is tested."""
    return _wait_for


@pytest.fixture
def spec() -> DepthSpec:
    return DepthSpec()


@pytest.fixture
def scene() -> np.ndarray:
    """A realistic 480x270 z16 frame (mm)."""
    from parkour_perception.software_camera import synthetic_depth_mm

    return synthetic_depth_mm(480, 270, seed=3)
