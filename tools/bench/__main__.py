"""``python -m tools.bench`` (``make bench``): validation cost, discovery latency and suite wall
time, side by side.

Writes every figure and the machine's description as JSON, draws the figure as PNG and prints
the tables; progress goes to stderr. The benchmarks are the repository's, not the wheel's: they run
from a checkout (``pip install -e '.[bench]'``), so the installed ``prime-rl-dynamo`` never imports
them.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from prime_rl_dynamo.cli import run_guarded
from prime_rl_dynamo.exitcodes import ExitCode

#: How the benchmark is started, the first words of its complaints and of the recorded command.
PROG = "python -m tools.bench"


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's options."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        allow_abbrev=False,
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
        choices=("validation", "discovery", "suite", "scale", "client", "engines"),
        help="run only this section (repeatable; scale: 64-256 engines and the 256-engine "
        "round trip, part of the full run only; client: the client profile's runtime; "
        "engines: a real vLLM fleet's time and memory, never part of the full run)",
    )
    parser.add_argument(
        "--no-dynamo",
        action="store_true",
        help="leave real Dynamo out: reference frontend only, for discovery and the suite",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress display on stderr")
    parser.add_argument(
        "--protocol",
        action="store_true",
        help="instead: protocol 1 polling against protocol 2 (conditional GET, change feed) at "
        "64, 1,024 and 4,096 engines (tools.bench.protocol; default files bench-protocol.json/.png)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line) and run; a closed pipe ends it quietly (141)."""
    args = build_parser().parse_args(argv)
    # The report records the command line it was started with (none when called from Python).
    command = f"{PROG} {shlex.join(sys.argv[1:])}".strip() if argv is None else None
    return run_guarded(lambda: run(args, command=command))


def run(args: argparse.Namespace, *, command: str | None = None) -> int:
    """Run the benchmark; 0 when it completed, 1 when a section failed, 2 when unusable."""
    if args.protocol:
        return _run_protocol(args)
    try:
        from tools.bench.plot import plot_report
        from tools.bench.progress import NullReporter, RichReporter
        from tools.bench.run import full_config, quick_config, run_bench, write_report
        from tools.bench.table import render_tables
    except ImportError as exc:
        print(
            f"{PROG}: needs the bench extra ({exc}): pip install -e '.[bench]'",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    if not str(args.plot_path).lower().endswith(".png"):
        print(
            f"{PROG}: --plot expects a .png file, got {args.plot_path}",
            file=sys.stderr,
        )
        return ExitCode.USAGE

    config = quick_config() if args.quick else full_config()
    if args.only:
        config = config.only(args.only)
    if args.no_dynamo:
        config = config.without_dynamo()
    try:
        if args.no_progress:
            report = run_bench(config, NullReporter(), command=command)
        else:
            with RichReporter() as reporter:
                report = run_bench(config, reporter, command=command)
    except Exception as exc:  # a benchmark bug or a broken target: say so, exit non-zero
        print(f"{PROG}: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return ExitCode.FAIL

    write_report(report, args.json_path)
    plot_report(report, args.plot_path)
    render_tables(report)
    print(f"wrote {args.json_path} and {args.plot_path}")
    return ExitCode.OK


def _run_protocol(args: argparse.Namespace) -> int:
    from tools.bench.protocol import main as protocol_main

    json_path = args.json_path if args.json_path != "bench-results.json" else "bench-protocol.json"
    plot_path = args.plot_path if args.plot_path != "bench-results.png" else "bench-protocol.png"
    argv = ["--json", json_path, "--plot", plot_path]
    argv += ["--quick"] if args.quick else []
    argv += ["--no-dynamo"] if args.no_dynamo else []
    return protocol_main(argv)


if __name__ == "__main__":
    sys.exit(main())
