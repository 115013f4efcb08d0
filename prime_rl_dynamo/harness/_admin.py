"""The admin API a stub engine serves at its admin_base_url: a small ASGI app, one per stub process.

Each engine gets its own listening socket; the app tells engines apart by the port the request
arrived on, records every call (server "admin") and applies the engine's admin faults.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from prime_rl_dynamo.recording import RecordedRequest, Recorder

__all__ = ["AdminApp", "AdminEngine"]

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# path -> (method, operation name used by the admin_fail fault, whether a JSON body is required)
_ROUTES: dict[str, tuple[str, str, bool]] = {
    "/health": ("GET", "health", False),
    "/pause": ("POST", "pause", False),
    "/resume": ("POST", "resume", False),
    "/init_broadcaster": ("POST", "init_broadcaster", True),
    "/update_weights": ("POST", "update_weights", True),
    "/collective_rpc": ("POST", "collective_rpc", True),
}

# Keys Prime-RL's broadcaster always sends to init_broadcaster (session_id only with NIXL).
_INIT_KEYS = ("host", "port", "rank_offset", "inference_world_size", "engine_world_size")

_MAX_BODY = 1 << 20


@dataclass
class AdminEngine:
    """What the admin app needs to know about one engine."""

    key: str
    world_size: int
    admin_fail: tuple[str, ...] = ()
    admin_latency_ms: int = 0
    paused: bool = field(default=False)


class AdminApp:
    """ASGI app answering the admin API for every engine of one stub process."""

    def __init__(self, engines_by_port: Mapping[int, AdminEngine], recorder: Recorder) -> None:
        self.engines_by_port = dict(engines_by_port)
        self.recorder = recorder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":  # pragma: no cover - websockets are not served
            return
        port = int((scope.get("server") or ("", 0))[1])
        engine = self.engines_by_port.get(port)
        body = await _read_body(receive)
        if engine is None:
            await _reply(send, 404, {"status": "error", "message": f"no engine on port {port}"})
            return
        status, reply = await self._answer(engine, scope, body)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = None
        self.recorder.record(
            RecordedRequest(
                engine=engine.key,
                server="admin",
                method=scope["method"],
                path=scope["path"],
                query=scope.get("query_string", b"").decode("latin-1"),
                headers=headers,
                json=parsed,
                time=time.time(),
                host=headers.get("host", "").rsplit(":", 1)[0],
                status=status,
            )
        )
        await _reply(send, status, reply)

    async def _answer(
        self, engine: AdminEngine, scope: Scope, body: bytes
    ) -> tuple[int, dict[str, Any]]:
        path = scope["path"]
        route = _ROUTES.get(path)
        if route is None:
            return 404, {"status": "error", "message": f"no admin route {path!r}"}
        method, operation, needs_body = route
        if scope["method"] != method:
            return 405, {
                "status": "error",
                "message": f"{path} expects {method}, got {scope['method']}",
            }
        payload: Any = None
        if body:
            try:
                payload = json.loads(body)
            except ValueError:
                return 400, {"status": "error", "message": f"{path}: body is not JSON"}
        if needs_body and not isinstance(payload, dict):
            return 400, {
                "status": "error",
                "message": f"{path}: expected a JSON object body, got {type(payload).__name__}",
            }
        if engine.admin_latency_ms:
            await asyncio.sleep(engine.admin_latency_ms / 1000)
        if operation in engine.admin_fail:
            return 500, {
                "status": "error",
                "message": f"injected failure of {operation} on engine {engine.key}",
            }
        if operation == "init_broadcaster":
            missing = [k for k in _INIT_KEYS if k not in payload]
            if missing:
                return 400, {
                    "status": "error",
                    "message": f"init_broadcaster: missing keys {missing}",
                }
        if operation == "collective_rpc":
            if not isinstance(payload.get("method"), str):
                return 400, {
                    "status": "error",
                    "message": "collective_rpc: 'method' must be a string",
                }
            # One result per worker of the engine, as vLLM's collective_rpc returns.
            return 200, {"results": [None] * engine.world_size}
        if operation == "pause":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            mode = query.get("mode", ["abort"])[0]
            if mode not in ("abort", "wait", "keep"):
                return 400, {"status": "error", "message": f"pause: unknown mode {mode!r}"}
            engine.paused = True
        elif operation == "resume":
            engine.paused = False
        return 200, {"status": "ok"}


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
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= _MAX_BODY:
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _reply(send: Send, status: int, payload: Mapping[str, Any]) -> None:
    data = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
