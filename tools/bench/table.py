"""The printed form of a benchmark report: one rich table per section, plus skipped reasons.

Times are shown in milliseconds as ``median [min-max]``; ratios as ``x`` multiples.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "discovery_rows",
    "fmt_ms",
    "fmt_ratio",
    "hostile_rows",
    "render_tables",
    "validation_rows",
]


def fmt_ms(summary: dict[str, Any] | None, key: str = "median", *, spread: bool = True) -> str:
    """``12.3 [11.9-14.0]`` (milliseconds) from a summary, or ``-``."""
    if not summary:
        return "-"
    text = _num(summary[key] * 1000.0)
    if spread:
        text += f" [{_num(summary['min'] * 1000.0)}-{_num(summary['max'] * 1000.0)}]"
    return text


def fmt_ratio(ratio: dict[str, Any] | float | None, *, spread: bool = True) -> str:
    """``1.42x [1.30-1.55]`` from a paired ratio, ``1.42x`` from a number, or ``-``."""
    if ratio is None:
        return "-"
    if isinstance(ratio, int | float):
        return f"{_r(ratio)}x"
    if ratio.get("median") is None:
        return "-"
    text = f"{_r(ratio['median'])}x"
    if spread and ratio.get("min") is not None and ratio.get("max") is not None:
        text += f" [{_r(ratio['min'])}-{_r(ratio['max'])}]"
    return text


def _r(value: float) -> str:
    # Two decimals, but keep small ratios (vs pure-Python jsonschema) from reading 0.00.
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def _num(ms: float) -> str:
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.4f}"


def validation_rows(
    section: dict[str, Any],
) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    """Header and rows of the times table, then of the ratios table (shared by every renderer)."""
    contenders = section.get("contenders", [])
    columns = section.get("ratio_columns", [])
    points = section.get("points", [])
    times = [
        [f"{p['workers']:,}", *[fmt_ms(p["times_s"].get(name)) for name in contenders]]
        for p in points
    ]
    ratios = [
        [f"{p['workers']:,}", *[fmt_ratio(p["ratios"].get(key)) for key in columns]] for p in points
    ]
    ratio_header = ["workers", *[key.split(" / ", 1)[1] for key in columns]]
    return ["workers", *contenders], times, ratio_header, ratios


def hostile_rows(section: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the hostile-body table: per size, the valid body, then the worst."""
    header = ["workers", "body", "bytes", "ms", "us/byte", "per byte vs valid"]
    rows = []
    for entry in section.get("hostile", []):
        for name in ("valid", entry["worst"]):
            row = entry["bodies"][name]
            label = name if name == "valid" else f"worst hostile: {name}"
            rows.append(
                [
                    f"{entry['workers']:,}",
                    label,
                    f"{row['bytes']:,}",
                    _num(row["seconds"]["median"] * 1e3),
                    f"{row['us_per_byte']:.3f}",
                    f"{row['per_byte_over_valid']:.1f}x",
                ]
            )
    return header, rows


def _validation_tables(section: dict[str, Any]) -> list[Any]:
    from rich.markup import escape
    from rich.table import Table

    times_header, times_rows, ratios_header, ratios_rows = validation_rows(section)
    times = Table(title=escape("Validation: time per body, ms median [min-max]"))
    ratios = Table(
        title=escape(
            f"Validation: {section.get('validator')} / other, median [min-max of paired reps]"
        )
    )
    tables = [(times, times_header, times_rows), (ratios, ratios_header, ratios_rows)]
    hostile_header, hostile = hostile_rows(section)
    if hostile:
        title = escape("Validation: the worst hostile body next to the valid body of its size")
        tables.append((Table(title=title), hostile_header, hostile))
    for table, header, rows in tables:
        for column in header:
            table.add_column(column, justify="right")
        for row in rows:
            table.add_row(*row)
    return [t[0] for t in tables]


def discovery_rows(
    section: dict[str, Any], *, ratio_label: str = "dynamo/ref", reasons: bool = False
) -> list[list[str]]:
    """Rows (frontend, engines, p50, p99, ready, start-up) of the discovery section; with
    ``reasons`` a skipped series or point says why."""
    rows = []
    for name, series in section.get("series", {}).items():
        if reasons and series.get("status") == "skipped":
            rows.append([name, "-", f"skipped: {series.get('reason')}", "", "", ""])
        for point in series.get("points", []):
            if "skipped" in point:
                why = f"skipped: {point['skipped']}" if reasons else "skipped"
                rows.append([name, str(point["engines"]), why, "", "", ""])
                continue
            rows.append(
                [
                    name,
                    str(point["engines"]),
                    fmt_ms(point["latency_s"], "p50", spread=False),
                    fmt_ms(point["latency_s"], "p99", spread=False),
                    fmt_ms(point.get("ready_s")),
                    f"{point['startup_s']:.1f}",
                ]
            )
    for ratio in section.get("ratios", []):
        rows.append(
            [
                ratio_label,
                str(ratio["engines"]),
                fmt_ratio(ratio["latency_p50"]),
                fmt_ratio(ratio["latency_p99"]),
                fmt_ratio(ratio.get("ready_paired")),
                "",
            ]
        )
    return rows


