"""README.md is the project's front page: short, and every path it names exists.

The documentation site under docs/ holds the rest; `mkdocs build --strict` (in `make test`) checks the
site's own links and that every page is in its navigation."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
FRONT_PAGE_MAX_BYTES = 12 * 1024
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")  # markdown links and images: ](target) or ](target#anchor)


def test_readme_is_a_front_page():
    size = len(README.read_bytes())
    assert size <= FRONT_PAGE_MAX_BYTES, f"README.md is {size} bytes: move detail to a docs/ page"


def test_every_local_link_of_the_readme_resolves():
    targets = [t for t in LINK.findall(README.read_text()) if not re.match(r"[a-z]+://", t)]
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
