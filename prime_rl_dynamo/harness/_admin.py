"""The admin API a stub engine serves at its admin_base_url (``http://HOST:PORT/admin``).

Reuses the reference fleet's engine application (prime_rl_dynamo.reference.engine), so admin
calls are validated and faulted exactly as on the reference fleet. One dispatcher per stub
process tells engines apart by the port a request arrived on and records every admin call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from prime_rl_dynamo.recording import RecordedRequest, Recorder
from prime_rl_dynamo.reference.engine import ADMIN_PREFIX, engine_app
from prime_rl_dynamo.reference.state import ReferenceEngine

__all__ = ["ADMIN_PREFIX", "AdminDispatcher"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class AdminDispatcher:
    """ASGI app: routes each request to its engine's admin API and records it (server "admin")."""

    def __init__(self, engines_by_port: Mapping[int, ReferenceEngine], recorder: Recorder) -> None:
        self.engines_by_port = dict(engines_by_port)
        self.recorder = recorder
        self.app = engine_app()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":  # pragma: no cover - websockets are not served
            return
        port = int((scope.get("server") or ("", 0))[1])
        engine = self.engines_by_port.get(port)
        path = scope["path"]
        if engine is None or not (path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")):
            # The system routes live on the Dynamo system server, not here.
            await _json(send, 404, {"status": "error", "message": f"no admin route {path!r}"})
            return
        scope["prd.engine"] = engine
        body = await _read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            parsed: Any = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            parsed = None
        received_at = time.time()
        status = 0
        recorded = False

        def record() -> None:
            nonlocal recorded
            if recorded:
                return
            recorded = True
            self.recorder.record(
                RecordedRequest(
                    engine=engine.key,
                    server="admin",
                    method=scope["method"],
                    path=path[len(ADMIN_PREFIX) :] or "/",
                    query=scope.get("query_string", b"").decode("latin-1"),
                    headers=headers,
                    json=parsed,
                    time=received_at,
                    host=_host_of(headers),
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
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                record()  # before the last byte leaves: a client holding its answer finds it
            await send(message)

        try:
            await self.app(scope, replay, recording_send)
        finally:
            record()


def _host_of(headers: Mapping[str, str]) -> str:
    host = headers.get("host", "")
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if ":" in host else host


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _json(send: Send, status: int, payload: Mapping[str, Any]) -> None:
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
