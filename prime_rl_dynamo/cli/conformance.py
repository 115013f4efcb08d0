"""``prime-rl-dynamo conformance``: run the conformance suite (a thin layer over conformance.run).

Without a URL it stands up a real Dynamo fleet through the harness when the dynamo extra is
importable, otherwise the reference frontend, and says which it used.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prime_rl_dynamo.cli._http_args import add_http_arguments, headers_of, verify_of

PROFILE_NAMES = ("frontend", "frontend-v2", "workers", "client", "roundtrip")


def add_parser(subparsers: Any) -> None:
    """Register ``conformance`` and its options."""
    parser = subparsers.add_parser(
        "conformance",
        help="check an RL listener, its workers, a client or real Dynamo against the contract",
        description="Run the conformance suite. Every check carries a requirement ID of "
        "schema/requirements.v1.json; MUST failures fail the run, SHOULD failures warn "
        "(--strict makes them fail). Without URL: every profile against a real Dynamo fleet "
        "(dynamo extra) or the embedded reference frontend. Exit codes: 0 conformant, 1 not "
        "conformant, 2 usage error, 3 inconclusive (target unreachable, harness broke), 4 "
        "nothing checked, 130 interrupted (partial reports written).",
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
        "--html-report", metavar="FILE", help="write a self-contained HTML report (no network)"
    )
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
    parser.add_argument(
        "--skip-requirement",
        action="append",
        default=[],
        metavar="ID",
        help="do not run the checks of this requirement ID (repeatable; reported as skipped)",
    )
    parser.add_argument(
        "--waivers",
        metavar="FILE",
        help="waiver file of known deviations (YAML): matched failures are reported as waived; "
        "a bare name picks a shipped one: dynamo-1.6.1 (conformance/deviations/)",
    )
    parser.add_argument(
        "--target-version",
        metavar="TEXT",
        help="the target's version as CI knows it, recorded in the reports",
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
        help="without URL: the server implementation under test for every profile that stands "
        "one up (frontend, workers, roundtrip; roundtrip needs dynamo); default: dynamo when "
        "importable",
    )
    parser.add_argument(
        "--discovery",
        choices=("file", "etcd"),
        default="file",
        help="discovery backend of the real Dynamo fleets the suite stands up (default: file)",
    )
    parser.add_argument(
        "--request-plane",
        choices=("tcp", "nats", "http"),
        default="tcp",
        help="request plane of the real Dynamo fleets the suite stands up (nats starts a "
        "nats-server; Dynamo 1.6.1 refuses http; default: tcp)",
    )
    parser.add_argument(
        "--namespace-scope",
        choices=("exact", "prefix", "suffix"),
        default="exact",
        help="namespace scope of the roundtrip profile's fleets: exact (DYN_NAMESPACE), prefix "
        "(workers in several namespaces under DYN_NAMESPACE_PREFIX) or suffix "
        "(DYN_NAMESPACE_WORKER_SUFFIX); default: exact",
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
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="deadline of each whole HTTP exchange with the target, seconds (default 10)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=8 * 1024 * 1024,
        metavar="N",
        help="body size cap of each reply, like the client's (default 8 MiB); past it HTTP-1 fails",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_http_arguments(parser)  # -H/--header, --cacert, --insecure: a target behind a gateway
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
    """Run the suite; exit 0 conformant, 1 not conformant, 2 usage error, 3 inconclusive (the
    target unreachable or the harness broke), 4 nothing checked, 130 interrupted (Ctrl-C)."""
    from conformance import Options, run_suite
    from conformance.registry import all_checks
    from conformance.reporting import (
        matrix_markdown,
        matrix_rows,
        print_summary,
        write_json,
        write_junit,
    )
    from conformance.results import INTERRUPTED
    from conformance.runner import resolve_requirements
    from prime_rl_dynamo.cli._output import make_console

    console = make_console()
    if args.list:
        if args.markdown:
            sys.stdout.write(matrix_markdown(all_checks()))
            return 0
        from rich.table import Table

        table = Table(header_style="bold")
        for col in ("requirement", "level", "party", "checks"):
            table.add_column(col, overflow="fold")
        try:
            wanted = resolve_requirements(args.requirement)
        except ValueError as exc:
            print(f"prime-rl-dynamo conformance: {exc}", file=sys.stderr)
            return 2
        for row in matrix_rows(all_checks()):
            if wanted and row["requirement"] not in wanted:
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
            skip_requirements=tuple(args.skip_requirement),
            waivers=args.waivers,
            target_version=args.target_version,
            seed=args.seed,
            client=args.client,
            client_cmd=args.client_cmd,
            target=args.target,
            discovery=args.discovery,
            request_plane=args.request_plane,
            namespace_scope=args.namespace_scope,
            topologies=args.topologies,
            client_conventions=tuple(c.strip() for c in args.client_conventions.split(",") if c),
            load_clients=clients,
            load_requests=requests,
            timeout=args.timeout,
            max_body_bytes=args.max_body_bytes,
            headers=headers_of(args),
            cacert=args.cacert,
            insecure=args.insecure,
        )
        verify_of(args)  # an unreadable --cacert is a usage error, not 35 errored checks
        options.resolved_profiles()
        options.base_url()
        if options.waivers:
            from conformance.waivers import load_waivers

            load_waivers(options.waivers)
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
    if args.html_report:
        from conformance.html_report import write_html

        console.print(f"HTML report: {write_html(report, args.html_report)}")
    if report.incomplete:
        return INTERRUPTED
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
