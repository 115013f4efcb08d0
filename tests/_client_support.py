"""Test support for the client, admin and CLI tests: bodies, a scripted loopback HTTP server, a clock.

Bodies are what Dynamo 1.6.1 sends (optional fields omitted); the scripted server answers each
request from a queue of replies and records what it was sent.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from prime_rl_dynamo.validate import validate_body
from prime_rl_dynamo.wire import WorkerId, transport_tcp, worker_entry

# --- bodies -------------------------------------------------------------------------------------


def worker(
    component: str,
    instance_id: int,
    world_size: int | None = 1,
    *,
    namespace: str = "dynamo",
    admin: str | None = "auto",
    model: str | None = "m",
    error: str | None = None,
    system_url: str | None = None,
) -> dict[str, Any]:
    """One worker object as Dynamo 1.6.1 sends it (optional fields omitted, never null); its
    admin URL by default is derived from the instance id."""
    if admin == "auto":
        admin = f"http://127.0.0.1:{9000 + instance_id % 1000}/{component}"
    worker_id = WorkerId(namespace, component, "rl", instance_id)
    return worker_entry(
        worker_id,
        transport=transport_tcp(worker_id, 40000),
        routes=("pause_generation", "resume_generation"),
        system_url=system_url,
        admin_base_url=admin,
        model=model,
        world_size=world_size,
        error=error,
    )


#: Prefill 2 x ws2 + decode 1 x ws4: W = 8, what ``fake_time_client`` waits for by default.
PD = [worker("prefill", 1, 2), worker("prefill", 2, 2), worker("decode", 3, 4)]


def fake_time_client(
    transport: Any,
    clock: FakeClock,
    policy: Any = None,
    polling: Any = None,
    *,
    seed: int = 7,
    **kw: Any,
) -> Any:
    """A DiscoveryClient at http://frontend:8001 on ``transport`` whose time, sleeps and jitter
    are ``clock``'s and a seeded generator's (``ReadinessPolicy(8)`` unless given)."""
    import random

    from prime_rl_dynamo.client import DiscoveryClient, ReadinessPolicy

    return DiscoveryClient(
        "http://frontend:8001",
        ReadinessPolicy(8) if policy is None else policy,
        polling,
        transport=transport,
        clock=clock.monotonic,
        wall_clock=clock.time,
        sleep=clock.sleep,
        rng=random.Random(seed),
        **kw,
    )


def body(*workers: dict[str, Any], namespace: str = "dynamo", version: Any = 1) -> bytes:
    """A discovery body, workers sorted canonically as the frontend does."""
    ordered = sorted(workers, key=WorkerId.from_entry)
    return json.dumps(
        {"protocol_version": version, "namespace": namespace, "workers": ordered}
    ).encode()


SMG_BODY = json.dumps(
    {
        "protocol_version": 1,
        "total": 1,
        "workers": [
            {
                "id": "w1",
                "engine": "vllm",
                "control_url": "http://x",
                "capabilities": [],
                "health": "ok",
            }
        ],
    }
).encode()


# --- validator stand-in -------------------------------------------------------------------------


#: The validator the client tests hand to the client and the admin pool.
VALIDATE: Callable[[bytes], Any] = validate_body


# --- a fake clock -------------------------------------------------------------------------------


@dataclass
class FakeClock:
    """Monotonic time that only moves when the client sleeps."""

    now: float = 0.0
    wall: float = 1_800_000_000.0
    sleeps: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.wall + self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


# --- a scripted loopback server -----------------------------------------------------------------


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    port: int

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


Reply = tuple[int, dict[str, str], bytes]
Handler = Callable[[Seen], Reply]


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler of a test server: it logs nothing and answers through :meth:`answer`."""

    def log_message(self, *args: object) -> None:
        pass

    def answer(
        self,
        status: int,
        payload: bytes,
        media: str | None = "application/json",
        *,
        body: bool = True,
    ) -> None:
        """``status`` with ``payload`` as ``media`` (no Content-Type: None); ``body=False`` (a
        HEAD) sends the headers only, Content-Length 0."""
        self.send_response(status)
        if media:
            self.send_header("content-type", media)
        self.send_header("content-length", str(len(payload) if body else 0))
        self.end_headers()
        if body:
            self.wfile.write(payload)


