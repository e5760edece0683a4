"""Break one supervisor rule in every Python process started with this folder on PYTHONPATH.

``PARKOUR_BREAK_RULE=<name>`` (one of BREAKS) removes a row of parkour_core.safety.TRANSITIONS or
slows its threshold in the settings the supervisor is built with; the config file, and with it the
fault suite's deadline, stays as it was. For bench/faults/broken_rules.py and the integration test
that shows `parkour faults` fails when a rule is broken; never for a robot.
"""

from __future__ import annotations

import dataclasses
import os


def _drop(reason: str):
    def apply() -> None:
        from parkour_core import safety

        safety.TRANSITIONS = tuple(row for row in safety.TRANSITIONS if row.reason != reason)

    return apply


def _slow(field: str, factor: float, in_limits: bool = True):
    def apply() -> None:
        from parkour_core import supervisor_core

        build = supervisor_core.SupervisorSettings.from_config

        def slowed(cfg, fallback_available):
            s = build(cfg, fallback_available)
            if in_limits:
                limits = dataclasses.replace(s.limits, **{field: getattr(s.limits, field) * factor})
                return dataclasses.replace(s, limits=limits)
            return dataclasses.replace(s, **{field: getattr(s, field) * factor})

        supervisor_core.SupervisorSettings.from_config = staticmethod(slowed)

    return apply


# name -> (the fault that must then fail, what is broken, how)
BREAKS = {
    "lowstate_timeout_removed": ("lowstate_stall", "the lowstate-stale rule removed", _drop("lowstate stale")),
    "lowstate_timeout_slowed": ("lowstate_stall", "lowstate_timeout_s x 1.5", _slow("lowstate_timeout_s", 1.5)),
    "depth_stale_slowed": ("camera_stall", "depth stale_after_s x 1.5", _slow("depth_timeout_s", 1.5)),
    "blind_resume_slowed": ("camera_stall", "blind_resume_after_s x 1.5", _slow("blind_resume_after_s", 1.5)),
    "target_timeout_slowed": ("policy_killed", "target_timeout_s x 1.5", _slow("target_timeout_s", 1.5)),
    "nan_targets_rule_removed": (
        "policy_nan",
        "the stale-or-NaN targets rule removed",
        _drop("policy targets stale or not finite"),
    ),
    "target_range_rule_removed": (
        "targets_beyond_limits",
        "the far-beyond-limits targets rule removed",
        _drop("policy targets far beyond joint limits"),
    ),
    "tilt_rule_removed": ("push_over", "the tilt (fall) rule removed", _drop("base tilt beyond limit (fall)")),
    "estop_service_removed": (
        "estop_at_speed",
        "the service e-stop rule removed",
        _drop("e-stop from the ROS service"),
    ),
    "gamepad_timeout_slowed": (
        "gamepad_lost",
        "gamepad_timeout_s x 1.5",
        _slow("gamepad_timeout_s", 1.5, in_limits=False),
    ),
}

_name = os.environ.get("PARKOUR_BREAK_RULE", "")
if _name:
    BREAKS[_name][2]()
