"""A stored benchmark report as Markdown tables, for docs/bench.md and the README.

``python -m tools.bench.markdown docs/bench/bench.json`` prints the figures with the machine and the
command that produced them, so quoted numbers always come from a committed JSON file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode
from tools.bench.table import discovery_rows, fmt_ratio, hostile_rows, validation_rows

__all__ = ["render_markdown"]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _validation(section: dict[str, Any]) -> list[str]:
    if section.get("status") != "ok":
        return [f"Validation: skipped ({section.get('reason')})."]
    times_header, times_rows, ratios_header, ratios_rows = validation_rows(section)
    out = ["Validation, time per body in ms, median [min-max]:", ""]
    out += _table(times_header, times_rows)
    out += [
        "",
        f"`{section['validator']}` / other (below 1: the project's validation is cheaper):",
        "",
    ]
    out += _table(ratios_header, ratios_rows)
    out += ["", *[f"- {line}" for line in section.get("verdicts", [])]]
    hostile_header, hostile = hostile_rows(section)
    if hostile:
        out += ["", "The worst hostile body next to the valid body of its size (check_body):", ""]
        out += _table(hostile_header, hostile)
    return out


def _discovery(section: dict[str, Any]) -> list[str]:
    if section.get("status") == "skipped":
        return [f"Discovery: skipped ({section.get('reason')})."]
    rows = discovery_rows(section, ratio_label="dynamo / reference", reasons=True)
    header = ["frontend", "engines", "GET p50 ms", "GET p99 ms", "ready snapshot ms", "start-up s"]
    return [
        "Discovery (GET /v1/rl/workers; DiscoveryClient to a ready snapshot):",
        "",
        *_table(header, rows),
    ]


def _scale(section: dict[str, Any]) -> list[str]:
    if section.get("status") == "skipped":
        return [f"Scale: skipped ({section.get('reason')})."]
    rows = [r[:4] + r[5:] for r in discovery_rows(section, ratio_label="dynamo / reference")]
    lines = [
        "Scale (GET /v1/rl/workers at 64-256 engines; the Dynamo round trip):",
        "",
        *_table(["frontend", "engines", "GET p50 ms", "GET p99 ms", "start-up s"], rows),
    ]
    for point in (section.get("series") or {}).get("dynamo", {}).get("points", []):
        if "roundtrip_s" in point:
            lines.append(
                f"- Dynamo, {point['engines']} engines ({point['engines_per_process']} per stub "
                f"process, {point['processes']} processes): round trip {point['roundtrip_s']:.1f} s "
                f"including start-up {point['startup_s']:.1f} s; listing equals the fleet: "
                f"{'yes' if point['roundtrip_ok'] else 'no'}; memory "
                f"{point['memory_bytes'] / 2**30:.2f} GiB (RSS of every process)."
            )
    return lines


def _suite(section: dict[str, Any], title: str | None = None) -> list[str]:
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
        f"{title or 'Conformance suite, ' + str(section.get('run'))}:",
        "",
        *_table(["target", "wall s", "checks"], rows),
    ]


#: What the console script called the benchmarks before they left it; the same arguments run as
#: ``python -m tools.bench``, which is what the docs show for a committed report.
_OLD_PROGRAM = "prime-rl-dynamo bench"


def rerun_command(report: dict[str, Any]) -> str:
    """The command that repeats a report's run (``python -m tools.bench ...``)."""
    command = str(report.get("command") or "python -m tools.bench")
    if command.startswith(_OLD_PROGRAM):
        command = "python -m tools.bench" + command[len(_OLD_PROGRAM) :]
    return command


def render_markdown(report: dict[str, Any]) -> str:
    """Every figure of a report as Markdown, headed by the command and the machine."""
    machine = report.get("machine", {})
    memory = (machine.get("memory_bytes") or 0) / 2**30
    head = [
        f"Command: `{rerun_command(report)}` ({report.get('mode')} mode, "
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
        _scale(report["scale"]) if "scale" in report else [],  # a report from before the section
    ]
    if report.get("client", {}).get("series"):
        target = report["client"].get("config", {}).get("target", "reference")
        parts.append(
            _suite(report["client"], f"Client profile, whole, per client ({target} fleets)")
        )
    return "\n\n".join("\n".join(part) for part in parts if part) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print a stored report as Markdown."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench.markdown", allow_abbrev=False, description=__doc__
    )
    parser.add_argument("report", type=Path, help="JSON written by python -m tools.bench --json")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"cannot read {args.report}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    sys.stdout.write(render_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
