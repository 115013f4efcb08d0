"""``prime-rl-dynamo spec diff OLD NEW [--json]``: classify every difference as additive or breaking, for clients and for servers.

OLD and NEW are two JSON Schemas, two OpenAPI documents, or two directories holding the contract
(``rl-*.schema.json`` and ``openapi/*.openapi.json``), e.g. ``schema/frozen/v1`` and ``schema``;
the report says whether protocol_version must change. Exit 0 when NEW keeps the rules (additive
only, or a new protocol_version for breaking changes), 1 when a breaking change keeps the same
protocol_version, 2 usage or unreadable input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from prime_rl_dynamo.cli._groups import add_command, add_group
from prime_rl_dynamo.cli.output import complain
from prime_rl_dynamo.exitcodes import ExitCode


def add_parser(subparsers: Any) -> None:
    """Register the ``spec`` subcommand (``spec diff``)."""
    actions = add_group(subparsers, "spec", "compare versions of the contract (spec diff OLD NEW)")
    diff = add_command(actions, "diff", __doc__, run_diff)
    diff.add_argument("old", metavar="OLD", type=Path, help="the released version (file or dir)")
    diff.add_argument("new", metavar="NEW", type=Path, help="the version to judge (file or dir)")
    diff.add_argument("--json", action="store_true", help="print the report as JSON")
    diff.add_argument(
        "--accept",
        metavar="FILE",
        type=Path,
        help="breaking changes accepted under the same protocol_version, each with its reason "
        "(JSON: {accepted: [{document, location, kind, reason}]}); an entry matching nothing fails",
    )


def run_diff(args: argparse.Namespace) -> int:
    """Print every change and the verdict; the exit code says whether VERSION-1 holds."""
    from prime_rl_dynamo.suite.specdiff import diff_paths, load_acceptances

    for path in (args.old, args.new):
        if not path.exists():
            complain("spec diff", f"{path}: no such file or directory")
            return ExitCode.USAGE
    try:
        report = diff_paths(args.old, args.new)
        if args.accept is not None:
            report.accept(load_acceptances(args.accept))
    except ValueError as exc:
        complain("spec diff", str(exc))
        return ExitCode.USAGE
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        accepted = {id(c): reason for c, reason in report.accepted}
        for change in report.changes:
            effect = "BREAKING" if change.breaking else "additive"
            if id(change) in accepted:
                effect = "accepted"
            print(
                f"{effect:9} clients={change.clients:8} servers={change.servers:8} "
                f"{change.document} {change.location or '/'}: {change.kind}: {change.detail}"
            )
        for entry in report.unused_acceptances:
            print(
                f"unused    acceptance of {entry.get('document')} {entry.get('location')}: "
                f"{entry.get('kind')} matches no change"
            )
        print(report.verdict())
        if args.accept is None and not report.ok and report.breaking:
            print(
                "  a breaking change no conformant peer can notice may stay under the same "
                "protocol_version only when written down with its reason: --accept FILE "
                "(schema/frozen/v1-accepted.json holds the released contract's; docs/spec-diff.md)"
            )
    return ExitCode.OK if report.ok else ExitCode.FAIL
