"""Swapping the running model without missing a tick (ROS-free, so it is tested directly).

A swap goes: load and verify the candidate (hashes, contract, ONNX I/O, warm-up with finite
outputs), check it fits the running loop (same robot, same rate, the depth the camera gives),
shadow-run it for N ticks on the live observations next to the active model, then switch at a
tick boundary. Any failure leaves the active model running and says why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from parkour_core.bundle import Bundle, BundleError, load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.depth import DepthSpec
from parkour_core.robots import RobotSpec
from parkour_core.runner import PolicyRunner, RobotState


class SwapError(Exception):
    """A swap that was refused or failed; the active model keeps running."""


def load_candidate(
    name_or_path: str,
    robot: RobotSpec,
    active: Bundle,
    depth_spec: DepthSpec,
    make_runner: Callable[[Bundle], PolicyRunner],
) -> PolicyRunner:
    """Load, verify and warm up a bundle, and check that it fits the running loop."""
    try:
        bundle = load_bundle(resolve_bundle(name_or_path), robot=robot)
        check_fits(bundle, active, depth_spec)
        return make_runner(bundle)
    except BundleError as e:
        raise SwapError(str(e)) from None


def check_fits(candidate: Bundle, active: Bundle, depth_spec: DepthSpec) -> None:
    new, old = candidate.manifest, active.manifest
    if new.policy_hz != old.policy_hz:
        raise BundleError(
            f"bundle {new.name!r} runs at {new.policy_hz:g} Hz but the loop runs at {old.policy_hz:g} Hz; "
            "a different rate needs a restart with policy.bundle set"
        )
    if new.depth is not None and new.depth.spec != depth_spec:
        raise BundleError(
            f"bundle {new.name!r} was trained on depth {new.depth.spec}, the camera publishes {depth_spec}; "
            "set the depth section of the config to match and restart the camera"
        )


@dataclass
class ShadowRun:
    """The candidate steps on the same observations as the active model, without driving the robot."""

    runner: PolicyRunner
    ticks_needed: int
    ticks: int = 0
    max_target_gap_rad: float = 0.0  # how far its targets were from the executed ones (reported, not judged)
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def step(self, state: RobotState, command: np.ndarray, executed_targets: np.ndarray) -> None:
        if self.done.is_set():
            return
        targets = self.runner.step(state, command)
        if not (np.all(np.isfinite(targets)) and np.all(np.isfinite(self.runner.hidden))):
            self.error = (
                f"bundle {self.runner.manifest.name!r} output NaN/inf in shadow tick {self.ticks + 1} "
                "on live observations"
            )
            self.done.set()
            return
        self.max_target_gap_rad = max(self.max_target_gap_rad, float(np.max(np.abs(targets - executed_targets))))
        self.ticks += 1
        if self.ticks >= self.ticks_needed:
            self.done.set()

    def adopt_executed(self, executed_targets: np.ndarray) -> None:
        """On switch, the candidate's previous action becomes the one the robot actually executed."""
        r = self.runner
        r.last_action = np.clip((executed_targets - r.default_q) / r.action_scale, -r.action_clip, r.action_clip)


@dataclass
class SwapOutcome:
    ok: bool
    message: str
    bundle: Path | None = None
    switched_at_tick: int | None = None
    requested_at_tick: int | None = None
    shadow_ticks: int = 0
    max_target_gap_rad: float = 0.0
    manifest_verified: bool | None = None  # of the bundle switched to (False: unsealed); None: nothing switched
