"""Reports of a conformance run: terminal summary, JUnit XML, JSON, and the requirement matrix.

The terminal summary groups results by requirement so one screen says which requirement broke,
where, and how to reproduce it; the matrix maps each requirement to the checks that verify it.
"""

from __future__ import annotations

import json
import shlex
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from conformance.options import rerun_arguments
from conformance.registry import Check, all_checks
from conformance.results import Report, Result, Status, Verdict
from conformance.waivers import EXPIRED, expired_line
from prime_rl_dynamo.escaping import for_json
from prime_rl_dynamo.redaction import scrub
from prime_rl_dynamo.requirements import all_requirements, v2_requirements
from prime_rl_dynamo.text import cut, plural

__all__ = [
    "RunCase",
    "matrix_markdown",
    "matrix_rows",
    "print_summary",
    "reproduce_command",
    "run_cases",
    "shell_lines",
    "write_json",
    "write_junit",
]

_STYLE = {
    Status.PASS: "green",
    Status.SKIP: "dim",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
    Status.ERROR: "bold magenta",
    Status.WAIVED: "cyan",
}


def reproduce_command(report: Report, requirement: str | None = None) -> str:
    """The CLI line that reruns this report's run (optionally one requirement only): every
    option that differs from its default and the seed; header values stay redacted."""
    return " ".join(_reproduce_words(report, requirement))


def _reproduce_words(report: Report, requirement: str | None = None) -> list[str]:
    options = dict(report.options)
    if requirement:
        options["requirements"] = [requirement]
        options["checks"] = [
            c for c in options.get("checks") or () if c.startswith(requirement + "::")
        ]
    argv = rerun_arguments(options, report.seed)
    return ["prime-rl-dynamo", "conformance", *(shlex.quote(scrub(a)) for a in argv)]


def shell_lines(words: list[str], width: int) -> str:
    """``words`` as one shell command in lines at most ``width`` wide where the words allow,
    each line but the last ending in a backslash: a command that still runs when copied."""
    lines, current = [], ""
    for word in words:
        if current.strip() and len(current) + 1 + len(word) + 2 > width:
            lines.append(current + " \\")
            current = "    " + word
        else:
            current = f"{current} {word}" if current else word
    return "\n".join([*lines, current])


def _worst(results: Sequence[Result]) -> Status:
    return max((r.status for r in results), key=lambda s: s.rank)


def _statuses(results: Sequence[Result]) -> str:
    """A summary row's result: the one status its checks share, or each check's status in the
    order of the checks column when they differ (``PASS+SKIP``, never a plain ``SKIP``)."""
    shown = [r.status for r in results]
    if len(set(shown)) == 1:
        shown = shown[:1]
    return "+".join(f"[{_STYLE[s]}]{s.value.upper()}[/]" for s in shown)


_VERDICT = {
    Verdict.CONFORMANT: "[bold green]CONFORMANT[/]",
    Verdict.NOT_CONFORMANT: "[bold red]NOT CONFORMANT[/]",
    Verdict.INCONCLUSIVE: "[bold magenta]INCONCLUSIVE[/]",
    Verdict.NOTHING_CHECKED: "[bold yellow]NOTHING CHECKED[/]",
}


def header(report: Report) -> str:
    """The summary's first line: the run's target (or why it could not be reached)."""
    target = report.target
    what = target.get("description") or target.get("url") or target.get("kind") or "no target"
    release = target.get("dynamo_release")
    if release and f"Dynamo {release}" not in what:
        what += f" (Dynamo {release})"
    return f"Conformance of {what}"


