"""Discovery client: polls ``GET /v1/rl/workers`` until a ready snapshot or a deadline.

Transport errors, 5xx and 429 are retried with backoff (POLL-1); not-ready snapshots are pending
(READY-1..6); contract breaks are fatal (POLL-2). Bodies are size-capped (POLL-3), redirects to
another origin and proxy environment are refused (POLL-4), and the deadline error says what was
missing (POLL-5). What "ready" means and how to poll are values (:class:`ReadinessPolicy`,
:class:`PollingPolicy`); this module does the HTTP around them. Async first; ``discover_sync``
is the blocking facade.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from prime_rl_dynamo._bounded import AsyncClosing, BoundedHttp, Reply
from prime_rl_dynamo._negotiation import Negotiation
from prime_rl_dynamo._progress import ProgressSink, TerminalStatus, WaitStatus, progress_sink
from prime_rl_dynamo._urls import check_authority
from prime_rl_dynamo.defaults import MAX_BODY_BYTES
from prime_rl_dynamo.errors import (
    ConfigError,
    NotReadyError,
    PendingError,
    PrimeRLDynamoError,
    ProtocolError,
    TransportError,
)
from prime_rl_dynamo.readiness import (
    MIN_INTERVAL,
    Discovery,
    PollingPolicy,
    ReadinessPolicy,
    Streak,
    assess_snapshot,
    judge,
)
from prime_rl_dynamo.redaction import scrub_error, shown_url
from prime_rl_dynamo.violation import Violation
from prime_rl_dynamo.wire import DISCOVERY_PATH

if TYPE_CHECKING:
    from prime_rl_dynamo._models import Snapshot

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DISCOVERY_PATH",
    "MIN_INTERVAL",
    "Discovery",
    "DiscoveryClient",
    "PollingPolicy",
    "ReadinessPolicy",
    "WaitStatus",
    "assess_snapshot",
    "discover",
    "discover_sync",
    "normalize_discovery_url",
]

#: Default cap on a discovery body (``defaults.MAX_BODY_BYTES``, under the client's historic name).
DEFAULT_MAX_BODY_BYTES = MAX_BODY_BYTES


def normalize_discovery_url(url: str) -> str:
    """The discovery URL for any form users write, or ConfigError for an unusable one.

    ``http://host:8001``, ``.../v1``, ``.../v1/`` and ``.../v1/rl/workers`` all give
    ``http://host:8001/v1/rl/workers``; a path prefix (reverse proxy) is kept.
    """
    if not isinstance(url, str) or not url.strip():
        # Not the repr: a URL object's repr shows its password.
        found = "an empty string" if isinstance(url, str) else f"a {type(url).__name__}"
        raise ConfigError(f"discovery URL must be a non-empty string; found {found}")
    text = url.strip()
    shown = shown_url(text)
    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        if "@" in text:  # httpx quotes the part it choked on, which may be a password
            raise ConfigError(
                f"discovery URL {shown!r} is not a URL: its user info cannot be parsed (not "
                "shown: it may hold a credential; a '/' in a password is written %2F). "
                "Credentials never travel in URLs (CRED-1): pass them as headers instead"
            ) from None
        raise ConfigError(f"discovery URL {shown!r} is not a URL: {exc}") from None
    check_authority(parsed, f"discovery URL {shown!r}")
    if parsed.scheme not in ("http", "https"):
        raise ConfigError(
            f"discovery URL {shown!r} must start with http:// or https:// (found scheme "
            f"{parsed.scheme or 'none'!r}); for example http://frontend:8001"
        )
    if not parsed.host:
        raise ConfigError(f"discovery URL {shown!r} has no host")
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        # Port 0 or 99999 fails every poll until the deadline (30 min by default): refuse it now.
        raise ConfigError(
            f"discovery URL {shown!r} has port {parsed.port}; a TCP port is 1 to 65535"
        )
    if parsed.query or "?" in text:
        raise ConfigError(
            f"discovery URL {shown!r} must not carry a query string (not shown: it may hold a credential)"
        )
    if parsed.fragment or "#" in text:
        raise ConfigError(
            f"discovery URL {shown!r} must not carry a fragment (not shown: it may hold a credential)"
        )
    path = parsed.path.rstrip("/")
    if path.endswith(DISCOVERY_PATH):
        path = path[: -len(DISCOVERY_PATH)]
    elif path.endswith("/v1"):
        path = path[: -len("/v1")]
    return str(parsed.copy_with(path=path + DISCOVERY_PATH))


def _retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        # str.isdigit() also accepts '²' or Arabic-Indic digits (a 0xB2 byte decodes to '²');
        # delta-seconds is ASCII digits only (RFC 9110 §10.2.3).
        return float(value) if value.isascii() else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


class DiscoveryClient(AsyncClosing):
    """Polls one Dynamo frontend's ``/v1/rl/workers`` (owns an HTTP client).

    ``policy`` says what "ready" means (W, model, components, what every worker must list, how
    many identical polls), ``polling`` how to poll (deadline, request timeout, interval, backoff).
    Both are values, passed whole: ``DiscoveryClient(url, ReadinessPolicy(8),
    PollingPolicy(timeout=60))``; ``polling`` defaults to ``PollingPolicy()``.

    ``clock``, ``sleep``, ``wall_clock`` and ``rng`` are injectable so tests control time and
    jitter; ``transport`` swaps the HTTP transport (``httpx.MockTransport`` in unit tests).

    ``progress`` shows the wait: None (default) rewrites one status line on stderr when it is a
    terminal (what the last snapshot lacked), False never, True always, and a callable receives a
    :class:`WaitStatus` after every poll. ``verify`` is httpx's: True (the system CA bundle),
    a CA bundle path, an ``ssl.SSLContext``, or False (no certificate check).
    """

    def __init__(
        self,
        url: str,
        policy: ReadinessPolicy,
        polling: PollingPolicy | None = None,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        headers: Mapping[str, str] | None = None,
        trust_env: bool = False,
        verify: bool | str | ssl.SSLContext = True,
        progress: bool | ProgressSink | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        protocol: str = "auto",
    ) -> None:
        self.url = normalize_discovery_url(url)
        if protocol not in ("auto", "v1"):
            raise ConfigError(
                f"protocol must be 'auto' (ask for 2, accept 1) or 'v1'; found {protocol!r}"
            )
        self.policy: ReadinessPolicy = _checked(ReadinessPolicy, policy, "policy")
        self.polling: PollingPolicy = _checked(
            PollingPolicy, PollingPolicy() if polling is None else polling, "polling"
        )
        if (
            isinstance(max_body_bytes, bool)
            or not isinstance(max_body_bytes, int)
            or max_body_bytes < 1
        ):
            raise ConfigError(f"max_body_bytes must be >= 1; found {max_body_bytes}")
        # Protocol 2 when the server speaks it, else 1 (SPEC-v2.md, V2-8).
        self._protocol = Negotiation(self.url, enabled=protocol == "auto")
        self._clock = clock
        self._wall_clock = wall_clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.progress = progress
        # Redirects are handled by hand (same origin only); proxies only when asked (POLL-4).
        self.http = BoundedHttp(
            max_body_bytes=max_body_bytes,
            timeout=self.polling.request_timeout,
            headers=headers,
            verify=verify,
            trust_env=trust_env,
            transport=transport,
        )

    @property
    def max_body_bytes(self) -> int:
        """The cap on a listing's body, in bytes (POLL-3)."""
        return self.http.max_body_bytes

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.http.aclose()

    # --- one GET -----------------------------------------------------------------------------

    @staticmethod
    def _validate(body: Any) -> Snapshot:
        # Imported here: the validator loads the bundled schema, which a plain import should not
        # pay for.
        from prime_rl_dynamo.validate import validate_body

        return validate_body(body)

    async def _exchange(self, budget: float) -> Reply:
        return await self.http.get_same_origin(
            self.url,
            budget=budget,
            headers=self._protocol.headers(self.http.headers),
            redirect_headers=self._protocol.headers(self.http.own_headers),
            params=self._protocol.params(),
        )

    async def fetch(self, *, timeout: float | None = None) -> Snapshot:
        """One GET, validated, within ``timeout`` (default ``request_timeout``) for the whole
        exchange; raises TransportError (transient), PolicyError or ProtocolError (fatal)."""
        response = await self._exchange(self._request_budget(timeout))
        # Off the event loop: a hostile body costs linear time, yet seconds of it at the size cap,
        # and the caller's other tasks (and its deadline) must keep running meanwhile.
        return await asyncio.to_thread(self._classify, response)

    async def fetch_body(self, *, timeout: float | None = None) -> bytes:
        """One GET as :meth:`fetch` makes it (size cap, same-origin redirects, one deadline), the
        body of its 200 answer not validated; TransportError or ProtocolError for another status."""
        response = await self._exchange(self._request_budget(timeout))
        return self._body_of(response)

    def _request_budget(self, timeout: float | None) -> float:
        return self.polling.request_timeout if timeout is None else timeout

    @property
    def protocol_version(self) -> int | None:
        """The protocol the server answered with (2 or 1; None before the first listing)."""
        return self._protocol.version

    async def snapshot(self, *, timeout: float | None = None, wait: float = 0.0) -> Snapshot:
        """One validated snapshot, retrying transport errors, 5xx and 429 until ``timeout``.

        No readiness rules apply: this is what ``AdminPool.verify_topology`` compares to its plan.
        ``wait``: under protocol 2, hold the GET up to that long for the listing to change (the
        change feed, V2-5); under protocol 1 it is ignored.
        """
        request_timeout = self.polling.request_timeout
        budget = request_timeout if timeout is None else float(timeout)
        deadline = self._clock() + budget
        failures = 0
        while True:
            remaining = deadline - self._clock()
            self._protocol.arm_wait(min(wait, max(0.0, min(request_timeout, remaining) - 1)))
            try:
                return await self.fetch(timeout=max(0.001, min(request_timeout, remaining)))
            except TransportError:
                failures += 1
                delay = self.polling.backoff(failures, self._rng)
                if self._clock() + delay >= deadline:
                    raise
            await self._sleep(delay)

    def _classify(self, response: Reply) -> Snapshot:
        # A listing may reflect a request header (a token in a worker label): no error raised
        # from what the server said carries a credential (messages, violations, reasons).
        try:
            return self._classify_raw(response)
        except PrimeRLDynamoError as exc:
            raise scrub_error(exc, self.http.secrets) from exc.__cause__

    def _classify_raw(self, response: Reply) -> Snapshot:
        if response.status == 304:  # protocol 2: the fleet is as the last listing said
            return self._protocol.not_modified(response.url)
        body = self._body_of(response)
        return self._protocol.accept(response.headers, body, self._validate)

    def _body_of(self, response: Reply) -> bytes:
        status = response.status
        preview = self.http.scrub(response.body[:300].decode("utf-8", "replace"))
        if status == 429 or status >= 500:
            raise TransportError(
                f"POLL-1: GET {response.url} answered {status}: {preview}",
                requirement="POLL-1",
                url=response.url,
                status_code=status,
            )
        if status != 200:
            raise ProtocolError(
                f"POLL-2: GET {response.url} answered {status} (expected 200); fatal, not retried: {preview}",
                violations=[Violation("HTTP-1", "", f"status {status}, expected 200")],
                requirement="POLL-2",
                body=response.body,
                status_code=status,
                headers=response.headers,
            )
        return response.body

    # --- polling -----------------------------------------------------------------------------

    async def poll_once(self, previous: Discovery | None = None) -> Discovery:
        """One poll: a Discovery when ready, PendingError when not (READY-4 compares to ``previous``)."""
        snapshot = await self.fetch()
        try:
            return judge(self.policy, snapshot, previous, url=self.url, polls=1, elapsed=0.0)
        except PendingError as exc:
            raise scrub_error(exc, self.http.secrets) from None

    async def wait_ready(self, *, timeout: float | None = None) -> Discovery:
        """Poll until a ready snapshot (returned) or the deadline (NotReadyError, POLL-5)."""
        budget = self.polling.timeout if timeout is None else float(timeout)
        sink = progress_sink(self.progress)
        try:
            return await _Wait(self, budget, sink).run()
        finally:
            if isinstance(sink, TerminalStatus):
                sink.close()


