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
from typing import TYPE_CHECKING, ClassVar

from prime_rl_dynamo.violation import Violation

if TYPE_CHECKING:
    from prime_rl_dynamo.observation import EngineResult, Observation
    from prime_rl_dynamo.requirements import Reason
    from prime_rl_dynamo.topology_diff import TopologyDiff

__all__ = [
    "AdminError",
    "ConfigError",
    "DataPlaneMissing",
    "DialectError",
    "HarnessError",
    "NotReadyError",
    "PendingError",
    "PolicyError",
    "PrimeRLDynamoError",
    "ProtocolError",
    "Refusal",
    "TopologyChangedError",
    "TopologyError",
    "TransportError",
    "UnsupportedReleaseError",
]


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


class DataPlaneMissing(ConfigError, AttributeError):
    """A data-plane member (``train_client``, ``eval_client``) was read on a pool built without the
    data plane that owns it; an AttributeError too, so ``hasattr`` and protocol checks say no."""


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
    """The response breaks the contract; retrying will not help.

    A refused status (POLL-2) keeps the status and the response's headers (lower-cased names):
    they say who answered and what it asks for, so that a command can add a hint
    (``prime_rl_dynamo.http.status_hint``) without reading the message."""

    def __init__(
        self,
        message: str,
        *,
        violations: list[Violation] | None = None,
        requirement: str | None = None,
        body: bytes | None = None,
        status_code: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.violations: list[Violation] = list(violations or [])
        if requirement is None and self.violations:
            requirement = self.violations[0].requirement
        super().__init__(message, requirement=requirement)
        self.body = body
        self.status_code = status_code
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}

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

    def __init__(self, reasons: Iterable[Reason], *, discovery: Observation) -> None:
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
        last: Observation | None = None,
        failure: TransportError | None = None,
    ) -> None:
        super().__init__(message)
        self.reasons: tuple[Reason, ...] = tuple(reasons)
        self.last = last
        self.failure = failure


class TopologyError(Refusal):
    """A broadcast plan cannot be built from these engines (refused before any request)."""


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


class UnsupportedReleaseError(HarnessError):
    """The installed Dynamo release cannot host the harness's fleet at all (no runtime, or no RL
    listener in it); the message is the one-line reason."""
