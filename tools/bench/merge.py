"""Put one section of a partial benchmark run into the committed report.

``python -m tools.bench --only validation --json FILE`` measures one section; ``python -m
tools.bench.merge FILE`` puts that section into docs/bench/bench.json (keeping the others) and
records, in the section, the command, machine and date of the run it came from. Then
``python -m tools.bench.docs`` regenerates the figures (and ``tools.bench.plot.plot_report`` the
figure).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode
from tools import REPO
from tools.bench.run import SECTIONS, write_report

__all__ = ["main", "merge_section"]


def merge_section(report: dict[str, Any], partial: dict[str, Any], section: str) -> dict[str, Any]:
    """``report`` with ``partial``'s ``section``, which carries its own run's facts under ``run``."""
    if (partial.get(section) or {}).get("status") != "ok":
        raise ValueError(f"the partial run has no {section!r} section that completed")
    merged = dict(report)
    merged[section] = {
        **partial[section],
        "run": {key: partial.get(key) for key in ("command", "mode", "machine", "wall_s")},
    }
    return merged


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tools.bench.merge PARTIAL.json [--section validation] [--into REPORT]``."""
    parser = argparse.ArgumentParser(prog="python -m tools.bench.merge", description=__doc__)
    parser.add_argument(
        "partial", type=Path, help="the JSON of a `python -m tools.bench --only SECTION` run"
    )
    parser.add_argument("--section", default="validation", choices=SECTIONS)
    parser.add_argument("--into", type=Path, default=REPO / "docs/bench/bench.json")
    args = parser.parse_args(argv)
    report = json.loads(args.into.read_text(encoding="utf-8"))
    partial = json.loads(args.partial.read_text(encoding="utf-8"))
    try:
        merged = merge_section(report, partial, args.section)
    except ValueError as exc:
        print(f"python -m tools.bench.merge: {exc}", file=sys.stderr)
        return ExitCode.FAIL
    write_report(merged, args.into)
    print(f"{args.into}: {args.section} from {args.partial}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
