"""``prime-rl-dynamo schema list`` / ``schema path NAME``: list the bundled contract files (JSON Schemas, OpenAPI, vectors) or print a path.

For tools that want a file path (``schemathesis run "$(prime-rl-dynamo schema path rl-frontend)"``,
a Rust test reading the vectors): the same files the validator loads, from the checkout or the
installed wheel. 'list' names every file; 'path NAME' prints one file's absolute path, where NAME
is a relative name (``openapi/rl-frontend.openapi.json``), a file name
(``rl-frontend.openapi.json``), a short name (``rl-frontend``) or a directory (``openapi``,
``.``). Exit 0, or 2 for an unknown NAME.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path
from typing import Any

from prime_rl_dynamo.cli._groups import add_group, command_help
from prime_rl_dynamo.cli.output import complain
from prime_rl_dynamo.exitcodes import ExitCode

_SUFFIXES = (".openapi.json", ".v1.schema.json", ".schema.json", ".v1.json", ".json", ".md")


def add_parser(subparsers: Any) -> None:
    """Register ``schema`` with its ``list`` and ``path`` actions."""
    actions = add_group(subparsers, "schema", *command_help(__doc__))
    listing = actions.add_parser("list", help="every bundled file, one relative name a line")
    listing.add_argument("--paths", action="store_true", help="print absolute paths instead")
    listing.set_defaults(func=run)
    path = actions.add_parser("path", help="the absolute path of one bundled file")
    path.add_argument("name", metavar="NAME", help="e.g. rl-frontend, rl-workers, discovery")
    path.set_defaults(func=run)


def bundled_names() -> list[str]:
    """Every file of the bundled contract, as a POSIX path relative to its directory."""
    from prime_rl_dynamo.resources import schema_dir

    root = schema_dir()
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def _short(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    for suffix in _SUFFIXES:
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def _stem(name: str) -> str:
    """The file name without its schema suffix: ``rl-workers.v1.schema.json`` -> ``rl-workers.v1``."""
    base = name.rsplit("/", 1)[-1]
    for suffix in (".openapi.json", ".schema.json", ".json", ".md"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def resolve(name: str) -> Path:
    """The bundled file NAME refers to; LookupError (with close names) when none or several do."""
    from prime_rl_dynamo.resources import schema_dir

    names = bundled_names()
    wanted = name.strip().strip("/")
    root = schema_dir().resolve()
    inside = (root / wanted).resolve()
    if inside != root and root not in inside.parents:  # "..", "openapi/../..": outside
        raise LookupError(
            f"expected the name of a bundled contract file or directory; found {name!r}, which "
            "points outside the contract (prime-rl-dynamo schema list shows the names)"
        )
    if wanted in ("", ".") or (schema_dir() / wanted).is_dir():
        return schema_dir() / wanted  # the contract directory itself, or openapi/, vectors/
    matches = [n for n in names if n == wanted]
    matches = matches or [n for n in names if n.rsplit("/", 1)[-1] == wanted]
    matches = matches or [n for n in names if _short(n) == wanted]
    matches = matches or [n for n in names if _stem(n) == wanted]  # rl-workers.v1
    if len(matches) > 1:
        # A short name means the working contract, not its frozen copy (frozen/v1/...), which
        # stays reachable by its relative name.
        working = [n for n in matches if not n.startswith("frozen/")]
        matches = working if len(working) == 1 else matches
    if len(matches) == 1:
        return schema_dir() / matches[0]
    if matches:
        raise LookupError(f"{name!r} names several bundled files: {', '.join(matches)}")
    candidates = dict.fromkeys(names + [_short(n) for n in names] + [_stem(n) for n in names])
    close = difflib.get_close_matches(wanted, list(candidates), n=3)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise LookupError(
        f"no bundled contract file {name!r}{hint} (prime-rl-dynamo schema list shows them all)"
    )


def run(args: argparse.Namespace) -> int:
    """Print the listing or the path."""
    from prime_rl_dynamo.resources import schema_dir

    if args.action == "list":
        for name in bundled_names():
            print(schema_dir() / name if args.paths else name)
        return ExitCode.OK
    try:
        print(resolve(args.name))
    except LookupError as exc:
        complain("schema path", f"{exc.args[0]}")
        return ExitCode.USAGE
    return ExitCode.OK
