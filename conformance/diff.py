"""What changed between two runs of the suite (two JSON reports): the gate of a Dynamo upgrade.

Checks are matched by ID. *Newly failing*: fail or error now, not before (a new check that fails
counts). *Newly passing*: pass now, fail / error / warn / waived before. *Waived*: waived now.
Both reports must be valid against ``schema/conformance-report.v1.schema.json``; the gate also
closes when B cannot vouch for itself (it checked nothing, was interrupted, skipped everything,
or holds a check ID twice). Pure: reads two parsed reports, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.text import clip

__all__ = ["Change", "ReportDiff", "check_report", "diff_reports", "unvouched"]

_BAD = ("fail", "error")


@dataclass(frozen=True)
class Change:
    """One check whose status differs between the two runs (or is waived now)."""

    check: str
    before: str | None  # None: not in the first report
    after: str | None  # None: not in the second report
    line: str  # first line of the second report's message (the first's when it is gone)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"check": self.check, "before": self.before, "after": self.after, "line": self.line}


@dataclass
class ReportDiff:
    """The changes from report A to report B, by kind."""

    newly_failing: list[Change] = field(default_factory=list)
    newly_passing: list[Change] = field(default_factory=list)
    waived: list[Change] = field(default_factory=list)
    still_failing: list[Change] = field(default_factory=list)
    new_warnings: list[Change] = field(default_factory=list)
    gone: list[Change] = field(default_factory=list)  # in A, not run in B
    #: Why B cannot vouch for its target (each closes the gate, whatever the changes say).
    unvouched: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 when anything newly fails or B cannot vouch for itself (a CI gate stops there)."""
        return ExitCode.FAIL if self.newly_failing or self.unvouched else ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "exit_code": self.exit_code,
            "unvouched": list(self.unvouched),
            **{
                kind: [c.to_dict() for c in getattr(self, kind)]
                for kind in (
                    "newly_failing",
                    "newly_passing",
                    "waived",
                    "still_failing",
                    "new_warnings",
                    "gone",
                )
            },
        }


def check_report(report: Any, name: str) -> None:
    """ValueError unless ``report`` is valid against the conformance report schema: the message
    names the file, the JSON pointer, what was expected and what was found."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    from prime_rl_dynamo.resources import load_json
    from prime_rl_dynamo.validate import json_pointer

    expected = "a conformance JSON report as --json-report writes it"
    if not isinstance(report, Mapping) or report.get("format") != "prime-rl-dynamo-conformance/1":
        found = (
            f"format {str(report.get('format'))[:60]!r}"
            if isinstance(report, Mapping)
            else f"a JSON {type(report).__name__}"
        )
        raise ValueError(
            f"{name}: expected {expected} (format prime-rl-dynamo-conformance/1), found {found}"
        )
    validator = Draft202012Validator(load_json("conformance-report.v1.schema.json"))
    try:
        error = best_match(validator.iter_errors(report))
    except RecursionError:
        raise ValueError(f"{name}: expected {expected}, found members nested too deep") from None
    if error is not None:
        what = clip(error.message, 200)
        where = json_pointer(list(error.absolute_path)) or "/"
        raise ValueError(f"{name}: at {where}: expected {expected}; found that {what}")


def unvouched(report: Mapping[str, Any]) -> list[str]:
    """Why a (schema-valid) report cannot vouch for its target: nothing checked, interrupted,
    every result skipped, or a check ID held twice (the last would silently win)."""
    results = report["results"]
    out = []
    if not results:
        out.append("it holds no result (nothing was checked)")
    if report["incomplete"]:
        out.append(f"the run was interrupted ({len(report['not_run'])} check(s) not run)")
    if results and all(r["status"] == "skip" for r in results):
        out.append("every result is a skip")
    counts: dict[str, int] = {}
    for r in results:
        counts[r["check"]] = counts.get(r["check"], 0) + 1
    twice = [c for c, n in counts.items() if n > 1]
    if twice:
        out.append(f"check ID(s) held more than once: {', '.join(twice[:5])}")
    return out


def _results(report: Mapping[str, Any], name: str) -> dict[str, Mapping[str, Any]]:
    check_report(report, name)
    out: dict[str, Mapping[str, Any]] = {}
    for r in report["results"]:
        # A duplicate keeps its worst status (unvouched() names it): never the last one's pass.
        kept = out.get(r["check"])
        if kept is None or _RANK[r["status"]] > _RANK[kept["status"]]:
            out[r["check"]] = r
    return out


_RANK = {"pass": 0, "skip": 1, "waived": 2, "warn": 3, "fail": 4, "error": 5}


def _line(result: Mapping[str, Any] | None) -> str:
    message = str((result or {}).get("message") or "")
    return (message.splitlines() or [""])[0]


def diff_reports(
    a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str] = ("A", "B")
) -> ReportDiff:
    """Compare report ``a`` (before) with report ``b`` (after); ValueError if either is not one."""
    before, after = _results(a, names[0]), _results(b, names[1])
    diff = ReportDiff(unvouched=unvouched(b))
    for check in [*after, *(c for c in before if c not in after)]:
        old, new = before.get(check), after.get(check)
        s_old = old["status"] if old else None
        s_new = new["status"] if new else None
        change = Change(check, s_old, s_new, _line(new) or _line(old))
        if s_new is None:
            diff.gone.append(change)
        elif s_new in _BAD:
            (diff.still_failing if s_old in _BAD else diff.newly_failing).append(change)
        elif s_new == "waived":
            diff.waived.append(change)
        elif s_new == "pass" and s_old in (*_BAD, "warn", "waived"):
            diff.newly_passing.append(change)
        elif s_new == "warn" and s_old != "warn":
            diff.new_warnings.append(change)
    return diff
