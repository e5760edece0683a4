"""Where a result came from: the command, the commit of this checkout, when, and on what machine.

Every result file the stack writes (faults.json, eval.json, bench/results/*.json, bag metadata,
bundle manifests) carries these, so each published number can be traced to a command and a commit.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from parkour_core.paths import repo_root


def git_commit(root: Path | None = None) -> str:
    """HEAD of the checkout, with ``-dirty`` when tracked files differ from it; ``unknown`` outside git."""
    try:
        where = root if root is not None else repo_root()
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=10)  # fmt: skip
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError, FileNotFoundError):
        return "unknown"


def command_line(argv: list[str] | None = None) -> str:
    """The command as a person would type it again (``parkour ...`` for the CLI's entry point)."""
    args = list(sys.argv if argv is None else argv)
    if args and Path(args[0]).name in ("parkour", "cli.py"):
        args[0] = "parkour"
    return shlex.join(args)


def provenance(command: str | None = None) -> dict[str, Any]:
    """``command``, ``git_commit``, ``date`` (UTC) and the machine, for the top of a result file."""
    return {
        "command": command if command is not None else command_line(),
        "git_commit": git_commit(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
    }
