"""DynamoFleet: the real Dynamo 1.6.1 frontend (RL listener on) and stub RL workers, as processes.

Everything binds 127.0.0.1 on free ports, with a fresh discovery store per fleet (a temporary
``DYN_FILE_KV`` directory, or a throw-away etcd). The fleet stops every process it started on
``stop()``, on leaving its ``with`` block, at interpreter exit and on SIGTERM.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import httpx

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.harness._etcd import EtcdServer
from prime_rl_dynamo.harness._model import write_model_dir
from prime_rl_dynamo.harness._nats import NatsServer
from prime_rl_dynamo.harness._process import ManagedProcess, free_port, stop_all
from prime_rl_dynamo.recording import RecordedRequest, Recorder
from prime_rl_dynamo.topology import (
    DEFAULT_ROUTES,
    EngineSpec,
    Topology,
    default_topology,
)

__all__ = ["DynamoEngine", "DynamoFleet", "start_dynamo_fleet"]

DISCOVERY_BACKENDS = ("file", "etcd")
# Request planes a fleet can be asked for. 1.6.1's runtime accepts only "tcp" and "nats": "http"
# is passed through so that the runtime's own refusal is what the caller sees (docs/findings.md).
REQUEST_PLANES = ("tcp", "nats", "http")

# Above this many engines a stub process hosts several (each with its own runtime): one Python
# process per engine costs ~85 MB and about a second of CPU to start (docs/harness.md, Scale).
_AUTO_PACK_ABOVE = 16
_AUTO_PACK_SIZE = 8

_TRUTHY = ("1", "true", "on", "yes")

# Variables of the caller's environment that would leak into the fleet's Dynamo configuration.
_SCRUBBED_PREFIXES = ("DYN_", "ETCD_", "NATS_")


@dataclass
class DynamoEngine:
    """One engine of the fleet as it runs now (URLs and instance_id change on restart)."""

    spec: EngineSpec
    system_url: str | None = None
    admin_base_url: str | None = None
    instance_id: int | None = None
    process: str = ""
    alive: bool = False
    models: tuple[str, ...] = ()  # model names registered through the runtime, in order

    @property
    def key(self) -> str:
        """The topology key, e.g. "dynamo.prefill#0"."""
        return self.spec.key

    @property
    def identity(self) -> tuple[str, str, str, int]:
        """(namespace, component, endpoint, instance_id) as the frontend lists it."""
        return (self.spec.namespace, self.spec.component, self.spec.endpoint, self.instance_id or 0)

    @property
    def label(self) -> str:
        """The worker label used in messages: ns.component.endpoint#instance_id."""
        return (
            f"{self.spec.namespace}.{self.spec.component}.{self.spec.endpoint}#{self.instance_id}"
        )


class _StubProcess(ManagedProcess):
    """A stub worker process and the engines it hosts."""

    def __init__(
        self, name: str, keys: list[str], env: dict[str, str], workdir: Path, python: str
    ) -> None:
        self.keys = keys
        self.spec_file = workdir / f"{name}.spec.json"
        self.ready_file = workdir / f"{name}.ready.json"
        self.record_file = workdir / f"{name}.record.jsonl"
        argv = [python, "-m", "prime_rl_dynamo.harness.stub_worker", "--spec", str(self.spec_file)]
        super().__init__(name, argv, env, workdir / f"{name}.log")


class _FleetRecorder(Recorder):
    """A Recorder fed by the JSON-lines files the stub processes write (read on demand)."""

    def __init__(self, files: Callable[[], list[Path]]) -> None:
        super().__init__()
        self._files = files
        self._offsets: dict[Path, int] = {}
        self._read_lock = threading.Lock()

    def _refresh(self) -> None:
        with self._read_lock:
            self._refresh_locked()

    def _refresh_locked(self) -> None:
        fresh: list[RecordedRequest] = []
        for file in self._files():
            offset = self._offsets.get(file, 0)
            try:
                with file.open("rb") as fh:
                    fh.seek(offset)
                    data = fh.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1  # a stub may be half-way through a line
            for line in data[:end].splitlines():
                if line.strip():
                    fresh.append(RecordedRequest.from_dict(json.loads(line)))
            self._offsets[file] = offset + end
        if fresh:
            with self._lock:
                self._items.extend(fresh)
                self._items.sort(key=lambda r: r.time)

    def requests(
        self, *, engine: str | None = None, server: str | None = None, path: str | None = None
    ) -> list[RecordedRequest]:
        """Recorded requests, oldest first (reads what the stubs wrote since the last call)."""
        self._refresh()
        return super().requests(engine=engine, server=server, path=path)

    def clear(self) -> None:
        """Forget everything recorded so far."""
        self._refresh()
        super().clear()


