"""Terminal output of the commands: a rich console that honours COLUMNS and survives a closed pipe,
and the one way a command complains on stderr (``prime-rl-dynamo COMMAND: message``).

``prime-rl-dynamo conformance URL --junit-xml r.xml | head`` must still write its reports: once the
reader has gone, output is dropped (not an exit), and the command ends with its own verdict.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["PROGRAM", "complain", "make_console"]

#: The console script's name, the first word of every complaint.
PROGRAM = "prime-rl-dynamo"

#: Width of a console that is not a terminal and has no COLUMNS: wide enough for URLs and IDs.
DEFAULT_WIDTH = 160


def make_console(*, stderr: bool = False, default_width: int = DEFAULT_WIDTH) -> Any:
    """A rich Console on stdout (or stderr): the terminal's width on a terminal, else ``COLUMNS``
    or ``default_width``."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's default raises SystemExit(1), which would skip writing the reports.
            self.quiet = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.file.fileno())
            finally:
                os.close(devnull)

    stream = sys.stderr if stderr else sys.stdout
    width: int | None = None
    if not stream.isatty():
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else default_width
    return _Console(stderr=stderr, width=width)


def complain(command: str, message: str) -> None:
    """Say on stderr what went wrong, prefixed the one way every command is: ``prime-rl-dynamo
    COMMAND: message`` (``command`` is the words after the program: ``discover``, ``dynamo up``)."""
    from prime_rl_dynamo.escaping import for_terminal

    # A message may quote what a target sent: escaped for the terminal here, for every command.
    print(f"{PROGRAM} {command}: {for_terminal(message)}", file=sys.stderr)