_P = TypeVar("_P", ReadinessPolicy, PollingPolicy)


def _checked(kind: type[_P], value: object, name: str) -> _P:
    """``value`` when it is a ``kind``, else ConfigError saying what came."""
    if not isinstance(value, kind):
        found = "None" if value is None else f"a {type(value).__name__}"
        raise ConfigError(f"{name} must be a {kind.__name__}; found {found}")
    return value


class _Wait:
    """One ``wait_ready``: polls until a Streak says ready, retrying transient failures with
    backoff (and a server's Retry-After), until the deadline."""

    def __init__(self, client: DiscoveryClient, budget: float, sink: ProgressSink | None) -> None:
        self.client = client
        self.polling = client.polling
        self.budget = budget
        self.sink = sink
        self.start = client._clock()
        self.deadline = self.start + budget
        self.polls = 0
        self.failures = 0
        self.streak = Streak(client.policy, client.url)
        self.pending: PendingError | None = None
        self.failure: TransportError | None = None

    def left(self) -> float:
        return self.deadline - self.client._clock()

    async def run(self) -> Discovery:
        while True:
            if self.left() <= 0:
                raise self.gave_up()
            self.polls += 1
            ready, delay, retry_after = await self.poll()
            if ready is not None:
                return ready
            if retry_after is not None:
                left = self.left()
                if retry_after > left:
                    raise self.gave_up(
                        f"the server asked to retry after {retry_after:.1f} s, past the deadline "
                        f"({left:.1f} s left)"
                    )
                delay = max(delay, retry_after)
            self.report()
            delay = min(delay, max(0.0, self.left()))
            if delay > 0:
                await self.client._sleep(delay)

    async def poll(self) -> tuple[Discovery | None, float, float | None]:
        """One poll: (the ready Discovery or None, the pause before the next, a Retry-After)."""
        client = self.client
        response: Reply | None = None
        started = client._clock()
        try:
            response = await client._exchange(min(self.polling.request_timeout, self.left()))
            snapshot = client._classify(response)
        except TransportError as exc:
            self.failure = exc
            self.failures += 1
            self.streak.broken()  # a failed poll breaks the READY-4 streak
            retry_after = None
            if response is not None:
                retry_after = _retry_after(
                    response.headers.get("retry-after"), client._wall_clock()
                )
            return None, self.polling.backoff(self.failures, client._rng), retry_after
        self.failures = 0
        self.failure = None
        try:
            ready = self.streak.judge(
                snapshot, polls=self.polls, elapsed=client._clock() - self.start
            )
        except PendingError as exc:
            self.pending = scrub_error(exc, client.http.secrets)
            ready = None
        # Under v2 the next GET may wait for a change itself, but a server that answers at once
        # (an ETag that changes every time, a cache answering If-None-Match) must not be polled
        # faster than the interval: the time this poll took counts, the rest is slept.
        pause = client._protocol.next_delay(self.polling.poll_interval, self.wait_budget())
        floor = self.polling.poll_interval - (client._clock() - started)
        return ready, max(pause, floor), None

    def wait_budget(self) -> float:
        # Under v2 the next GET waits for a change instead of the client sleeping; it must end
        # well inside its own request timeout and the deadline (a hold that reached the deadline
        # would be cut by it and read as a failed poll). Less than a second left: sleep instead.
        polling = self.polling
        return max(0.0, min(polling.poll_interval, polling.request_timeout - 1, self.left() - 1))

    def report(self) -> None:
        if self.sink is None:
            return
        self.sink(
            WaitStatus(
                url=self.client.url,
                polls=self.polls,
                elapsed=self.client._clock() - self.start,
                timeout=self.budget,
                reasons=self.pending.reasons if self.pending else (),
                failure=str(self.failure) if self.failure else None,
            )
        )

    def gave_up(self, extra: str | None = None) -> NotReadyError:
        lines = [str(r) for r in self.pending.reasons] if self.pending is not None else []
        if self.failure is not None:
            lines.append(f"last poll failed: {self.failure}")
        if extra:
            lines.append(extra)
        if not lines:
            lines.append("no poll completed")
        elapsed = self.client._clock() - self.start
        return NotReadyError(
            f"POLL-5: {self.client.url} not ready after {elapsed:.1f} s and {self.polls} poll(s); "
            "the last snapshot lacked: " + "; ".join(lines),
            reasons=self.pending.reasons if self.pending is not None else (),
            last=self.pending.discovery if self.pending is not None else None,
            failure=self.failure,
        )


async def discover(
    url: str, policy: ReadinessPolicy, polling: PollingPolicy | None = None, **options: Any
) -> Discovery:
    """Wait for a ready snapshot at ``url`` (``options``: DiscoveryClient's other keywords)."""
    async with DiscoveryClient(url, policy, polling, **options) as client:
        return await client.wait_ready()


def discover_sync(
    url: str, policy: ReadinessPolicy, polling: PollingPolicy | None = None, **options: Any
) -> Discovery:
    """Blocking facade of :func:`discover` (runs its own event loop; not for use inside one)."""
    return asyncio.run(discover(url, policy, polling, **options))
