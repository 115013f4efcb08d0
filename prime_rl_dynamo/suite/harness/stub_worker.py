"""A stub RL worker process on the real Dynamo runtime: ``python -m prime_rl_dynamo.suite.harness.stub_worker --spec FILE``.

Each engine of the spec gets its own ``DistributedRuntime`` (so its own instance_id and system
server), serves ``{ns}.{component}.{endpoint}`` answering ``{"method": "routes"}``, registers its
engine routes, and serves the admin API on its own loopback port. Every call is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import socket
import sys
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from prime_rl_dynamo.suite.harness._admin import AdminDispatcher
from prime_rl_dynamo.suite.harness._process import die_with_parent, free_system_port
from prime_rl_dynamo.suite.recording import RecordedRequest, Recorder
from prime_rl_dynamo.suite.reference.state import ReferenceEngine
from prime_rl_dynamo.topology import EngineFaults, EngineSpec

# Hidden system route used once at start-up to prove the system port is ours (another process
# may have taken it between choosing and binding: Dynamo then only logs the failure).
PROBE_ROUTE = "harness/probe"
_BIND_ATTEMPTS = 5


def _listen_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _post_json(url: str, body: dict[str, Any], timeout: float = 2.0) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def _spec_from_json(data: dict[str, Any]) -> EngineSpec:
    """Rebuild the EngineSpec the harness wrote with dataclasses.asdict."""
    fields = dict(data)
    faults = dict(fields.pop("faults"))
    faults["admin_fail"] = tuple(faults.get("admin_fail", ()))
    fields["routes"] = tuple(fields["routes"])
    return EngineSpec(**fields, faults=EngineFaults(**faults))


class _Engine:
    """One engine served by this process."""

    def __init__(
        self,
        spec: EngineSpec,
        recorder: Recorder,
        reply: dict[str, Any] | None = None,
        models: list[dict[str, str]] | None = None,
    ) -> None:
        self.spec = spec
        self.reply = reply  # a raw routes reply to send instead of the topology's
        # Models to register through the runtime ({"name", "path"}); the first is spec.model.
        self.models = list(models or [])
        self.key = spec.key
        self.host = spec.admin_host or "127.0.0.1"  # what the URLs advertise
        self.recorder = recorder
        self.runtime: Any = None
        self.system_url: str | None = None
        self.admin: ReferenceEngine | None = None
        self.admin_socket: socket.socket | None = None
        self.instance_id: int | None = None
        self.serving: Awaitable[Any] | None = None

    @property
    def admin_base_url(self) -> str | None:
        """Where this engine's admin API is (None when the engine publishes none)."""
        return self.admin.admin_base_url if self.admin is not None else None

    def routes_reply(self) -> dict[str, Any]:
        """What this engine answers to {"method": "routes"}."""
        if self.reply is not None:
            urls = {
                "admin_base_url": self.admin_base_url or "",
                "system_url": self.system_url or "",
            }
            return {k: v.format(**urls) if isinstance(v, str) else v for k, v in self.reply.items()}
        if self.spec.faults.reply_error is not None:
            return {"status": "error", "message": self.spec.faults.reply_error}
        reply: dict[str, Any] = {"status": "ok", "routes": list(self.spec.routes)}
        if self.system_url is not None:
            reply["system_url"] = self.system_url
        if self.admin_base_url is not None:
            reply["admin_base_url"] = self.admin_base_url
            reply["world_size"] = self.admin.world_size if self.admin else self.spec.world_size
        return reply

    def _route_callback(self, route: str) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
        async def callback(body: dict[str, Any]) -> dict[str, Any]:
            # register_engine_route hands over only the body: method, headers and query are not
            # visible to the worker, so they are recorded as POST with no headers.
            self.recorder.record(
                RecordedRequest(
                    engine=self.key,
                    server="system",
                    method="POST",
                    path=f"/engine/{route}",
                    query="",
                    headers={},
                    json=body,
                    time=time.time(),
                    host="127.0.0.1",
                    status=200,
                )
            )
            return {"status": "ok", "route": route, "engine": self.key}

        return callback

    async def start(self, runtime_factory: Callable[[], Any]) -> None:
        """Create the runtime (retrying on a stolen system port), routes, and serve the rl endpoint."""
        spec = self.spec
        for attempt in range(_BIND_ATTEMPTS):
            port = free_system_port() if spec.system else -1
            # The runtime reads its configuration from the environment when it is created; a
            # port of -1 disables the system server (every release from 1.3.0.post1 on says
            # DYN_SYSTEM_ENABLED is deprecated: the port alone decides).
            os.environ["DYN_SYSTEM_PORT"] = str(port)
            runtime = runtime_factory()
            if not spec.system:
                self.runtime = runtime
                break
            nonce = secrets.token_hex(8)

            async def probe(_body: dict[str, Any], nonce: str = nonce) -> dict[str, Any]:
                return {"nonce": nonce}

            runtime.register_engine_route(PROBE_ROUTE, probe)
            url = f"http://127.0.0.1:{port}"
            if await _owns_port(url, nonce):
                self.runtime = runtime
                self.system_url = f"http://{self.host}:{port}"
                break
            runtime.shutdown()
            print(f"system port {port} was taken (attempt {attempt + 1}); retrying", flush=True)
        else:
            raise RuntimeError(f"{self.key}: no free system port after {_BIND_ATTEMPTS} attempts")
        for route in spec.routes:
            self.runtime.register_engine_route(route, self._route_callback(route))
        endpoint = self.runtime.endpoint(f"{spec.namespace}.{spec.component}.{spec.endpoint}")

        async def handler(request: Any, context: Any = None) -> AsyncIterator[dict[str, Any]]:
            method = request.get("method") if isinstance(request, dict) else None
            if method == "routes":
                yield self.routes_reply()
            else:
                yield {"status": "error", "message": f"unknown method {method!r}"}

        self.serving = endpoint.serve_endpoint(handler)
        self.instance_id = int(endpoint.connection_id())
        await self._register_models()
        if spec.system:
            self.runtime.set_health_status(True)

    async def _register_models(self) -> None:
        """Register each model through the runtime, as a real worker does: on a ``generate``
        endpoint of the same runtime (so under this engine's instance_id), one endpoint per
        model (``generate``, ``generate_2``, ...)."""
        if not self.models:
            return
        from dynamo.llm import ModelInput, ModelType, WorkerType, register_model

        spec = self.spec
        for number, model in enumerate(self.models, start=1):
            name = "generate" if number == 1 else f"generate_{number}"
            endpoint = self.runtime.endpoint(f"{spec.namespace}.{spec.component}.{name}")
            await register_model(
                ModelInput.Tokens,
                ModelType.Chat,
                endpoint,
                model["path"],
                model["name"],
                worker_type=WorkerType.Aggregated,
            )


