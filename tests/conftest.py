"""Fixtures shared by the repository-level tests."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_script():
    """Import a script that is not in a package (bench/summary.py, scripts/doc_tables.py) as a module."""
    return _load
