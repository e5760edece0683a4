"""The ``parkour`` command line: one subcommand per job, one module per subcommand.

The runtime's verbs live in ``parkour_bringup.commands``. Other installed packages add verbs
through the ``parkour.commands`` entry-point group (the training workspace adds ``train``, ``eval``
and ``mm``), the way ros2cli finds its verbs: the runtime never imports them.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from types import ModuleType

from parkour_bringup.commands import bag_cmd, config_cmd, faults_cmd, model_cmd, robot_cmd, sim_cmd, sim_to_sim_cmd
from parkour_core.ros_process import take_signals

ENTRY_POINT_GROUP = "parkour.commands"

RUNTIME_COMMANDS: dict[str, ModuleType] = {
    "sim": sim_cmd,
    "robot": robot_cmd,
    "model": model_cmd,
    "config": config_cmd,
    "faults": faults_cmd,
    "bag": bag_cmd,
    "sim-to-sim": sim_to_sim_cmd,
}

# Verbs the training workspace registers: named here only to say where they come from when they
# are missing (a robot-only install, `scripts/setup.sh --robot`).
WORKSPACE_COMMANDS = ("mm", "eval", "train")


class CommandError(Exception):
    """A failure to report as one line and a non-zero exit."""


def installed_commands() -> tuple[dict[str, ModuleType], dict[str, str]]:
    """The runtime's verbs, then every verb an installed package registers, by name; and the
    registered verbs whose module failed to import, with the reason (they fail alone, when used)."""
    commands = dict(RUNTIME_COMMANDS)
    broken: dict[str, str] = {}
    for entry in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if entry.name in commands:  # the first one stays; say which one lost
            print(f"parkour: warning: {entry.value} also registers `parkour {entry.name}`; using "
                  f"{commands[entry.name].__name__}", file=sys.stderr)  # fmt: skip
            continue
        try:
            commands[entry.name] = entry.load()
        except ImportError as e:
            broken[entry.name] = (
                f"{entry.value} (package {entry.dist.name if entry.dist else '?'}) does not import: {e}"
            )
    return commands, broken


def main(argv: list[str] | None = None) -> int:
    as_program = argv is None  # not called in-process (by a test): the signals are ours to take
    argv = sys.argv[1:] if argv is None else argv
    commands, broken = installed_commands()
    verb = argv[0] if argv else ""
    if verb in broken:
        print(f"parkour {verb}: error: {broken[verb]}", file=sys.stderr)
        return 2
    if verb in WORKSPACE_COMMANDS and verb not in commands:
        print(f"parkour {verb}: error: this verb comes from the training workspace (training/, package "
              "parkour-training), which is not installed here; `make setup` installs it (a robot-only setup, "
              "scripts/setup.sh --robot, leaves it out)", file=sys.stderr)  # fmt: skip
        return 2
    parser = argparse.ArgumentParser(prog="parkour", description="Perceptive humanoid parkour stack")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in commands.items():
        command = sub.add_parser(
            name, help=module.HELP, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        module.add_parser(command)
    args = parser.parse_args(argv)
    # SIGTERM, SIGHUP and an inherited-ignored SIGINT all reach the verb as KeyboardInterrupt, so a
    # graph it started is stopped (and its metrics written), not left running.
    if as_program:
        take_signals()
    try:
        return int(commands[args.command].run(args))
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # one line, not a traceback, for every expected failure
        print(f"parkour {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