def print_summary(report: Report, console: Any = None, *, verbose: bool = False) -> None:
    """Print the run's summary grouped by requirement (rich), then every non-pass in full.

    An unreachable target is one line first and a short summary, not one block per check;
    identical errors are printed once with the checks they stopped.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console(width=160)
    report = report.shown()  # the target's text, escaped for a terminal
    if report.inconclusive:
        # one line whatever the width: a grep, a CI log or a test reads it whole
        console.print(
            f"[bold magenta]{escape(report.inconclusive)}[/]", highlight=False, soft_wrap=True
        )
    if report.incomplete:
        console.print(
            f"[bold magenta]interrupted[/]: partial report, {plural(len(report.results), 'check')} done, "
            f"{len(report.not_run)} not run",
            highlight=False,
        )
    console.print(
        f"[bold]{escape(header(report))}[/bold]"
        f"  (seed {report.seed}, strict={bool(report.options.get('strict'))})",
        highlight=False,
    )
    for profile, what in (report.target.get("profiles") or {}).items():
        console.print(f"  {profile}: {escape(what)}", highlight=False)
    for note in report.target.get("notes", []):
        console.print(f"  note: {escape(note)}", highlight=False)
    if report.client_log:
        levels = dict.fromkeys(r["level"] for r in report.client_log)
        console.print(
            f"  client log: {plural(len(report.client_log), 'record')} "
            f"({', '.join(levels)}) captured into the JSON report (client_log)",
            highlight=False,
        )
    unreachable = bool(report.inconclusive) and all(
        r.status in (Status.ERROR, Status.SKIP) for r in report.results
    )
    if report.results and not unreachable:
        table = Table(show_lines=False, header_style="bold")
        for col in ("requirement", "level", "result", "checks", "first line"):
            # A first line ends in an ellipsis when cut, never folded mid-URL ("http://1" /
            # "27.0..."); the whole message follows below the table.
            first_line = col == "first line"
            table.add_column(
                col,
                overflow="ellipsis" if first_line else "fold",
                no_wrap=first_line,
                max_width=max(20, console.width // 2) if first_line else None,
            )
        groups = report.by_requirement()
        for req_id, results in groups.items():
            worst = _worst(results)
            if worst == Status.PASS and not verbose and len(groups) > 40:
                continue
            first = next((r for r in results if r.status == worst), results[0])
            line = (first.message.splitlines() or [""])[0]
            table.add_row(
                req_id,
                first.level,
                _statuses(results),
                ", ".join(f"{r.profile}:{r.check.split('::', 1)[1]}" for r in results),
                escape(cut(line, 140)),  # worker labels are [bracketed]: not rich markup
            )
        console.print(table)
        passed = [req for req, results in groups.items() if _worst(results) == Status.PASS]
        if len(groups) > 40 and not verbose:
            console.print(f"passed ({len(passed)}): {', '.join(passed)}", highlight=False)
        for result in report.by_status(Status.FAIL, Status.WARN, Status.WAIVED):
            _print_result(console, result)
    errors: dict[str, list[Result]] = {}
    for result in report.by_status(Status.ERROR):
        errors.setdefault(result.message, []).append(result)
    for message, same in errors.items():
        if unreachable:
            break
        if len(same) == 1:
            _print_result(console, same[0])
            continue
        console.print(
            f"[{_STYLE[Status.ERROR]}]ERROR[/] {plural(len(same), 'check')} "
            f"({', '.join(r.check for r in same[:6])}{', ...' if len(same) > 6 else ''}):",
            highlight=False,
        )
        for line in message.splitlines()[:40]:
            console.print(f"    {line}", markup=False, highlight=False)
    counts = report.counts()
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no check ran"
    verdict = report.verdict
    console.print(f"{_VERDICT[verdict]}: {summary}", highlight=False)
    if verdict is Verdict.NOTHING_CHECKED:
        console.print(  # markup off: "[dynamo]" of a pip line is no style
            f"  nothing was checked: {report.why_nothing_checked()}", markup=False, highlight=False
        )
    if verdict is Verdict.NOT_CONFORMANT and report.failed_requirements():
        console.print(f"  failed requirements: {', '.join(report.failed_requirements())}")
    waived = [r.requirement for r in report.by_status(Status.WAIVED)]
    if waived:
        console.print(f"  waived: {', '.join(dict.fromkeys(waived))}", highlight=False)
    for w in report.waivers:
        if w["state"] != "applied":
            console.print(
                f"  waiver of {w['check'] or w['requirement']}: {w['state']}"
                + (" (nothing it names failed; remove it?)" if w["state"] == "unused" else "")
                + (f" on {w['expires']}: {EXPIRED}" if w["state"] == "expired" else ""),
                highlight=False,
            )
    # Every verdict, a conformant one too (its seed reruns the same choices); wrapped as the
    # shell reads it, so that a copied line still runs.
    words = ["  reproduce:", *_reproduce_words(report)]
    console.print(shell_lines(words, console.width), markup=False, highlight=False, soft_wrap=True)


def _expired_message(waiver: dict[str, Any]) -> str:
    return f"{expired_line(waiver)} (its reason: {waiver['reason']})"


def _print_result(console: Any, result: Result) -> None:
    style = _STYLE[result.status]
    console.print(
        f"[{style}]{result.status.value.upper()}[/] {result.check} ({result.level}, "
        f"{result.profile}): {result.title}",
        highlight=False,
    )
    for line in result.message.splitlines()[:40]:
        console.print(f"    {line}", markup=False, highlight=False)


def write_json(report: Report, path: str | Path) -> Path:
    """Write the JSON report (target, versions, options, seed, every result)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = report.to_dict()
    data["reproduce"] = reproduce_command(report)
    data = for_json(data)  # a lone surrogate from the target: visible text, not invalid JSON
    out.write_text(
        json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8"
    )
    return out


