"""``prime-rl-dynamo report diff A.json B.json``: what changed between two runs: newly failing, newly passing, waived.

Compares two JSON reports of ``prime-rl-dynamo conformance --json-report`` by check ID. Exit 0
when nothing newly fails; 1 (the gate of a Dynamo upgrade in CI) when a check fails or errors in
B that did not in A, when B is not ok and A was (each of B's failed requirements is named: an
expired waiver, interrupted, inconclusive, nothing checked), when both are not ok and B for a
cause A did not have, or when B cannot vouch for its target (no result, interrupted, all
skipped, a check ID twice); 2 when a file is not a valid conformance JSON report (the schema)
or contradicts itself.
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
    expected = "expected a conformance JSON report (UTF-8 JSON)"
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: {expected}; cannot read it: {exc.strerror or exc}") from None
    if not raw.strip():
        raise ValueError(f"{path}: {expected}; found an empty file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path}: {expected}; found byte 0x{raw[exc.start]:02x} at offset {exc.start}, "
            "which is not UTF-8"
        ) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: {expected}; found arrays or objects nested too deep") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {expected}; found invalid JSON ({exc})") from None


def run_diff(args: argparse.Namespace) -> int:
    """Print the diff; exit 1 when anything newly fails or B cannot vouch for itself."""
    from conformance.diff import diff_reports
    from prime_rl_dynamo.escaping import for_json, for_terminal

    try:
        a, b = _load(args.before), _load(args.after)
        diff = diff_reports(a, b, (args.before, args.after))
    except ValueError as exc:
        complain("report diff", str(exc))
        return ExitCode.USAGE
    if args.json:
        print(json.dumps(for_json(diff.to_dict()), indent=2))
        return diff.exit_code
    lines = [
        f"A: {args.before} ({a['verdict']}, {a['started']})",
        f"B: {args.after} ({b['verdict']}, {b['started']})",
    ]
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
        lines.append(f"{title} ({len(changes)}):")
        for c in changes:
            lines.append(f"  {c.check}: {c.before or 'absent'} -> {c.after or 'absent'}  {c.line}")
    if diff.causes:
        a_was = "A was ok" if a["ok"] else f"A was not ok ({a['verdict']}) for other causes"
        lines.append(f"B is not ok ({b['verdict']}); {a_was}:")
        for cause in diff.causes:  # a run-wide reason says it itself
            said = cause.because != cause.cause
            lines.append(f"  {cause.cause}: {cause.because}" if said else f"  {cause.cause}")
    for why in diff.unvouched:
        lines.append(f"B cannot vouch for its target: {why}")
    lines.append(f"GATE: {diff.gate} (exit {diff.exit_code})")
    print("\n".join(for_terminal(line) for line in lines))
    return diff.exit_code