async def _owns_port(url: str, nonce: str) -> bool:
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            reply = await asyncio.to_thread(_post_json, f"{url}/engine/{PROBE_ROUTE}", {})
            return isinstance(reply, dict) and reply.get("nonce") == nonce
        except urllib.error.HTTPError:
            return False  # someone else's server answered
        except OSError:
            await asyncio.sleep(0.05)  # not bound yet
    return False


async def _main(spec_path: Path) -> None:
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    recorder = Recorder(path=Path(spec["record"]))
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        loop.call_soon_threadsafe(stop.set)

    # Python-level handlers so that a SIGTERM deregisters the engines before exiting.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    from dynamo.runtime import DistributedRuntime

    def runtime_factory() -> Any:
        try:
            return DistributedRuntime(loop, spec["discovery"], spec.get("request_plane", "tcp"))
        except Exception as exc:  # the runtime's own refusal (e.g. request plane "http")
            raise SystemExit(f"the Dynamo runtime refused this configuration: {exc}") from None

    engines = [
        _Engine(
            _spec_from_json(
                {k: v for k, v in e.items() if k not in ("reply", "models", "resize_after_init")}
            ),
            recorder,
            e["reply"],
            e.get("models"),
        )
        for e in spec["engines"]
    ]
    admin_engines: dict[int, ReferenceEngine] = {}
    for engine, entry in zip(engines, spec["engines"], strict=True):
        if engine.spec.admin:
            engine.admin_socket = _listen_socket()
            port = int(engine.admin_socket.getsockname()[1])
            engine.admin = ReferenceEngine(spec=engine.spec, port=port, host="127.0.0.1")
            engine.admin.resize_after_init = entry.get("resize_after_init")
            admin_engines[port] = engine.admin
    for engine in engines:
        await engine.start(runtime_factory)

    server: Any = None
    tasks: list[asyncio.Future[Any]] = [
        asyncio.ensure_future(e.serving) for e in engines if e.serving is not None
    ]
    if admin_engines:
        import uvicorn

        config = uvicorn.Config(
            AdminDispatcher(admin_engines, recorder),
            log_level="warning",
            lifespan="off",
            access_log=False,
        )
        server = uvicorn.Server(config)
        sockets = [e.admin_socket for e in engines if e.admin_socket is not None]
        # _serve skips uvicorn's own signal capture: this process handles SIGTERM itself.
        tasks.append(asyncio.ensure_future(server._serve(sockets)))

    ready = {
        "pid": os.getpid(),
        "engines": {
            e.key: {
                "instance_id": e.instance_id,
                "system_url": e.system_url,
                "admin_base_url": e.admin_base_url,
            }
            for e in engines
        },
    }
    ready_path = Path(spec["ready"])
    tmp = ready_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(ready), encoding="utf-8")
    tmp.replace(ready_path)
    print(f"ready: {len(engines)} engine(s)", flush=True)

    stopper = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait([stopper, *tasks], return_when=asyncio.FIRST_COMPLETED)
    for task in done:
        if task is not stopper and task.exception() is not None:
            raise RuntimeError(f"a server of this stub stopped: {task.exception()!r}")
    # Graceful stop: deregister every instance so the frontend forgets it at once.
    if server is not None:
        server.should_exit = True
    for engine in engines:
        if engine.runtime is not None:
            engine.runtime.shutdown()
    await asyncio.wait(tasks, timeout=5.0)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the stub worker process."""
    parser = argparse.ArgumentParser(
        prog="python -m prime_rl_dynamo.suite.harness.stub_worker", allow_abbrev=False
    )
    parser.add_argument("--spec", required=True, type=Path, help="JSON spec written by the harness")
    args = parser.parse_args(argv)
    die_with_parent()
    import uvloop

    try:
        uvloop.run(_main(args.spec))
    except SystemExit as exc:
        print(f"stub worker: {exc}", file=sys.stderr, flush=True)
        sys.stderr.flush()
        os._exit(2)
    except BaseException:
        # Dynamo's runtime threads can keep the interpreter alive after an error: exit hard so
        # the harness sees the failure at once.
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