class DynamoFleet:
    """The real Dynamo frontend plus stub RL workers for a topology (see ``start_dynamo_fleet``)."""

    def __init__(
        self,
        topology: Topology | None = None,
        *,
        discovery: str = "file",
        engines_per_process: int | None = None,
        env: dict[str, str] | None = None,
        startup_timeout: float | None = None,
        python: str = sys.executable,
        keep_workdir: bool = False,
        replies: Mapping[str, Mapping[str, Any]] | None = None,
        request_plane: str = "tcp",
        register_models: bool = True,
        extra_models: Mapping[str, Sequence[str]] | None = None,
        namespace_prefix: str | None = None,
        worker_suffix: str | None = None,
        prefix_strict: bool = False,
        resize_after_init: Mapping[str, int] | None = None,
    ) -> None:
        if request_plane not in REQUEST_PLANES:
            raise HarnessError(
                f"request plane must be one of {list(REQUEST_PLANES)}, got {request_plane!r}"
            )
        if discovery not in DISCOVERY_BACKENDS:
            raise HarnessError(
                f"discovery backend must be one of {list(DISCOVERY_BACKENDS)}, got {discovery!r}"
            )
        if engines_per_process is not None and engines_per_process < 1:
            raise HarnessError(f"engines_per_process must be >= 1, got {engines_per_process}")
        self.topology = topology if topology is not None else default_topology()
        self.discovery = discovery
        self.request_plane = request_plane
        self.engines_per_process = engines_per_process
        self.extra_env = dict(env or {})
        # Namespace scope of the frontend (docs/harness.md, Scope): shorthands for the variables.
        if namespace_prefix:
            self.extra_env["DYN_NAMESPACE_PREFIX"] = namespace_prefix
        if worker_suffix:
            self.extra_env["DYN_NAMESPACE_WORKER_SUFFIX"] = worker_suffix
        if prefix_strict:
            self.extra_env["DYN_NAMESPACE_PREFIX_STRICT"] = "true"
        self.python = python
        self.keep_workdir = keep_workdir
        # Raw routes replies by engine key, sent verbatim instead of the topology's: to see how
        # the real frontend treats a malformed reply. "{admin_base_url}" / "{system_url}" in a
        # string value are replaced by the engine's own URLs.
        self.replies = {k: dict(v) for k, v in (replies or {}).items()}
        unknown = sorted(set(self.replies) - {s.key for s in self.topology.engines()})
        if unknown:
            raise HarnessError(f"replies name engines not in the topology: {unknown}")
        # Engine key -> the world size its routes reply reports once its admin API answered a
        # broadcast init (TOPO-1: a fleet that resizes after init); read when a stub is launched,
        # so setting it and then restart(key) applies it to a running fleet.
        self.resize_after_init = {k: int(v) for k, v in (resize_after_init or {}).items()}
        # Each engine registers its topology model through the runtime (register_models=False:
        # none, as before models were supported); extra_models adds more per engine key.
        self.register_models = register_models
        self.extra_models = {k: list(v) for k, v in (extra_models or {}).items()}
        unknown = sorted(set(self.extra_models) - {s.key for s in self.topology.engines()})
        if unknown:
            raise HarnessError(f"extra_models name engines not in the topology: {unknown}")
        n = len(self.topology.engines())
        self.startup_timeout = startup_timeout if startup_timeout is not None else 60.0 + n
        # Logs, specs, recordings and the file store; created by start(), removed by stop().
        self.workdir = Path(tempfile.gettempdir()) / f"prime-rl-dynamo-fleet-{secrets.token_hex(6)}"
        self.http_port = 0
        self.rl_port = 0
        self.startup_seconds: float | None = None
        self.etcd: EtcdServer | None = None
        self.nats: NatsServer | None = None
        self.frontend: ManagedProcess | None = None
        self._stubs: list[_StubProcess] = []
        self._retired: list[_StubProcess] = []
        self._engines: dict[str, DynamoEngine] = {}
        self._stub_counter = 0
        self._stopped = False
        self._lock = threading.RLock()
        self._sigterm_held = False
        self.recorder: Recorder = _FleetRecorder(
            lambda: [s.record_file for s in [*self._retired, *self._stubs]]
        )
        self._client = httpx.Client(timeout=10.0)

    # ----------------------------------------------------------------- addresses
    @property
    def http_url(self) -> str:
        """Base URL of the frontend's main HTTP port (OpenAI API; no RL route there)."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def frontend_url(self) -> str:
        """Base URL of the RL listener (what Prime-RL is given)."""
        return f"http://127.0.0.1:{self.rl_port}"

    @property
    def discovery_url(self) -> str:
        """The discovery endpoint: GET {frontend_url}/v1/rl/workers."""
        return f"{self.frontend_url}/v1/rl/workers"

    @property
    def engines(self) -> list[DynamoEngine]:
        """Engines of the fleet in topology order (killed ones included, removed ones not)."""
        with self._lock:
            return list(self._engines.values())

    def engine(self, key: str) -> DynamoEngine:
        """The engine with this topology key."""
        with self._lock:
            try:
                return self._engines[key]
            except KeyError:
                known = ", ".join(self._engines) or "none"
                raise HarnessError(f"no engine {key!r} in this fleet (engines: {known})") from None

    @property
    def processes(self) -> list[ManagedProcess]:
        """Every process the fleet started and still owns (frontend, etcd, stubs)."""
        procs: list[ManagedProcess] = []
        if self.etcd is not None:
            procs.append(self.etcd.process)
        if self.nats is not None:
            procs.append(self.nats.process)
        if self.frontend is not None:
            procs.append(self.frontend)
        procs.extend(self._stubs)
        return procs

    def trim_logs(self, max_bytes: int = 64 * 2**20) -> list[str]:
        """Halve every process log larger than ``max_bytes`` (the frontend logs every probe);
        returns the names of the processes whose logs were trimmed."""
        return [p.name for p in self.processes if p.trim_log(max_bytes)]

    def memory_bytes(self) -> int:
        """Resident memory of every live process of the fleet, summed."""
        return sum(p.rss_bytes() for p in self.processes)

    # ----------------------------------------------------------------- lifecycle
    def __enter__(self) -> DynamoFleet:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> DynamoFleet:
        """Start the discovery store, the frontend and every stub; wait until all are listed."""
        began = time.monotonic()
        if self._stopped or self.frontend is not None:
            raise HarnessError("this fleet was started already; start a new DynamoFleet")
        self.workdir.mkdir(mode=0o700)
        atexit.register(self.stop)
        self._install_sigterm()
        try:
            if self.discovery == "etcd":
                self.etcd = EtcdServer(self.workdir, self._base_env())
                self.etcd.start(timeout=min(30.0, self.startup_timeout))
            if self.request_plane == "nats":
                self.nats = NatsServer(self.workdir, self._base_env())
                self.nats.start(timeout=min(30.0, self.startup_timeout))
            self._start_frontend(began + self.startup_timeout)
            specs = self.topology.engines()
            with self._lock:
                # Every engine, in topology order; those with present: false wait for join().
                self._engines = {s.key: DynamoEngine(spec=s) for s in specs}
            present = [s for s in specs if s.present]
            self._launch(present)
            self._await_listed([s.key for s in present], began + self.startup_timeout)
            dead = [s.key for s in present if s.faults.dead]
            if dead:
                self._kill_keys(dead)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL), remove the temporary store. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        try:
            stop_all(self._stubs, grace=3.0)
            stop_all([p for p in (self.frontend,) if p is not None], grace=3.0)
            stop_all([s.process for s in (self.etcd, self.nats) if s is not None], grace=3.0)
        finally:
            self._client.close()
            atexit.unregister(self.stop)
            self._restore_sigterm()
            # Read the last recordings before their files go: they stay in the recorder.
            with contextlib.suppress(ValueError, OSError):
                self.recorder.requests()
            if not self.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            for engine in self.engines:
                engine.alive = False

    def _install_sigterm(self) -> None:
        self._sigterm_held = _sigterm_acquire()

    def _restore_sigterm(self) -> None:
        if getattr(self, "_sigterm_held", False):
            self._sigterm_held = False
            _sigterm_release()

    # ----------------------------------------------------------------- environment
    def _base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
        env.update(
            {
                "PYTHONUNBUFFERED": "1",
                "DYN_LOG": "warn",
                "DYN_DISCOVERY_BACKEND": self.discovery,
                "DYN_REQUEST_PLANE": self.request_plane,
                "DYN_TCP_RPC_HOST": "127.0.0.1",
                "DYN_TCP_RESPONSE_STREAM_HOST": "127.0.0.1",
                "DYN_EVENT_PLANE_HOST": "127.0.0.1",
                "DYN_SYSTEM_HOST": "127.0.0.1",
                # Model cards: never download, and keep the runtime's card cache
                # (~/.cache/dynamo/mdc; XDG_CACHE_HOME is not read) in the fleet's directory.
                "HF_HUB_OFFLINE": "1",
                "HOME": str(self.workdir / "home"),
            }
        )
        if self.discovery == "file":
            store = self.workdir / "discovery"
            store.mkdir(exist_ok=True)
            env["DYN_FILE_KV"] = str(store)
        elif self.etcd is not None:
            env["ETCD_ENDPOINTS"] = self.etcd.url
        if self.nats is not None:
            env["NATS_SERVER"] = self.nats.url
        env.update(self.extra_env)
        return env

    # ----------------------------------------------------------------- frontend
    def _start_frontend(self, deadline: float) -> None:
        for attempt in range(3):
            self.http_port, self.rl_port = free_port(), free_port()
            env = self._base_env()
            env.update(
                {
                    "DYN_ENABLE_RL": "true",
                    "DYN_RL_PORT": str(self.rl_port),
                    "DYN_NAMESPACE": self.topology.namespace,
                    "DYN_SYSTEM_PORT": "-1",
                }
            )
            env.update(self.extra_env)
            argv = [
                self.python,
                "-m",
                "prime_rl_dynamo.harness.frontend",
                "--http-port",
                str(self.http_port),
            ]
            self.frontend = ManagedProcess(
                f"frontend-{attempt}", argv, env, self.workdir / f"frontend-{attempt}.log"
            )
            self.frontend.start()
            while time.monotonic() < deadline and self.frontend.alive():
                try:
                    response = self._client.get(self.discovery_url, timeout=2.0)
                    if response.status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
            if self.frontend.alive():
                break  # deadline passed
            # Another process took a chosen port between choosing and binding: choose again.
            # 1.6.1 says "port N already in use" (HTTP) or "Address already in use" (RL).
            if "already in use" not in self.frontend.tail(40):
                break  # died for another reason: report it
        alive = self.frontend is not None and self.frontend.alive()
        what = "did not serve in time" if alive else "exited during start-up"
        raise HarnessError(
            f"the Dynamo frontend ({self.discovery_url}) {what}\n" + self._log_tails()
        )

    # ----------------------------------------------------------------- stubs
    def _pack(self, specs: Sequence[EngineSpec]) -> list[list[EngineSpec]]:
        per = self.engines_per_process
        if per is None:
            total = len(set(self._engines) | {s.key for s in specs})
            per = 1 if total <= _AUTO_PACK_ABOVE else _AUTO_PACK_SIZE
        # Engines that will be killed on purpose get a process of their own.
        solo = [[s] for s in specs if s.faults.dead]
        rest = [s for s in specs if not s.faults.dead]
        return solo + [rest[i : i + per] for i in range(0, len(rest), per)]

    def _launch(self, specs: Sequence[EngineSpec]) -> list[_StubProcess]:
        started: list[_StubProcess] = []
        env = self._base_env()
        for chunk in self._pack(specs):
            self._stub_counter += 1
            stub = _StubProcess(
                f"stub-{self._stub_counter:03d}",
                [s.key for s in chunk],
                env,
                self.workdir,
                self.python,
            )
            stub.spec_file.write_text(
                json.dumps(
                    {
                        "discovery": self.discovery,
                        "request_plane": self.request_plane,
                        "record": str(stub.record_file),
                        "ready": str(stub.ready_file),
                        "engines": [
                            {
                                **_spec_json(s),
                                "reply": self.replies.get(s.key),
                                "models": self._models_of(s),
                                "resize_after_init": self.resize_after_init.get(s.key),
                            }
                            for s in chunk
                        ],
                    }
                ),
                encoding="utf-8",
            )
            with self._lock:
                for spec in chunk:
                    self._engines[spec.key] = DynamoEngine(
                        spec=spec,
                        process=stub.name,
                        models=tuple(m["name"] for m in self._models_of(spec)),
                    )
                self._stubs.append(stub)
            stub.start()
            started.append(stub)
        deadline = time.monotonic() + self.startup_timeout
        pending = list(started)
        while pending:
            for stub in list(pending):
                if stub.ready_file.exists():
                    self._adopt(stub)
                    pending.remove(stub)
                elif not stub.alive():
                    raise HarnessError(
                        f"stub worker {stub.describe()} exited during start-up\n"
                        + self._log_tails()
                    )
            if pending and time.monotonic() > deadline:
                names = ", ".join(s.name for s in pending)
                raise HarnessError(
                    f"stub workers not ready after {self.startup_timeout:.0f} s: {names}\n"
                    + self._log_tails()
                )
            if pending:
                time.sleep(0.05)
        return started

    def _models_of(self, spec: EngineSpec) -> list[dict[str, str]]:
        # The topology model (when set and register_models), then the engine's extra_models.
        names = [spec.model] if self.register_models and spec.model is not None else []
        names += self.extra_models.get(spec.key, [])  # a repeated name registers twice
        root = self.workdir / "models"
        return [{"name": n, "path": str(write_model_dir(root, n))} for n in names]

    def _adopt(self, stub: _StubProcess) -> None:
        ready = json.loads(stub.ready_file.read_text(encoding="utf-8"))
        with self._lock:
            for key, info in ready["engines"].items():
                engine = self._engines[key]
                engine.instance_id = int(info["instance_id"])
                engine.system_url = info["system_url"]
                engine.admin_base_url = info["admin_base_url"]
                engine.process = stub.name
                engine.alive = True

    def _stub_of(self, key: str) -> _StubProcess:
        name = self.engine(key).process
        if not name:
            raise HarnessError(
                f"engine {key!r} was never started (present: false); join() it first"
            )
        for stub in self._stubs:
            if stub.name == name:
                return stub
        raise HarnessError(f"engine {key!r} has no stub process")  # pragma: no cover

    # ----------------------------------------------------------------- listing
    def listing(self) -> dict[str, Any]:
        """One GET of the discovery endpoint, parsed (raises HarnessError unless 200 JSON)."""
        try:
            response = self._client.get(self.discovery_url)
        except httpx.HTTPError as exc:
            raise HarnessError(f"GET {self.discovery_url} failed: {exc!r}") from exc
        if response.status_code != 200:
            raise HarnessError(
                f"GET {self.discovery_url}: expected 200, got {response.status_code} "
                f"{response.text[:300]}"
            )
        try:
            data = response.json()
        except ValueError as exc:
            raise HarnessError(f"GET {self.discovery_url}: body is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise HarnessError(
                f"GET {self.discovery_url}: expected a JSON object, got {data!r:.200}"
            )
        return data

    def _wait_listing(
        self,
        condition: Callable[[dict[str, Any]], bool],
        timeout: float,
        what: str,
        watch: Iterable[ManagedProcess] = (),
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: dict[str, Any] | None = None
        last_error = ""
        watched = list(watch)
        while True:
            try:
                last = self.listing()
                if condition(last):
                    return last
            except HarnessError as exc:
                last_error = str(exc)
            for proc in [self.frontend, *watched]:
                if proc is not None and not proc.alive():
                    raise HarnessError(
                        f"while waiting for {what}: {proc.describe()} died\n" + self._log_tails()
                    )
            if time.monotonic() >= deadline:
                raise HarnessError(
                    f"timed out after {timeout:.1f} s waiting for {what}; last listing: "
                    f"{_summary(last) if last is not None else last_error}\n" + self._log_tails()
                )
            time.sleep(0.1)

    @property
    def scope(self) -> str:
        """The body's ``namespace`` the frontend reports: the prefix under a prefix scope, else
        the namespace it scans (``DYN_NAMESPACE``, default the topology's, plus
        ``-{DYN_NAMESPACE_WORKER_SUFFIX}`` when that is set)."""
        env = self.extra_env
        prefix = env.get("DYN_NAMESPACE_PREFIX")
        if prefix:
            return prefix
        base = env.get("DYN_NAMESPACE") or self.topology.namespace
        suffix = env.get("DYN_NAMESPACE_WORKER_SUFFIX")
        return f"{base}-{suffix}" if suffix else base

    def in_namespace_scope(self, namespace: str) -> bool:
        """Whether the frontend scans this namespace, as Dynamo 1.6.1 does it (measured):
        a prefix ``P`` covers ``P`` and ``P-...`` (not ``P0``), only ``P`` itself when
        ``DYN_NAMESPACE_PREFIX_STRICT`` is true; the worker suffix is ignored under a prefix."""
        env = self.extra_env
        prefix = env.get("DYN_NAMESPACE_PREFIX")
        if prefix:
            strict = env.get("DYN_NAMESPACE_PREFIX_STRICT", "").strip().lower() in _TRUTHY
            return namespace == prefix or (not strict and namespace.startswith(prefix + "-"))
        return namespace == self.scope

    def in_scope(self, engine: DynamoEngine) -> bool:
        """Whether the frontend lists this engine at all.

        Its namespace must be in the scope (``in_namespace_scope``); its endpoint must be
        ``DYN_RL_ENDPOINT`` (``rl``); its component must be in ``DYN_RL_COMPONENTS`` /
        ``DYN_RL_COMPONENT`` when set.
        """
        env, spec = self.extra_env, engine.spec
        if not self.in_namespace_scope(spec.namespace):
            return False
        if spec.endpoint != (env.get("DYN_RL_ENDPOINT") or "rl"):
            return False
        allowed = env.get("DYN_RL_COMPONENTS") or env.get("DYN_RL_COMPONENT")
        if allowed:
            return spec.component in {c.strip() for c in allowed.split(",") if c.strip()}
        return True

    def _await_listed(self, keys: Sequence[str], deadline: float) -> dict[str, Any]:
        # Engines outside the frontend's namespace scope run but are never listed.
        keys = [k for k in keys if self.in_scope(self.engine(k))]
        wanted = {self.engine(k).identity: k for k in keys}

        def listed(body: dict[str, Any]) -> bool:
            seen = {_identity(w): w for w in body.get("workers", [])}
            for ident, key in wanted.items():
                worker = seen.get(ident)
                if worker is None:
                    return False
                if self._expects_error(self.engine(key)) is False and "error" in worker:
                    return False
            return True

        stubs = {self._stub_of(k) for k in keys}
        if not keys:
            return self.listing()
        return self._wait_listing(
            listed,
            max(0.0, deadline - time.monotonic()),
            f"{len(wanted)} engine(s) to be listed",
            watch=stubs,
        )

    def _expects_error(self, engine: DynamoEngine) -> bool | None:
        # A raw reply may or may not be accepted by the frontend: that is what it is for.
        if engine.key in self.replies:
            return None
        return engine.spec.faults.reply_error is not None

    def expected_ready(self) -> int:
        """How many workers a settled listing shows without error (live, no reply_error; raw
        replies count as ready only when they say ``"status": "ok"``)."""
        return sum(
            1
            for e in self.engines
            if e.alive
            and self.in_scope(e)
            and (
                self._expects_error(e) is False
                or (e.key in self.replies and self.replies[e.key].get("status") == "ok")
            )
        )

    def wait_ready(self, n: int | None = None, timeout: float = 60.0) -> dict[str, Any]:
        """Poll the RL listener until exactly ``n`` workers are listed without an error.

        ``n`` defaults to ``expected_ready()``. Returns the parsed listing; raises HarnessError
        (with the last listing and the log tails) at the deadline.
        """
        want = self.expected_ready() if n is None else n

        def ready(body: dict[str, Any]) -> bool:
            return sum(1 for w in body.get("workers", []) if "error" not in w) == want

        return self._wait_listing(ready, timeout, f"{want} ready worker(s)")

    def wait_settled(self, timeout: float = 60.0) -> dict[str, Any]:
        """Wait until the listing shows exactly the live engines (stale killed ones forgotten)."""
        with self._lock:
            live = [e for e in self._engines.values() if e.alive and self.in_scope(e)]
        expected = {e.identity: e for e in live}

        def settled(body: dict[str, Any]) -> bool:
            workers = body.get("workers", [])
            seen = {_identity(w): w for w in workers}
            if len(workers) != len(seen) or set(seen) != set(expected):
                return False
            return all(
                self._expects_error(e) in (None, "error" in seen[i]) for i, e in expected.items()
            )

        return self._wait_listing(settled, timeout, f"exactly the {len(expected)} live engine(s)")

    # ----------------------------------------------------------------- operations
    def kill(self, key: str) -> list[str]:
        """SIGKILL the stub process hosting ``key``; returns every engine key it hosted.

        The frontend keeps listing the dead instances with an ``error`` until the discovery
        store forgets them (lease expiry).
        """
        return self._kill_keys([key])

    def _kill_keys(self, keys: Sequence[str]) -> list[str]:
        killed: list[str] = []
        for stub in {self._stub_of(k) for k in keys}:
            stub.kill()
            killed.extend(stub.keys)
            with self._lock:
                for key in stub.keys:
                    if key in self._engines:
                        self._engines[key].alive = False
        return killed

    def join(self, key: str) -> DynamoEngine:
        """Start an engine of the topology that is not running yet (``present: false``)."""
        engine = self.engine(key)
        if engine.process:
            raise HarnessError(f"engine {key!r} was started already; use restart() instead")
        self._launch([engine.spec])
        self._await_listed([key], time.monotonic() + self.startup_timeout)
        return self.engine(key)

    def restart(self, key: str) -> list[DynamoEngine]:
        """(Re)start the stub process hosting ``key`` (new instance_ids); returns its engines.

        A live process is stopped gracefully first (it deregisters); a killed one is replaced.
        Waits until the new instances are listed.
        """
        stub = self._stub_of(key)
        specs = [self.engine(k).spec for k in stub.keys if k in self._engines]
        return self._replace(stub, specs)

    def remove(self, key: str) -> None:
        """Take the engine out of the fleet: its process stops gracefully (deregistering).

        Other engines hosted by the same process are restarted in a new one.
        """
        if not self.engine(key).process:  # never started (present: false)
            with self._lock:
                del self._engines[key]
            return
        stub = self._stub_of(key)
        companions = [self.engine(k).spec for k in stub.keys if k != key and k in self._engines]
        with self._lock:
            del self._engines[key]
        self._replace(stub, companions)

    def resize(self, key: str, world_size: int) -> DynamoEngine:
        """Restart the engine with another world size (a new instance_id, as a real restart)."""
        if world_size < 1:
            raise HarnessError(f"world_size must be >= 1, got {world_size}")
        stub = self._stub_of(key)
        specs = [self.engine(k).spec for k in stub.keys if k in self._engines]
        specs = [replace(s, world_size=world_size) if s.key == key else s for s in specs]
        self._replace(stub, specs)
        return self.engine(key)

    def add(
        self,
        component: str,
        *,
        count: int = 1,
        world_size: int = 1,
        namespace: str | None = None,
        endpoint: str = "rl",
        routes: Sequence[str] = DEFAULT_ROUTES,
        admin: bool = True,
        system: bool = True,
    ) -> list[DynamoEngine]:
        """Start ``count`` more engines of one component; waits until they are listed."""
        with self._lock:
            existing = [e.spec for e in self._engines.values()]
        specs = self.topology.more_engines(
            existing,
            component,
            count=count,
            world_size=world_size,
            namespace=namespace,
            endpoint=endpoint,
            routes=routes,
            admin=admin,
            system=system,
            source="DynamoFleet.add",
        )
        self._launch(specs)
        self._await_listed([s.key for s in specs], time.monotonic() + self.startup_timeout)
        return [self.engine(s.key) for s in specs]

    def _replace(self, stub: _StubProcess, specs: list[EngineSpec]) -> list[DynamoEngine]:
        if stub.alive():
            stop_all([stub], grace=5.0)
        with self._lock:
            self._stubs.remove(stub)
            # Keep the old recordings readable after the process is gone.
            self._retired.append(stub)
        if not specs:
            return []
        self._launch(specs)
        self._await_listed([s.key for s in specs], time.monotonic() + self.startup_timeout)
        return [self.engine(s.key) for s in specs]

    # ----------------------------------------------------------------- diagnostics
    @property
    def running(self) -> bool:
        """Whether the frontend (and etcd, if any) are up."""
        procs = [self.frontend] + [s.process for s in (self.etcd, self.nats) if s is not None]
        return not self._stopped and all(p is not None and p.alive() for p in procs)

    def inference_world_size(self) -> int:
        """Sum of the world sizes of the live engines that publish an admin URL (W)."""
        return sum(e.spec.world_size for e in self.engines if e.alive and e.spec.publishes_admin)

    def describe(self) -> dict[str, Any]:
        """Where everything listens, as a JSON-ready mapping (what ``dynamo up`` prints)."""
        return {
            "frontend_url": self.frontend_url,
            "discovery_url": self.discovery_url,
            "http_url": self.http_url,
            "discovery": self.discovery,
            "etcd_url": self.etcd.url if self.etcd is not None else None,
            "request_plane": self.request_plane,
            "nats_url": self.nats.url if self.nats is not None else None,
            "scope": self.scope,
            "inference_world_size": self.inference_world_size(),
            "startup_seconds": self.startup_seconds,
            "memory_bytes": self.memory_bytes(),
            "processes": len([p for p in self.processes if p.alive()]),
            "workdir": str(self.workdir),
            "engines": [
                {
                    "key": e.key,
                    "label": e.label,
                    "instance_id": e.instance_id,
                    "world_size": e.spec.world_size,
                    "system_url": e.system_url,
                    "admin_base_url": e.admin_base_url,
                    "models": list(e.models),
                    "alive": e.alive,
                    "faults": [
                        name
                        for name, on in (
                            ("dead", e.spec.faults.dead),
                            ("reply_error", e.spec.faults.reply_error is not None),
                        )
                        if on
                    ],
                    "process": e.process,
                }
                for e in self.engines
            ],
        }

    def _log_tails(self, lines: int = 12) -> str:
        parts = []
        procs = self.processes
        # With many stubs, show the dead ones and a few others so the message stays readable.
        stubs = [p for p in procs if isinstance(p, _StubProcess)]
        others = [p for p in procs if not isinstance(p, _StubProcess)]
        shown = others + [s for s in stubs if not s.alive()]
        shown += [s for s in stubs if s.alive()][: max(0, 8 - len(shown))]
        for proc in shown:
            parts.append(f"--- {proc.describe()} ---\n{proc.tail(lines)}")
        if len(shown) < len(procs):
            parts.append(f"--- ({len(procs) - len(shown)} more processes; logs in {self.workdir})")
        return "\n".join(parts)


# A SIGTERM to the harness process would skip atexit: while fleets run, turn it into SystemExit
# so that with-blocks and atexit stop them. Only when nobody else handles SIGTERM; shared by
# every fleet of the process (the first installs, the last restores).
_sigterm_lock = threading.Lock()
_sigterm_users = 0
_sigterm_previous: Any = None


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _sigterm_acquire() -> bool:
    global _sigterm_users, _sigterm_previous
    if threading.current_thread() is not threading.main_thread():
        return False
    with _sigterm_lock:
        if _sigterm_users == 0:
            current = signal.getsignal(signal.SIGTERM)
            if current is not signal.SIG_DFL and current is not _on_sigterm:
                return False
            _sigterm_previous = signal.signal(signal.SIGTERM, _on_sigterm)
            if _sigterm_previous is _on_sigterm:  # left by a release outside the main thread
                _sigterm_previous = signal.SIG_DFL
        _sigterm_users += 1
        return True


def _sigterm_release() -> None:
    global _sigterm_users
    with _sigterm_lock:
        _sigterm_users -= 1
        if _sigterm_users == 0 and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _sigterm_previous)


def _spec_json(spec: EngineSpec) -> dict[str, Any]:
    return asdict(spec)


def _identity(worker: dict[str, Any]) -> tuple[str, str, str, int]:
    return (
        str(worker.get("namespace")),
        str(worker.get("component")),
        str(worker.get("endpoint")),
        int(worker.get("instance_id") or 0),
    )


def _summary(body: dict[str, Any]) -> str:
    workers = body.get("workers", [])
    ready = sum(1 for w in workers if "error" not in w)
    errors = [
        f"{w.get('namespace')}.{w.get('component')}.{w.get('endpoint')}#{w.get('instance_id')}: "
        f"{w['error']}"
        for w in workers
        if "error" in w
    ]
    text = f"{len(workers)} worker(s), {ready} ready"
    if errors:
        text += "; errors: " + "; ".join(errors[:5]) + (" ..." if len(errors) > 5 else "")
    return text


def start_dynamo_fleet(
    topology: Topology | None = None,
    *,
    discovery: str = "file",
    engines_per_process: int | None = None,
    env: dict[str, str] | None = None,
    startup_timeout: float | None = None,
    keep_workdir: bool = False,
    replies: Mapping[str, Mapping[str, Any]] | None = None,
    request_plane: str = "tcp",
    register_models: bool = True,
    extra_models: Mapping[str, Sequence[str]] | None = None,
    namespace_prefix: str | None = None,
    worker_suffix: str | None = None,
    prefix_strict: bool = False,
    resize_after_init: Mapping[str, int] | None = None,
) -> DynamoFleet:
    """Start the real Dynamo frontend and stub workers for ``topology`` (default: the default fleet).

    Returns a started DynamoFleet (a context manager); every engine is listed when this returns
    (engines with the ``dead`` fault have been killed). ``engines_per_process`` packs several
    engines (each with its own runtime, instance_id and system server) into one stub process;
    by default engines get a process each up to 16 engines, then 8 per process.
    ``keep_workdir`` keeps the logs, specs and recordings after ``stop()``. ``replies`` maps
    engine keys to raw routes replies sent verbatim (to see how the frontend treats them).
    ``request_plane`` is ``tcp`` (default), ``nats`` (starts a throw-away nats-server) or
    ``http`` (refused by the 1.6.1 runtime: the start-up error says so). Each engine registers
    its topology ``model`` through the runtime's ``register_model`` with a tiny generated model
    directory (``register_models=False``: none); ``extra_models`` maps engine keys to more model
    names that engine registers. ``namespace_prefix`` / ``worker_suffix`` / ``prefix_strict``
    set the frontend's namespace scope (``DYN_NAMESPACE_PREFIX`` and so on).
    ``resize_after_init`` maps engine keys to the world size the engine reports once it answered
    a broadcast init (the listing then shows the resize, as after a real restart).
    """
    fleet = DynamoFleet(
        topology,
        discovery=discovery,
        engines_per_process=engines_per_process,
        env=env,
        startup_timeout=startup_timeout,
        keep_workdir=keep_workdir,
        replies=replies,
        request_plane=request_plane,
        register_models=register_models,
        extra_models=extra_models,
        namespace_prefix=namespace_prefix,
        worker_suffix=worker_suffix,
        prefix_strict=prefix_strict,
        resize_after_init=resize_after_init,
    )
    return fleet.start()
