"""Outcomes of conformance checks: six statuses, one result per check, and the run's report.

A *fail* means the target breaks a requirement; an *error* means the suite or the target's harness
broke (nothing was decided about conformance); a *skip* always carries its reason; *waived* is a
fail or warn the waiver file names as a known deviation. The report's verdict maps to the exit
code CI reads (``EXIT_CODES``).
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.redaction import scrub

__all__ = ["EXIT_CODES", "Report", "Result", "Status", "Verdict", "iso_time"]


class Status(str, enum.Enum):
    """What one check concluded, ordered from best to worst."""

    PASS = "pass"
    SKIP = "skip"
    WAIVED = "waived"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """Severity: higher is worse (a group shows its worst member)."""
        return _RANK[self]


_RANK = {
    Status.PASS: 0,
    Status.SKIP: 1,
    Status.WAIVED: 2,
    Status.WARN: 3,
    Status.FAIL: 4,
    Status.ERROR: 5,
}


class Verdict(str, enum.Enum):
    """What a whole run concluded about its target."""

    CONFORMANT = "conformant"  # something was checked; no MUST (or, strict, SHOULD) failed
    NOT_CONFORMANT = "not-conformant"  # a check failed: the target's fault
    INCONCLUSIVE = "inconclusive"  # unreachable target, harness broke, or the run was interrupted
    NOTHING_CHECKED = "nothing-checked"  # no check ran to a conclusion (all skipped, none selected)


#: The process exit code of each verdict (the CLI's; usage errors exit 2, an interrupt 130).
EXIT_CODES: dict[Verdict, ExitCode] = {
    Verdict.CONFORMANT: ExitCode.OK,
    Verdict.NOT_CONFORMANT: ExitCode.FAIL,
    Verdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
    Verdict.NOTHING_CHECKED: ExitCode.NOTHING_CHECKED,
}


@dataclass(frozen=True)
class Result:
    """The outcome of one check against one target."""

    check: str  # check ID, "<REQUIREMENT>::<slug>"
    requirement: str
    level: str  # MUST | SHOULD | MAY, from schema/requirements.v1.json
    profile: str
    title: str  # what the check verifies, one line
    status: Status
    message: str = ""  # why it failed / warned / was skipped / errored; a pass may say what it saw
    details: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0
    started: float = 0.0  # epoch seconds when the check began (0: it never ran)
    violations: tuple[dict[str, Any], ...] = ()  # structured: requirement, pointer, worker, ...

    def __post_init__(self) -> None:
        # Every result passes here: no credential of a listed URL reaches a message or report.
        object.__setattr__(self, "message", scrub(self.message))
        object.__setattr__(self, "details", scrub(self.details))
        object.__setattr__(self, "violations", scrub(tuple(self.violations)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (times ISO 8601, durations in seconds)."""
        data = asdict(self)
        data["status"] = self.status.value
        data["started"] = iso_time(self.started) if self.started else None
        data["violations"] = [dict(v) for v in self.violations]
        return data