@contextmanager
def serving(
    handler: type[BaseHTTPRequestHandler],
    tls: tuple[Path, Path] | None = None,
    *,
    handshake_in_request: bool = False,
) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 for the block (HTTPS with ``tls``'s certificate and key
    files); yields the base URL. ``handshake_in_request``: the TLS handshake happens in each
    request's thread, not in the accepting one (a client that never completes it blocks nobody)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=not handshake_in_request
        )
        scheme = "https"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class ScriptedServer:
    """A real HTTP server on 127.0.0.1 whose replies are Python callables keyed by method and path.

    An unknown route answers 404. ``script(method, path, *replies)`` queues replies: each request
    takes the next one and the last one repeats.
    """

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.routes: dict[tuple[str, str], Handler] = {}
        self._lock = threading.Lock()
        outer = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                seen = Seen(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    raw,
                    outer.port,
                )
                with outer._lock:
                    outer.requests.append(seen)
                    handler = outer.routes.get((self.command, self.path.split("?")[0]))
                if handler is None:
                    status, headers, payload = (
                        404,
                        {"content-type": "application/json"},
                        b'{"error":"not found"}',
                    )
                else:
                    status, headers, payload = handler(seen)
                stream = headers.pop("x-stream-no-length", None)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if stream:
                    self.send_header("connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    for i in range(0, len(payload), 65536):
                        self.wfile.write(payload[i : i + 65536])
                    return
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def route(self, method: str, path: str, handler: Handler) -> None:
        with self._lock:
            self.routes[(method, path)] = handler

    def script(self, method: str, path: str, *replies: Reply) -> None:
        queue = list(replies)

        def handler(_: Seen) -> Reply:
            with self._lock:
                status, headers, payload = queue.pop(0) if len(queue) > 1 else queue[0]
            return status, dict(headers), payload

        self.route(method, path, handler)

    def seen(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        with self._lock:
            return [
                r
                for r in self.requests
                if (method is None or r.method == method)
                and (path is None or r.path.split("?")[0] == path)
            ]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ok(payload: bytes, **headers: str) -> Reply:
    return 200, {"content-type": "application/json", **headers}, payload


def jreply(status: int, obj: Any, **headers: str) -> Reply:
    return status, {"content-type": "application/json", **headers}, json.dumps(obj).encode()


def labels(items: Iterable[Any]) -> list[str]:
    return [i.label for i in items]


# --- the drop-in pool ---------------------------------------------------------------------------


@asynccontextmanager
async def pool_of(
    client_config: Any, model: str | None, world: int, **kwargs: Any
) -> AsyncIterator[Any]:
    """``DynamoInferencePool.from_config`` as Prime-RL's orchestrator calls it (polling every
    50 ms unless ``poll_interval`` says otherwise), stopped when the block ends."""
    from prime_rl_dynamo.prime_rl import DynamoInferencePool

    kwargs.setdefault("poll_interval", 0.05)
    pool = await DynamoInferencePool.from_config(
        client_config, model, inference_world_size=world, **kwargs
    )
    try:
        yield pool
    finally:
        await pool.stop()


class Dribbler:
    """A loopback server that sends a 200 head, then one byte of body every ``interval`` s."""

    def __init__(self, interval: float = 0.25, length: int = 60) -> None:
        self.interval = interval
        self.length = length
        self._stop = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.connections = 0
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections += 1
            t = threading.Thread(target=self._dribble, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _dribble(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(1.0)
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {self.length}\r\n\r\n".encode()
                )
                for _ in range(self.length):
                    if self._stop.wait(self.interval):
                        return
                    conn.sendall(b" ")
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._accept.join(5)
        for t in self._threads:
            t.join(5)
        self._sock.close()
