"""A whole reference fleet in one background thread: the RL listener plus every engine's servers.

One asyncio loop runs one uvicorn server over many listening sockets (one per engine, plus the
frontend's); a dispatcher routes each connection by its local port. This keeps a few hundred
engines cheap on two cores (one accept loop each, no per-server tick). Every request is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.types import Receive, Scope, Send

from prime_rl_dynamo._urls import url_host
from prime_rl_dynamo.errors import ConfigError, TransportError
from prime_rl_dynamo.suite.fleet import Fleet, FleetEngine, started
from prime_rl_dynamo.suite.recording import Recorder
from prime_rl_dynamo.suite.reference.engine import ADMIN_PREFIX, engine_app
from prime_rl_dynamo.suite.reference.faults import ENGINE_FAULTS, Fault, parse_faults
from prime_rl_dynamo.suite.reference.frontend import Frontend, abort_connection
from prime_rl_dynamo.suite.reference.recording_asgi import Dispatcher, serve_recorded
from prime_rl_dynamo.suite.reference.state import FleetState, ReferenceEngine
from prime_rl_dynamo.topology import EngineSpec, MembershipEvent, Topology, load_topology

if TYPE_CHECKING:
    from typing import Unpack

    from prime_rl_dynamo.suite.fleet import EngineOptions

__all__ = ["ReferenceFleet", "start_reference_fleet"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_START_TIMEOUT_S = 15.0
_STOP_TIMEOUT_S = 10.0


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP (not 0): asyncio sets TCP_NODELAY on accepted connections only then;
    # without it a response written in two pieces waits ~40 ms on the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class _Dispatcher(Dispatcher):
    """Top-level ASGI app: routes by local port, records every request."""

    def __init__(self, fleet: ReferenceFleet) -> None:
        self.fleet = fleet
        self.engine_app = engine_app()

    async def dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request on the frontend or on the engine listening on its port."""
        # uvicorn's send is a bound method of the request cycle, which holds the transport; the
        # reset and truncate faults need it to close the connection with no (or half a) response.
        cycle = getattr(send, "__self__", None)
        scope["prd.transport"] = getattr(cycle, "transport", None)
        port = scope["server"][1] if scope.get("server") else None
        fleet = self.fleet
        fleet.frontend.apply_schedule()
        recorder = fleet.recorder
        if port == fleet.frontend_port:
            await serve_recorded(
                fleet.frontend,
                scope,
                receive,
                send,
                recorder=recorder,
                engine="",
                server="frontend",
                path=scope["path"],
            )
            return
        engine = fleet.state.by_port(port) if port is not None else None
        if engine is None:
            await _plain(send, 404, b"")
            return
        if not engine.alive or engine.spec.faults.dead:
            # A killed engine: connections already open are cut, as its process would be gone.
            await abort_connection(scope)
            return
        scope["prd.engine"] = engine
        path = scope["path"]
        server = "system"
        if path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/"):
            server = "admin"
            path = path[len(ADMIN_PREFIX) :] or "/"
        await serve_recorded(
            self._engine_faults,
            scope,
            receive,
            send,
            recorder=recorder,
            engine=engine.key,
            server=server,
            path=path,
        )

    async def _engine_faults(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The engine app, unless a fleet fault of the engines' servers answers instead."""
        faults = {f.name: f for f in self.fleet.frontend.faults if f.name in ENGINE_FAULTS}
        path, method = scope["path"], scope["method"]
        error = b'{"status":"error","message":"injected fault"}'
        if method == "GET" and path == "/health" and "system-health-text" in faults:
            await _plain(send, 200, b"OK", b"text/plain")
            return
        if method == "GET" and path == ADMIN_PREFIX + "/health" and "admin-health" in faults:
            await _plain(send, int(faults["admin-health"].number), error, b"application/json")
            return
        if method == "POST" and path.startswith("/engine/"):
            if "engine-status" in faults:
                code = int(faults["engine-status"].number)
                await _plain(send, code, error, b"application/json")
                return
            if "engine-text" in faults:
                await self.engine_app(scope, receive, _as_text(send))
                return
        await self.engine_app(scope, receive, send)


def _as_text(send: Send) -> Send:
    """``send`` with the response's Content-Type rewritten to text/plain (the body unchanged)."""

    async def rewritten(message: Any) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message["headers"] if k.lower() != b"content-type"]
            message = {**message, "headers": [*headers, (b"content-type", b"text/plain")]}
        await send(message)

    return rewritten