def write_junit(report: Report, path: str | Path) -> Path:
    """Write JUnit XML in the common (Jenkins / Surefire) form: one testsuite per profile with
    its properties, time and timestamp; one testcase per check, named by its ID, with its own
    duration.

    A fail is a ``failure`` typed by requirement ID, whose ``message`` is the first line; an
    error an ``error``; a skip ``skipped``; a waived result ``skipped type="waived"`` and a check an
    interrupt left out ``skipped type="not-run"``; a warning (JUnit has no such outcome) is
    ``skipped type="warning"`` with ``status="warn"``, a message starting "warning:" and its text
    in ``system-err``, counted apart in the suite's ``warnings`` property. ``tests/junit.xsd`` is the schema every file is tested against.
    """
    import socket

    report = report.shown()  # XML 1.0 allows no control character and no lone surrogate
    root = ET.Element("testsuites", name="prime-rl-dynamo conformance")
    profiles: dict[str, list[Result]] = {}
    for r in report.results:
        profiles.setdefault(r.profile, []).append(r)
    not_run: dict[str, list[str]] = {}
    for check_id in report.not_run:
        profile = _profile_of(check_id)
        not_run.setdefault(profile, []).append(check_id)
        profiles.setdefault(profile, [])
    totals = {"tests": 0, "failures": 0, "errors": 0}
    total_time = 0.0
    host = socket.gethostname()
    for profile, results in profiles.items():
        started = min((r.started for r in results if r.started), default=report.started)
        # wall time from the first check's start to the last one's end (setup included)
        ends = [r.started + r.duration for r in results if r.started]
        elapsed = max(ends) - started if ends else sum(r.duration for r in results)
        total_time += elapsed
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"conformance.{profile}",
            timestamp=_timestamp(started),
            hostname=host,
            time=f"{elapsed:.6f}",
        )
        props = ET.SubElement(suite, "properties")
        for key, value in _properties(report, profile):
            ET.SubElement(props, "property", name=key, value=value)
        # warnings are counted in "skipped" too (the only non-failing outcome JUnit has)
        warned = sum(r.status == Status.WARN for r in results)
        ET.SubElement(props, "property", name="warnings", value=str(warned))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for r in results:
            counts["tests"] += 1
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"conformance.{profile}",
                name=f"{r.check} [{r.level}]",
                time=f"{r.duration:.6f}",
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
                ET.SubElement(case, "skipped", message=_first(r.message), type="skip")
            elif r.status == Status.WAIVED:
                counts["skipped"] += 1
                case.set("status", "waived")
                # "waived (reason); found fail:" ends in a colon: the first line of what was
                # found follows it, so the message says what was waived
                waived = " ".join(line.strip() for line in r.message.splitlines()[:2])
                ET.SubElement(case, "skipped", message=_first(waived), type="waived")
                ET.SubElement(case, "system-out").text = r.message
            elif r.status == Status.WARN:
                # JUnit has no warning outcome and a passing case shows as passed whatever its
                # attributes, while readers (Jenkins, GitLab) give a skip its own status: a
                # warning is a skip typed "warning" whose message says it, as pytest's xfail.
                counts["skipped"] += 1
                case.set("status", "warn")
                ET.SubElement(
                    case,
                    "skipped",
                    message=_first(
                        f"warning: {r.level} requirement {r.requirement} not met: "
                        f"{_first(r.message)}"
                    ),
                    type="warning",
                )
                ET.SubElement(
                    case, "system-err"
                ).text = f"WARNING: {r.level} requirement {r.requirement} is not met\n{r.message}"
            elif r.message:
                ET.SubElement(case, "system-out").text = r.message
        for check_id in not_run.get(profile, []):
            counts["tests"] += 1
            counts["skipped"] += 1
            case = ET.SubElement(
                suite, "testcase", classname=f"conformance.{profile}", name=check_id, time="0.000"
            )
            case.set("status", "not run")
            ET.SubElement(
                case,
                "skipped",
                message="not run: the run was interrupted (Ctrl-C); the report is incomplete",
                type="not-run",
            )
        for name, count in counts.items():
            suite.set(name, str(count))
            if name in totals:
                totals[name] += count
        if report.incomplete:
            ET.SubElement(
                suite, "system-err"
            ).text = f"incomplete: the run was interrupted; {plural(len(report.not_run), 'check')} not run"
    # What keeps the run from ok and no check's case says: one failing case each, in its suite.
    suites: dict[str, list[RunCase]] = {}
    for run_case in run_cases(report):
        suites.setdefault(run_case.suite, []).append(run_case)
    for suite_name, cases in suites.items():
        suite = _run_suite(
            root,
            report,
            host,
            name=f"conformance.{suite_name}",
            tests=str(len(cases)),
            failures=str(len(cases)),
            errors="0",
            skipped="0",
        )
        for run_case in cases:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"conformance.{suite_name}",
                name=run_case.name,
                time="0",
            )
            ET.SubElement(
                case, "failure", message=_first(run_case.message), type=run_case.type
            ).text = run_case.message
        totals["tests"] += len(cases)
        totals["failures"] += len(cases)
    run_suite = root.find("testsuite[@name='conformance.run']")
    if not profiles and run_suite is not None:  # no check's suite: the run's carries the rest
        props = ET.Element("properties")
        for key, value in _properties(report, ""):
            ET.SubElement(props, "property", name=key, value=value)
        run_suite.insert(0, props)
        if report.verdict is Verdict.NOTHING_CHECKED:
            ET.SubElement(
                run_suite, "system-err"
            ).text = f"nothing was checked: {report.why_nothing_checked()}"
    for name, count in totals.items():
        root.set(name, str(count))
    root.set("time", f"{total_time:.6f}")
    out_path = Path(path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out_path, encoding="utf-8", xml_declaration=True)
    return out_path