def iso_time(epoch: float) -> str:
    """ISO 8601 in UTC with milliseconds, e.g. 2026-12-01T09:00:00.123Z."""
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Report:
    """Every result of one run plus what is needed to reproduce it."""

    target: dict[str, Any]
    options: dict[str, Any]
    seed: int
    versions: dict[str, str]
    results: list[Result] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0
    incomplete: bool = False  # interrupted (Ctrl-C): results so far only
    not_run: list[str] = field(default_factory=list)  # check IDs an interrupt left out
    inconclusive: str | None = None  # one line: why nothing could be decided (unreachable, ...)
    nothing_checked: str | None = None  # why no check was selected, when none was
    waivers: list[dict[str, Any]] = field(default_factory=list)  # the waiver file, as applied

    @property
    def verdict(self) -> Verdict:
        """The run's verdict: a failure wins, then an error or interrupt, then an empty run."""
        statuses = {r.status for r in self.results}
        if Status.FAIL in statuses or self.expired_waivers():
            return Verdict.NOT_CONFORMANT
        if self.incomplete or self.inconclusive or Status.ERROR in statuses:
            return Verdict.INCONCLUSIVE
        # A waiver hides a known deviation; it vouches for nothing: some check must pass (or warn).
        if not statuses & {Status.PASS, Status.WARN}:
            return Verdict.NOTHING_CHECKED
        return Verdict.CONFORMANT

    @property
    def ok(self) -> bool:
        """True when the verdict is conformant (warnings, skips and waived results are fine)."""
        return self.verdict is Verdict.CONFORMANT

    @property
    def exit_code(self) -> int:
        """0 conformant, 1 not conformant, 3 inconclusive, 4 nothing checked (EXIT_CODES)."""
        return EXIT_CODES[self.verdict]

    def why_nothing_checked(self) -> str:
        """One line saying why no check concluded (for the nothing-checked verdict)."""
        if self.nothing_checked:
            return self.nothing_checked
        if not self.results:
            return "no check matched the selection"
        reasons = dict.fromkeys(r.message.splitlines()[0] for r in self.results if r.message)
        if any(r.status is Status.WAIVED for r in self.results):
            return f"no check passed: every result was waived or skipped: {'; '.join(list(reasons)[:3])}"
        return f"every selected check was skipped: {'; '.join(list(reasons)[:3])}"

    def counts(self) -> dict[str, int]:
        """How many results have each status (every status present, zeros included)."""
        out = {s.value: 0 for s in Status}
        for r in self.results:
            out[r.status.value] += 1
        return out

    def by_status(self, *statuses: Status) -> list[Result]:
        """The results with any of these statuses, in run order."""
        return [r for r in self.results if r.status in statuses]

    def expired_waivers(self) -> list[dict[str, Any]]:
        """The waivers past their date: each fails the run, even when nothing it names failed."""
        return [w for w in self.waivers if w.get("state") == "expired"]

    def failed_requirements(self) -> list[str]:
        """Requirement IDs with at least one failing check, in run order."""
        return list(dict.fromkeys(r.requirement for r in self.by_status(Status.FAIL)))

    def by_requirement(self) -> dict[str, list[Result]]:
        """Results grouped by requirement ID, in first-seen order."""
        groups: dict[str, list[Result]] = {}
        for r in self.results:
            groups.setdefault(r.requirement, []).append(r)
        return groups

    def outcomes(self) -> dict[str, str]:
        """check ID -> status value: what two runs are compared on."""
        return {r.check: r.status.value for r in self.results}

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's content."""
        verdict = self.verdict
        return {
            "format": "prime-rl-dynamo-conformance/1",
            "verdict": verdict.value,
            "exit_code": self.exit_code,
            "ok": self.ok,
            "incomplete": self.incomplete,
            "not_run": list(self.not_run),
            "inconclusive": self.inconclusive,
            "nothing_checked": self.why_nothing_checked()
            if verdict is Verdict.NOTHING_CHECKED
            else None,
            "target": scrub(self.target),
            "options": scrub(self.options),
            "seed": self.seed,
            "versions": self.versions,
            "started": iso_time(self.started) if self.started else None,
            "finished": iso_time(self.finished) if self.finished else None,
            "duration": round(max(0.0, self.finished - self.started), 3),
            "counts": self.counts(),
            "failed_requirements": self.failed_requirements(),
            "waivers": self.waivers,
            "results": [r.to_dict() for r in self.results],
        }

    def shown(self) -> Report:
        """A copy whose every text is safe to show (``escaping.visible``: no control character,
        escape sequence or lone surrogate from the target), as the terminal, JUnit and HTML
        reports print it."""
        from prime_rl_dynamo.escaping import visible_data

        return replace(
            self,
            target=visible_data(self.target),
            options=visible_data(self.options),
            results=[
                replace(
                    r,
                    message=visible_data(r.message),
                    details=visible_data(r.details),
                    violations=visible_data(tuple(r.violations)),
                )
                for r in self.results
            ],
            not_run=visible_data(list(self.not_run)),
            inconclusive=visible_data(self.inconclusive),
            nothing_checked=visible_data(self.nothing_checked),
            waivers=visible_data(self.waivers),
        )

    def extend(self, results: Iterable[Result]) -> None:
        """Append results (in order)."""
        self.results.extend(results)
