"""A stored benchmark report as Markdown tables, for docs/bench.md and the README.

``python -m bench.markdown docs/bench/bench.json`` prints the figures with the machine and the
command that produced them, so quoted numbers always come from a committed JSON file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.table import fmt_ms, fmt_ratio

__all__ = ["render_markdown"]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _validation(section: dict[str, Any]) -> list[str]:
    if section.get("status") != "ok":
        return [f"Validation: skipped ({section.get('reason')})."]
    contenders = section["contenders"]
    columns = section["ratio_columns"]
    out = ["Validation, time per body in ms, median [min-max]:", ""]
    out += _table(
        ["workers", *contenders],
        [
            [f"{p['workers']:,}", *[fmt_ms(p["times_s"].get(n)) for n in contenders]]
            for p in section["points"]
        ],
    )
    out += [
        "",
        f"`{section['validator']}` / other (below 1: the project's validation is cheaper):",
        "",
    ]
    out += _table(
        ["workers", *[c.split(" / ", 1)[1] for c in columns]],
        [
            [f"{p['workers']:,}", *[fmt_ratio(p["ratios"].get(c)) for c in columns]]
            for p in section["points"]
        ],
    )
    out += ["", *[f"- {line}" for line in section.get("verdicts", [])]]
    return out


def _discovery(section: dict[str, Any]) -> list[str]:
    if section.get("status") == "skipped":
        return [f"Discovery: skipped ({section.get('reason')})."]
    rows = []
    for name, series in section["series"].items():
        if series.get("status") == "skipped":
            rows.append([name, "-", f"skipped: {series.get('reason')}", "", "", ""])
        for p in series.get("points", []):
            if "skipped" in p:
                rows.append([name, str(p["engines"]), f"skipped: {p['skipped']}", "", "", ""])
                continue
            rows.append(
                [
                    name,
                    str(p["engines"]),
                    fmt_ms(p["latency_s"], "p50", spread=False),
                    fmt_ms(p["latency_s"], "p99", spread=False),
                    fmt_ms(p.get("ready_s")),
                    f"{p['startup_s']:.1f}",
                ]
            )
    for r in section.get("ratios", []):
        rows.append(
            [
                "dynamo / reference",
                str(r["engines"]),
                fmt_ratio(r["latency_p50"]),
                fmt_ratio(r["latency_p99"]),
                fmt_ratio(r.get("ready_paired")),
                "",
            ]
        )
    header = ["frontend", "engines", "GET p50 ms", "GET p99 ms", "ready snapshot ms", "start-up s"]
    return [
        "Discovery (GET /v1/rl/workers; DiscoveryClient to a ready snapshot):",
        "",
        *_table(header, rows),
    ]


def _suite(section: dict[str, Any]) -> list[str]:
    if section.get("status") == "skipped":
        return [f"Conformance suite: skipped ({section.get('reason')})."]
    rows = []
    for target, series in section["series"].items():
        if series.get("status") != "ok":
            rows.append([target, f"skipped: {series.get('reason')}", ""])
            continue
        wall = series["wall_s"]
        counts = ", ".join(f"{v} {k}" for k, v in series["counts"].items() if v)
        rows.append(
            [
                target,
                f"{wall['median']:.1f} [{wall['min']:.1f}-{wall['max']:.1f}] (n={wall['n']})",
                counts,
            ]
        )
    if section.get("ratio_dynamo_over_reference"):
        rows.append(["dynamo / reference", fmt_ratio(section["ratio_dynamo_over_reference"]), ""])
    return [
        f"Conformance suite, {section.get('run')}:",
        "",
        *_table(["target", "wall s", "checks"], rows),
    ]


def render_markdown(report: dict[str, Any]) -> str:
    """Every figure of a report as Markdown, headed by the command and the machine."""
    machine = report.get("machine", {})
    memory = (machine.get("memory_bytes") or 0) / 2**30
    head = [
        f"Command: `{report.get('command') or 'prime-rl-dynamo bench'}` ({report.get('mode')} mode, "
        f"{report.get('wall_s', 0) / 60:.1f} min), {machine.get('timestamp')}.",
        f"Machine: {machine.get('cpu_count')} CPU {machine.get('cpu_model')}, {memory:.1f} GiB, "
        f"{machine.get('platform')}, Python {machine.get('python')}; load average "
        f"{machine.get('load_average')} before, {machine.get('load_average_after')} after.",
    ]
    parts = [
        head,
        _validation(report.get("validation", {})),
        _discovery(report.get("discovery", {})),
        _suite(report.get("suite", {})),
    ]
    return "\n\n".join("\n".join(part) for part in parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print a stored report as Markdown."""
    parser = argparse.ArgumentParser(prog="python -m bench.markdown", description=__doc__)
    parser.add_argument("report", type=Path, help="JSON written by prime-rl-dynamo bench --json")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"cannot read {args.report}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
