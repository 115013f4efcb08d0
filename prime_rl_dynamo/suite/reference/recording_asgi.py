"""ASGI plumbing shared by the reference fleet and the real-Dynamo stub engines' admin servers.

``serve_recorded`` runs one HTTP request through an app and records it exactly once in a
Recorder; ``Dispatcher`` is the top-level app of a server over many ports, which answers the ASGI
lifespan protocol itself (there is no state to set up) and hands each HTTP request on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from prime_rl_dynamo.suite.recording import RecordedRequest, Recorder

__all__ = ["Dispatcher", "host_of", "lifespan", "read_body", "serve_recorded"]


def host_of(headers: Mapping[str, str]) -> str:
    """The host part of the Host header (brackets of an IPv6 literal removed, port dropped)."""
    host = headers.get("host", "")
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if ":" in host else host


async def lifespan(receive: Receive, send: Send) -> None:
    """Acknowledge startup and shutdown; there is nothing to set up."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class Dispatcher:
    """A top-level ASGI app: lifespan is acknowledged, other non-HTTP scopes are ignored (no
    websockets are served) and each HTTP request goes to ``dispatch``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
        elif scope["type"] == "http":
            await self.dispatch(scope, receive, send)

    async def dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request."""
        raise NotImplementedError


async def read_body(receive: Receive) -> bytes:
    """The whole request body (every ``http.request`` chunk until ``more_body`` is false)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def serve_recorded(
    app: ASGIApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    recorder: Recorder,
    engine: str,
    server: str,
    path: str,
) -> None:
    """Serve one HTTP request with ``app`` and record it once, with its response status.

    ``path`` is the one recorded (relative to the server's base URL). The body is read here
    (to record it) and replayed to ``app``.
    """
    received_at = time.time()
    body = await read_body(receive)
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    try:
        parsed: Any = json.loads(body) if body else None
    except (ValueError, RecursionError):  # not JSON (UnicodeDecodeError is a ValueError)
        parsed = None
    status = 0
    done = False

    def record() -> None:
        nonlocal done
        if done:
            return
        done = True
        recorder.record(
            RecordedRequest(
                engine=engine,
                server=server,
                method=scope["method"],
                path=path,
                query=scope.get("query_string", b"").decode("latin-1"),
                headers=headers,
                json=parsed,
                time=received_at,
                host=host_of(headers),
                status=status,
            )
        )

    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    async def recording_send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            # Record before the status line leaves: a client that stops reading at the status
            # (a fatal 4xx, say) and returns at once must still find its request recorded.
            record()
        await send(message)

    try:
        await app(scope, replay, recording_send)
    finally:
        record()
