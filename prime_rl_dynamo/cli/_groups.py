"""A subcommand that only groups actions (``report diff``, ``spec diff``): alone, it prints its help.

``prime-rl-dynamo report`` without an action prints the group's help on stderr and exits 2, the
usage exit of every command.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_group"]

EXIT_USAGE = 2


def add_group(
    subparsers: Any, name: str, *, help: str, description: str, dest: str, metavar: str
) -> Any:
    """Register the group ``name`` and return its action subparsers (``add_parser`` each action).

    The group's own default ``func`` prints its help on stderr and returns 2; an action's
    ``set_defaults(func=...)`` takes its place."""
    parser = subparsers.add_parser(name, help=help, description=description)
    actions = parser.add_subparsers(dest=dest, metavar=metavar)
    parser.set_defaults(func=lambda _args: _usage(parser))
    return actions


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE
