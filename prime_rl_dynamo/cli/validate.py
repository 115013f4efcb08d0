"""``prime-rl-dynamo validate [FILE|-] [--json]``: check one discovery body against the contract.

Prints every violation (requirement ID, JSON pointer, worker, message) or a one-line summary of
the valid snapshot. Exit 0 valid, 1 invalid (including text that is not JSON: BODY-1), 2 unreadable.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from prime_rl_dynamo._text import plural

EXIT_OK, EXIT_INVALID, EXIT_UNREADABLE = 0, 1, 2


def add_parser(subparsers: Any) -> None:
    """Register the ``validate`` subcommand."""
    parser = subparsers.add_parser(
        "validate",
        help="check a GET /v1/rl/workers body against the contract",
        description="Check a GET /v1/rl/workers body (protocol_version 1) against the bundled "
        "schema and the semantic rules. Exit 0 valid, 1 invalid, 2 unreadable input.",
    )
    parser.add_argument(
        "file",
        nargs="?",
        default="-",
        metavar="FILE",
        help="the body to check; - (default) reads stdin",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON report instead of text")
    parser.set_defaults(func=run)


def input_name(file: str) -> str:
    """How messages name the FILE argument (``-`` is ``<stdin>``)."""
    return "<stdin>" if file == "-" else file


def read_input(file: str, command: str) -> bytes | None:
    """The bytes of FILE (``-``: stdin); None once the reason it cannot be read is printed."""
    try:
        if file == "-":
            return sys.stdin.buffer.read()
        with open(file, "rb") as handle:
            return handle.read()
    except OSError as exc:
        print(
            f"prime-rl-dynamo {command}: cannot read {input_name(file)}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return None


def summarize(snapshot: Any) -> dict[str, Any]:
    """Counts a user wants at a glance: workers, engines ready to drive, total world size."""
    workers = snapshot.workers
    ready = [
        w for w in workers if w.error is None and w.admin_base_url is not None and w.world_size
    ]
    return {
        "protocol_version": snapshot.protocol_version,
        "namespace": snapshot.namespace,
        "workers": len(workers),
        "error_workers": sum(1 for w in workers if w.error is not None),
        "engines_ready": len(ready),
        "total_world_size": sum(w.world_size for w in ready),
    }


def run(args: argparse.Namespace) -> int:
    """Read, validate, report; returns the exit code."""
    from prime_rl_dynamo.errors import ProtocolError
    from prime_rl_dynamo.validate import validate_body

    name = input_name(args.file)
    data = read_input(args.file, "validate")
    if data is None:
        return EXIT_UNREADABLE
    try:
        snapshot = validate_body(data)
    except ProtocolError as exc:
        if args.json:
            report = {
                "file": name,
                "valid": False,
                "requirements": exc.requirements,
                "violations": [
                    {
                        "requirement": v.requirement,
                        "level": v.level,
                        "pointer": v.pointer,
                        "worker": v.worker,
                        "message": v.message,
                    }
                    for v in exc.violations
                ],
            }
            print(json.dumps(report, indent=2, ensure_ascii=False))
        else:
            for v in exc.violations:
                print(f"{v.requirement}\t{v.pointer or '/'}\t{v.worker or '-'}\t{v.message}")
            print(
                f"{name}: invalid, {len(exc.violations)} violation(s) of "
                f"{', '.join(exc.requirements)}",
                file=sys.stderr,
            )
        return EXIT_INVALID
    summary = summarize(snapshot)
    if args.json:
        print(json.dumps({"file": name, "valid": True, "summary": summary}, indent=2))
    else:
        print(
            f"{name}: valid (protocol_version {summary['protocol_version']}, namespace "
            f"{summary['namespace']!r}): {plural(summary['workers'], 'worker')}, "
            f"{plural(summary['engines_ready'], 'engine')} ready, {summary['error_workers']} with "
            f"error, total world size "
            f"{summary['total_world_size']}"
        )
    return EXIT_OK
