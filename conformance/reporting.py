"""Reports of a conformance run: terminal summary, JUnit XML, JSON, and the requirement matrix.

The terminal summary groups results by requirement so one screen says which requirement broke,
where, and how to reproduce it; the matrix maps each requirement to the checks that verify it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.registry import Check, all_checks
from conformance.results import Report, Result, Status
from prime_rl_dynamo.requirements import all_requirements

__all__ = [
    "matrix_markdown",
    "matrix_rows",
    "print_summary",
    "reproduce_command",
    "write_json",
    "write_junit",
]

_STYLE = {
    Status.PASS: "green",
    Status.SKIP: "dim",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
    Status.ERROR: "bold magenta",
}


def reproduce_command(report: Report, requirement: str | None = None) -> str:
    """The CLI line that reruns this report's run (optionally one requirement only)."""
    opts = report.options
    parts = ["prime-rl-dynamo", "conformance"]
    if opts.get("url"):
        parts.append(str(opts["url"]))
    for profile in opts.get("profiles") or ():
        parts += ["--profile", profile]
    if opts.get("strict"):
        parts.append("--strict")
    if opts.get("client"):
        parts += ["--client", str(opts["client"])]
    if opts.get("client_cmd"):
        parts += ["--client-cmd", repr(str(opts["client_cmd"]))]
    for req in [requirement] if requirement else list(opts.get("requirements") or ()):
        parts += ["--requirement", req]
    for header in opts.get("headers") or ():  # already "Name: <redacted>" (runner._redact)
        parts += ["-H", repr(str(header))]
    if opts.get("cacert"):
        parts += ["--cacert", str(opts["cacert"])]
    if opts.get("insecure"):
        parts.append("--insecure")
    parts += ["--seed", str(report.seed)]
    return " ".join(parts)


def _worst(results: Sequence[Result]) -> Status:
    return max((r.status for r in results), key=lambda s: s.rank)


def print_summary(report: Report, console: Any = None, *, verbose: bool = False) -> None:
    """Print the run's summary grouped by requirement (rich), then every non-pass in full."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=160)
    target = report.target
    console.print(
        f"[bold]Conformance[/bold] of {target.get('description') or target.get('url') or target.get('kind')}"
        f"  (seed {report.seed}, strict={bool(report.options.get('strict'))})"
    )
    for note in target.get("notes", []):
        console.print(f"  note: {note}")
    table = Table(show_lines=False, header_style="bold")
    for col in ("requirement", "level", "result", "checks", "first line"):
        # A first line ends in an ellipsis when cut, never folded mid-URL ("http://1" / "27.0...");
        # the whole message follows below the table.
        cut = col == "first line"
        table.add_column(col, overflow="ellipsis" if cut else "fold", no_wrap=cut)
    for req_id, results in report.by_requirement().items():
        worst = _worst(results)
        if worst == Status.PASS and not verbose and len(report.by_requirement()) > 40:
            continue
        first = next((r for r in results if r.status == worst), results[0])
        line = (first.message.splitlines() or [""])[0]
        table.add_row(
            req_id,
            first.level,
            f"[{_STYLE[worst]}]{worst.value.upper()}[/]",
            ", ".join(f"{r.profile}:{r.check.split('::', 1)[1]}" for r in results),
            line[:140],
        )
    console.print(table)
    passed = [
        req for req, results in report.by_requirement().items() if _worst(results) == Status.PASS
    ]
    if len(report.by_requirement()) > 40 and not verbose:
        console.print(f"passed ({len(passed)}): {', '.join(passed)}", highlight=False)
    for result in report.by_status(Status.FAIL, Status.ERROR, Status.WARN):
        style = _STYLE[result.status]
        console.print(
            f"[{style}]{result.status.value.upper()}[/] {result.check} ({result.level}, {result.profile}): "
            f"{result.title}"
        )
        for line in result.message.splitlines()[:40]:
            console.print(f"    {line}", markup=False, highlight=False)
    counts = report.counts()
    verdict = "[bold green]CONFORMANT[/]" if report.ok else "[bold red]NOT CONFORMANT[/]"
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    console.print(f"{verdict}: {summary}")
    if not report.ok:
        failed = report.failed_requirements()
        if failed:
            console.print(f"  failed requirements: {', '.join(failed)}")
        console.print(f"  reproduce: {reproduce_command(report)}", markup=False, highlight=False)


def write_json(report: Report, path: str | Path) -> Path:
    """Write the JSON report (target, versions, options, seed, every result)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = report.to_dict()
    data["reproduce"] = reproduce_command(report)
    out.write_text(
        json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8"
    )
    return out


