"""The ``parkour`` command line: one subcommand per job, one module per subcommand."""

from __future__ import annotations

import argparse
import sys

from parkour_bringup.commands import (
    bag_cmd,
    config_cmd,
    eval_cmd,
    faults_cmd,
    mm_cmd,
    model_cmd,
    robot_cmd,
    sim_cmd,
    train_cmd,
)

COMMANDS = {
    "sim": sim_cmd,
    "robot": robot_cmd,
    "model": model_cmd,
    "config": config_cmd,
    "faults": faults_cmd,
    "bag": bag_cmd,
    "mm": mm_cmd,
    "eval": eval_cmd,
    "train": train_cmd,
}


class CommandError(Exception):
    """A failure to report as one line and a non-zero exit."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="parkour", description="Perceptive humanoid parkour stack")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        command = sub.add_parser(
            name, help=module.HELP, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        module.add_parser(command)
    args = parser.parse_args(argv)
    try:
        return int(COMMANDS[args.command].run(args))
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # one line, not a traceback, for every expected failure
        print(f"parkour {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
