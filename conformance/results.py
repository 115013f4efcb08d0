"""Outcomes of conformance checks: five statuses, one result per check, and the run's report.

A *fail* means the target breaks a requirement; an *error* means the suite or the target's harness
broke (nothing was decided about conformance); a *skip* always carries its reason.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Report", "Result", "Status", "redact_urls"]

# scheme://user:password@ -> scheme://***@ (a listed URL may carry credentials: never echo them)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]*@")


def redact_urls(value: Any) -> Any:
    """``value`` with the user info of every URL in its strings replaced by ``***``."""
    if isinstance(value, str):
        return _USERINFO.sub(r"\1***@", value) if "@" in value else value
    if isinstance(value, dict):
        return {k: redact_urls(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_urls(v) for v in value)
    return value


class Status(str, enum.Enum):
    """What one check concluded, ordered from best to worst."""

    PASS = "pass"
    SKIP = "skip"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """Severity: higher is worse (a group shows its worst member)."""
        return _RANK[self]


_RANK = {Status.PASS: 0, Status.SKIP: 1, Status.WARN: 2, Status.FAIL: 3, Status.ERROR: 4}


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

    def __post_init__(self) -> None:
        # Every result passes here: no credential of a listed URL reaches a message or report.
        object.__setattr__(self, "message", redact_urls(self.message))
        object.__setattr__(self, "details", redact_urls(self.details))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = asdict(self)
        data["status"] = self.status.value
        return data


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

    @property
    def ok(self) -> bool:
        """True when nothing failed and nothing errored (warnings and skips are fine)."""
        return not any(r.status in (Status.FAIL, Status.ERROR) for r in self.results)

    @property
    def exit_code(self) -> int:
        """0 when the run is ok, 1 otherwise."""
        return 0 if self.ok else 1

    def counts(self) -> dict[str, int]:
        """How many results have each status (every status present, zeros included)."""
        out = {s.value: 0 for s in Status}
        for r in self.results:
            out[r.status.value] += 1
        return out

    def by_status(self, *statuses: Status) -> list[Result]:
        """The results with any of these statuses, in run order."""
        return [r for r in self.results if r.status in statuses]

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
        return {
            "format": "prime-rl-dynamo-conformance/1",
            "ok": self.ok,
            "target": self.target,
            "options": self.options,
            "seed": self.seed,
            "versions": self.versions,
            "started": self.started,
            "finished": self.finished,
            "counts": self.counts(),
            "failed_requirements": self.failed_requirements(),
            "results": [r.to_dict() for r in self.results],
        }

    def extend(self, results: Iterable[Result]) -> None:
        """Append results (in order)."""
        self.results.extend(results)
