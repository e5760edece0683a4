"""Shared fixtures for parkour_core tests: the repository root and copies of the real g1_walk bundle."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

REPO_ROOT = Path(__file__).resolve().parents[3]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``PARKOUR_HYPOTHESIS_MAX_EXAMPLES=N`` caps every property test at N examples (the mutation run,
    bench/mutation/run.py, runs the tests once per mutant). Unset, each test keeps its own settings."""
    cap = os.environ.get("PARKOUR_HYPOTHESIS_MAX_EXAMPLES")
    if not cap:
        return
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)  # what @settings set on a @given test
        if test is not None and current is not None:
            test._hypothesis_internal_use_settings = settings(current, max_examples=min(current.max_examples, int(cap)))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def g1_walk_dir(repo_root: Path) -> Path:
    path = repo_root / "models" / "g1_walk"
    if not (path / "manifest.json").is_file():
        build = f"python -m parkour_core.bundles.importers holosoma ppo --out {path}"
        pytest.fail(f"{path} is missing: build it with `{build}`")
    return path


@pytest.fixture
def bundle_copy(g1_walk_dir: Path, tmp_path: Path) -> Path:
    """A private copy of models/g1_walk that a test may break."""
    dst = tmp_path / "g1_walk"
    shutil.copytree(g1_walk_dir, dst)
    return dst
