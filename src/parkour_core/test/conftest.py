"""Shared fixtures for parkour_core tests: the repository root and copies of the real g1_walk bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def g1_walk_dir(repo_root: Path) -> Path:
    path = repo_root / "models" / "g1_walk"
    if not (path / "manifest.json").is_file():
        pytest.fail(f"{path} is missing: build it with `python -m parkour_core.bundles.holosoma_walk --out {path}`")
    return path


@pytest.fixture
def bundle_copy(g1_walk_dir: Path, tmp_path: Path) -> Path:
    """A private copy of models/g1_walk that a test may break."""
    dst = tmp_path / "g1_walk"
    shutil.copytree(g1_walk_dir, dst)
    return dst
