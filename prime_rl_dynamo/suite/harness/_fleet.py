"""DynamoFleet: the real Dynamo frontend (RL listener on) and stub RL workers, as processes.

It runs on the installed ``ai-dynamo-runtime`` release (``_release``: what differs per release).

Everything binds 127.0.0.1 on free ports, with a fresh discovery store per fleet (a temporary
``DYN_FILE_KV`` directory, or a throw-away etcd). The fleet stops every process it started on
``stop()``, on leaving its ``with`` block, at interpreter exit and on SIGTERM. It composes the
fleet's environment (``_environment``), its stub processes (``_stubs``) and its SIGTERM guard
(``_signals``).
"""

from __future__ import annotations

import atexit
import contextlib
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.suite.fleet import Fleet, FleetEngine, started
from prime_rl_dynamo.suite.harness._environment import FleetEnvironment, scope_variables
from prime_rl_dynamo.suite.harness._etcd import EtcdServer
from prime_rl_dynamo.suite.harness._nats import NatsServer
from prime_rl_dynamo.suite.harness._process import ManagedProcess, free_port, stop_all
from prime_rl_dynamo.suite.harness._release import DynamoRelease, require_release
from prime_rl_dynamo.suite.harness._signals import SigtermGuard
from prime_rl_dynamo.suite.harness._stubs import StubLauncher, StubOptions, StubProcess
from prime_rl_dynamo.suite.recording import Recorder
from prime_rl_dynamo.topology import EngineSpec, Topology, default_topology
from prime_rl_dynamo.wire import DISCOVERY_PATH, Labelled, WorkerId

if TYPE_CHECKING:
    from typing import Unpack

    from prime_rl_dynamo.suite.fleet import EngineOptions

__all__ = ["DynamoEngine", "DynamoFleet", "ListenerFleet", "start_dynamo_fleet"]


@dataclass
class DynamoEngine(Labelled):
    """One engine of the fleet as it runs now (URLs and instance_id change on restart; a resize
    restarts it as a new engine with a new spec)."""

    spec: EngineSpec
    system_url: str | None = None
    admin_base_url: str | None = None
    instance_id: int | None = None  # the runtime's, once registered
    process: str = ""
    alive: bool = False
    models: tuple[str, ...] = ()  # model names registered through the runtime, in order
    key: str = field(init=False)  # the topology key, e.g. "dynamo.prefill#0"
    world_size: int = field(init=False)  # the world size the engine reports

    def __post_init__(self) -> None:
        self.key, self.world_size = self.spec.key, self.spec.world_size

    @property
    def identity(self) -> WorkerId:
        """The spec's identity with the runtime's instance_id: what the frontend lists."""
        return WorkerId.of(self.spec)._replace(instance_id=self.instance_id or 0)


_E = TypeVar("_E")


class ListenerFleet(Generic[_E]):
    """What every fleet behind the real frontend shares: its addresses, its engines by key and
    one GET of its listing. Subclasses set ``http_port``, ``rl_port``, ``_engines``, ``_lock``
    and ``_client``."""

    http_port: int
    rl_port: int
    _engines: dict[str, _E]
    _lock: threading.RLock
    _client: httpx.Client
    _stopped: bool

    def _first_stop(self) -> bool:
        """True for the first ``stop()`` only (it marks the fleet stopped): stop is idempotent."""
        with self._lock:
            first, self._stopped = not self._stopped, True
        return first

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
        """The discovery endpoint: ``frontend_url`` + ``DISCOVERY_PATH``."""
        return self.frontend_url + DISCOVERY_PATH

    @property
    def engines(self) -> list[_E]:
        """Engines of the fleet in topology order (killed ones included, removed ones not)."""
        with self._lock:
            return list(self._engines.values())

    def engine(self, key: str) -> _E:
        """The engine with this topology key."""
        with self._lock:
            try:
                return self._engines[key]
            except KeyError:
                known = ", ".join(self._engines) or "none"
                raise HarnessError(f"no engine {key!r} in this fleet (engines: {known})") from None

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


