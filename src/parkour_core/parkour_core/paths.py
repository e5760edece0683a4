"""Where the repository's config, models and scenes live."""

from __future__ import annotations

import os
from pathlib import Path

_MARKER = "colcon.meta"


def repo_root() -> Path:
    """``PARKOUR_ROOT``, else the first parent of the cwd or of this file holding colcon.meta and config/."""
    env = os.environ.get("PARKOUR_ROOT")
    if env:
        return Path(env).resolve()
    for start in (Path.cwd(), Path(__file__).resolve()):
        for p in (start, *start.parents):
            if (p / _MARKER).is_file() and (p / "config").is_dir():
                return p
    raise FileNotFoundError("cannot find the parkour repository root; set PARKOUR_ROOT")


def shown_path(path: str | Path) -> str:
    """``path`` relative to the checkout where it lies inside it, else as given: a committed report or manifest
    names no home folder."""
    try:
        return str(Path(path).resolve().relative_to(repo_root()))
    except ValueError:
        return str(path)


def config_dir() -> Path:
    return repo_root() / "config"


def models_dir() -> Path:
    return repo_root() / "models"


def scenes_dir() -> Path:
    return repo_root() / "sim" / "scenes"
