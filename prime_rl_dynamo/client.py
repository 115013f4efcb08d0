"""Discovery client: polls ``GET /v1/rl/workers`` until a ready snapshot or a deadline.

Transport errors, 5xx and 429 are retried with backoff (POLL-1); not-ready snapshots are pending
(READY-1..6); contract breaks are fatal (POLL-2). Bodies are size-capped (POLL-3), redirects to
another origin and proxy environment are refused (POLL-4), and the deadline error says what was
missing (POLL-5). Async first; ``discover_sync`` is the blocking facade.
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import math
import random
import ssl
import time
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from prime_rl_dynamo._http import (
    origin_text,
    redact_url,
    scrub,
    secret_values,
    tls_context,
)
from prime_rl_dynamo._negotiation import Negotiation
from prime_rl_dynamo._progress import ProgressSink, TerminalStatus, WaitStatus, progress_sink
from prime_rl_dynamo._urls import admin_key, host_problem
from prime_rl_dynamo.errors import (
    ConfigError,
    NotReadyError,
    PendingError,
    ProtocolError,
    TransportError,
    Violation,
)
from prime_rl_dynamo.plan import (
    BroadcastPlan,
    Convention,
    PlannableWorker,
    canonical_key,
    canonical_order,
    plan_broadcast,
    topology_diff,
)

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "Discovery",
    "DiscoveryClient",
    "WaitStatus",
    "assess_snapshot",
    "discover",
    "discover_sync",
    "normalize_discovery_url",
]

#: Default cap on a discovery body: ~30x the size of a 256-engine listing.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
DISCOVERY_PATH = "/v1/rl/workers"
_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_REDIRECTS = 5
_ERROR_BODY_PREVIEW = 2048


class WorkerLike(PlannableWorker, Protocol):
    """What the client reads from a validated worker beyond what a plan needs (validate.Worker
    satisfies it)."""

    @property
    def system_url(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def label(self) -> str: ...


class SnapshotLike(Protocol):
    """What the client reads from a validated snapshot (validate.Snapshot satisfies it)."""

    @property
    def protocol_version(self) -> int: ...
    @property
    def namespace(self) -> str: ...
    @property
    def workers(self) -> Sequence[WorkerLike]: ...


Validator = Callable[[bytes], SnapshotLike]


def _default_validator() -> Validator:
    # Imported lazily: the validator loads the bundled schema, which plain imports should not pay for.
    module = importlib.import_module("prime_rl_dynamo.validate")
    validate_body: Validator = module.validate_body
    return validate_body


def normalize_discovery_url(url: str) -> str:
    """The discovery URL for any form users write, or ConfigError for an unusable one.

    ``http://host:8001``, ``.../v1``, ``.../v1/`` and ``.../v1/rl/workers`` all give
    ``http://host:8001/v1/rl/workers``; a path prefix (reverse proxy) is kept.
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"discovery URL must be a non-empty string; found {url!r}")
    text = url.strip()
    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"discovery URL {text!r} is not a URL: {exc}") from None
    if parsed.userinfo:
        # Never echo the credentials back into logs.
        raise ConfigError(
            "CRED-1: discovery URL carries user info (user:password@); credentials never travel "
            "in URLs: pass them as headers instead",
            requirement="CRED-1",
        )
    if parsed.scheme not in ("http", "https"):
        raise ConfigError(
            f"discovery URL {text!r} must start with http:// or https:// (found scheme "
            f"{parsed.scheme or 'none'!r}); for example http://frontend:8001"
        )
    problem = host_problem(parsed.raw_host.decode("ascii", "replace"))
    if problem is not None:  # reading parsed.host would raise idna.IDNAError
        raise ConfigError(f"discovery URL {text!r} has an unusable host: {problem}")
    if not parsed.host:
        raise ConfigError(f"discovery URL {text!r} has no host")
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        # Port 0 or 99999 fails every poll until the deadline (30 min by default): refuse it now.
        raise ConfigError(
            f"discovery URL {text!r} has port {parsed.port}; a TCP port is 1 to 65535"
        )
    if parsed.query or "?" in text:
        raise ConfigError(f"discovery URL {text!r} must not carry a query string")
    if parsed.fragment or "#" in text:
        raise ConfigError(f"discovery URL {text!r} must not carry a fragment")
    path = parsed.path.rstrip("/")
    if path.endswith(DISCOVERY_PATH):
        path = path[: -len(DISCOVERY_PATH)]
    elif path.endswith("/v1"):
        path = path[: -len("/v1")]
    return str(parsed.copy_with(path=path + DISCOVERY_PATH))


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    # raw_host (the A-label form) never raises, where url.host decodes punycode and may
    host = url.raw_host.decode("ascii", "replace").lower()
    return (url.scheme, host, url.port or default)


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


