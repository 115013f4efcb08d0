"""``prime-rl-dynamo bench``: validation cost, discovery latency and suite wall time, side by side.

Writes every figure and the machine's description as JSON, draws the figure as PNG and prints
the tables; progress goes to stderr. The measuring code is ``tools/bench/`` of the repository, not
part of the wheel: this command runs it from a checkout and says so when there is none.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode


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
        choices=("validation", "discovery", "suite", "scale", "client"),
        help="run only this section (repeatable; scale: 64-256 engines and the 256-engine "
        "round trip, part of the full run only; client: the client profile's runtime)",
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
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; 0 when it completed, 1 when a section failed, 2 when unusable."""
    if not _tools_importable():
        print(f"prime-rl-dynamo bench: {NO_CHECKOUT}", file=sys.stderr)
        return ExitCode.USAGE
    if getattr(args, "protocol", False):
        return _run_protocol(args)
    try:
        from tools.bench.plot import plot_report
        from tools.bench.progress import NullReporter, RichReporter
        from tools.bench.run import full_config, quick_config, run_bench, write_report
        from tools.bench.table import render_tables
    except ImportError as exc:
        print(
            f"prime-rl-dynamo bench: needs the bench extra ({exc}); install prime-rl-dynamo[bench]",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    if not str(args.plot_path).lower().endswith(".png"):
        print(
            f"prime-rl-dynamo bench: --plot expects a .png file, got {args.plot_path}",
            file=sys.stderr,
        )
        return ExitCode.USAGE

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
        return ExitCode.FAIL

    write_report(report, args.json_path)
    plot_report(report, args.plot_path)
    render_tables(report)
    print(f"wrote {args.json_path} and {args.plot_path}")
    return ExitCode.OK


#: What to do when no checkout is at hand (an installed wheel carries no benchmarks).
NO_CHECKOUT = (
    "the benchmarks are in the repository's tools/bench/, which the installed package does not "
    "carry: run this command inside a checkout of prime-rl-dynamo (after pip install -e "
    "'.[bench]' there), or `make bench` in it"
)


def checkout_root() -> Path | None:
    """The checkout holding ``tools/bench/``, or None.

    Looked for next to the imported ``prime_rl_dynamo`` (an editable install or a run from the
    checkout), then in the working directory and its parents.
    """
    import prime_rl_dynamo

    cwd = Path.cwd().resolve()
    for root in (Path(prime_rl_dynamo.__file__).resolve().parents[1], cwd, *cwd.parents):
        if (root / "tools" / "bench" / "__init__.py").is_file() and (root / "schema").is_dir():
            return root
    return None


def _tools_importable() -> bool:
    root = checkout_root()
    if root is None:
        return False
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return True


def _run_protocol(args: argparse.Namespace) -> int:
    from tools.bench.protocol import main as protocol_main

    json_path = args.json_path if args.json_path != "bench-results.json" else "bench-protocol.json"
    plot_path = args.plot_path if args.plot_path != "bench-results.png" else "bench-protocol.png"
    argv = ["--json", json_path, "--plot", plot_path]
    argv += ["--quick"] if args.quick else []
    argv += ["--no-dynamo"] if args.no_dynamo else []
    return protocol_main(argv)


def _from_console() -> bool:
    # sys.argv names the subcommand only when we were started as the console script.
    return len(sys.argv) >= 2 and sys.argv[1] == "bench"
