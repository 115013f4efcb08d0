"""``prime-rl-dynamo report diff A.json B.json``: what changed between two runs: newly failing, newly passing, waived.

Compares two JSON reports of ``prime-rl-dynamo conformance --json-report`` by check ID. Exit 0
when nothing newly fails, 1 when a check fails or errors in B that did not in A (the gate of a
Dynamo upgrade in CI), 2 when a file is not a conformance JSON report.
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
    """Register ``report`` and its ``diff`` subcommand."""
    actions = add_group(subparsers, "report", "work with conformance reports (diff two runs)")
    diff = add_command(actions, "diff", __doc__, run_diff)
    diff.add_argument("before", metavar="A.json", help="the earlier run's JSON report")
    diff.add_argument("after", metavar="B.json", help="the later run's JSON report")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")


def _load(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None


def run_diff(args: argparse.Namespace) -> int:
    """Print the diff; exit 1 when anything newly fails."""
    from conformance.diff import diff_reports

    try:
        a, b = _load(args.before), _load(args.after)
        diff = diff_reports(a, b, (args.before, args.after))
    except ValueError as exc:
        complain("report diff", str(exc))
        return ExitCode.USAGE
    if args.json:
        print(json.dumps(diff.to_dict(), indent=2))
        return diff.exit_code
    print(f"A: {args.before} ({a.get('verdict', '?')}, {a.get('started', '?')})")
    print(f"B: {args.after} ({b.get('verdict', '?')}, {b.get('started', '?')})")
    sections = (
        ("newly failing", diff.newly_failing),
        ("newly passing", diff.newly_passing),
        ("waived", diff.waived),
        ("new warnings", diff.new_warnings),
        ("still failing", diff.still_failing),
        ("not run in B", diff.gone),
    )
    for title, changes in sections:
        if not changes:
            continue
        print(f"{title} ({len(changes)}):")
        for c in changes:
            print(f"  {c.check}: {c.before or 'absent'} -> {c.after or 'absent'}  {c.line}")
    if diff.newly_failing:
        n = len(diff.newly_failing)
        print(f"GATE: {n} newly failing check{'s' if n != 1 else ''} (exit 1)")
    else:
        print("GATE: nothing newly fails (exit 0)")
    return diff.exit_code