class DynamoFleet(ListenerFleet[DynamoEngine], Fleet):
    """The real Dynamo frontend plus stub RL workers for ``topology`` (default: the default fleet).

    ``discovery`` is ``file`` (a temporary ``DYN_FILE_KV`` store) or ``etcd`` (a throw-away etcd
    server). ``request_plane`` is ``tcp`` (default), ``nats`` (starts a throw-away nats-server) or
    ``http`` (refused by every runtime with the listener: the start-up error says so). ``env`` adds variables to
    every process (they win); ``namespace_prefix`` / ``worker_suffix`` / ``prefix_strict`` set the
    frontend's namespace scope (``DYN_NAMESPACE_PREFIX`` and so on). ``engines_per_process`` packs
    several engines (each with its own runtime, instance_id and system server) into one stub
    process; by default engines get a process each up to 16 engines, then 8 per process.
    ``replies`` maps engine keys to raw routes replies sent verbatim (to see how the frontend
    treats them). Each engine registers its topology ``model`` through the runtime's
    ``register_model`` with a tiny generated model directory (``register_models=False``: none);
    ``extra_models`` maps engine keys to more model names that engine registers.
    ``resize_after_init`` maps engine keys to the world size the engine reports once it answered
    a broadcast init (the listing then shows the resize, as after a real restart).
    ``keep_workdir`` keeps the logs, specs and recordings after ``stop()``; ``python`` is the
    interpreter of the frontend and stub processes. The fleet runs on the Dynamo release that
    interpreter has installed (``release``, detected unless given); a release that cannot host
    it (none installed, no RL listener, a scope it lacks) raises UnsupportedReleaseError here,
    with the one-line reason.
    """

    def __init__(
        self,
        topology: Topology | None = None,
        *,
        discovery: str = "file",
        request_plane: str = "tcp",
        env: Mapping[str, str] | None = None,
        namespace_prefix: str | None = None,
        worker_suffix: str | None = None,
        prefix_strict: bool = False,
        engines_per_process: int | None = None,
        replies: Mapping[str, Mapping[str, Any]] | None = None,
        register_models: bool = True,
        extra_models: Mapping[str, Sequence[str]] | None = None,
        resize_after_init: Mapping[str, int] | None = None,
        startup_timeout: float | None = None,
        python: str = sys.executable,
        release: DynamoRelease | None = None,
        keep_workdir: bool = False,
    ) -> None:
        self.topology = topology if topology is not None else default_topology()
        # Logs, specs, recordings and the file store; created by start(), removed by stop().
        self.workdir = Path(tempfile.gettempdir()) / f"prime-rl-dynamo-fleet-{secrets.token_hex(6)}"
        extra = {**(env or {}), **scope_variables(namespace_prefix, worker_suffix, prefix_strict)}
        self.release: DynamoRelease = release if release is not None else require_release(python)
        self.environment = FleetEnvironment(
            self.workdir,
            self.topology.namespace,
            discovery,
            request_plane,
            extra,
            python,
            release=self.release,
        )
        options = StubOptions(
            replies={k: dict(v) for k, v in (replies or {}).items()},
            register_models=register_models,
            extra_models={k: list(v) for k, v in (extra_models or {}).items()},
            resize_after_init={k: int(v) for k, v in (resize_after_init or {}).items()},
            engines_per_process=engines_per_process,
        )
        options.check(self.topology)
        self.stubs = StubLauncher(self.environment, options)
        n = len(self.topology.engines())
        self.startup_timeout = startup_timeout if startup_timeout is not None else 60.0 + n
        self.keep_workdir = keep_workdir
        self.http_port = 0
        self.rl_port = 0
        self.startup_seconds: float | None = None
        self.etcd: EtcdServer | None = None
        self.nats: NatsServer | None = None
        self.frontend: ManagedProcess | None = None
        self._engines: dict[str, DynamoEngine] = {}
        self._stopped = False
        self._lock = threading.RLock()
        self._sigterm = SigtermGuard()
        self.recorder: Recorder = self.stubs.recorder
        self._client = httpx.Client(timeout=10.0)

    # ----------------------------------------------------------------- configuration
    @property
    def extra_env(self) -> dict[str, str]:
        """The caller's variables, the namespace-scope shorthands included."""
        return self.environment.extra

    @property
    def resize_after_init(self) -> dict[str, int]:
        """Engine key -> the world size it reports once initialised; a change applies to the
        engine's next (re)start."""
        return self.stubs.options.resize_after_init

    # ----------------------------------------------------------------- addresses
    @property
    def processes(self) -> list[ManagedProcess]:
        """Every process the fleet started and still owns (frontend, etcd, stubs)."""
        procs: list[ManagedProcess] = [s.process for s in (self.etcd, self.nats) if s is not None]
        if self.frontend is not None:
            procs.append(self.frontend)
        procs.extend(self.stubs.live)
        return procs

    def trim_logs(self, max_bytes: int = 64 * 2**20) -> list[str]:
        """Halve every process log larger than ``max_bytes`` (the frontend logs every probe);
        returns the names of the processes whose logs were trimmed."""
        return [p.name for p in self.processes if p.trim_log(max_bytes)]

    def memory_bytes(self) -> int:
        """Resident memory of every live process of the fleet, summed."""
        return sum(p.rss_bytes() for p in self.processes)

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> DynamoFleet:
        """Start the discovery store, the frontend and every stub; wait until all are listed."""
        began = time.monotonic()
        if self._stopped or self.frontend is not None:
            raise HarnessError("this fleet was started already; start a new DynamoFleet")
        self.workdir.mkdir(mode=0o700)
        atexit.register(self.stop)
        self._sigterm.install()
        try:
            if self.environment.discovery == "etcd":
                self.etcd = EtcdServer(self.workdir, self.environment.base())
                self.etcd.start(timeout=min(30.0, self.startup_timeout))
                self.environment.etcd_url = self.etcd.url
            if self.environment.request_plane == "nats":
                self.nats = NatsServer(self.workdir, self.environment.base())
                self.nats.start(timeout=min(30.0, self.startup_timeout))
                self.environment.nats_url = self.nats.url
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
        if not self._first_stop():
            return
        try:
            self.stubs.stop()
            stop_all([p for p in (self.frontend,) if p is not None], grace=3.0)
            stop_all([s.process for s in (self.etcd, self.nats) if s is not None], grace=3.0)
        finally:
            self._client.close()
            atexit.unregister(self.stop)
            self._sigterm.uninstall()
            # Read the last recordings before their files go: they stay in the recorder.
            with contextlib.suppress(ValueError, OSError):
                self.recorder.requests()
            if not self.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            for engine in self.engines:
                engine.alive = False

    # ----------------------------------------------------------------- frontend
    def _start_frontend(self, deadline: float) -> None:
        for attempt in range(3):
            self.http_port, self.rl_port = free_port(), free_port()
            argv = [
                self.environment.python,
                "-m",
                "prime_rl_dynamo.suite.harness.frontend",
                "--http-port",
                str(self.http_port),
            ]
            self.frontend = ManagedProcess(
                f"frontend-{attempt}",
                argv,
                self.environment.frontend(self.rl_port),
                self.workdir / f"frontend-{attempt}.log",
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
    def _launch(self, specs: Sequence[EngineSpec]) -> list[StubProcess]:
        with self._lock:
            known = list(self._engines)
        launched = self.stubs.spawn(specs, known)
        with self._lock:
            for stub in launched:
                for spec in stub.specs:
                    models = tuple(m["name"] for m in self.stubs.models_of(spec))
                    self._engines[spec.key] = DynamoEngine(
                        spec=spec, process=stub.name, models=models
                    )
        try:
            for stub, ready in self.stubs.wait_ready(launched, self.startup_timeout):
                with self._lock:
                    for key, info in ready.items():
                        engine = self._engines[key]
                        engine.instance_id = int(info["instance_id"])
                        engine.system_url = info["system_url"]
                        engine.admin_base_url = info["admin_base_url"]
                        engine.process = stub.name
                        engine.alive = True
        except HarnessError as exc:
            raise HarnessError(f"{exc}\n{self._log_tails()}") from None
        return launched

    def _stub_of(self, key: str) -> StubProcess:
        name = self.engine(key).process
        if not name:
            raise HarnessError(
                f"engine {key!r} was never started (present: false); join() it first"
            )
        stub = self.stubs.named(name)
        if stub is None:  # pragma: no cover - every started engine names a live stub
            raise HarnessError(f"engine {key!r} has no stub process")
        return stub

    # ----------------------------------------------------------------- listing
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
        """The body's ``namespace`` the frontend reports (``FleetEnvironment.scope``)."""
        return self.environment.scope

    def in_scope(self, engine: FleetEngine) -> bool:
        """Whether the frontend lists this engine at all (``FleetEnvironment.lists``)."""
        return self.environment.lists(engine.spec)

    def _await_listed(self, keys: Sequence[str], deadline: float) -> dict[str, Any]:
        # Engines outside the frontend's namespace scope run but are never listed.
        keys = [k for k in keys if self.in_scope(self.engine(k))]
        wanted = {self.engine(k).identity: k for k in keys}

        def listed(body: dict[str, Any]) -> bool:
            seen = _by_identity(body)
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
        if engine.key in self.stubs.options.replies:
            return None
        return engine.spec.faults.reply_error is not None

    def expected_ready(self) -> int:
        """How many workers a settled listing shows without error (live, no reply_error; raw
        replies count as ready only when they say ``"status": "ok"``)."""
        replies = self.stubs.options.replies
        return sum(
            1
            for e in self.engines
            if e.alive
            and self.in_scope(e)
            and (
                self._expects_error(e) is False
                or (e.key in replies and replies[e.key].get("status") == "ok")
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
            seen = _by_identity(body)
            if len(body.get("workers", [])) != len(seen) or set(seen) != set(expected):
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
        return self._start_listed([engine.spec])[0]

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

    def add(self, component: str, **options: Unpack[EngineOptions]) -> list[DynamoEngine]:
        """Start more engines of one component (``EngineOptions``); waits until they are listed."""
        with self._lock:
            existing = [e.spec for e in self._engines.values()]
        specs = self.topology.more_engines(existing, component, source="DynamoFleet.add", **options)
        return self._start_listed(specs)

    def _replace(self, stub: StubProcess, specs: list[EngineSpec]) -> list[DynamoEngine]:
        self.stubs.retire(stub)
        return self._start_listed(specs) if specs else []

    def _start_listed(self, specs: list[EngineSpec]) -> list[DynamoEngine]:
        self._launch(specs)
        self._await_listed([s.key for s in specs], time.monotonic() + self.startup_timeout)
        return [self.engine(s.key) for s in specs]

    # ----------------------------------------------------------------- diagnostics
    @property
    def running(self) -> bool:
        """Whether the frontend (and etcd, if any) are up."""
        procs = [self.frontend] + [s.process for s in (self.etcd, self.nats) if s is not None]
        return not self._stopped and all(p is not None and p.alive() for p in procs)

    @property
    def inference_world_size(self) -> int:
        """W: the sum of the world sizes of the live listed engines that publish an admin URL."""
        return sum(
            e.world_size
            for e in self.engines
            if e.alive and e.spec.publishes_admin and self.in_scope(e)
        )

    def describe(self) -> dict[str, Any]:
        """Where everything listens, as a JSON-ready mapping (what ``dynamo up`` prints)."""
        return {
            "release": self.release.version,
            **_attributes(self, "frontend_url", "discovery_url", "http_url"),
            "discovery": self.environment.discovery,
            "etcd_url": self.etcd.url if self.etcd is not None else None,
            "request_plane": self.environment.request_plane,
            "nats_url": self.nats.url if self.nats is not None else None,
            **_attributes(self, "scope", "inference_world_size", "startup_seconds"),
            "memory_bytes": self.memory_bytes(),
            "processes": len([p for p in self.processes if p.alive()]),
            "workdir": str(self.workdir),
            "engines": [
                {
                    **_attributes(
                        e,
                        "key",
                        "label",
                        "instance_id",
                        "world_size",
                        "system_url",
                        "admin_base_url",
                    ),
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
        stubs = [p for p in procs if isinstance(p, StubProcess)]
        others = [p for p in procs if not isinstance(p, StubProcess)]
        shown = others + [s for s in stubs if not s.alive()]
        shown += [s for s in stubs if s.alive()][: max(0, 8 - len(shown))]
        for proc in shown:
            parts.append(f"--- {proc.describe()} ---\n{proc.tail(lines)}")
        if len(shown) < len(procs):
            parts.append(f"--- ({len(procs) - len(shown)} more processes; logs in {self.workdir})")
        return "\n".join(parts)


def _attributes(obj: object, *names: str) -> dict[str, Any]:
    """``{name: obj.name}`` for each name, in order: a JSON-ready view of plain attributes."""
    return {name: getattr(obj, name) for name in names}


def _by_identity(body: dict[str, Any]) -> dict[WorkerId, dict[str, Any]]:
    """The listing's workers by identity (an entry without a whole identity is left out)."""
    seen: dict[WorkerId, dict[str, Any]] = {}
    for worker in body.get("workers", []):
        with contextlib.suppress(KeyError, TypeError, ValueError):
            seen[WorkerId.from_entry(worker)] = worker
    return seen


def _summary(body: dict[str, Any]) -> str:
    workers = body.get("workers", [])
    ready = sum(1 for w in workers if "error" not in w)
    errors = [f"{ident}: {w['error']}" for ident, w in _by_identity(body).items() if "error" in w]
    text = f"{len(workers)} worker(s), {ready} ready"
    if errors:
        text += "; errors: " + "; ".join(errors[:5]) + (" ..." if len(errors) > 5 else "")
    return text


start_dynamo_fleet = started(
    DynamoFleet,
    "start_dynamo_fleet",
    """Start the real Dynamo frontend and stub workers: ``DynamoFleet(...).start()``.

    Takes DynamoFleet's arguments. Returns a started DynamoFleet (a context manager); every engine
    is listed when this returns (engines with the ``dead`` fault have been killed).
    """,
)
