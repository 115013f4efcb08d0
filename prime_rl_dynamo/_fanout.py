"""The admin pool's transport: one bounded HTTP client per engine, one call, a fan-out.

Each engine's admin URL is checked (CRED-1, WORKER-8) and gets its own client, whose replies the
discovery client's bounded reader reads under a cap. A call always settles into an
:class:`EngineResult` (a timeout, a refused reply or a redirect is a failed result, never an
exception), and a fan-out runs the calls with a concurrency limit, every one settling. What the
calls mean (pause, update, resume, re-verify) is the pool's.
"""

from __future__ import annotations

import asyncio
import json as json_lib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from prime_rl_dynamo._bounded import REDIRECTS, BodyTooLarge, BoundedHttp
from prime_rl_dynamo._urls import check_authority
from prime_rl_dynamo.errors import ConfigError, PolicyError, TransportError
from prime_rl_dynamo.observation import EngineResult
from prime_rl_dynamo.redaction import redact_url as _redact
from prime_rl_dynamo.redaction import scrub, shown_url
from prime_rl_dynamo.wire import WorkerId

__all__ = ["ADMIN_MAX_BODY_BYTES", "AdminEngine", "EngineCalls", "admin_url"]

#: Admin replies are small JSON objects; anything past this is refused, not truncated.
ADMIN_MAX_BODY_BYTES = 1 << 20


@dataclass(frozen=True)
class AdminEngine:
    """One engine the pool drives: its label (worker label or URL) and admin base URL."""

    label: str
    admin_base_url: str
    world_size: int | None = None
    identity: WorkerId | None = None

    def __post_init__(self) -> None:
        if self.identity is not None and not isinstance(self.identity, WorkerId):
            object.__setattr__(self, "identity", WorkerId(*self.identity))


def admin_url(engine: AdminEngine) -> httpx.URL:
    try:
        url = httpx.URL(engine.admin_base_url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"{engine.label}: admin_base_url is not a URL: {exc}") from None
    check_authority(url, f"{engine.label}: admin_base_url", requirement="WORKER-8")
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"WORKER-8: {engine.label}: admin_base_url must be an http(s) URL with a host; found "
            f"{shown_url(engine.admin_base_url)!r}",
            requirement="WORKER-8",
        )
    if url.query or url.fragment:
        raise ConfigError(
            f"WORKER-8: {engine.label}: admin_base_url must carry no query or fragment",
            requirement="WORKER-8",
        )
    # A trailing slash lets httpx append the admin paths under any base path (/admin -> /admin/pause).
    return url.copy_with(path=url.path.rstrip("/") + "/")


class EngineCalls:
    """One bounded HTTP client per engine (base URL its admin URL, its headers), calls and
    fan-outs over them with at most ``max_concurrency`` in flight.

    ``headers`` maps each engine's label to what its calls carry; every value of ``secrets`` is
    scrubbed from replies and messages (an engine echoing a credential back in a 401).
    """

    def __init__(
        self,
        engines: Sequence[AdminEngine],
        headers: Mapping[str, Mapping[str, str]],
        *,
        secrets: tuple[str, ...],
        timeout: float,
        max_concurrency: int,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.engines = tuple(engines)
        self.timeout = timeout
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._secrets = secrets
        self._clients: dict[str, BoundedHttp] = {
            # CRED-4: no redirect is followed, so the credentials never go elsewhere.
            e.label: BoundedHttp(
                max_body_bytes=ADMIN_MAX_BODY_BYTES,
                timeout=timeout,
                headers=headers[e.label],
                base_url=str(admin_url(e)),
                transport=transport,
                session_headers=True,
            )
            for e in self.engines
        }

    def client(self, label: str) -> httpx.AsyncClient:
        """The HTTP client of the engine ``label``."""
        return self._clients[label].client

    async def aclose(self) -> None:
        """Close every engine's HTTP client."""
        await asyncio.gather(*(c.aclose() for c in self._clients.values()))

    async def call(
        self,
        engine: AdminEngine,
        operation: str,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
        status_only: bool = False,
    ) -> EngineResult:
        """``method path`` on one engine within ``timeout`` (default the pool's) for the whole
        exchange, settled into an EngineResult: 2xx with a JSON object not ``status: error`` is
        ok (ADMIN-2); anything else names what came. ``status_only`` (health, ADMIN-1): any 2xx
        is ok, an empty body included (stock vLLM's ``/health``), unless the body is an object
        with ``status: error``."""
        http = self._clients[engine.label]
        budget = timeout or self.timeout

        def failed(error: str, status: int | None = None) -> EngineResult:
            return EngineResult(
                engine.label,
                operation,
                False,
                status,
                error=error,
                elapsed=time.monotonic() - start,
            )

        async with self._semaphore:
            start = time.monotonic()
            try:
                # The whole exchange gets the budget, so an engine that dribbles a byte a second
                # cannot hold verify_topology or health for minutes.
                reply = await http.send(
                    method, path.lstrip("/"), budget=budget, json=json, params=params
                )
            except asyncio.TimeoutError:
                return failed(
                    f"no complete answer within {budget:g} s (the whole exchange); given up"
                )
            except BodyTooLarge as exc:
                return failed(
                    f"reply larger than {exc.cap} bytes; refused, not truncated", exc.status_code
                )
            except (PolicyError, TransportError) as exc:
                return failed(scrub(str(exc), self._secrets))
            except httpx.HTTPError as exc:
                return failed(scrub(f"{type(exc).__name__}: {exc}", self._secrets))
        elapsed = time.monotonic() - start
        status = reply.status
        content = reply.body
        try:
            payload = json_lib.loads(content) if content else None
        except ValueError:
            payload = content[:300].decode("utf-8", "replace")
        if self._secrets:
            payload = scrub(payload, self._secrets)
        error: str | None = None
        if status in REDIRECTS and "location" in reply.headers:
            where = scrub(_redact(reply.headers["location"]), self._secrets)
            error = (
                f"CRED-4: answered a redirect to {where}; admin calls follow no redirect, so "
                "credentials never leave for another URL"
            )
        elif not 200 <= status < 300:
            message = payload.get("message") if isinstance(payload, dict) else payload
            error = f"HTTP {status}: {message}"
        elif isinstance(payload, dict) and payload.get("status") == "error":
            error = f"ADMIN-2: answered {status} with status 'error': {payload!r}"
        elif not isinstance(payload, dict) and not status_only:
            error = (
                f"ADMIN-2: expected a JSON object reply without status 'error'; found {payload!r}"
            )
        return EngineResult(engine.label, operation, error is None, status, payload, error, elapsed)

    async def fanout(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        engines: Sequence[AdminEngine] | None = None,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
        status_only: bool = False,
    ) -> dict[str, EngineResult]:
        """The same call on every engine (or ``engines``), by label; every call settles."""
        targets = self.engines if engines is None else engines
        # Every call settles: one engine failing must not cancel its siblings mid-mutation.
        results = await asyncio.gather(
            *(
                self.call(
                    e,
                    operation,
                    method,
                    path,
                    json=json,
                    params=params,
                    timeout=timeout,
                    status_only=status_only,
                )
                for e in targets
            )
        )
        return {r.engine: r for r in results}