class _BoundedDecoder:
    """Content decoding that never produces more than asked for, so a gzip bomb hits the cap.

    gzip per RFC 1952: a body is one or more members, each whole (its CRC-32 and ISIZE checked);
    a body cut short, a bad trailer or bytes after the last member are one error, a retried
    POLL-1 failure (what a broken transfer looks like). ``deflate`` is RFC 1950 zlib, alike.
    """

    def __init__(self, encoding: str, url: str) -> None:
        encoding = encoding.strip().lower()
        self._url = url
        self._name = encoding
        self._wbits = 0
        self._zlib: Any = None
        self._fed = False  # the current member has received bytes
        if encoding in ("", "identity"):
            pass
        elif encoding in ("gzip", "x-gzip"):
            self._wbits = 16 + zlib.MAX_WBITS
        elif encoding == "deflate":
            self._wbits = zlib.MAX_WBITS
        else:
            raise TransportError(
                f"POLL-3: {url} answered with Content-Encoding {encoding!r}, which this client does "
                "not decode under its size cap (it asks for identity)",
                requirement="POLL-3",
                url=url,
                retryable=False,
            )
        if self._wbits:
            self._zlib = zlib.decompressobj(self._wbits)

    def _broken(self, detail: str) -> TransportError:
        return TransportError(
            f"POLL-1: the {self._name} body from {self._url} did not arrive intact ({detail}); "
            "retried as a broken transfer",
            requirement="POLL-1",
            url=self._url,
            retryable=True,
        )

    def feed(self, chunk: bytes, room: int) -> bytes:
        """Decode ``chunk``, stopping once ``room`` bytes are out (the caller then refuses)."""
        if self._zlib is None:
            return chunk
        out = bytearray()
        data = chunk
        try:
            while data and len(out) < room:
                if self._zlib.eof:  # a member ended: what follows must be another whole member
                    if self._wbits == zlib.MAX_WBITS or not data.startswith(
                        b"\x1f\x8b"[: len(data)]
                    ):
                        raise self._broken(
                            f"{len(data)}+ bytes after the end of the compressed data"
                        )
                    self._zlib = zlib.decompressobj(self._wbits)
                self._fed = True
                out += self._zlib.decompress(data, max(1, room - len(out)))
                data = self._zlib.unused_data if self._zlib.eof else self._zlib.unconsumed_tail
        except zlib.error as exc:
            text = str(exc)
            detail = (
                "a CRC-32 that does not match" if "data check" in text
                else "an ISIZE that does not match the length" if "length check" in text
                else text
            )  # fmt: skip
            raise self._broken(detail) from None
        return bytes(out)

    def finish(self) -> None:
        """Refuse a body whose last member is incomplete (no trailer, or cut anywhere)."""
        if self._zlib is not None and self._fed and not self._zlib.eof:
            raise self._broken("cut short: the compressed data or its trailer is missing")


