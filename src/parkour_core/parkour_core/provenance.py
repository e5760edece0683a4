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


def _git(args: list[str], root: Path | None) -> str | None:
    try:
        where = root if root is not None else repo_root()
        done = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError, FileNotFoundError):
        return None
    return done.stdout if done.returncode == 0 else None


def changed_files(root: Path | None = None) -> list[str]:
    """Tracked files that differ from HEAD (what ``-dirty`` is about)."""
    status = _git(["status", "--porcelain", "--untracked-files=no"], root) or ""
    return [line[3:] for line in status.splitlines() if line.strip()]


def git_commit(root: Path | None = None) -> str:
    """HEAD of the checkout, with ``-dirty`` when tracked files differ from it; ``unknown`` outside git."""
    head = _git(["rev-parse", "HEAD"], root)
    if head is None:
        return "unknown"
    return head.strip() + ("-dirty" if changed_files(root) else "")


def command_line(argv: list[str] | None = None) -> str:
    """The command as a person would type it again (``parkour ...`` for the CLI's entry point)."""
    args = list(sys.argv if argv is None else argv)
    if args and Path(args[0]).name in ("parkour", "cli.py"):
        args[0] = "parkour"
    return shlex.join(args)


def provenance(command: str | None = None) -> dict[str, Any]:
    """``command``, ``git_commit``, ``date`` (UTC) and the machine, for the top of a result file."""
    commit = git_commit()
    return {
        "command": command if command is not None else command_line(),
        "git_commit": commit,
        **({"changed_files": changed_files()[:50]} if commit.endswith("-dirty") else {}),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
    }
