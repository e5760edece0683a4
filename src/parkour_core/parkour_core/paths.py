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


def config_dir() -> Path:
    return repo_root() / "config"


def models_dir() -> Path:
    return repo_root() / "models"


def scenes_dir() -> Path:
    return repo_root() / "sim" / "scenes"
