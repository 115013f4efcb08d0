"""The reference RL listener: ``GET``/``HEAD /v1/rl/workers`` as Dynamo 1.6.1 serves it, plus faults.

A plain ASGI application (Starlette's ASGI types, served by uvicorn): the faults need byte-level
control of the answer and of the connection, which a framework response would hide. Other methods get
``405`` with ``Allow: GET,HEAD`` and an empty body, other paths ``404`` with an empty body, as the
real listener answers. Faults (see faults.py) shape each listing request deterministically.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import math
import random
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

from starlette.types import Receive, Scope, Send

from prime_rl_dynamo.suite.reference.breaks import break_body
from prime_rl_dynamo.suite.reference.faults import Fault, parse_faults
from prime_rl_dynamo.suite.reference.listing import (
    WorkerView,
    discovery_failed_body,
    dumps,
    listing_body,
)
from prime_rl_dynamo.suite.reference.state import FleetState, churn_view
from prime_rl_dynamo.suite.reference.variants import variant_body
from prime_rl_dynamo.wire import DISCOVERY_PATH

__all__ = ["DISCOVERY_PATH", "Frontend", "abort_connection"]

# Status faults, checked in this order: the first active one answers.
_STATUS_FAULTS = ("reset", "discovery-failed", "rate-limit", "unavailable")
# How long each listing request takes under the overload faults (concurrent ones meet in it).
_OVERLOAD_HOLD_S = 0.05


class Frontend:
    """ASGI app of the RL listener over a fleet's live state."""

    def __init__(
        self,
        state: FleetState,
        *,
        namespace: str,
        faults: tuple[Fault, ...] | list[str] = (),
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self.namespace = namespace
        self.seed = seed
        self._clock = clock
        self.started = clock()
        self.faults: tuple[Fault, ...] = parse_faults(faults)
        self.faults_since = self.started  # churn periods count from here
        self.listing_requests = 0
        #: Hold the schedule until the first listing request, then count it from there (a
        #: client that takes a while to start still sees the fleet before its changes).
        self.schedule_from_first_listing = False
        self._v2_cache: dict[str, Any] = {}  # the last v2 answer and the state it came from
        self._in_flight = 0  # listing requests being answered (the overload faults)
        self._lagged: list[tuple[int, Any]] = []  # the last bodies answered (the lag fault)

    def set_faults(self, faults: tuple[Fault, ...] | list[str]) -> None:
        """Replace the faults; restart the request count (``:COUNT``) and the churn clock."""
        self.faults = parse_faults(faults)
        self.faults_since = self._clock()
        self.listing_requests = 0
        self._lagged = []

    # -- the listing ---------------------------------------------------------------------------

    def apply_schedule(self) -> None:
        """Apply the topology's schedule up to now (lazily: on every request the fleet serves)."""
        self.state.apply_schedule(self._clock() - self.started)

    def views(self, request_faults: list[Fault]) -> list[WorkerView]:
        """Workers listed now, after the schedule and any churn."""
        now = self._clock()
        self.state.apply_schedule(now - self.started)
        with self.state.lock:
            members = [
                e
                for e in self.state.members()
                if e.spec.namespace == self.namespace or e.spec.namespace.startswith(self.namespace)
            ]
            spares = [e for e in self.state.engines if not e.member and e.alive]
        churn = next((f for f in request_faults if f.name == "churn"), None)
        if churn is not None:
            elapsed = now - self.faults_since
            return churn_view(members, spares, period=churn.number, elapsed=elapsed, seed=self.seed)
        return [e.view() for e in members]

    def body(self, request_faults: list[Fault]) -> tuple[int, Any]:
        """Status and JSON value of one listing under the given active faults."""
        views = self.views(request_faults)
        erroring = next((f for f in request_faults if f.name == "error-workers"), None)
        if erroring is not None:
            views = _with_error_workers(views, int(erroring.number), self.seed)
        if any(f.name == "renumber" for f in request_faults):  # as if every worker had restarted
            views = [dataclasses.replace(v, instance_id=v.instance_id ^ 1) for v in views]
        body = listing_body(self.namespace, views)
        variant = next((f for f in request_faults if f.name == "variant"), None)
        if variant is not None and variant.value is not None:
            body = variant_body(variant.value, body)
        broken = next((f for f in request_faults if f.name == "break"), None)
        if broken is not None and broken.value is not None:
            result = break_body(broken.value, body, self.seed)
            return result.status, result.body
        return 200, body

    # -- ASGI ----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        every = {f.name for f in self.faults}  # faults of other requests: :COUNT does not apply
        if scope["path"] != DISCOVERY_PATH:
            if "catch-all" in every:
                status, value = self.body([])
                await _json(send, status, dumps(value))
                return
            await _empty(send, 404)
            return
        if scope["method"] not in ("GET", "HEAD"):
            allow = [] if "no-allow" in every else [(b"allow", b"GET,HEAD")]
            await _empty(send, 405, allow)
            return
        self.listing_requests += 1
        number = self.listing_requests
        if self.schedule_from_first_listing:
            self.schedule_from_first_listing = False
            self.started = self._clock()
        active = [f for f in self.faults if f.active(number)]
        by_name = {f.name: f for f in active}
        crowded = by_name.get("overload") or by_name.get("overload-redirect")
        if crowded is None:
            await self._listing(scope, send, number, active, by_name)
            return
        if self._in_flight:
            # A listener that serves one listing request at a time and sheds the others.
            if crowded.name == "overload-redirect":
                location = _moved(scope, str(crowded.value))
                await _empty(send, 307, [(b"location", location)])
            else:
                code = int(crowded.number)
                payload = {"error": "overloaded", "message": f"injected fault overload={code}"}
                await _json(send, code, dumps(payload), [(b"retry-after", b"1")])
            return
        self._in_flight += 1
        try:
            await asyncio.sleep(_OVERLOAD_HOLD_S)  # long enough for concurrent pollers to meet
            await self._listing(scope, send, number, active, by_name)
        finally:
            self._in_flight -= 1

    async def _listing(
        self,
        scope: Scope,
        send: Send,
        number: int,
        active: list[Fault],
        by_name: dict[str, Fault],
    ) -> None:
        """Answer one listing request (GET or HEAD) under its active faults."""
        if "latency" in by_name:
            await asyncio.sleep(by_name["latency"].number / 1000.0)
        forced = by_name.get("status")
        if forced is not None:
            code = int(forced.number)
            payload = {"error": "injected", "message": f"injected fault status={code}"}
            await _json(send, code, dumps(payload))
            return
        moved = by_name.get("redirect-host")
        if moved is not None and moved.value and _host(scope) != moved.value:
            await _empty(send, 307, [(b"location", _moved(scope, moved.value))])
            return
        head = by_name.get("head-status")
        if head is not None and scope["method"] == "HEAD":
            await _empty(send, int(head.number))
            return
        for name in _STATUS_FAULTS:
            fault = by_name.get(name)
            if fault is None:
                continue
            if name == "reset":
                await _reset(scope)
                return
            if name == "discovery-failed":
                message = f"injected fault discovery-failed (listing request {number})"
                await _json(send, 500, dumps(discovery_failed_body(message)))
                return
            if name == "rate-limit":
                # Retry-After is whole seconds (RFC 9110 §10.2.3): 0.5 is sent as 1, never as "0.5".
                retry_after = str(math.ceil(fault.number)) if fault.value is not None else "1"
                payload = {"error": "rate_limited", "message": f"retry after {retry_after} s"}
                await _json(send, 429, dumps(payload), [(b"retry-after", retry_after.encode())])
                return
            payload = {"error": "unavailable", "message": "injected fault unavailable"}
            await _json(send, 503, dumps(payload))
            return

        headers: list[tuple[bytes, bytes]] = []
        v2_broken: str | None = None
        # break=, variant=, version= and unknown-fields bodies break (or stretch) v1's rules: they
        # are served as v1 whatever is asked.
        v1_only = {"v1-only", "break", "variant", "version", "unknown-fields", "scope", "lag"}
        v1_only &= by_name.keys()
        if not v1_only and 2 in _asked_versions(scope):
            answer = await self._answer_v2(scope, active, number)
            if answer.status == 304 and "body-on-304" in by_name:
                cached = self._v2_cache.get("answer")
                listing = dumps(cached.body if cached is not None else {})
                await _raw(
                    scope,
                    b"304 Not Modified",
                    [*_json_headers(listing), *answer.headers()],
                    listing,
                )
                return
            if answer.status == 304:
                await _empty(send, 304, answer.headers())
                return
            status, value = answer.status, answer.body
            headers.extend(answer.headers())
            v2_broken = by_name["break-v2"].value if "break-v2" in by_name else None
        else:
            status, value = self.body(active)
            if "version" in by_name and isinstance(value, dict):
                value = {**value, "protocol_version": int(by_name["version"].number)}
            if "unknown-fields" in by_name and isinstance(value, dict):
                value = _with_unknown_fields(value)
            if "scope" in by_name and isinstance(value, dict):
                value = {**value, "namespace": by_name["scope"].value}
            if "lag" in by_name:  # a cache that outlives changes: the body of N requests ago
                self._lagged = [*self._lagged, (status, value)][-int(by_name["lag"].number) - 1 :]
                status, value = self._lagged[0]
        data = dumps(value)
        if v2_broken == "V2-2":
            from prime_rl_dynamo.suite.reference.v2 import repeat_member

            data = repeat_member(data)
        if "oversized" in by_name:
            data = _pad(value, data, int(by_name["oversized"].number))
        if "padded" in by_name:
            data += b" " * max(0, int(by_name["padded"].number) + 1 - len(data))
        if "malformed-json" in by_name:
            # Balanced length, broken syntax: the closing brace becomes a bracket.
            data = data[:-1] + b"]"
        if "gzip" in by_name:
            data = gzip.compress(data, mtime=0)
            headers.append((b"content-encoding", b"gzip"))
        if "head-body" in by_name and scope["method"] == "HEAD":
            # The server would drop a HEAD body: these bytes go to the wire behind its back.
            reason = b"200 OK" if status == 200 else str(status).encode()
            await _raw(scope, reason, [*_json_headers(data), *headers], data)
            return
        if "truncate" in by_name:
            await _truncated(scope, send, status, data, headers)
            return
        if "slow" in by_name:
            await _dribble(send, status, data, headers, by_name["slow"].number)
            return
        await _json(send, status, data, headers)

    async def _answer_v2(self, scope: Scope, active: list[Fault], number: int) -> Any:
        """Protocol 2 (SPEC-v2.md): the v2 listing, its ETag, 304 and the ``?wait=`` change feed."""
        from prime_rl_dynamo.suite.reference.v2 import counter_answer, serve_v2

        if any(f.name == "etag-counter" for f in active):
            return counter_answer(self.body(active), self.state, number)

        churn = next((f for f in active if f.name == "churn"), None)

        def epoch() -> int:
            if churn is None:
                return 0
            return int((self._clock() - self.faults_since) // churn.number)

        broken = next((f.value for f in active if f.name == "break-v2"), None)
        return await serve_v2(
            scope,
            lambda: self.body(active),
            self.state,
            epoch,
            self.apply_schedule,
            broken,
            cache=self._v2_cache,
            faults=tuple(str(f) for f in active),
            hold_stale=any(f.name == "hold-stale" for f in active),
        )


def _asked_versions(scope: Scope) -> set[int]:
    from prime_rl_dynamo.v2 import PROTOCOL_HEADER, accepted_versions

    name = PROTOCOL_HEADER.lower().encode()
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return accepted_versions(value.decode("latin-1"))
    return set()


def _with_error_workers(views: list[WorkerView], count: int, seed: int) -> list[WorkerView]:
    from dataclasses import replace

    healthy = [i for i, v in enumerate(views) if v.error is None]
    rng = random.Random(f"{seed}:error-workers")
    chosen = set(rng.sample(healthy, min(count, len(healthy))))
    return [
        replace(v, error="injected fault error-workers: worker probe failed") if i in chosen else v
        for i, v in enumerate(views)
    ]


def _moved(scope: Scope, host: str) -> bytes:
    """The listing's URL under another host name (same port): another origin."""
    port = scope["server"][1] if scope.get("server") else 80
    return f"http://{host}:{port}{DISCOVERY_PATH}".encode()


def _json_headers(data: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]


async def _raw(
    scope: Scope, status_line: bytes, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    """Write a whole response to the connection as bytes, then close it: the HTTP server would
    drop a body that HEAD or 304 must not carry, and these faults put it on the wire anyway."""
    transport = scope.get("prd.transport")
    if transport is None:
        raise ConnectionAbortedError("reference fault: no transport to write to")
    lines = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    transport.write(
        b"HTTP/1.1 " + status_line + b"\r\n" + lines + b"connection: close\r\n\r\n" + body
    )
    await abort_connection(scope, reset=False)


def _host(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"host":
            host = value.decode("latin-1")
            return host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return ""


def _with_unknown_fields(value: dict[str, Any]) -> dict[str, Any]:
    """The body with unknown fields at the top, in every worker and its transport (BODY-5)."""
    workers = []
    for w in value.get("workers", []):
        if isinstance(w, dict):
            w = {**w, "x_rack": {"row": 3, "tags": ["a"]}}
            if isinstance(w.get("transport"), dict):
                w["transport"] = {**w["transport"], "x_latency_ms": 0.4}
        workers.append(w)
    return {**value, "workers": workers, "x_generation": {"build": "reference", "n": 1}}


def _pad(value: Any, data: bytes, size: int) -> bytes:
    """The body grown past ``size`` bytes by an unknown top-level field (clients ignore it)."""
    if len(data) > size or not isinstance(value, dict):
        return data
    padded = dict(value)
    padded["x_padding"] = ""
    missing = size + 1 - len(dumps(padded))
    padded["x_padding"] = "x" * max(missing, 0)
    return dumps(padded)


async def _json(
    send: Send, status: int, data: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def _empty(send: Send, status: int, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-length", b"0"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def abort_connection(scope: Scope, *, reset: bool = True) -> None:
    """Close the client's connection (uvicorn's transport, stashed in the scope by the fleet).

    ``reset``: a TCP reset, as a crashed peer gives; otherwise a clean close after what was sent.
    """
    transport = scope.get("prd.transport")
    if transport is None:
        raise ConnectionAbortedError("reference fault: no transport to close")
    if not reset:
        transport.close()
    else:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # Linger 0: close() sends RST instead of FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    # Let the server notice the connection is gone before the app returns (no 500 sent then).
    for _ in range(3):
        await asyncio.sleep(0)


async def _reset(scope: Scope) -> None:
    await abort_connection(scope)


async def _truncated(
    scope: Scope, send: Send, status: int, data: bytes, extra: list[tuple[bytes, bytes]]
) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    if scope["method"] != "HEAD":
        await send(
            {"type": "http.response.body", "body": data[: len(data) // 2], "more_body": True}
        )
    await abort_connection(scope, reset=False)


async def _dribble(
    send: Send, status: int, data: bytes, extra: list[tuple[bytes, bytes]], rate: float
) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    # Ten chunks a second at the given rate (at least one byte each).
    chunk = max(1, int(rate / 10))
    interval = chunk / rate
    for start in range(0, len(data), chunk):
        piece = data[start : start + chunk]
        last = start + chunk >= len(data)
        await send({"type": "http.response.body", "body": piece, "more_body": not last})
        if not last:
            await asyncio.sleep(interval)
    if not data:
        await send({"type": "http.response.body", "body": b""})
