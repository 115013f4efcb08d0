"""``prime-rl-dynamo bench``: validation cost, discovery latency and suite wall time, side by side.

Writes every figure and the machine's description as JSON, draws the figure as PNG and prints
the tables; progress goes to stderr. The measuring code lives in the top-level ``bench`` package.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from prime_rl_dynamo.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE


def add_parser(subparsers: Any) -> None:
    """Register ``bench`` and its options."""
    parser = subparsers.add_parser(
        "bench",
        help="benchmark validation, discovery latency and the conformance suite",
        description="Measure, side by side in one run: the project's full validation against "
        "json.loads, orjson, jsonschema and a pydantic parser (1 to 8,192 workers); GET "
        "/v1/rl/workers latency and DiscoveryClient time to a ready snapshot against fleet size "
        "on the reference and the real Dynamo frontend; the default conformance run's wall "
        "time. Figures are medians with min-max spread, and ratios.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer repetitions, no pure-Python jsonschema, two suite profiles only "
        "(under two minutes)",
    )
    parser.add_argument(
        "--json",
        dest="json_path",
        default="bench-results.json",
        metavar="FILE",
        help="where to write every figure (default: %(default)s)",
    )
    parser.add_argument(
        "--plot",
        dest="plot_path",
        default="bench-results.png",
        metavar="FILE.png",
        help="where to draw the figure (default: %(default)s)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=("validation", "discovery", "suite", "client"),
        help="run only this section (repeatable)",
    )
    parser.add_argument(
        "--no-dynamo",
        action="store_true",
        help="leave real Dynamo out: reference frontend only, for discovery and the suite",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress display on stderr")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; 0 when it completed, 1 when a section failed, 2 when unusable."""
    try:
        from bench.plot import plot_report
        from bench.progress import NullReporter, RichReporter
        from bench.run import full_config, quick_config, run_bench, write_report
        from bench.table import render_tables
    except ImportError as exc:
        print(
            f"prime-rl-dynamo bench: needs the bench extra ({exc}); install prime-rl-dynamo[bench]",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not str(args.plot_path).lower().endswith(".png"):
        print(
            f"prime-rl-dynamo bench: --plot expects a .png file, got {args.plot_path}",
            file=sys.stderr,
        )
        return EXIT_USAGE

    config = quick_config() if args.quick else full_config()
    if args.only:
        config = config.only(args.only)
    if args.no_dynamo:
        config = config.without_dynamo()
    command = "prime-rl-dynamo " + shlex.join(["bench", *sys.argv[2:]]) if _from_console() else None

    try:
        if args.no_progress:
            report = run_bench(config, NullReporter(), command=command)
        else:
            with RichReporter() as reporter:
                report = run_bench(config, reporter, command=command)
    except Exception as exc:  # a benchmark bug or a broken target: say so, exit non-zero
        print(
            f"prime-rl-dynamo bench: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return EXIT_FAIL

    write_report(report, args.json_path)
    plot_report(report, args.plot_path)
    render_tables(report)
    print(f"wrote {args.json_path} and {args.plot_path}")
    return EXIT_OK


def _from_console() -> bool:
    # sys.argv names the subcommand only when we were started as the console script.
    return len(sys.argv) >= 2 and sys.argv[1] == "bench"