async def _raw_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The undecoded body, chunk by chunk (responses built in memory are already read)."""
    if response.is_stream_consumed:
        yield response.content
        return
    async for chunk in response.aiter_raw():
        yield chunk


@dataclass(frozen=True, slots=True)
class _Response:
    url: str
    status: int
    headers: httpx.Headers
    body: bytes


@dataclass(frozen=True)
class Discovery:
    """A ready snapshot: the validated body and the matching workers in canonical order."""

    url: str
    snapshot: SnapshotLike
    workers: tuple[WorkerLike, ...]
    inference_world_size: int | None
    polls: int = 1
    elapsed: float = 0.0

    @property
    def world_size_sum(self) -> int:
        """Sum of the matching workers' world sizes."""
        return sum(w.world_size or 0 for w in self.workers)

    def plan(
        self,
        convention: Convention | str = Convention.PRIME_NCCL,
        *,
        trainer_world_size: int = 1,
        inference_world_size: int | None = None,
    ) -> BroadcastPlan:
        """The broadcast plan for these workers (TopologyError when it cannot cover [0, W)).

        W is the operator's (``inference_world_size`` here or the client's); it is never derived
        from the listing (READY-3), so a discovery without one needs it passed.
        """
        world = (
            inference_world_size if inference_world_size is not None else self.inference_world_size
        )
        if world is None:
            raise ConfigError(
                f"READY-3: no inference_world_size to plan with (the listing sums to "
                f"{self.world_size_sum}, but W comes from the operator and is never derived from "
                "it): pass plan(inference_world_size=W)",
                requirement="READY-3",
            )
        return plan_broadcast(
            self.workers, world, convention, trainer_world_size=trainer_world_size
        )


def _fingerprint(workers: Sequence[WorkerLike]) -> tuple[Any, ...]:
    return tuple(
        (canonical_key(w), w.admin_base_url, w.world_size, w.system_url, w.model, w.error)
        for w in workers
    )


def _matches(worker: WorkerLike, model: str | None, components: Collection[str] | None) -> bool:
    if components is not None and worker.component not in components:
        return False
    # Dynamo omits `model` when it does not know it (and always after a failed probe), so an absent
    # model cannot exclude a worker (SPEC §9, READY-5); the sum check (READY-3) guards the rest.
    return model is None or worker.model is None or worker.model == model


def assess_snapshot(
    snapshot: SnapshotLike,
    *,
    inference_world_size: int | None,
    model: str | None = None,
    components: Collection[str] | None = None,
    require_admin: bool = True,
    require_world_size: bool | None = None,
) -> tuple[tuple[WorkerLike, ...], list[str]]:
    """The matching workers (canonical order) and the reasons this snapshot is not ready.

    Pure: no I/O. An empty reason list means ready (apart from READY-4, which needs two polls).
    Raises ProtocolError (POLL-2) for duplicate identities or admin URLs among matching workers.
    """
    if require_world_size is None:
        require_world_size = inference_world_size is not None
    matching = tuple(canonical_order(w for w in snapshot.workers if _matches(w, model, components)))
    violations: list[Violation] = []
    for key, n in Counter(canonical_key(w) for w in matching).items():
        if n > 1:
            label = f"{key[0]}.{key[1]}.{key[2]}#{key[3]}"
            violations.append(
                Violation("LIST-2", "/workers", f"identity listed {n} times", worker=label)
            )
    admins: dict[str, list[str]] = {}
    for w in matching:
        if w.admin_base_url is not None:
            # The validator's comparison (SPEC LIST-6): the endpoint the admin pool calls.
            admins.setdefault(admin_key(w.admin_base_url), []).append(w.label)
    for url, labels in admins.items():
        if len(labels) > 1:
            violations.append(
                Violation(
                    "LIST-6",
                    "/workers",
                    f"admin_base_url {url} shared by {', '.join(labels)}",
                    worker=labels[0],
                )
            )
    if violations:
        raise ProtocolError(
            "POLL-2: fatal, not retried: " + "; ".join(str(v) for v in violations),
            violations=violations,
            requirement="POLL-2",
        )
    reasons: list[str] = []
    scope = f"model {model!r}" if model is not None else "any model"
    if components is not None:
        scope += f", components {sorted(components)}"
    if not matching:
        others = ", ".join(f"{w.label} (model {w.model!r})" for w in snapshot.workers) or "none"
        reasons.append(f"READY-6: no worker matches {scope}; listed: {others}")
        return matching, reasons
    for w in matching:
        if w.error is not None:
            reasons.append(f"READY-1: {w.label} reports error: {w.error}")
    for w in matching:
        if w.error is not None:
            continue
        lacks = []
        if require_admin and w.admin_base_url is None:
            lacks.append("admin_base_url")
        if require_world_size and w.world_size is None:
            lacks.append("world_size")
        if lacks:
            reasons.append(
                f"READY-2: {w.label} lacks {' and '.join(lacks)}, which the weight-transfer mode needs"
            )
    if inference_world_size is not None:
        total = sum(w.world_size or 0 for w in matching if w.error is None)
        if total != inference_world_size:
            sizes = ", ".join(
                f"{w.label}={'error' if w.error is not None else w.world_size if w.world_size is not None else '?'}"
                for w in matching
            )
            reasons.append(
                f"READY-3: world sizes sum to {total}, expected inference_world_size "
                f"{inference_world_size} ({sizes})"
            )
    return matching, reasons


