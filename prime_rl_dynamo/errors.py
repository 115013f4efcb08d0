"""Every exception prime-rl-dynamo raises, in a tree whose branches say what to do.

- :class:`TransportError`: transient (a connection failed, a 5xx, a 429, a broken transfer):
  retry with backoff.
- :class:`PendingError`: the listing is valid but not ready yet: keep polling.
- :class:`Refusal` and its subclasses (:class:`ConfigError`, :class:`ProtocolError`,
  :class:`PolicyError`, :class:`TopologyError`): fatal, never retried; retrying cannot change
  the answer.
- :class:`NotReadyError`: the deadline passed: the wait gave up (it is not a PendingError).

Each error says what was expected, what came, where (JSON pointer, worker label) and which
requirement of schema/SPEC.md it breaks (``requirement``), and carries one payload shape.
Messages never carry a credential: every text that could echo one is scrubbed before it is raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from prime_rl_dynamo._fanout import EngineResult
    from prime_rl_dynamo.readiness import Discovery
    from prime_rl_dynamo.requirements import Reason
    from prime_rl_dynamo.wire import WorkerId

__all__ = [
    "AdminError",
    "ConfigError",
    "DialectError",
    "EngineChange",
    "EngineState",
    "HarnessError",
    "NotReadyError",
    "PendingError",
    "PolicyError",
    "PrimeRLDynamoError",
    "ProtocolError",
    "Refusal",
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
    #: Whether trying again may succeed (only for :class:`TransportError`).
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, requirement: str | None = None) -> None:
        super().__init__(message)
        if requirement is not None:
            self.requirement = requirement


class Refusal(PrimeRLDynamoError):
    """Fatal: a policy, the configuration or the contract refuses this; never retried."""


class ConfigError(Refusal, ValueError):
    """The configuration or a URL given by the user cannot be used."""


class _AtUrl(PrimeRLDynamoError):
    """An error about one HTTP exchange: the URL and, when one came, the status."""

    def __init__(
        self,
        message: str,
        *,
        requirement: str | None = None,
        url: str | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message, requirement=requirement)
        self.url = url
        self.status_code = status_code


class TransportError(_AtUrl):
    """Transient: no usable HTTP response this time (connection, timeout, 5xx, 429, a broken
    transfer); retried with backoff until the deadline."""

    retryable: ClassVar[bool] = True


class PolicyError(Refusal, _AtUrl):
    """A response the client's policy refuses: a body over the size cap or in an encoding it does
    not decode under that cap (POLL-3), a redirect it does not follow (POLL-4)."""


class ProtocolError(Refusal):
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
    """Not ready yet, keep polling: the listing is valid but workers report errors, lack fields,
    do not sum to W or changed since the last poll (READY-1..6).

    ``reasons`` say what is missing (``requirement`` is the first one's); ``discovery`` is what
    this poll found (its matching workers, in canonical order).
    """

    def __init__(self, reasons: Iterable[Reason], *, discovery: Discovery) -> None:
        self.reasons: tuple[Reason, ...] = tuple(reasons)
        if not self.reasons:
            raise ValueError("a PendingError needs at least one reason")
        super().__init__(
            "snapshot not ready: " + "; ".join(str(r) for r in self.reasons),
            requirement=self.reasons[0].requirement,
        )
        self.discovery = discovery


class NotReadyError(PrimeRLDynamoError):
    """Gave up: the deadline passed before a ready snapshot (POLL-5).

    ``reasons``: what the last snapshot lacked (empty when none was read); ``last``: that poll's
    Discovery; ``failure``: the last poll's transport failure, when it failed.
    """

    requirement = "POLL-5"

    def __init__(
        self,
        message: str,
        *,
        reasons: Iterable[Reason] = (),
        last: Discovery | None = None,
        failure: TransportError | None = None,
    ) -> None:
        super().__init__(message)
        self.reasons: tuple[Reason, ...] = tuple(reasons)
        self.last = last
        self.failure = failure


class TopologyError(Refusal):
    """A broadcast plan cannot be built from these engines (refused before any request)."""


@dataclass(frozen=True, slots=True)
class EngineState:
    """One engine as one side of a comparison sees it (a plan, or a listing)."""

    worker: WorkerId
    world_size: int | None
    admin_base_url: str | None
    #: What the engine reports instead of serving (a listing's ``error``), if anything.
    error: str | None = None


@dataclass(frozen=True, slots=True)
class EngineChange:
    """One engine that differs: on one side only (``before`` or ``after`` None), or on both with
    another world size or admin URL."""

    before: EngineState | None
    after: EngineState | None

    @property
    def worker(self) -> WorkerId:
        """The engine's identity."""
        state = self.before or self.after
        assert state is not None
        return state.worker


def _added(change: EngineChange) -> str:
    assert change.after is not None
    return f"{change.worker} (world_size {change.after.world_size}, admin {change.after.admin_base_url})"


def _removed(change: EngineChange) -> str:
    assert change.before is not None
    text = f"{change.worker} (world_size {change.before.world_size}, admin {change.before.admin_base_url})"
    if change.after is not None and change.after.error is not None:
        text += f" -- now reports error: {change.after.error}"
    return text


def _resized(change: EngineChange) -> str:
    assert change.before is not None and change.after is not None
    return f"{change.worker}: world_size {change.before.world_size} -> {change.after.world_size}"


def _moved(change: EngineChange) -> str:
    assert change.before is not None and change.after is not None
    return (
        f"{change.worker}: admin_base_url {change.before.admin_base_url} -> "
        f"{change.after.admin_base_url}"
    )


@dataclass(frozen=True, slots=True)
class TopologyDiff:
    """How a fleet differs from the one a plan was built for (TOPO-1), engine by engine.

    An engine both resized and moved appears in both ``resized`` and ``moved``. ``str()`` renders
    one line per kind of change, for people; code reads the entries.
    """

    added: tuple[EngineChange, ...] = ()
    removed: tuple[EngineChange, ...] = ()
    resized: tuple[EngineChange, ...] = ()
    moved: tuple[EngineChange, ...] = ()

    @classmethod
    def between(cls, before: Iterable[EngineState], after: Iterable[EngineState]) -> TopologyDiff:
        """How ``after`` differs from ``before``, keyed by identity, each kind in canonical order.

        A state of ``after`` that reports an error counts as removed (it serves no rank).
        """
        old = {s.worker: s for s in before}
        new = {s.worker: s for s in after}
        errored = {k: s for k, s in new.items() if s.error is not None}
        live = {k: s for k, s in new.items() if s.error is None}
        common = sorted(old.keys() & live.keys())
        return cls(
            added=tuple(EngineChange(None, live[k]) for k in sorted(live.keys() - old.keys())),
            removed=tuple(
                EngineChange(old[k], errored.get(k)) for k in sorted(old.keys() - live.keys())
            ),
            resized=tuple(
                EngineChange(old[k], live[k])
                for k in common
                if old[k].world_size != live[k].world_size
            ),
            moved=tuple(
                EngineChange(old[k], live[k])
                for k in common
                if old[k].admin_base_url != live[k].admin_base_url
            ),
        )

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.resized or self.moved)

    def lines(self) -> list[str]:
        """One line per kind of change present: ``"added: a; b"``."""
        parts = []
        for name, changes, render in (
            ("added", self.added, _added),
            ("removed", self.removed, _removed),
            ("resized", self.resized, _resized),
            ("moved", self.moved, _moved),
        ):
            if changes:
                parts.append(f"{name}: " + "; ".join(render(c) for c in changes))
        return parts

    def __str__(self) -> str:
        return "\n".join(self.lines()) or "no change"


class TopologyChangedError(TopologyError):
    """The fleet no longer matches the plan (engines added, removed, resized or moved)."""

    requirement = "TOPO-1"

    def __init__(self, message: str, *, diff: TopologyDiff) -> None:
        super().__init__(message)
        self.diff = diff


class AdminError(PrimeRLDynamoError):
    """An admin call to one or more engines failed; names the engines and what they answered.

    ``results`` maps each phase of the call (``"health"``, or ``"pause"``, ``"update_weights"``
    and ``"resume"`` for a weight update) to every engine's result by label; ``engine`` is the
    first engine that failed.
    """

    def __init__(
        self,
        message: str,
        *,
        engine: str,
        results: Mapping[str, Mapping[str, EngineResult]],
        requirement: str | None = None,
    ) -> None:
        super().__init__(message, requirement=requirement)
        self.engine = engine
        self.results: dict[str, dict[str, EngineResult]] = {
            phase: dict(by_engine) for phase, by_engine in results.items()
        }


class HarnessError(PrimeRLDynamoError):
    """The real Dynamo harness could not start or operate its fleet (says which process and why)."""
