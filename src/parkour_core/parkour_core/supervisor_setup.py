"""Building the supervisor's core from a config, as the supervisor node does: startup checks that
load files (the fallback gait, the policy bundle's gains), kept apart from the rules they feed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parkour_core.supervisor_core import BundleGains, RunnerGait, SupervisorCore, SupervisorSettings

if TYPE_CHECKING:
    from parkour_core.config import StackConfig


class StartupError(RuntimeError):
    """The supervisor must not start; the message says why and what to do."""


def build_core(cfg: StackConfig) -> SupervisorCore:
    """The core as the supervisor node builds it: its fallback gait (loaded and verified) and the
    configured bundle's gains (for targets that do not name their bundle). Evaluation builds it the
    same way, so trials run the robot's own rules."""
    from parkour_core.bundle import BundleError, read_manifest
    from parkour_core.bundles import resolve_bundle
    from parkour_core.robots import get_robot

    spec = get_robot(cfg.robot)
    s = cfg.supervisor
    fallback = None
    if s.fallback == "blind":
        try:
            fallback = RunnerGait.load(resolve_bundle(s.fallback_bundle), spec)
        except (BundleError, ValueError) as e:
            raise StartupError(
                f"the fallback gait (supervisor.fallback_bundle {s.fallback_bundle!r}) cannot run: {e}. "
                "Fix the bundle, or set supervisor.fallback: stand"
            ) from None
    default_gains = None  # policy.bundle '' (no policy for this robot): only announced bundles drive
    try:
        if cfg.policy.bundle:
            manifest = read_manifest(resolve_bundle(cfg.policy.bundle))
            default_gains = BundleGains.make("", manifest.kp, manifest.kd, manifest.uses_depth, spec.num_joints)
    except (BundleError, ValueError) as e:
        raise StartupError(f"policy.bundle {cfg.policy.bundle!r}: {e}") from None
    settings = SupervisorSettings.from_config(cfg, fallback_available=fallback is not None)
    return SupervisorCore(spec, settings, fallback=fallback, default_gains=default_gains)