#: The shortest poll interval, backoff and request timeout a client accepts (seconds).
MIN_INTERVAL = 0.001


def _check_seconds(name: str, value: object, *, minimum: float) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < minimum
    ):
        what = (
            "a finite number >= 0" if minimum == 0 else f"a finite number of seconds >= {minimum}"
        )
        raise ConfigError(f"{name} must be {what}; found {value!r}")


class DiscoveryClient:
    """Polls one Dynamo frontend's ``/v1/rl/workers`` (owns an ``httpx.AsyncClient``).

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
        *,
        inference_world_size: int | None,
        model: str | None = None,
        components: Collection[str] | None = None,
        require_admin: bool = True,
        require_world_size: bool | None = None,
        timeout: float = 1800.0,
        request_timeout: float = 30.0,
        poll_interval: float = 1.0,
        backoff_initial: float = 0.1,
        backoff_max: float = 5.0,
        stable_polls: int = 2,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        headers: Mapping[str, str] | None = None,
        trust_env: bool = False,
        verify: bool | str | ssl.SSLContext = True,
        progress: bool | ProgressSink | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        validator: Validator | None = None,
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
        # Protocol 2 when the server speaks it, else 1 (SPEC-v2.md, V2-8).
        self._protocol = Negotiation(self.url, enabled=protocol == "auto")
        if inference_world_size is not None and (
            isinstance(inference_world_size, bool)
            or not isinstance(inference_world_size, int)
            or inference_world_size <= 0
        ):
            raise ConfigError(
                f"inference_world_size must be an integer > 0 or None; found {inference_world_size!r}"
            )
        if inference_world_size is None and require_world_size is not False:
            raise ConfigError(
                "READY-3: inference_world_size is required: W comes from the operator and is never "
                "derived from the listing (only a transfer that needs no world sizes, "
                "require_world_size=False, may leave it None)",
                requirement="READY-3",
            )
        _check_seconds("timeout", timeout, minimum=0.0)
        # Zero would poll or retry in a tight loop, and a zero request timeout fails every request
        # until the deadline: each needs at least a millisecond.
        for name, value in (
            ("request_timeout", request_timeout),
            ("poll_interval", poll_interval),
            ("backoff_initial", backoff_initial),
            ("backoff_max", backoff_max),
        ):
            _check_seconds(name, value, minimum=MIN_INTERVAL)
        if stable_polls < 1:
            raise ConfigError(f"stable_polls must be >= 1; found {stable_polls}")
        if max_body_bytes < 1:
            raise ConfigError(f"max_body_bytes must be >= 1; found {max_body_bytes}")
        self.inference_world_size = inference_world_size
        self.model = model
        self.components = frozenset(components) if components is not None else None
        self.require_admin = require_admin
        self.require_world_size = require_world_size
        self.timeout = float(timeout)
        self.request_timeout = float(request_timeout)
        self.poll_interval = float(poll_interval)
        self.backoff_initial = float(backoff_initial)
        self.backoff_max = float(backoff_max)
        self.stable_polls = stable_polls
        self.max_body_bytes = max_body_bytes
        self._validator = validator
        self._clock = clock
        self._wall_clock = wall_clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.progress = progress
        # The client owns Accept-Encoding: a caller's "gzip" must not reopen the bomb (POLL-3).
        self._own_headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
        # A gateway echoing a credential back (a 401 quoting it) must not put it in a message.
        self._secrets = secret_values(headers or {})
        self._headers = {
            **{k: v for k, v in (headers or {}).items() if k.lower() != "accept-encoding"},
            **self._own_headers,
        }
        # Redirects are handled by hand (same origin only); proxies only when asked (POLL-4).
        self._http = httpx.AsyncClient(
            verify=tls_context() if verify is True else tls_context(verify),
            follow_redirects=False,
            trust_env=trust_env,
            transport=transport,
            timeout=self.request_timeout,
        )

    async def __aenter__(self) -> DiscoveryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._http.aclose()

    # --- one GET -----------------------------------------------------------------------------

    async def _get(self, timeout: float) -> _Response:
        url = httpx.URL(self.url)
        headers = self._headers
        for _ in range(_MAX_REDIRECTS + 1):
            request = self._http.build_request(
                "GET",
                url,
                headers=self._protocol.headers(headers),
                params=self._protocol.params(),
                timeout=timeout,
            )
            try:
                response = await self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                raise TransportError(
                    scrub(f"POLL-1: GET {url} failed: {type(exc).__name__}: {exc}", self._secrets),
                    requirement="POLL-1",
                    url=str(url),
                ) from exc
            except UnicodeError as exc:  # httpx reads a redirect's Location host even unfollowed
                raise TransportError(
                    f"POLL-4: {url} redirects to a Location whose host is not valid punycode "
                    f"({exc}); not followed",
                    requirement="POLL-4",
                    url=str(url),
                    retryable=False,
                ) from None
            try:
                if response.status_code in _REDIRECTS and "location" in response.headers:
                    location = response.headers["location"]
                    try:
                        target: httpx.URL | None = url.join(location)
                    except httpx.InvalidURL:
                        target = None
                    unusable = (
                        host_problem(target.raw_host.decode("ascii", "replace"))
                        if target is not None
                        else None
                    )
                    if (
                        target is None
                        or unusable is not None
                        or _origin(target) != _origin(url)
                        or target.userinfo
                    ):
                        if target is None:
                            why = "which is not a URL"
                        elif unusable is not None:  # origin_text would read an invalid host
                            why = f"whose host is unusable ({unusable})"
                        elif target.userinfo:
                            why = "which carries user info (CRED-1)"
                        else:
                            why = f"on another origin {origin_text(target)}"
                        raise TransportError(
                            f"POLL-4: {url} answered {response.status_code} with Location "
                            f"{redact_url(location)!r}, {why}; not followed",
                            requirement="POLL-4",
                            url=str(url),
                            status_code=response.status_code,
                            retryable=False,
                        )
                    url = target
                    # CRED-4: the caller's headers (credentials among them) never cross a
                    # redirect, not even to the same origin; only the client's own go along.
                    headers = self._own_headers
                    continue
                if response.status_code == 200:
                    body = await self._read_capped(response, str(url))
                else:
                    body = await self._read_preview(response)
                return _Response(str(url), response.status_code, response.headers, body)
            except httpx.TransportError as exc:
                raise TransportError(
                    scrub(
                        f"POLL-1: reading {url} failed: {type(exc).__name__}: {exc}", self._secrets
                    ),
                    requirement="POLL-1",
                    url=str(url),
                ) from exc
            finally:
                await response.aclose()
        raise TransportError(
            f"POLL-4: more than {_MAX_REDIRECTS} redirects from {self.url}",
            requirement="POLL-4",
            url=self.url,
            retryable=False,
        )

    async def _read_preview(self, response: httpx.Response) -> bytes:
        # Only for error messages: a bounded prefix is enough and never parsed as a listing.
        out = bytearray()
        async for chunk in _raw_chunks(response):
            out += chunk
            if len(out) >= _ERROR_BODY_PREVIEW:
                break
        return bytes(out[:_ERROR_BODY_PREVIEW])

    async def _read_capped(self, response: httpx.Response, url: str) -> bytes:
        cap = self.max_body_bytes

        def too_big(detail: str) -> TransportError:
            return TransportError(
                f"POLL-3: body from {url} exceeds the {cap}-byte cap ({detail}); refused, not truncated",
                requirement="POLL-3",
                url=url,
                status_code=response.status_code,
                retryable=False,
            )

        length = response.headers.get("content-length", "").strip()
        encoding = response.headers.get("content-encoding", "identity")
        if response.is_stream_consumed:
            encoding = (
                "identity"  # an in-memory response (e.g. a mock transport) is already decoded
            )
        if length.isdigit() and int(length) > cap and encoding.strip().lower() in ("", "identity"):
            raise too_big(f"Content-Length {length}")
        decoder = _BoundedDecoder(encoding, url)
        out = bytearray()
        async for chunk in _raw_chunks(response):
            out += decoder.feed(chunk, cap - len(out) + 1)
            if len(out) > cap:
                raise too_big(
                    f"more than {cap} bytes {'decoded' if encoding != 'identity' else 'received'}"
                )
        decoder.finish()
        return bytes(out)

    def _validate(self, body: bytes) -> SnapshotLike:
        if self._validator is None:
            self._validator = _default_validator()
        return self._validator(body)

    async def _exchange(self, budget: float) -> _Response:
        """One GET whose whole exchange (connect, redirects, head and body) ends within ``budget``.

        httpx's timeouts bound each read, so a server dribbling a byte a second would otherwise
        keep one GET alive for as long as it likes.
        """
        budget = max(budget, 0.001)
        try:
            return await asyncio.wait_for(self._get(budget), timeout=budget)
        except asyncio.TimeoutError:
            raise TransportError(
                f"POLL-1: GET {self.url} did not finish within {budget:.1f} s (connect, headers "
                "and body together); given up",
                requirement="POLL-1",
                url=self.url,
            ) from None

    async def fetch(self, *, timeout: float | None = None) -> SnapshotLike:
        """One GET, validated, within ``timeout`` (default ``request_timeout``) for the whole
        exchange; raises TransportError (retryable or not) or ProtocolError."""
        response = await self._exchange(self.request_timeout if timeout is None else timeout)
        # Off the event loop: a hostile body costs linear time, yet seconds of it at the size cap,
        # and the caller's other tasks (and its deadline) must keep running meanwhile.
        return await asyncio.to_thread(self._classify, response)

    async def fetch_body(self, *, timeout: float | None = None) -> bytes:
        """One GET as :meth:`fetch` makes it (size cap, same-origin redirects, one deadline), the
        body of its 200 answer not validated; TransportError or ProtocolError for another status."""
        response = await self._exchange(self.request_timeout if timeout is None else timeout)
        return self._body_of(response)

    @property
    def protocol_version(self) -> int | None:
        """The protocol the server answered with (2 or 1; None before the first listing)."""
        return self._protocol.version

    async def snapshot(self, *, timeout: float | None = None, wait: float = 0.0) -> SnapshotLike:
        """One validated snapshot, retrying transport errors, 5xx and 429 until ``timeout``.

        No readiness rules apply: this is what ``AdminPool.verify_topology`` compares to its plan.
        ``wait``: under protocol 2, hold the GET up to that long for the listing to change (the
        change feed, V2-5); under protocol 1 it is ignored.
        """
        budget = self.request_timeout if timeout is None else float(timeout)
        deadline = self._clock() + budget
        failures = 0
        while True:
            remaining = deadline - self._clock()
            self._protocol.arm_wait(min(wait, max(0.0, min(self.request_timeout, remaining) - 1)))
            try:
                return await self.fetch(timeout=max(0.001, min(self.request_timeout, remaining)))
            except TransportError as exc:
                failures += 1
                delay = self._backoff(failures)
                if not exc.retryable or self._clock() + delay >= deadline:
                    raise
            await self._sleep(delay)

    def _classify(self, response: _Response) -> SnapshotLike:
        if response.status == 304:  # protocol 2: the fleet is as the last listing said
            return self._protocol.not_modified(response.url)
        body = self._body_of(response)
        return self._protocol.accept(response.headers, body, self._validate)

    def _body_of(self, response: _Response) -> bytes:
        status = response.status
        preview = scrub(response.body[:300].decode("utf-8", "replace"), self._secrets)
        if status == 429 or status >= 500:
            raise TransportError(
                f"POLL-1: GET {response.url} answered {status}: {preview}",
                requirement="POLL-1",
                url=response.url,
                status_code=status,
                retryable=True,
            )
        if status != 200:
            raise ProtocolError(
                f"POLL-2: GET {response.url} answered {status} (expected 200); fatal, not retried: {preview}",
                violations=[Violation("HTTP-1", "", f"status {status}, expected 200")],
                requirement="POLL-2",
                body=response.body,
            )
        return response.body

    # --- polling -----------------------------------------------------------------------------

    def _backoff(self, failures: int) -> float:
        # The exponent is capped before exponentiating: after ~1,000 failures (an hour of outage)
        # 2**failures would overflow a float. 2**64 times any interval >= 1 ms exceeds every cap.
        exponent = min(max(0, failures - 1), 64)
        ceiling = min(self.backoff_max, self.backoff_initial * 2.0**exponent)
        # "Equal jitter": at least half the ceiling, so retries spread without collapsing to zero.
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    async def poll_once(self, previous: Discovery | None = None) -> Discovery:
        """One poll: a Discovery when ready, PendingError when not (READY-4 compares to ``previous``)."""
        snapshot = await self.fetch()
        return self._ready_or_pending(snapshot, previous, polls=1, elapsed=0.0)

    def _ready_or_pending(
        self, snapshot: SnapshotLike, previous: Discovery | None, *, polls: int, elapsed: float
    ) -> Discovery:
        matching, reasons = assess_snapshot(
            snapshot,
            inference_world_size=self.inference_world_size,
            model=self.model,
            components=self.components,
            require_admin=self.require_admin,
            require_world_size=self.require_world_size,
        )
        current = Discovery(self.url, snapshot, matching, self.inference_world_size, polls, elapsed)
        if not reasons and self.stable_polls > 1:
            if previous is None:
                reasons.append(
                    f"READY-4: poll {polls} is the first complete snapshot; waiting for an identical one"
                )
            elif _fingerprint(previous.workers) != _fingerprint(matching):
                diff = topology_diff(previous.workers, matching)
                what = (
                    str(diff).replace("\n", "; ") if diff else "system_url, model or error changed"
                )
                reasons.append(f"READY-4: poll {polls} differs from poll {previous.polls}: {what}")
        if reasons:
            raise PendingError(
                "snapshot not ready: " + "; ".join(reasons),
                reasons=reasons,
                snapshot=current,
                requirement=reasons[0].split(":", 1)[0],
            )
        return current

    async def wait_ready(self, *, timeout: float | None = None) -> Discovery:
        """Poll until a ready snapshot (returned) or the deadline (NotReadyError, POLL-5)."""
        budget = self.timeout if timeout is None else float(timeout)
        sink = progress_sink(self.progress)
        try:
            return await self._wait_ready(budget, sink)
        finally:
            if isinstance(sink, TerminalStatus):
                sink.close()

    async def _wait_ready(self, budget: float, sink: ProgressSink | None) -> Discovery:
        start = self._clock()
        deadline = start + budget
        polls = 0
        failures = 0
        streak = 0
        previous: Discovery | None = None
        last_pending: PendingError | None = None
        last_failure: TransportError | None = None
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise self._not_ready(polls, self._clock() - start, last_pending, last_failure)
            polls += 1
            retry_after: float | None = None
            response: _Response | None = None
            try:
                response = await self._exchange(min(self.request_timeout, remaining))
                snapshot = self._classify(response)
            except TransportError as exc:
                if not exc.retryable:
                    raise
                last_failure = exc
                failures += 1
                previous, streak = None, 0  # a failed poll breaks the READY-4 streak
                delay = self._backoff(failures)
                if response is not None:
                    retry_after = _retry_after(
                        response.headers.get("retry-after"), self._wall_clock()
                    )
            else:
                failures = 0
                last_failure = None
                try:
                    ready = self._ready_or_pending(
                        snapshot, previous, polls=polls, elapsed=self._clock() - start
                    )
                except PendingError as exc:
                    last_pending = exc
                    current = exc.snapshot
                    only_stability = all(r.startswith("READY-4") for r in exc.reasons)
                    # READY-4 pending means this poll starts a new streak of identical snapshots.
                    previous = current if only_stability else None
                    streak = 1 if only_stability else 0
                    delay = self._protocol.next_delay(
                        self.poll_interval, self._wait_budget(deadline)
                    )
                else:
                    streak += 1
                    if streak >= self.stable_polls or self.stable_polls == 1:
                        return ready
                    previous = ready
                    delay = self._protocol.next_delay(
                        self.poll_interval, self._wait_budget(deadline)
                    )
            if retry_after is not None:
                left = deadline - self._clock()
                if retry_after > left:
                    raise self._not_ready(
                        polls,
                        self._clock() - start,
                        last_pending,
                        last_failure,
                        extra=f"the server asked to retry after {retry_after:.1f} s, past the deadline ({left:.1f} s left)",
                    )
                delay = max(delay, retry_after)
            if sink is not None:
                sink(
                    WaitStatus(
                        url=self.url,
                        polls=polls,
                        elapsed=self._clock() - start,
                        timeout=budget,
                        reasons=tuple(last_pending.reasons) if last_pending else (),
                        failure=str(last_failure) if last_failure else None,
                    )
                )
            delay = min(delay, max(0.0, deadline - self._clock()))
            if delay > 0:
                await self._sleep(delay)

    def _wait_budget(self, deadline: float) -> float:
        # Under v2 the next GET waits for a change instead of the client sleeping; it must end
        # well inside its own request timeout and the deadline.
        left = deadline - self._clock()
        return max(0.0, min(self.poll_interval, self.request_timeout - 1, left))

    def _not_ready(
        self,
        polls: int,
        elapsed: float,
        pending: PendingError | None,
        failure: TransportError | None,
        *,
        extra: str | None = None,
    ) -> NotReadyError:
        reasons = list(pending.reasons) if pending is not None else []
        if failure is not None:
            reasons.append(f"last poll failed: {failure}")
        if extra:
            reasons.append(extra)
        if not reasons:
            reasons.append("no poll completed")
        message = (
            f"POLL-5: {self.url} not ready after {elapsed:.1f} s and {polls} poll(s); "
            f"the last snapshot lacked: " + "; ".join(reasons)
        )
        return NotReadyError(
            message, reasons=reasons, snapshot=pending.snapshot if pending else None
        )


async def discover(url: str, *, inference_world_size: int | None, **kwargs: Any) -> Discovery:
    """Wait for a ready snapshot at ``url`` (see DiscoveryClient for the keyword arguments)."""
    async with DiscoveryClient(url, inference_world_size=inference_world_size, **kwargs) as client:
        return await client.wait_ready()


def discover_sync(url: str, *, inference_world_size: int | None, **kwargs: Any) -> Discovery:
    """Blocking facade of :func:`discover` (runs its own event loop; not for use inside one)."""
    return asyncio.run(discover(url, inference_world_size=inference_world_size, **kwargs))