class RunCase(NamedTuple):
    """A failing JUnit case of the run as a whole (not of one check)."""

    suite: str  # "waivers" or "run"
    name: str  # "waiver ENGINE-2"; "interrupted", "inconclusive", "nothing checked"
    type: str  # the failure's type: the waiver's requirement ID, or the reason's kind
    message: str  # the whole text; its first line is the failure's message


def run_cases(report: Report) -> list[RunCase]:
    """One failing case for each cause of ``report.failed_requirements()`` that no check's case
    carries, so that a JUnit file of a run that is not ok always fails and names why: each
    expired waiver (suite ``waivers``) and each run-wide reason (suite ``run``: interrupted,
    inconclusive, nothing checked). A requirement with a failing check fails in that check's
    case. Both routes write them (``write_junit``, the pytest plugin)."""
    out = [
        RunCase("waivers", f"waiver {w['check'] or w['requirement']}", w["requirement"],
                _expired_message(w))
        for w in report.expired_waivers()
    ]  # fmt: skip
    for cause in report.failed_requirements():
        kind, run_wide, _ = cause.partition(": ")
        if run_wide:
            out.append(RunCase("run", kind, kind, cause))
    return out


def _run_suite(root: ET.Element, report: Report, host: str, **attributes: str) -> ET.Element:
    """A testsuite of the run as a whole (expired waivers, run-wide reasons): no time of its
    own, stamped with the run's start."""
    stamped = {**attributes, "timestamp": _timestamp(report.started), "hostname": host, "time": "0"}
    return ET.SubElement(root, "testsuite", stamped)


def _timestamp(started: float | None) -> str:
    # the strictest common form: seconds, no zone (UTC, said in the properties)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started or time.time()))


def _profile_of(check_id: str) -> str:
    return next((c.profile for c in all_checks() if c.id == check_id), "unknown")


def _properties(report: Report, profile: str) -> list[tuple[str, str]]:
    target = report.target
    pairs: list[tuple[str, Any]] = [
        ("verdict", report.verdict.value),
        ("incomplete", str(report.incomplete).lower()),
        ("target", target.get("url") or target.get("kind", "")),
        ("target.profile", (target.get("profiles") or {}).get(profile, "")),
        ("target.server", target.get("server") or ""),
        ("target.version", target.get("target_version") or target.get("reported_version") or ""),
        ("target.dynamo_release", target.get("dynamo_release") or ""),
        ("timestamps", "UTC"),
        ("seed", report.seed),
        ("strict", str(bool(report.options.get("strict"))).lower()),
        *((f"version.{k}", v) for k, v in report.versions.items()),
    ]
    return [(k, scrub(str(v))) for k, v in pairs if v not in ("", None)]


def _first(message: str) -> str:
    return cut((message.splitlines() or [""])[0], 300)


def matrix_rows(checks: Sequence[Check] | None = None) -> list[dict[str, Any]]:
    """One row per requirement of the catalog, then of the protocol 2 draft (V2-*): its level,
    party and the checks verifying it."""
    items = list(checks) if checks is not None else all_checks()
    rows = []
    for req in [*all_requirements().values(), *v2_requirements().values()]:
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
        "tests (suite). The V2-* rows are the protocol 2 draft (`schema/SPEC-v2.md`), checked by",
        "the frontend-v2 profile against a server that claims protocol 2.",
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