async def _plain(send: Send, status: int, body: bytes, content_type: bytes | None = None) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ReferenceFleet(Fleet):
    """The reference fleet for ``topology`` (a Topology, a topology file, or None for the default
    fleet, W = 16), served from one background thread once started.

    ``faults`` add to the topology's own; ``seed`` overrides the topology's seed (instance ids and
    faults follow it). ``port`` is the frontend's (0: a free one); every engine gets a free port.
    Engines are ReferenceEngine: ``.spec``, ``.system_url``, ``.admin_base_url``, plus live state.
    """

    def __init__(
        self,
        topology: Topology | str | Path | None = None,
        *,
        faults: Iterable[str | Fault] = (),
        seed: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        recorder: Recorder | None = None,
    ) -> None:
        if host not in _LOOPBACK:
            raise ConfigError(f"the reference fleet binds loopback only; got host {host!r}")
        if not isinstance(topology, Topology):
            topology = load_topology(topology)
        if seed is not None:
            topology = replace(topology, seed=seed)  # instance ids follow the seed too
        self.topology = topology
        self.host = host
        self.recorder = recorder if recorder is not None else Recorder()
        all_faults = parse_faults([*topology.faults, *faults])
        self._sockets: dict[int, socket.socket] = {}
        self._extra_servers: dict[int, uvicorn.Server] = {}
        # The serving tasks of sockets opened later: the loop holds tasks only weakly.
        self._extra_tasks: dict[int, asyncio.Future[None]] = {}
        outside = sorted(
            {f"{s.namespace}.{s.component}" for s in topology.engines() if not self._in_scope(s)}
        )
        if outside:
            # Never listed, so W would count engines nobody can discover.
            raise ConfigError(
                f"the reference frontend lists namespaces starting with {topology.namespace!r}; "
                f"these groups are outside it and would never be listed: {', '.join(outside)}"
            )
        specs = topology.engines()
        if any(f.name == "churn" for f in all_faults) and specs:
            specs.append(_spare(specs, topology))
        frontend_sock = _bind(host, port)
        self.frontend_port: int = frontend_sock.getsockname()[1]
        self._sockets[self.frontend_port] = frontend_sock
        engines = []
        dead: list[socket.socket] = []
        for spec in specs:
            sock = _bind(host, 0)
            engine_port = sock.getsockname()[1]
            if spec.faults.dead:
                dead.append(sock)
            else:
                self._sockets[engine_port] = sock
            engines.append(
                ReferenceEngine(spec=spec, port=engine_port, host=host, member=spec.present)
            )
        # Closed only now, so that no other engine is handed the port: nothing answers there.
        for sock in dead:
            sock.close()
        self.state = FleetState(engines, topology.schedule)
        self.state.listeners.append(self._on_scheduled)
        self._tasks: set[asyncio.Future[None]] = set()
        self.frontend = Frontend(
            self.state, namespace=topology.namespace, faults=all_faults, seed=topology.seed
        )
        self._config = uvicorn.Config(
            _Dispatcher(self),
            lifespan="off",
            http="h11",
            loop="asyncio",
            log_level="critical",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(self._config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    def _in_scope(self, spec: EngineSpec) -> bool:
        # The frontend's scope (frontend.py): the topology's namespace as a prefix.
        return spec.namespace.startswith(self.topology.namespace)

    @property
    def scope(self) -> str:
        """The body's ``namespace``: the topology's, which the frontend uses as a prefix."""
        return self.topology.namespace

    def in_scope(self, engine: FleetEngine) -> bool:
        """Whether the frontend lists this engine at all (its namespace is under the scope)."""
        return self._in_scope(engine.spec)

    # -- addresses -----------------------------------------------------------------------------

    @property
    def frontend_url(self) -> str:
        """Base URL of the RL listener."""
        return f"http://{url_host(self.host)}:{self.frontend_port}"

    @property
    def engines(self) -> list[ReferenceEngine]:
        """Every engine (listed or not), in topology order."""
        return list(self.state.engines)

    @property
    def inference_world_size(self) -> int:
        """Sum of the world sizes the listing currently publishes with an admin URL."""
        return sum(
            e.world_size
            for e in self.state.members()
            if e.alive and e.spec.publishes_admin and self._in_scope(e.spec)
        )

    def engine(self, key: str) -> ReferenceEngine:
        """The engine with this key."""
        return self.state.by_key(key)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> ReferenceFleet:
        """Serve in a background thread; returns once every socket is being served."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)

            async def main() -> None:
                task = asyncio.ensure_future(
                    self._server.serve(sockets=list(self._sockets.values()))
                )
                deadline = time.monotonic() + _START_TIMEOUT_S
                while not self._server.started and not task.done():
                    if time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.005)
                ready.set()
                await task
                extra = list(self._extra_servers.values())
                for server in extra:
                    server.should_exit = True
                await asyncio.gather(*(asyncio.sleep(0) for _ in extra))

            try:
                loop.run_until_complete(main())
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
            finally:
                ready.set()
                loop.close()

        self._thread = threading.Thread(target=run, name="reference-fleet", daemon=True)
        self._thread.start()
        if not ready.wait(_START_TIMEOUT_S) or failure or not self._server.started:
            self.stop()
            detail = f": {failure[0]!r}" if failure else ""
            raise ConfigError(
                f"the reference fleet did not start within {_START_TIMEOUT_S} s{detail}"
            )
        return self

    @property
    def running(self) -> bool:
        """Whether the serving thread is alive."""
        return self._thread is not None and self._thread.is_alive() and not self._stopped

    def stop(self) -> None:
        """Stop every server and join the thread (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._server.should_exit = True
        for server in list(self._extra_servers.values()):
            server.should_exit = True
        if self._thread is not None:
            self._thread.join(_STOP_TIMEOUT_S)
        for sock in self._sockets.values():
            with contextlib.suppress(OSError):
                sock.close()

    # -- faults and membership -----------------------------------------------------------------

    def set_faults(self, faults: Iterable[str | Fault]) -> None:
        """Replace the frontend's faults (topology faults included) and restart their counting."""
        self.frontend.set_faults(parse_faults(faults))

    @property
    def faults(self) -> tuple[Fault, ...]:
        """The frontend's current faults."""
        return self.frontend.faults

    def listing(self) -> dict[str, Any]:
        """One GET of the discovery URL, parsed (TransportError unless 200 with a JSON object)."""
        import httpx

        try:
            response = httpx.get(self.discovery_url, timeout=10.0)
        except httpx.HTTPError as exc:
            raise TransportError(
                f"GET {self.discovery_url} failed: {exc!r}", url=self.discovery_url
            ) from exc
        if response.status_code != 200:
            raise TransportError(
                f"GET {self.discovery_url}: expected 200, got {response.status_code} "
                f"{response.text[:300]}",
                url=self.discovery_url,
                status_code=response.status_code,
            )
        data = response.json()
        if not isinstance(data, dict):
            raise TransportError(
                f"GET {self.discovery_url}: expected a JSON object, got {type(data).__name__}",
                url=self.discovery_url,
            )
        return data

    def expected_ready(self) -> int:
        """How many workers the listing shows without an error (listed, alive, no reply_error)."""
        return sum(
            1
            for e in self.state.members()
            if e.alive and not e.spec.faults.dead and e.spec.faults.reply_error is None
        )

    def wait_ready(self, n: int | None = None, timeout: float = 10.0) -> dict[str, Any]:
        """Poll until exactly ``n`` (default ``expected_ready()``) workers are listed without error.

        The reference fleet is ready as soon as it has started; this mirrors DynamoFleet so that
        code written for one runs on the other. Returns the listing; TransportError at the deadline.
        """
        want = self.expected_ready() if n is None else n
        deadline = time.monotonic() + timeout
        while True:
            try:
                body = self.listing()
            except TransportError:
                body = {}
            ready = sum(1 for w in body.get("workers", []) if "error" not in w)
            if ready == want:
                return body
            if time.monotonic() >= deadline:
                raise TransportError(
                    f"{self.discovery_url}: expected {want} ready worker(s) within {timeout} s, "
                    f"last listing had {ready}",
                    url=self.discovery_url,
                )
            time.sleep(0.05)

    def remove(self, key: str) -> None:
        """The engine leaves the fleet: no longer listed (its servers keep answering)."""
        with self.state.lock:
            self.state.by_key(key).member = False

    def join(self, key: str) -> ReferenceEngine:
        """A known engine (one with ``present: false``, or removed) is listed from now on."""
        with self.state.lock:
            engine = self.state.by_key(key)
            engine.member = True
        return engine

    def add(self, component: str, **options: Unpack[EngineOptions]) -> list[ReferenceEngine]:
        """Start new engines of one component (``EngineOptions``; new ports), listed from now on."""
        with self.state.lock:
            existing = [e.spec for e in self.state.engines]
        specs = self.topology.more_engines(
            existing, component, source="ReferenceFleet.add", **options
        )
        added = []
        for spec in specs:
            sock = _bind(self.host, 0)
            port = sock.getsockname()[1]
            engine = ReferenceEngine(spec=spec, port=port, host=self.host)
            self._call(self._serve_socket(port, sock))
            self.state.adopt(engine)
            added.append(engine)
        return added

    def resize(self, key: str, world_size: int) -> ReferenceEngine:
        """The engine now reports another world size (same instance id and port)."""
        if world_size < 1:
            raise ConfigError(f"world_size must be >= 1, got {world_size}")
        with self.state.lock:
            engine = self.state.by_key(key)
            engine.world_size = world_size
        return engine

    def kill(self, key: str) -> list[str]:
        """The engine's process dies: its port refuses connections; it stays listed with an error.

        Returns the keys of the engines that died (one process per engine here).
        """
        engine = self.state.by_key(key)
        with self.state.lock:
            engine.alive = False
        self._call(self._close_port(engine.port))
        return [key]

    def restart(self, key: str) -> list[ReferenceEngine]:
        """A killed engine comes back on the same port and is listed healthy again."""
        engine = self.state.by_key(key)
        if not engine.alive:
            self._call(self._open_port(engine.port))
            with self.state.lock:
                engine.alive = True
        return [engine]

    def _on_scheduled(self, event: MembershipEvent, engine: ReferenceEngine) -> None:
        # Runs in the loop thread (schedules are applied while serving a request).
        if event.action == "kill":
            coro = self._close_port(engine.port)
        elif event.action == "revive" and engine.port not in self._sockets:
            coro = self._open_port(engine.port)
        else:
            return
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _call(self, coro: Any) -> Any:
        if self._loop is None or self._stopped:
            coro.close()
            raise ConfigError("the reference fleet is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(_STOP_TIMEOUT_S)

    async def _close_port(self, port: int) -> None:
        extra = self._extra_servers.pop(port, None)
        if extra is not None:
            extra.should_exit = True
        for server in getattr(self._server, "servers", []):
            if any(s.getsockname()[1] == port for s in server.sockets):
                server.close()
        sock = self._sockets.pop(port, None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    async def _open_port(self, port: int) -> None:
        await self._serve_socket(port, _bind(self.host, port))

    async def _serve_socket(self, port: int, sock: socket.socket) -> None:
        self._sockets[port] = sock
        server = uvicorn.Server(self._config)
        self._extra_servers[port] = server
        self._extra_tasks[port] = asyncio.ensure_future(server.serve(sockets=[sock]))
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not server.started and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    # -- description ---------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Where everything listens, for printing."""
        return {
            "frontend_url": self.frontend_url,
            "discovery_url": self.discovery_url,
            "inference_world_size": self.inference_world_size,
            "faults": [str(f) for f in self.faults],
            "engines": [
                {
                    "key": e.key,
                    "listed": e.member,
                    "world_size": e.world_size,
                    "system_url": e.system_url,
                    "admin_base_url": e.admin_base_url,
                    "reply_error": e.spec.faults.reply_error,
                }
                for e in self.engines
            ],
        }


def _spare(specs: list[EngineSpec], topology: Topology) -> EngineSpec:
    """One unlisted engine like the first, for the churn fault's "join" step."""
    first = specs[0]
    (new,) = topology.more_engines(
        specs, first.component, namespace=first.namespace, source="the churn fault"
    )
    return replace(first, key=new.key, index=new.index, instance_id=new.instance_id, present=False)


start_reference_fleet = started(
    ReferenceFleet,
    "start_reference_fleet",
    """Start a reference fleet in a background thread: ``ReferenceFleet(...).start()``.

    Takes ReferenceFleet's arguments: ``topology`` (a Topology, a topology file, or None for the
    default fleet, W = 16), ``faults`` (added to the topology's own), ``seed`` (overrides the
    topology's), ``host`` (loopback only), ``port`` (the frontend's; 0: a free one), ``recorder``.
    """,
)
