"""``prime-rl-dynamo conformance``: run the conformance suite (a thin layer over conformance.run).

Without a URL it stands up a real Dynamo fleet through the harness when the dynamo extra is
importable, otherwise the reference frontend, and says which it used.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from conformance.options import arguments
from conformance.results import EXIT_CODES, Verdict
from prime_rl_dynamo.cli.output import complain
from prime_rl_dynamo.exitcodes import ExitCode

HELP = "check an RL listener, its workers, a client or real Dynamo against the contract"
#: What the exit codes mean, beside conformance.results.EXIT_CODES (a verdict each).
_OTHER_EXITS = {
    ExitCode.USAGE: "usage error",
    ExitCode.INTERRUPTED: "interrupted (partial reports written)",
}
_WHY = {Verdict.INCONCLUSIVE: " (target unreachable, harness broke)"}


def _description() -> str:
    exits = {
        code: verdict.value.replace("-", " ") + _WHY.get(verdict, "")
        for verdict, code in EXIT_CODES.items()
    }
    exits.update(_OTHER_EXITS)
    codes = ", ".join(f"{code} {meaning}" for code, meaning in sorted(exits.items()))
    from prime_rl_dynamo.suite.harness import release_label

    return (
        "Run the conformance suite. Every check carries a requirement ID of "
        "schema/requirements.v1.json; MUST failures fail the run, SHOULD failures warn "
        "(--strict makes them fail). Without URL: every profile against a real Dynamo fleet "
        f"(dynamo extra; installed: {release_label()}) or the embedded reference frontend. "
        f"Exit codes: {codes}."
    )


def add_parser(subparsers: Any) -> None:
    """Register ``conformance`` and its options."""
    parser = subparsers.add_parser("conformance", help=HELP, description=_description())
    for names, keywords in arguments():  # every option of a run, from conformance.Options
        parser.add_argument(*names, **keywords)
    # What to do with the results, not part of the run.
    parser.add_argument("--junit-xml", metavar="FILE", help="write a JUnit XML report")
    parser.add_argument("--json-report", metavar="FILE", help="write a JSON report")
    parser.add_argument(
        "--html-report", metavar="FILE", help="write a self-contained HTML report (no network)"
    )
    parser.add_argument(
        "--list", action="store_true", help="print the requirement -> checks table and exit"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="with --list: print docs/conformance-matrix.md"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the suite; exit 0 conformant, 1 not conformant, 2 usage error, 3 inconclusive (the
    target unreachable or the harness broke), 4 nothing checked, 130 interrupted (Ctrl-C)."""
    from conformance import run_suite
    from conformance.options import from_flags
    from conformance.registry import all_checks
    from conformance.reporting import (
        matrix_markdown,
        matrix_rows,
        print_summary,
        write_json,
        write_junit,
    )
    from prime_rl_dynamo.cli.output import make_console
    from prime_rl_dynamo.requirements import resolve_requirements

    console = make_console()
    if args.markdown and not args.list:  # not a run: a whole all-profile run is minutes long
        complain(
            "conformance",
            "--markdown only applies to --list "
            "(conformance --list --markdown prints docs/conformance-matrix.md)",
        )
        return ExitCode.USAGE
    if args.list:
        if args.markdown:
            sys.stdout.write(matrix_markdown(all_checks()))
            return ExitCode.OK
        from rich.table import Table

        table = Table(header_style="bold")
        for col in ("requirement", "level", "party", "checks"):
            table.add_column(col, overflow="fold")
        try:
            wanted = resolve_requirements(args.requirement)
        except ValueError as exc:
            complain("conformance", str(exc))
            return ExitCode.USAGE
        for row in matrix_rows(all_checks()):
            if wanted and row["requirement"] not in wanted:
                continue
            table.add_row(
                row["requirement"], row["level"], row["party"], "\n".join(row["checks"]) or "-"
            )
        console.print(table)
        return ExitCode.OK
    outputs = [
        (flag, getattr(args, dest))
        for flag, dest in (
            ("--junit-xml", "junit_xml"),
            ("--json-report", "json_report"),
            ("--html-report", "html_report"),
        )
        if getattr(args, dest)
    ]
    try:
        options = from_flags(lambda dest: getattr(args, dest))
        options.check_usable()
        for flag, path in outputs:  # before the run: a lost report is found out now, not after
            check_writable(flag, path)
    except ValueError as exc:
        complain("conformance", str(exc))
        return ExitCode.USAGE
    from conformance.runner import dynamo_hint, dynamo_unavailable

    missing = dynamo_unavailable() if options.target == "dynamo" else None
    if missing is not None:
        complain("conformance", f"--target dynamo: {dynamo_hint(missing)}")
        return ExitCode.USAGE
    if args.quiet or not console.is_terminal:
        report = run_suite(options=options)
    else:
        report = _run_with_progress(options, console)
    print_summary(report, console)
    from conformance.html_report import write_html

    writers = {"--junit-xml": write_junit, "--json-report": write_json, "--html-report": write_html}
    names = {
        "--junit-xml": "JUnit XML",
        "--json-report": "JSON report",
        "--html-report": "HTML report",
    }
    for flag, path in outputs:
        try:
            console.print(f"{names[flag]}: {writers[flag](report, path)}", markup=False)
        except OSError as exc:
            complain(
                "conformance",
                f"{flag} {path}: expected a writable file; writing failed: {exc.strerror or exc}",
            )
            return ExitCode.USAGE
    return report.exit_code  # 130 when interrupted, as the JSON report says


def check_writable(flag: str, path: str) -> None:
    """ValueError unless a report can be written at ``path``: not a directory, not under a file,
    a device that takes bytes (``/dev/full`` does not)."""
    import os
    from pathlib import Path

    target = Path(path)
    expected = f"{flag} {path}: expected a writable file path"
    if target.is_dir():
        raise ValueError(f"{expected}; found a directory")
    parent = next((p for p in target.parents if p.exists()), Path("."))
    if not parent.is_dir():
        raise ValueError(f"{expected}; {parent} is a file, not a directory")
    if not os.access(parent if not target.exists() else target, os.W_OK):
        raise ValueError(f"{expected}; permission denied")
    if target.exists() and not target.is_file():  # a device: probe it with one byte
        try:
            with open(target, "ab", buffering=0) as stream:
                stream.write(b"\n")
        except OSError as exc:
            raise ValueError(f"{expected}; writing to it fails: {exc.strerror or exc}") from None


def _run_with_progress(options: Any, console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from conformance import run_suite
    from conformance.runner import select_checks

    total = len(select_checks(options))
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[current]}"),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("conformance", total=total, current="starting the target")

        def progress(event: str, item: Any, result: Any) -> None:
            if event == "start":
                bar.update(task, current=f"{item.profile}: {item.id}")
            else:
                bar.advance(task)

        return run_suite(options=options, progress=progress)
