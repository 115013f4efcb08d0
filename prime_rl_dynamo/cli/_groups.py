"""Registering a subcommand: its help is its module's docstring; a group alone prints its help.

A command module starts with ``"``prime-rl-dynamo NAME ...``: what it does."`` and a paragraph or
two: that first line (after the colon) is the one-line help of the command list, the rest is the
description of ``NAME --help``, so one text tells a reader of the code and a user the same thing.
``prime-rl-dynamo report`` without an action prints the group's help on stderr and exits 2, the
usage exit of every command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode

__all__ = ["add_command", "add_group", "command_help"]


def command_help(doc: str | None) -> tuple[str, str]:
    """The one-line help and the description a command module's docstring gives.

    ``"``prime-rl-dynamo plan FILE``: print a rank plan.\\n\\nMore."`` gives ``("print a rank
    plan", "More.")``: reST literals lose their backquotes, each paragraph becomes one line.
    Where docstrings are stripped (``python -OO``) both are empty."""
    if doc is None:
        return "", ""
    if ": " not in doc.split("\n", 1)[0]:
        raise ValueError("a command module's docstring starts with '``prime-rl-dynamo ...``: help'")
    first, _, rest = doc.strip().partition("\n")
    summary = first.split(": ", 1)[1].strip().rstrip(".")
    paragraphs = [" ".join(p.split()) for p in rest.split("\n\n") if p.strip()]
    return summary, "\n\n".join(paragraphs).replace("``", "")


def add_command(
    subparsers: Any, name: str, doc: str | None, run: Callable[[argparse.Namespace], int], **kw: Any
) -> argparse.ArgumentParser:
    """Register ``name`` with the help of ``doc`` (see ``command_help``) and ``run`` as its func;
    ``kw`` goes to ``add_parser`` (a formatter, an epilog)."""
    summary, description = command_help(doc)
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=summary, description=description, **kw
    )
    parser.set_defaults(func=run)
    return parser


def add_group(subparsers: Any, name: str, help: str, description: str | None = None) -> Any:
    """Register the group ``name`` and return its action subparsers (``add_command`` each action).

    ``description`` defaults to ``help`` as a sentence. The group's own default ``func`` prints
    its help on stderr and returns 2; an action's ``func`` takes its place."""
    if description is None:
        description = f"{help[:1].upper()}{help[1:]}."
    parser = subparsers.add_parser(name, help=help, description=description)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    parser.set_defaults(func=lambda _args: _usage(parser))
    return actions


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return ExitCode.USAGE
