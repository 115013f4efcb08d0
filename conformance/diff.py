"""What changed between two runs of the suite (two JSON reports): the gate of a Dynamo upgrade.

Checks are matched by ID. *Newly failing*: fail or error now, not before (a new check that fails
counts). *Newly passing*: pass now, fail / error / warn / waived before. *Waived*: waived now.
The gate agrees with the runs: it closes when B is not ok and A was, naming each of B's
``failed_requirements`` (an expired waiver, interrupted, inconclusive, nothing checked: causes
no result row shows), and when both are not ok, on each cause new in B (causes are matched by
requirement ID, a run-wide reason by its kind). It also closes on a newly failing check and when
B cannot vouch for itself (it checked nothing, was interrupted, skipped everything, or holds a
check ID twice). Both reports must be valid against ``schema/conformance-report.v1.schema.json``
and agree with themselves (``ok``, ``verdict``, ``exit_code`` and ``failed_requirements`` with
what the results, waivers and run say). Pure: reads two parsed reports, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.text import clip, plural

__all__ = ["Cause", "Change", "ReportDiff", "check_report", "diff_reports", "unvouched"]

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


@dataclass(frozen=True)
class Cause:
    """One entry of B's ``failed_requirements``: a reason its run is not ok."""

    cause: str  # a requirement ID, or a run-wide reason ("interrupted: 3 checks not run")
    because: str  # what in B says so: its failing checks, its expired waiver; a reason itself

    @property
    def key(self) -> str:
        """What the causes of two runs are matched on: the requirement ID, or the run-wide
        reason's kind (interrupted, inconclusive, nothing checked), whatever its figures."""
        return _key(self.cause)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"cause": self.cause, "because": self.because}


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
    #: The verdicts of A and B, as their reports say (checked against their contents).
    verdicts: tuple[str, str] = ("conformant", "conformant")
    #: B's causes of not being ok that A did not have (all of them when A was ok): each closes
    #: the gate, whether or not a result row changed.
    causes: list[Cause] = field(default_factory=list)
    #: B's causes of not being ok that A had too (they leave the gate as it is).
    still_not_ok: list[Cause] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 when anything newly fails, B is not ok for a cause A did not have, or B cannot vouch
        for itself (a CI gate stops there)."""
        closed = self.newly_failing or self.causes or self.unvouched
        return ExitCode.FAIL if closed else ExitCode.OK

    @property
    def gate(self) -> str:
        """The gate in one line, as ``report diff`` prints it after ``GATE:`` (without the exit
        code): ``closed: <each reason>``, or what leaves it open."""
        reasons = []
        if self.newly_failing:
            reasons.append(plural(len(self.newly_failing), "newly failing check"))
        if self.causes:
            new = " for a new cause" if self.verdicts[0] != "conformant" else ""
            reasons.append(f"B is not ok{new}: {', '.join(c.key for c in self.causes)}")
        if self.unvouched:
            reasons.append("B cannot vouch for its target")
        if reasons:
            return "closed: " + "; ".join(reasons)
        if self.still_not_ok:
            keys = ", ".join(c.key for c in self.still_not_ok)
            return f"nothing newly fails (B is still not ok, as A was: {keys})"
        return "nothing newly fails"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "exit_code": self.exit_code,
            "gate": self.gate,
            "verdicts": {"before": self.verdicts[0], "after": self.verdicts[1]},
            "causes": [c.to_dict() for c in self.causes],
            "still_not_ok": [c.to_dict() for c in self.still_not_ok],
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
    """ValueError unless ``report`` is valid against the conformance report schema and agrees
    with itself (its verdict, ``ok``, ``exit_code`` and the kinds of ``failed_requirements`` are
    what its results, waivers and run give): the message names the file, the JSON pointer, what
    was expected and what was found."""
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
    _check_verdict(report, name)


def _check_verdict(report: Mapping[str, Any], name: str) -> None:
    """ValueError unless the report's verdict, ``ok``, ``exit_code`` and ``failed_requirements``
    say what its results, waivers and run do (``Report.verdict``'s rule): the gate reads them."""
    from conformance.results import Report, Result, Status

    rebuilt = Report(
        target={},
        options={},
        seed=0,
        versions={},
        results=[
            Result(r["check"], r["requirement"], r["level"], r["profile"], "", Status(r["status"]))
            for r in report["results"]
        ],
        incomplete=report["incomplete"],
        inconclusive=report["inconclusive"],
        waivers=list(report["waivers"]),
    )
    verdict = rebuilt.verdict
    wrong = [
        (member, f"{want}", f"{found}")
        for member, want, found in (
            ("verdict", verdict.value, report["verdict"]),
            ("ok", _json_bool(rebuilt.ok), _json_bool(report["ok"])),
            ("exit_code", int(rebuilt.exit_code), report["exit_code"]),
        )
        if want != found
    ]
    want_causes = list(dict.fromkeys(_key(c) for c in rebuilt.failed_requirements()))
    found_causes = list(dict.fromkeys(_key(c) for c in report["failed_requirements"]))
    if set(want_causes) != set(found_causes):
        wrong.append(("failed_requirements", _listed(want_causes), _listed(found_causes)))
    if wrong:
        member, want, found = wrong[0]
        raise ValueError(
            f"{name}: at /{member}: expected {want}, as its results, waivers and run say "
            f"(verdict {verdict.value}); found {found}: the report contradicts itself"
        )


def _json_bool(value: bool) -> str:
    return "true" if value else "false"


def _listed(causes: list[str]) -> str:
    return f"causes [{clip(', '.join(causes), 200)}]" if causes else "no cause"


def unvouched(report: Mapping[str, Any]) -> list[str]:
    """Why a (schema-valid) report cannot vouch for its target: nothing checked, interrupted,
    every result skipped, or a check ID held twice (the last would silently win)."""
    return [why for _, why in _unvouched(report)]


def _unvouched(report: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    """``unvouched``, each reason with the kind of run-wide cause that says the same (None: no
    cause does), so that one reason is named once."""
    results = report["results"]
    out: list[tuple[str | None, str]] = []
    if not results:
        out.append(("nothing checked", "it holds no result (nothing was checked)"))
    if report["incomplete"]:
        out.append(
            ("interrupted", f"the run was interrupted ({len(report['not_run'])} check(s) not run)")
        )
    if results and all(r["status"] == "skip" for r in results):
        out.append(("nothing checked", "every result is a skip"))
    counts: dict[str, int] = {}
    for r in results:
        counts[r["check"]] = counts.get(r["check"], 0) + 1
    twice = [c for c, n in counts.items() if n > 1]
    if twice:
        out.append((None, f"check ID(s) held more than once: {', '.join(twice[:5])}"))
    return out


def _key(cause: str) -> str:
    # a run-wide reason holds ": " after its kind; a requirement ID holds no space
    return cause.partition(": ")[0]


def _causes(report: Mapping[str, Any]) -> list[Cause]:
    """Each entry of the report's ``failed_requirements``, with what in the report says so."""
    from conformance.waivers import expired_line

    out = []
    for cause in report["failed_requirements"]:
        if _key(cause) != cause:
            out.append(Cause(cause, cause))  # a run-wide reason says it itself
            continue
        failing = [
            f"{r['check']} fails"
            for r in report["results"]
            if r["requirement"] == cause and r["status"] == "fail"
        ]
        expired = [
            expired_line(w)
            for w in report["waivers"]
            if w["requirement"] == cause and w["state"] == "expired"
        ]
        out.append(Cause(cause, "; ".join([*failing, *expired])))
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
    had = {_key(cause) for cause in a["failed_requirements"]}
    causes = _causes(b)
    closing = [c for c in causes if c.key not in had]
    shown = {c.key for c in closing}  # an unvouched reason a closing cause says is not repeated
    diff = ReportDiff(
        unvouched=[why for kind, why in _unvouched(b) if kind not in shown],
        verdicts=(a["verdict"], b["verdict"]),
        causes=closing,
        still_not_ok=[c for c in causes if c.key in had],
    )
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
