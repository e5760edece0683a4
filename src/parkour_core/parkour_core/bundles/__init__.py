"""Bundle registry (models/registry.yaml) and generators for bundles made at setup."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from parkour_core.bundle import Bundle, BundleError, load_bundle, read_manifest
from parkour_core.paths import models_dir

if TYPE_CHECKING:
    from parkour_core.robots import RobotSpec
    from parkour_core.runner import PolicyRunner


def registry() -> dict[str, dict]:
    path = models_dir() / "registry.yaml"
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise BundleError(f"{path} must map bundle names to entries")
    return data


def resolve_bundle(name_or_path: str) -> Path:
    """A registered bundle name (``g1_walk``) or a folder path."""
    entries = registry()
    if name_or_path in entries:
        return models_dir() / entries[name_or_path]["path"]
    path = Path(name_or_path)
    if path.exists():
        return path
    raise BundleError(
        f"{name_or_path!r} is neither a bundle folder nor a registered bundle "
        f"(registered: {', '.join(sorted(entries))})"
    )


def verify_bundle(name_or_path: str, robot: RobotSpec | None = None) -> tuple[Bundle, PolicyRunner]:
    """The bundle resolved and loaded as the policy node does (hashes, contract, ``robot``'s joints; default: the
    robot its manifest names), then run: ONNX I/O against the manifest and a warm-up with finite outputs.
    `parkour model verify` prints what this finds; `parkour sim` refuses a bundle with it before it starts a node.
    Raises :class:`BundleError` or ``ValueError`` saying what is wrong."""
    from parkour_core.runner import PolicyRunner  # onnxruntime: only where a bundle is run

    bundle = load_bundle(resolve_bundle(name_or_path), robot)
    return bundle, PolicyRunner(bundle)


def policy_period_s(name_or_path: str) -> float:
    """The period a bundle's policy ticks at (a swap keeps it: swap.py refuses another rate)."""
    return 1.0 / read_manifest(resolve_bundle(name_or_path)).policy_hz
