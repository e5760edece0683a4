"""The robot configs' safety bounds are pinned: loosening one past what a reviewer approved fails here.

Each entry is a bound as the robot runs it (the config as loaded, so a bound left to its default is
pinned too), the approved value and the direction that is safer. Tightening passes; loosening fails
with the key, the value and the approved one. To loosen a bound, change the approved value here, in
review, with the reason in the commit.
"""

from __future__ import annotations

import operator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from parkour_core.config import StackConfig, load_config

AT_MOST, AT_LEAST = "at most", "at least"

# (section.key, approved value, safer direction): the same for both robots but the damping gain.
COMMON: tuple[tuple[str, float, str], ...] = (
    ("supervisor.lowstate_timeout_s", 0.05, AT_MOST),
    ("supervisor.target_timeout_s", 0.1, AT_MOST),
    ("supervisor.max_tilt_rad", 0.8, AT_MOST),
    ("supervisor.joint_margin_rad", 0.02, AT_LEAST),
    ("supervisor.target_limit_tolerance_rad", 0.5, AT_MOST),
    ("supervisor.joint_limit_tolerance_rad", 0.1, AT_MOST),
    ("supervisor.velocity_limit_factor", 1.5, AT_MOST),
    ("supervisor.gamepad_timeout_s", 0.5, AT_MOST),
    ("policy.command_timeout_s", 0.5, AT_MOST),
    ("depth.stale_after_s", 0.25, AT_MOST),
    ("teleop.command_timeout_s", 0.5, AT_MOST),
    ("teleop.max_vx_mps", 0.8, AT_MOST),
    ("teleop.max_vy_mps", 0.5, AT_MOST),
    ("teleop.max_yaw_rate_rps", 1.0, AT_MOST),
)
APPROVED: dict[str, tuple[tuple[str, float, str], ...]] = {
    "g1_robot.yaml": (*COMMON, ("supervisor.kd_damp", 3.0, AT_LEAST)),
    "h1_robot.yaml": (*COMMON, ("supervisor.kd_damp", 8.0, AT_LEAST)),  # the H1 deployers' damping
}
# Inputs that must stay wired: an e-stop that no button triggers is no e-stop.
ESTOPS = ("supervisor.remote_estop_keys", "supervisor.gamepad_estop_buttons")


def value(cfg: StackConfig, dotted: str) -> Any:
    section, key = dotted.split(".")
    return getattr(getattr(cfg, section), key)


def loosened(cfg: StackConfig, pins: tuple[tuple[str, float, str], ...]) -> list[str]:
    """One line per bound looser than approved."""
    safer = {AT_MOST: operator.le, AT_LEAST: operator.ge}
    out = []
    for dotted, approved, direction in pins:
        got = value(cfg, dotted)
        if not safer[direction](got, approved):
            out.append(f"{dotted} is {got}, approved {direction} {approved}")
    out += [f"{dotted} is empty: the e-stop must stay wired" for dotted in ESTOPS if not value(cfg, dotted)]
    return out


@pytest.mark.parametrize("name", sorted(APPROVED))
def test_robot_config_keeps_its_approved_safety_bounds(repo_root: Path, name: str) -> None:
    cfg = load_config(repo_root / "config" / name)
    assert cfg.mode == "robot"
    assert loosened(cfg, APPROVED[name]) == []


@pytest.mark.parametrize("name", sorted(APPROVED))
def test_loosening_any_pinned_bound_is_caught(repo_root: Path, name: str) -> None:
    """Each pin can fail: the config with that one bound loosened by 10 % (or emptied) is reported by name."""
    cfg = load_config(repo_root / "config" / name)
    for dotted, approved, direction in APPROVED[name]:
        section, key = dotted.split(".")
        looser = approved * (1.1 if direction == AT_MOST else 0.9)
        broken = replace(cfg, **{section: replace(getattr(cfg, section), **{key: looser})})
        assert loosened(broken, APPROVED[name]) == [f"{dotted} is {looser}, approved {direction} {approved}"]
    for dotted in ESTOPS:
        section, key = dotted.split(".")
        broken = replace(cfg, **{section: replace(getattr(cfg, section), **{key: []})})
        assert loosened(broken, APPROVED[name]) == [f"{dotted} is empty: the e-stop must stay wired"]


def test_every_robot_config_is_pinned(repo_root: Path) -> None:
    robot_configs = sorted(p.name for p in (repo_root / "config").glob("*_robot.yaml"))
    assert robot_configs == sorted(APPROVED)
