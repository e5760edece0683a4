"""The policy node's own measurements: tick periods and deadline misses, inference and state timings, the
ages of the state and depth each tick used, and what policy.json and /diagnostics say of them.

Free of ROS: the node counts and times into :class:`PolicyMeters`; its reports are plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parkour_control.depth_input import DepthLatencyGate, FrameRate
from parkour_core.stats import CpuMeter, Samples, summary_ms

DEADLINE_FACTOR = 1.5  # a period longer than this many policy periods is a deadline miss


@dataclass
class PolicyMeters:
    ticks: int = 0
    deadline_misses: int = 0
    nonfinite_ticks: int = 0
    depth_rejected: int = 0  # frames of another size or encoding than the depth section's
    periods: Samples = field(default_factory=Samples)
    periods_wall: Samples = field(default_factory=Samples)
    period_ticks: Samples = field(default_factory=Samples)  # tick index of each period (to place swaps on it)
    inference_s: Samples = field(default_factory=Samples)
    backbone_s: Samples = field(default_factory=Samples)
    state_decode_s: Samples = field(default_factory=Samples)
    tick_s: Samples = field(default_factory=Samples)  # the whole tick: state, depth, step, publish
    state_ages: Samples = field(default_factory=Samples)
    depth_ages: Samples = field(default_factory=Samples)  # age of the depth behind the latent (or newest frame)
    depth_rate: FrameRate = field(default_factory=FrameRate)
    cpu: CpuMeter = field(default_factory=CpuMeter)
    _last_tick: float | None = None
    _last_tick_wall: float | None = None

    def account_period(self, now: float, wall: float, period_s: float) -> None:
        if self._last_tick is not None and self._last_tick_wall is not None:
            period = now - self._last_tick
            self.periods.append(period)
            self.periods_wall.append(wall - self._last_tick_wall)
            self.period_ticks.append(self.ticks)
            if period > DEADLINE_FACTOR * period_s:
                self.deadline_misses += 1
        self._last_tick, self._last_tick_wall = now, wall

    def diagnostics(
        self, bundle_name: str, stale_after_s: float, manifest_verified: bool
    ) -> tuple[bool, dict[str, Any]]:
        """Whether depth is stale, and /diagnostics' values: the running bundle and whether its manifest is
        sealed (``manifest_verified``), the last second's inference, the newest ages."""
        recent_inference = self.inference_s.tail(50)
        recent_depth = self.depth_ages.tail(50)
        stale = bool(recent_depth.size) and recent_depth[-1] > stale_after_s
        values = {
            "bundle": bundle_name,
            "manifest_verified": manifest_verified,
            "ticks": self.ticks,
            "deadline_misses": self.deadline_misses,
            "inference_ms_p50": np.median(recent_inference) * 1e3 if recent_inference.size else float("nan"),
            "inference_ms_max": recent_inference.max() * 1e3 if recent_inference.size else float("nan"),
            "state_age_ms": self.state_ages.tail(1)[0] * 1e3 if len(self.state_ages) else float("nan"),
            "depth_age_ms": recent_depth[-1] * 1e3 if recent_depth.size else float("nan"),
            "depth_fps": self.depth_rate.fps,
            "nonfinite_ticks": self.nonfinite_ticks,
        }
        return stale, values

    def report(
        self,
        bundle: dict[str, Any],
        timer_fires_dropped: int,
        sim_now_s: float | None,
        gate: DepthLatencyGate,
        swaps: list[dict],
        faults_injected: list[dict],
    ) -> dict[str, Any]:
        """policy.json. ``bundle``: the running bundle's ``bundle`` (path), ``bundle_name`` and
        ``manifest_verified`` (False: its manifest has no seal)."""
        return {
            **bundle,
            "ticks": self.ticks,
            "policy_period_ms": summary_ms(self.periods),
            "policy_period_wall_ms": summary_ms(self.periods_wall),
            "timer_fires_dropped": timer_fires_dropped,
            "periods_ms": [round(float(p) * 1000, 3) for p in np.asarray(self.periods)],
            "periods_wall_ms": [round(float(p) * 1000, 3) for p in np.asarray(self.periods_wall)],
            "period_ticks": [int(k) for k in np.asarray(self.period_ticks)],
            "inference_ms": summary_ms(self.inference_s),
            "backbone_ms": summary_ms(self.backbone_s),
            "callbacks_ms": {
                "lowstate_take_decode": summary_ms(self.state_decode_s),
                "backbone": summary_ms(self.backbone_s),
                "step": summary_ms(self.inference_s),
                "tick": summary_ms(self.tick_s),
            },
            "cpu": self.cpu.report(sim_now_s),
            "state_age_ms": summary_ms(self.state_ages),
            "deadline_misses": self.deadline_misses,
            "nonfinite_ticks": self.nonfinite_ticks,
            "depth": {
                "age_ms": summary_ms(self.depth_ages),
                "fps": round(self.depth_rate.fps, 3),
                "frames": self.depth_rate.frames,
                "rejected": self.depth_rejected,
                "superseded": gate.superseded,
                "latency_emulated": gate.latency_s is not None,
            },
            "swaps": swaps,
            "faults_injected": faults_injected,
        }
