"""``prime-rl-dynamo conformance``: run the conformance suite (a thin layer over conformance.run).

Without a URL it stands up a real Dynamo fleet through the harness when the dynamo extra is
importable, otherwise the reference frontend, and says which it used.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

PROFILE_NAMES = ("frontend", "workers", "client", "roundtrip")


def add_parser(subparsers: Any) -> None:
    """Register ``conformance`` and its options."""
    parser = subparsers.add_parser(
        "conformance",
        help="check an RL listener, its workers, a client or real Dynamo against the contract",
        description="Run the conformance suite. Every check carries a requirement ID of "
        "schema/requirements.v1.json; MUST failures fail the run, SHOULD failures warn "
        "(--strict makes them fail). Without URL: every profile against a real Dynamo fleet "
        "(dynamo extra) or the embedded reference frontend.",
    )
    parser.add_argument("url", nargs="?", help="RL listener base URL, e.g. http://127.0.0.1:8001")
    parser.add_argument(
        "--profile",
        action="append",
        choices=PROFILE_NAMES,
        default=[],
        help="profile to run (repeatable); default: frontend+workers with a URL, all without",
    )
    parser.add_argument("--strict", action="store_true", help="SHOULD failures fail the run")
    parser.add_argument("--junit-xml", metavar="FILE", help="write a JUnit XML report")
    parser.add_argument("--json-report", metavar="FILE", help="write a JSON report")
    parser.add_argument(
        "--list", action="store_true", help="print the requirement -> checks table and exit"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="with --list: print docs/conformance-matrix.md"
    )
    parser.add_argument(
        "--requirement",
        action="append",
        default=[],
        metavar="ID",
        help="only checks of this requirement ID (repeatable)",
    )
    parser.add_argument("--seed", type=int, help="seed of generated topologies (default: random)")
    client = parser.add_mutually_exclusive_group()
    client.add_argument(
        "--client", metavar="MODULE:FUNCTION", help="client under test, a Python callable"
    )
    client.add_argument("--client-cmd", metavar="CMD", help="client under test, a shell command")
    parser.add_argument(
        "--client-conventions",
        metavar="LIST",
        default="",
        help="conventions the client under test implements, comma-separated (default: all of "
        "prime-nccl,vllm-native-nccl,nixl); the others' requirements are skipped",
    )
    parser.add_argument(
        "--target",
        choices=("auto", "dynamo", "reference"),
        default="auto",
        help="without URL: which embedded fleet to stand up (default: dynamo when importable)",
    )
    parser.add_argument(
        "--discovery",
        choices=("file", "etcd"),
        default="file",
        help="discovery backend of the real Dynamo fleets the suite stands up (default: file)",
    )
    parser.add_argument(
        "--topologies", type=int, default=3, help="generated topologies per client/roundtrip run"
    )
    parser.add_argument(
        "--load",
        metavar="CLIENTSxREQUESTS",
        default="32x20",
        help="concurrent polling load for HTTP-7 (default 32x20)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="per HTTP request, seconds")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def _load(text: str) -> tuple[int, int]:
    try:
        clients, requests = (int(x) for x in text.lower().split("x", 1))
    except ValueError:
        raise SystemExit(f"--load expects CLIENTSxREQUESTS such as 32x20, got {text!r}") from None
    if clients < 1 or requests < 1:
        raise SystemExit("--load: both numbers must be at least 1")
    return clients, requests


def run(args: argparse.Namespace) -> int:
    """Run the suite; exit 0 when conformant, 1 on any failure or error, 2 on usage errors."""
    from rich.console import Console

    from conformance import Options, run_suite
    from conformance.registry import all_checks
    from conformance.reporting import (
        matrix_markdown,
        matrix_rows,
        print_summary,
        write_json,
        write_junit,
    )

    console = Console() if sys.stdout.isatty() else Console(width=160)
    if args.list:
        if args.markdown:
            sys.stdout.write(matrix_markdown(all_checks()))
            return 0
        from rich.table import Table

        table = Table(header_style="bold")
        for col in ("requirement", "level", "party", "checks"):
            table.add_column(col, overflow="fold")
        for row in matrix_rows(all_checks()):
            if args.requirement and row["requirement"] not in args.requirement:
                continue
            table.add_row(
                row["requirement"], row["level"], row["party"], "\n".join(row["checks"]) or "-"
            )
        console.print(table)
        return 0
    clients, requests = _load(args.load)
    try:
        options = Options(
            url=args.url,
            profiles=tuple(args.profile),
            strict=args.strict,
            requirements=tuple(args.requirement),
            seed=args.seed,
            client=args.client,
            client_cmd=args.client_cmd,
            target=args.target,
            discovery=args.discovery,
            topologies=args.topologies,
            client_conventions=tuple(c.strip() for c in args.client_conventions.split(",") if c),
            load_clients=clients,
            load_requests=requests,
            timeout=args.timeout,
        )
        options.resolved_profiles()
    except ValueError as exc:
        print(f"prime-rl-dynamo conformance: {exc}", file=sys.stderr)
        return 2
    if args.quiet or not console.is_terminal:
        report = run_suite(options=options)
    else:
        report = _run_with_progress(options, console)
    print_summary(report, console)
    if args.junit_xml:
        console.print(f"JUnit XML: {write_junit(report, args.junit_xml)}")
    if args.json_report:
        console.print(f"JSON report: {write_json(report, args.json_report)}")
    return report.exit_code


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
