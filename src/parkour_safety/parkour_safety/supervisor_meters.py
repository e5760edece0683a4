"""The supervisor node's own measurements: what it wrote, how long its ticks took, the ages of what it used.

Free of ROS: the node counts and times into :class:`SupervisorMeters` and writes :meth:`SupervisorMeters.report`
into supervisor.json beside the core's report. The end-to-end latency is measured here: from the exposure
of the depth frame behind the written targets (the policy's tick inputs name it) to the lowcmd write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parkour_core.safety import Mode
from parkour_core.stats import CpuMeter, Samples, histogram_ms, summary_ms

TICKS_REMEMBERED = 50  # policy ticks whose depth frame is remembered (1 s at 50 Hz)


class RecentTicks:
    """The depth frame behind each of the newest policy ticks: tick stamp (ns) -> the frame's exposure (s)."""

    def __init__(self, kept: int = TICKS_REMEMBERED) -> None:
        self.kept = kept
        self._exposure: dict[int, float] = {}

    def remember(self, tick_ns: int, exposure_s: float) -> None:
        self._exposure[tick_ns] = exposure_s
        while len(self._exposure) > self.kept:
            del self._exposure[next(iter(self._exposure))]

    def exposure(self, tick_ns: int) -> float | None:
        return self._exposure.get(tick_ns)


@dataclass
class SupervisorMeters:
    commands_written: int = 0
    commands_dry_run: int = 0
    targets_rejected: int = 0
    announcements_rejected: int = 0
    lowstate_waits: int = 0  # sim-time ticks that waited for their lowstate (and found it)
    target_waits: int = 0  # sim-time ticks that waited for their policy tick's targets (and had them)
    target_waits_gave_up: int = 0
    tick_wall: Samples = field(default_factory=Samples)
    tick_compute: Samples = field(default_factory=Samples)  # the whole tick: read, decide, write
    lowstate_decode: Samples = field(default_factory=Samples)  # take + decode of the newest rt/lowstate
    core_tick: Samples = field(default_factory=Samples)  # SupervisorCore.tick: rules, fallback gait, clamp
    lowcmd_encode: Samples = field(default_factory=Samples)  # encode + CRC + write of rt/lowcmd
    lowstate_ages: Samples = field(default_factory=Samples)
    target_ages: Samples = field(default_factory=Samples)
    depth_ages: Samples = field(default_factory=Samples)
    exposure_to_lowcmd: Samples = field(default_factory=Samples)  # ACTIVE: now - exposure behind the targets
    # The same at the first write whose targets used a new frame: the stack's own latency. Per write it
    # also counts how long a frame stays the newest (33 ms at 30 Hz) and the policy period (20 ms).
    exposure_to_first_lowcmd: Samples = field(default_factory=Samples)
    depth_behind_tick: RecentTicks = field(default_factory=RecentTicks)
    cpu: CpuMeter = field(default_factory=CpuMeter)
    _last_written_exposure: float | None = None
    _last_tick_wall: float | None = None

    def tick_started(self, wall: float) -> None:
        if self._last_tick_wall is not None:
            self.tick_wall.append(wall - self._last_tick_wall)
        self._last_tick_wall = wall

    def tick_done(
        self,
        mode: Mode,
        now: float,
        lowstate_t: float,
        targets_stamp_s: float | None,
        targets_stamp_ns: int,
        depth_stamp_s: float | None,
    ) -> None:
        """The ages at a tick that ran the core (``mode``: the one it left the robot in)."""
        if mode is not Mode.DAMP:  # while it commands the robot: not before, nor once its peer has gone
            self.lowstate_ages.append(now - lowstate_t)
        if mode is Mode.ACTIVE and targets_stamp_s is not None:
            self.target_ages.append(now - targets_stamp_s)
            exposure = self.depth_behind_tick.exposure(targets_stamp_ns)
            if exposure is not None:
                self.exposure_to_lowcmd.append(now - exposure)
                if exposure != self._last_written_exposure:
                    self._last_written_exposure = exposure
                    self.exposure_to_first_lowcmd.append(now - exposure)
        if depth_stamp_s is not None:
            self.depth_ages.append(now - depth_stamp_s)

    def report(
        self, writes_lowcmd: bool, timer_fires_dropped: int, fallback_step_s: list[float], sim_now_s: float | None
    ) -> dict[str, Any]:
        """supervisor.json's node part (the core's report goes before it)."""
        return {
            "commands_written": self.commands_written,
            "commands_dry_run": self.commands_dry_run,
            "writes_lowcmd": writes_lowcmd,
            "targets_rejected": self.targets_rejected,
            "announcements_rejected": self.announcements_rejected,
            "tick_period_wall_ms": summary_ms(self.tick_wall),
            "timer_fires_dropped": timer_fires_dropped,
            "lowstate_waits_sim_time": self.lowstate_waits,
            "target_waits_sim_time": self.target_waits,
            "target_waits_gave_up_sim_time": self.target_waits_gave_up,
            "tick_period_wall_hist": histogram_ms(self.tick_wall),
            "tick_compute_wall_ms": summary_ms(self.tick_compute),
            "callbacks_ms": {
                "lowstate_take_decode": summary_ms(self.lowstate_decode),
                "core_tick": summary_ms(self.core_tick),
                "lowcmd_encode_crc_write": summary_ms(self.lowcmd_encode),
                "tick": summary_ms(self.tick_compute),
            },
            "cpu": self.cpu.report(sim_now_s),
            "fallback_step_wall_ms": summary_ms(fallback_step_s),
            "lowstate_age_ms": summary_ms(self.lowstate_ages),
            "target_age_ms": summary_ms(self.target_ages),
            "depth_age_ms": summary_ms(self.depth_ages),
            "depth_exposure_to_lowcmd_ms": summary_ms(self.exposure_to_lowcmd),
            "depth_exposure_to_first_lowcmd_ms": summary_ms(self.exposure_to_first_lowcmd),
        }
