"""Every exception prime-rl-dynamo raises: one shallow tree.

Each error says what was expected, what came, where (JSON pointer, worker identity) and which
requirement of schema/SPEC.md it breaks (``requirement``), so nobody needs a debugger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AdminError",
    "ConfigError",
    "DialectError",
    "HarnessError",
    "NotReadyError",
    "PendingError",
    "PrimeRLDynamoError",
    "ProtocolError",
    "TopologyChangedError",
    "TopologyDiff",
    "TopologyError",
    "TransportError",
    "Violation",
]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken requirement in one place of a discovery body."""

    requirement: str
    pointer: str
    message: str
    worker: str | None = None
    level: str = "MUST"

    def __str__(self) -> str:
        where = self.pointer or "/"
        who = f" [{self.worker}]" if self.worker else ""
        return f"{self.requirement} at {where}{who}: {self.message}"


class PrimeRLDynamoError(Exception):
    """Base of every error this package raises."""

    requirement: str | None = None

    def __init__(self, message: str, *, requirement: str | None = None) -> None:
        super().__init__(message)
        if requirement is not None:
            self.requirement = requirement


class ConfigError(PrimeRLDynamoError, ValueError):
    """The configuration or a URL given by the user cannot be used."""


class TransportError(PrimeRLDynamoError):
    """Could not get a usable HTTP response (connection, timeout, redirect, size cap)."""

    def __init__(
        self,
        message: str,
        *,
        requirement: str | None = None,
        url: str | None = None,
        status_code: int | None = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message, requirement=requirement)
        self.url = url
        self.status_code = status_code
        self.retryable = retryable


class ProtocolError(PrimeRLDynamoError):
    """The response breaks the contract; retrying will not help."""

    def __init__(
        self,
        message: str,
        *,
        violations: list[Violation] | None = None,
        requirement: str | None = None,
        body: bytes | None = None,
    ) -> None:
        self.violations: list[Violation] = list(violations or [])
        if requirement is None and self.violations:
            requirement = self.violations[0].requirement
        super().__init__(message, requirement=requirement)
        self.body = body

    @property
    def requirements(self) -> list[str]:
        """The distinct requirement IDs broken, in order of first appearance."""
        return list(dict.fromkeys(v.requirement for v in self.violations))


class DialectError(ProtocolError):
    """The body is another protocol served at the same path (for instance the SMG gateway's)."""

    requirement = "DIALECT-1"


class PendingError(PrimeRLDynamoError):
    """The snapshot is valid but not ready yet (error workers, missing fields, sum, churn)."""

    def __init__(
        self,
        message: str,
        *,
        reasons: list[str],
        snapshot: Any = None,
        requirement: str | None = None,
    ) -> None:
        super().__init__(message, requirement=requirement)
        self.reasons = list(reasons)
        self.snapshot = snapshot


class NotReadyError(PendingError):
    """The deadline passed before a ready snapshot; says what the last one lacked."""

    requirement = "POLL-5"


class TopologyError(PrimeRLDynamoError):
    """A broadcast plan cannot be built from these engines (refused before any request)."""


@dataclass(frozen=True, slots=True)
class TopologyDiff:
    """How a fleet differs from the one a plan was built for."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    resized: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.resized or self.moved)

    def __str__(self) -> str:
        parts = []
        for name in ("added", "removed", "resized", "moved"):
            items = getattr(self, name)
            if items:
                parts.append(f"{name}: " + "; ".join(items))
        return "\n".join(parts) or "no change"


class TopologyChangedError(TopologyError):
    """The fleet no longer matches the plan (engines added, removed, resized or moved)."""

    requirement = "TOPO-1"

    def __init__(self, message: str, *, diff: TopologyDiff) -> None:
        super().__init__(message)
        self.diff = diff


class AdminError(PrimeRLDynamoError):
    """An admin call to one or more engines failed; names the engines and what they answered."""

    def __init__(
        self,
        message: str,
        *,
        engine: str | None = None,
        results: Any = None,
        requirement: str | None = None,
    ) -> None:
        super().__init__(message, requirement=requirement)
        self.engine = engine
        self.results = results


class HarnessError(PrimeRLDynamoError):
    """The real Dynamo harness could not start or operate its fleet (says which process and why)."""
