"""``param``: a config field with its bounds, choices and doc line, declared once where the field is."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def param(default: Any, lo: float | None = None, hi: float | None = None, choices: tuple = (), doc: str = "") -> Any:
    """A field with the metadata ``parkour_core.config.parse`` checks (range, choices) and a doc line."""
    meta = {"lo": lo, "hi": hi, "choices": choices, "doc": doc}
    if isinstance(default, list | dict):
        return field(default_factory=lambda: default.copy(), metadata=meta)
    return field(default=default, metadata=meta)
