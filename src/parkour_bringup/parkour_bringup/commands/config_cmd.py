"""Check a stack config file, or list every parameter with its type, default and range."""

from __future__ import annotations

import argparse
from pathlib import Path

from parkour_core.config import describe, load_config

HELP = "check a config file or describe all parameters"


def add_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", type=Path, help="config YAML to check")
    p.add_argument("--describe", action="store_true", help="list every parameter")


def run(args: argparse.Namespace) -> int:
    if args.describe or args.file is None:
        print("\n".join(describe()))
    if args.file is not None:
        cfg = load_config(args.file)
        print(f"{args.file}: OK (robot {cfg.robot}, mode {cfg.mode})")
    return 0
