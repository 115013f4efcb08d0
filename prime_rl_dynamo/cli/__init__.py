"""The ``prime-rl-dynamo`` command: a thin layer over the library.

Each subcommand lives in its own module here, exposing ``add_parser(subparsers)`` that registers
its arguments and sets ``func(args) -> int``. Heavy imports happen inside ``func`` so that
``--help`` stays fast and works without the optional extras.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from prime_rl_dynamo.cli.output import PROGRAM, complain
from prime_rl_dynamo.errors import ConfigError, PrimeRLDynamoError
from prime_rl_dynamo.exitcodes import ExitCode

#: Subcommand modules, in the order --help lists them.
SUBCOMMANDS = (
    "validate",
    "plan",
    "discover",
    "serve",
    "dynamo",
    "conformance",
    "report",
    "schema",
    "spec",
)

# Which extra brings a module that a subcommand imports when it runs.
_EXTRA_OF = {
    "uvicorn": "reference",
    "starlette": "reference",
    "yaml": "reference",
    "rich": "conformance",
    "hypothesis": "conformance",
    "schemathesis": "conformance",
    "pytest": "conformance",
    "dynamo": "dynamo",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    from prime_rl_dynamo.cli._parser import Parser

    parser = Parser(
        prog="prime-rl-dynamo",
        description="The Dynamo <-> Prime-RL discovery contract: validate, plan, discover, "
        "serve a reference fleet, run real Dynamo, check conformance.",
    )
    from prime_rl_dynamo import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"prime_rl_dynamo.cli.{name}").add_parser(subparsers)
    _name_commands(parser)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    # Every (sub)command parser's default ``command_name`` is its words after the program
    # ("dynamo up"), so the one complaint of _main names the command the user typed.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(command_name=sub.prog.removeprefix(PROGRAM).strip())
                _name_commands(sub)


def exit_code(exc: PrimeRLDynamoError) -> ExitCode:
    """The one mapping from an error to a command's exit status: what the user gave cannot be used
    (``ConfigError``: a bad option, file, topology or URL) is a usage error, 2, the status argparse
    gives a bad option; every other refusal or failure is 1."""
    return ExitCode.USAGE if isinstance(exc, ConfigError) else ExitCode.FAIL


def refusal_lines(args: argparse.Namespace, exc: PrimeRLDynamoError) -> list[str]:
    """What a command says of an error that ends it, one ``complain`` line each: a ``ConfigError``'s
    message as it is; any other through the command's ``refusal`` default (``set_defaults``; it
    takes the arguments and the error), or its message when the command sets none."""
    explain = getattr(args, "refusal", None)
    if explain is None or isinstance(exc, ConfigError):
        return [str(exc)]
    lines: list[str] = explain(args, exc)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    return run_guarded(lambda: _main(argv))


def run_guarded(body: Callable[[], int]) -> int:
    """``body()``'s exit code, the way every command ends: a reader that went away (``| head``) is
    no error (141, nothing printed), and argparse's exits still flush first."""
    try:
        code = body()
        sys.stdout.flush()  # inside the guard: a closed pipe surfaces here, not at shutdown
        return code
    except BrokenPipeError:
        _silence_closed_streams()
        return ExitCode.PIPE
    except SystemExit as exc:  # argparse's --help and usage errors
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_closed_streams()
            return ExitCode.PIPE
        raise exc


def _silence_closed_streams() -> None:
    # Point the closed stream(s) at /dev/null so that the interpreter's final flush does not
    # print "Exception ignored ... BrokenPipeError" after we already returned.
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            with contextlib.suppress(OSError, ValueError):
                os.dup2(devnull, stream.fileno())
        except OSError:
            pass
    os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except PrimeRLDynamoError as exc:
        for line in refusal_lines(args, exc):
            complain(args.command_name, line)
        return exit_code(exc)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        extra = _EXTRA_OF.get(top)
        if extra is None:
            raise
        complain(
            args.command_name,
            f"needs the '{extra}' extra (module {top!r} is not installed): pip install "
            f"'prime-rl-dynamo[{extra}]' (from a checkout: pip install -e '.[{extra}]')",
        )
        return ExitCode.USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
