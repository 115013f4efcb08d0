"""What changed between two runs of the suite (two JSON reports): the gate of a Dynamo upgrade.

Checks are matched by ID. *Newly failing*: fail or error now, not before (a new check that fails
counts). *Newly passing*: pass now, fail / error / warn / waived before. *Waived*: waived now.
Pure: reads two parsed reports, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode

__all__ = ["Change", "ReportDiff", "diff_reports"]

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

    @property
    def exit_code(self) -> int:
        """1 when anything newly fails (a CI gate stops there), else 0."""
        return ExitCode.FAIL if self.newly_failing else ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "exit_code": self.exit_code,
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


def _results(report: Mapping[str, Any], name: str) -> dict[str, Mapping[str, Any]]:
    results = report.get("results") if isinstance(report, Mapping) else None
    if (
        not isinstance(report, Mapping)
        or report.get("format") != "prime-rl-dynamo-conformance/1"
        or not isinstance(results, list)
    ):
        raise ValueError(
            f"{name}: expected a conformance JSON report (format prime-rl-dynamo-conformance/1 "
            "with a results list), as --json-report writes"
        )
    out: dict[str, Mapping[str, Any]] = {}
    for index, r in enumerate(results):
        if not isinstance(r, Mapping) or not isinstance(r.get("check"), str):
            raise ValueError(f"{name}: results[{index}] has no check ID")
        out[r["check"]] = r
    return out


def _line(result: Mapping[str, Any] | None) -> str:
    message = str((result or {}).get("message") or "")
    return (message.splitlines() or [""])[0]


def diff_reports(
    a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str] = ("A", "B")
) -> ReportDiff:
    """Compare report ``a`` (before) with report ``b`` (after); ValueError if either is not one."""
    before, after = _results(a, names[0]), _results(b, names[1])
    diff = ReportDiff()
    for check in [*after, *(c for c in before if c not in after)]:
        old, new = before.get(check), after.get(check)
        s_old = str(old["status"]) if old else None
        s_new = str(new["status"]) if new else None
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
