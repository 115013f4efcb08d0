"""The argument parser every ``prime-rl-dynamo`` command uses: no abbreviations, short errors.

argparse's defaults hurt an operator in three ways: ``--junit`` is silently taken for
``--junit-xml`` (an abbreviation), an unknown option is reported with the *top-level* usage, and
a bad value (``--seed abc``) dumps a usage of twenty lines. ``Parser`` turns abbreviations off,
reports an unknown option on the subcommand it was given to with the nearest known spelling
("did you mean --junit-xml?"), and answers every usage error with two lines: what was wrong and
where the help is. Exit status 2 (usage), as argparse's.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from prime_rl_dynamo.exitcodes import ExitCode

__all__ = ["Parser", "suggestion"]

_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)")
#: Commands that are not the installed package's, with where they are.
_ELSEWHERE = {
    "bench": "; the benchmarks are not installed with the package: from a checkout of the "
    "repository, python -m tools.bench (--only validation, ...; docs/bench.md)",
}


def suggestion(given: str, known: Sequence[str]) -> str:
    """``"; did you mean X?"`` for the nearest of ``known`` to ``given`` ('' when none is near)."""
    close = difflib.get_close_matches(given, list(known), n=1, cutoff=0.6)
    if not close:
        return ""
    return f"; did you mean {close[0]}?"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser without abbreviations whose errors are short and name the command."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Two lines on stderr: the command and what was wrong; where its help is. Exit 2."""
        match = _CHOICE.search(message)
        if match:
            choices = re.findall(r"'([^']*)'", match["choices"])
            message += _ELSEWHERE.get(match["given"]) or suggestion(match["given"], choices)
        sys.stderr.write(f"{self.prog}: error: {message}\n  (see {self.prog} --help)\n")
        sys.exit(ExitCode.USAGE)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's, but unknown arguments are reported by the subcommand they were given
        to, with the nearest option it knows."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = self._innermost(parsed)
            first = extras[0].split("=", 1)[0]
            known = [s for a in owner._actions for s in a.option_strings]
            hint = suggestion(first, known) if first.startswith("-") else ""
            owner.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed

    def _innermost(self, parsed: argparse.Namespace) -> Parser:
        """The (sub)parser that parsed the last subcommand named in ``parsed``."""
        parser: Parser = self
        while True:
            action = next(
                (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None
            )
            chosen = getattr(parsed, action.dest, None) if action is not None else None
            if action is None or chosen not in action.choices:
                return parser
            parser = action.choices[chosen]