def write_junit(report: Report, path: str | Path) -> Path:
    """Write JUnit XML: one testsuite per profile, one testcase per check (named by its ID)."""
    root = ET.Element("testsuites", name="prime-rl-dynamo conformance")
    props = ET.SubElement(root, "properties")
    for key, value in (
        ("target", report.target.get("url") or report.target.get("kind", "")),
        ("seed", report.seed),
        ("strict", report.options.get("strict")),
        *((f"version.{k}", v) for k, v in report.versions.items()),
    ):
        ET.SubElement(props, "property", name=str(key), value=str(value))
    profiles: dict[str, list[Result]] = {}
    for r in report.results:
        profiles.setdefault(r.profile, []).append(r)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for profile, results in profiles.items():
        suite = ET.SubElement(root, "testsuite", name=f"conformance.{profile}")
        counts = {"tests": len(results), "failures": 0, "errors": 0, "skipped": 0}
        for r in results:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"conformance.{profile}",
                name=f"{r.check} [{r.level}]",
                time=f"{r.duration:.3f}",
            )
            if r.status == Status.FAIL:
                counts["failures"] += 1
                node = ET.SubElement(case, "failure", message=_first(r.message), type=r.requirement)
                node.text = r.message
            elif r.status == Status.ERROR:
                counts["errors"] += 1
                node = ET.SubElement(case, "error", message=_first(r.message), type="error")
                node.text = r.message
            elif r.status == Status.SKIP:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_first(r.message))
            elif r.status == Status.WARN:
                out = ET.SubElement(case, "system-out")
                out.text = f"WARNING ({r.level} {r.requirement} not met): {r.message}"
            elif r.message:
                out = ET.SubElement(case, "system-out")
                out.text = r.message
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    out_path = Path(path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out_path, encoding="utf-8", xml_declaration=True)
    return out_path


def _first(message: str) -> str:
    return (message.splitlines() or [""])[0][:300]


def matrix_rows(checks: Sequence[Check] | None = None) -> list[dict[str, Any]]:
    """One row per requirement of the catalog: its level, party and the checks verifying it."""
    items = list(checks) if checks is not None else all_checks()
    rows = []
    for req in all_requirements().values():
        mine = [c for c in items if c.requirement == req.id]
        rows.append(
            {
                "requirement": req.id,
                "level": req.level,
                "party": req.party,
                "enforced_by": req.enforced_by,
                "title": req.title,
                "checks": [f"{c.profile}: {c.id}" for c in mine],
            }
        )
    return rows


def matrix_markdown(checks: Sequence[Check] | None = None) -> str:
    """docs/conformance-matrix.md: requirement -> checks, generated from the registry."""
    lines = [
        "# Conformance matrix: requirement -> checks",
        "",
        "Generated by `prime-rl-dynamo conformance --list --markdown` from the check registry;",
        "`tests/test_conformance_matrix.py` fails when this file drifts. A requirement without a",
        "live check is held where its *enforced by* column says: the client's own tests (client),",
        "the JSON Schema and validator tests (schema, validator), or the specification's fixture",
        "tests (suite).",
        "",
        "| requirement | level | party | enforced by | checks | title |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in matrix_rows(checks):
        checks_cell = "<br>".join(f"`{c}`" for c in row["checks"]) or "-"
        title = row["title"].replace("|", "\\|")
        lines.append(
            f"| {row['requirement']} | {row['level']} | {row['party']} | {row['enforced_by']} "
            f"| {checks_cell} | {title} |"
        )
    return "\n".join(lines) + "\n"
