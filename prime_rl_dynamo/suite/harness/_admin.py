"""The admin API a stub engine serves at its admin_base_url (``http://HOST:PORT/admin``).

Reuses the reference fleet's engine application (prime_rl_dynamo.suite.reference.engine), so admin
calls are validated and faulted exactly as on the reference fleet. One dispatcher per stub
process tells engines apart by the port a request arrived on and records every admin call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.types import Receive, Scope, Send

from prime_rl_dynamo.suite.recording import Recorder
from prime_rl_dynamo.suite.reference.engine import ADMIN_PREFIX, engine_app
from prime_rl_dynamo.suite.reference.recording_asgi import Dispatcher, serve_recorded
from prime_rl_dynamo.suite.reference.state import ReferenceEngine

__all__ = ["AdminDispatcher"]


class AdminDispatcher(Dispatcher):
    """ASGI app: routes each request to its engine's admin API and records it (server "admin")."""

    def __init__(self, engines_by_port: Mapping[int, ReferenceEngine], recorder: Recorder) -> None:
        self.engines_by_port = dict(engines_by_port)
        self.recorder = recorder
        self.app = engine_app()

    async def dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one admin call of the engine listening on the port it arrived on."""
        port = int((scope.get("server") or ("", 0))[1])
        engine = self.engines_by_port.get(port)
        path = scope["path"]
        if engine is None or not (path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")):
            # The system routes live on the Dynamo system server, not here.
            await _json(send, 404, {"status": "error", "message": f"no admin route {path!r}"})
            return
        scope["prd.engine"] = engine
        await serve_recorded(
            self.app,
            scope,
            receive,
            send,
            recorder=self.recorder,
            engine=engine.key,
            server="admin",
            path=path[len(ADMIN_PREFIX) :] or "/",
        )


async def _json(send: Send, status: int, payload: Mapping[str, Any]) -> None:
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