def _discovery_table(section: dict[str, Any]) -> Any:
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=escape(
            "Discovery, ms: GET /v1/rl/workers p50 and p99; "
            "DiscoveryClient to a ready snapshot, median [min-max]"
        )
    )
    for column in ("frontend", "engines", "p50", "p99", "ready", "start-up s"):
        table.add_column(column, justify="right")
    for row in discovery_rows(section):
        table.add_row(*row)
    return table


def _suite_table(section: dict[str, Any]) -> Any:
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=escape(
            f"Conformance suite, {section.get('run', 'default run')}: wall s, median [min-max]"
        )
    )
    for column in ("target", "wall s", "runs", "checks"):
        table.add_column(column, justify="right")
    for target, series in section.get("series", {}).items():
        if series.get("status") != "ok":
            continue
        wall = series["wall_s"]
        counts = ", ".join(f"{k} {v}" for k, v in sorted(series.get("counts", {}).items()))
        table.add_row(
            target,
            f"{wall['median']:.1f} [{wall['min']:.1f}-{wall['max']:.1f}]",
            str(wall["n"]),
            counts,
        )
    if section.get("ratio_dynamo_over_reference"):
        table.add_row("dynamo/ref", fmt_ratio(section["ratio_dynamo_over_reference"]), "", "")
    return table


def _skips(report: dict[str, Any]) -> list[str]:
    lines = []
    for name in ("validation", "discovery", "suite", "client", "engines"):
        section = report.get(name) or {}
        if section.get("status") == "skipped":
            lines.append(f"{name}: skipped ({section.get('reason')})")
        for key, series in (section.get("series") or {}).items():
            if series.get("status") == "skipped":
                lines.append(f"{name} / {key}: skipped ({series.get('reason')})")
            for point in series.get("points", []):
                if "skipped" in point:
                    lines.append(f"{name} / {key} at {point['engines']}: {point['skipped']}")
    return lines


def render_tables(report: dict[str, Any], console: Any = None) -> None:
    """Print every section of the report as a table on ``console`` (stdout by default)."""
    from rich.markup import escape

    from prime_rl_dynamo.cli.output import make_console
    from tools.bench.engines import engines_cost_says

    if console is None:
        # Piped output (CI logs, files) gets room for the wide validation tables, unless COLUMNS
        # says otherwise; a reader that goes away early (| head) drops the rest, not the run.
        console = make_console(default_width=180)
    if report.get("validation", {}).get("points"):
        for table in _validation_tables(report["validation"]):
            console.print(table)
        for line in report["validation"].get("verdicts", []):
            console.print(escape(line))
    if report.get("discovery", {}).get("series"):
        console.print(_discovery_table(report["discovery"]))
    if any(s.get("status") == "ok" for s in (report.get("suite", {}).get("series") or {}).values()):
        console.print(_suite_table(report["suite"]))
    if report.get("scale", {}).get("series"):
        table = _discovery_table(report["scale"])
        table.title = "Scale: GET /v1/rl/workers at 64-256 engines"
        console.print(table)
        for point in report["scale"]["series"].get("dynamo", {}).get("points", []):
            if "roundtrip_s" in point:
                console.print(
                    escape(
                        f"dynamo {point['engines']} engines: round trip {point['roundtrip_s']:.1f}"
                        f" s (start-up {point['startup_s']:.1f} s), listing equals the fleet: "
                        f"{point['roundtrip_ok']}, {point['memory_bytes'] / 2**30:.2f} GiB in "
                        f"{point['processes']} processes"
                    )
                )
    if any(
        s.get("status") == "ok" for s in (report.get("client", {}).get("series") or {}).values()
    ):
        console.print(_suite_table(report["client"]))
    if report.get("engines", {}).get("status") == "ok":
        console.print(escape(f"real engines: {engines_cost_says(report)}"))
    for line in _skips(report):
        console.print(f"[yellow]{escape(line)}[/yellow]")
    machine = report.get("machine", {})
    console.print(
        escape(
            f"machine: {machine.get('cpu_count')} CPU {machine.get('cpu_model')}, "
            f"{(machine.get('memory_bytes') or 0) / 2**30:.1f} GiB, Python {machine.get('python')}, "
            f"load {machine.get('load_average')} -> {machine.get('load_average_after')}; "
            f"wall {report.get('wall_s', 0):.0f} s"
        )
    )
