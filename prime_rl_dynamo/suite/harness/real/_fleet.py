"""RealEngineFleet: real vLLM engines on the CPU, each behind Dynamo's own vLLM sidecar.

Every engine is ``vllm-rs serve`` (vLLM's Rust front end with its managed Python engine: the gRPC
``vllm.Inference`` / ``vllm.Control`` services the sidecar speaks, and vLLM's HTTP admin routes)
serving a tiny Llama built locally, with ``python -m dynamo.vllm.sidecar --grpc-endpoint ...
--vllm-http-endpoint ... --enable-rl`` registering it with Dynamo; the real frontend lists them.
NATS on loopback is the event plane, a temporary file store the discovery. Everything binds
127.0.0.1 on free ports. The engines and sidecars run in the real-engine virtualenv
(scripts/install-real-engines.sh), the frontend in this interpreter (the ``dynamo`` extra).

Each engine is its own Dynamo component (``tp1``, ``tp2``, ...: one per engine, so W is the sum
of heterogeneous world sizes). The fleet implements the package's ``Fleet`` protocol for what a
real engine can do: listing, waiting, killing and restarting; it refuses resizes and joins.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.suite.fleet import Fleet, FleetEngine
from prime_rl_dynamo.suite.harness._environment import FleetEnvironment
from prime_rl_dynamo.suite.harness._fleet import ListenerFleet
from prime_rl_dynamo.suite.harness._nats import NatsServer
from prime_rl_dynamo.suite.harness._process import (
    ManagedProcess,
    free_port,
    free_system_port,
    stop_all,
)
from prime_rl_dynamo.suite.harness._release import require_release
from prime_rl_dynamo.suite.harness._signals import SigtermGuard
from prime_rl_dynamo.suite.recording import Recorder
from prime_rl_dynamo.topology import EngineGroup, EngineSpec, Topology
from prime_rl_dynamo.wire import Labelled, WorkerId

if TYPE_CHECKING:
    from typing import Unpack

    from prime_rl_dynamo.suite.fleet import EngineOptions

__all__ = [
    "ENGINES_VENV",
    "EXTENSION",
    "MODEL_NAME",
    "RealEngine",
    "RealEngineFleet",
    "engines_python",
    "memory_needed",
]

#: The real-engine virtualenv, relative to the repository (scripts/install-real-engines.sh).
ENGINES_VENV = Path(__file__).resolve().parents[4] / ".venv-engines"
#: The vLLM worker extension every engine loads (a gloo receiver of broadcast weights).
EXTENSION = "prime_rl_dynamo.suite.harness.real.gloo.GlooWeightReceiver"
#: The name every engine serves its model under.
MODEL_NAME = "tiny-llama"
#: The routes Dynamo 1.6.1's vLLM sidecar advertises for a vLLM 0.31 engine started without
#: ``--enable-sleep-mode`` and ``--weight-transfer-config`` (measured): prefixed by their
#: service, unlike the Python worker's (docs/findings.md).
SIDECAR_ROUTES = (
    "control/get_weight_version",
    "control/is_paused",
    "control/is_sleeping",
    "control/pause_generation",
    "control/resume_generation",
    "update/model_taints",
    "update/update_weight_version",
)
#: What one tensor-parallel rank of the tiny model costs, and the rest of an engine (measured:
#: a TP 1 plus a TP 2 engine, the frontend, NATS and two sidecars took about 7.7 GiB).
_RANK_BYTES = int(2.0 * 2**30)
_ENGINE_BYTES = int(0.8 * 2**30)
_PROGRESS_EVERY = 15.0


def memory_needed(tensor_parallel: Sequence[int]) -> int:
    """Bytes a fleet of engines with these tensor-parallel sizes needs, about."""
    return sum(_RANK_BYTES * tp + _ENGINE_BYTES for tp in tensor_parallel) + _ENGINE_BYTES


def available_memory() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def engines_python(venv: Path | None = None) -> Path:
    """The real-engine interpreter; HarnessError saying how to install it when it is missing."""
    venv = venv if venv is not None else Path(os.environ.get("PRD_ENGINES_VENV", ENGINES_VENV))
    python = venv / "bin" / "python"
    if not (python.exists() and (venv / "bin" / "vllm-rs").exists()):
        raise HarnessError(
            f"the real-engine stack is not installed in {venv} (no bin/python or bin/vllm-rs); "
            "run scripts/install-real-engines.sh (or set PRD_ENGINES_VENV)"
        )
    return python


def _tree_rss(pid: int) -> int:
    """Resident memory of ``pid`` and every descendant (vLLM forks its engine and workers)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            status = (entry / "status").read_text()
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            ppid = int(fields["PPid"].strip())
            children.setdefault(ppid, []).append(int(entry.name))
            rss[int(entry.name)] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        total += rss.get(current, 0)
        stack.extend(children.get(current, []))
    return total


@dataclass
class RealEngine(Labelled):
    """One real vLLM engine and its sidecar, as they run now."""

    spec: EngineSpec
    http_url: str = ""  # vLLM's HTTP server (OpenAI API and admin routes)
    grpc_port: int = 0
    system_url: str | None = None
    admin_base_url: str | None = None  # as the listing presents it (the sidecar adds a "/")
    instance_id: int | None = None
    engine: ManagedProcess | None = None
    sidecar: ManagedProcess | None = None
    routes: tuple[str, ...] = ()
    model_dir: str = ""
    key: str = field(init=False)
    world_size: int = field(init=False)

    def __post_init__(self) -> None:
        self.key, self.world_size = self.spec.key, self.spec.world_size

    @property
    def identity(self) -> WorkerId:
        """(namespace, component, endpoint, instance_id) as the frontend lists it."""
        return WorkerId.of(self.spec)._replace(instance_id=self.instance_id or 0)

    @property
    def alive(self) -> bool:
        """Whether the engine and its sidecar run."""
        return all(p is not None and p.alive() for p in (self.engine, self.sidecar))

    @property
    def models(self) -> tuple[str, ...]:
        """The model the sidecar registers: vLLM's model id, the checkpoint's path."""
        return (self.model_dir,) if self.model_dir else ()

    def memory_bytes(self) -> int:
        """Resident memory of the engine's process tree and its sidecar."""
        return sum(_tree_rss(p.pid) for p in (self.engine, self.sidecar) if p and p.pid)

    def generate(self, prompt: str, max_tokens: int = 8) -> list[str]:
        """The engine's greedy continuation of ``prompt``, straight from vLLM, word by word (an
        error status raises ``httpx.HTTPStatusError``)."""
        with httpx.Client(timeout=120.0, trust_env=False) as client:
            model = client.get(f"{self.http_url}/v1/models").json()["data"][0]["id"]
            reply = client.post(
                f"{self.http_url}/v1/completions",
                json={"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0},
            )
            reply.raise_for_status()
        text: str = reply.json()["choices"][0]["text"]
        return text.split()


class RealEngineFleet(ListenerFleet[RealEngine], Fleet):
    """Real vLLM engines (one per entry of ``tensor_parallel``) behind Dynamo's vLLM sidecar.

    ``model_dir``: a checkpoint every engine serves (default: a tiny random Llama built in the
    workdir with seed 0; ``checkpoint(seed)`` builds more of the same architecture).
    ``progress`` receives a line while engines load (every 15 s) and when each is listed.
    ``venv`` is the real-engine virtualenv (default ``.venv-engines``, or ``PRD_ENGINES_VENV``).
    Before any process starts, a machine with less available memory than the fleet needs is
    refused with a HarnessError saying both figures.
    """

    def __init__(
        self,
        tensor_parallel: Sequence[int] = (1, 2),
        *,
        model_dir: Path | None = None,
        venv: Path | None = None,
        namespace: str = "dynamo",
        startup_timeout: float = 900.0,
        progress: Callable[[str], None] | None = None,
        python: str = sys.executable,
        keep_workdir: bool = False,
        check_memory: bool = True,
    ) -> None:
        if not tensor_parallel or any(tp < 1 for tp in tensor_parallel):
            raise HarnessError(f"tensor_parallel sizes must be >= 1, got {list(tensor_parallel)}")
        self.tensor_parallel = tuple(int(tp) for tp in tensor_parallel)
        groups = tuple(
            EngineGroup(
                component=f"tp{tp}" + (f"-{i}" if self.tensor_parallel.count(tp) > 1 else ""),
                tp=tp,
                routes=SIDECAR_ROUTES,
            )
            for i, tp in enumerate(self.tensor_parallel)
        )
        # The sidecar registers the model under vLLM's model id: the checkpoint's path.
        self.topology = Topology(groups=groups, namespace=namespace, model=None)
        self.recorder = Recorder()
        self.workdir = Path(tempfile.gettempdir()) / f"prime-rl-dynamo-real-{secrets.token_hex(6)}"
        self.python = python
        self.venv_python = engines_python(venv)
        self.model_dir = model_dir
        self.startup_timeout = startup_timeout
        self.progress = progress or (lambda line: None)
        self.keep_workdir = keep_workdir
        self.check_memory = check_memory
        self.environment = FleetEnvironment(
            self.workdir,
            namespace,
            "file",
            "tcp",
            {"DYN_EVENT_PLANE": "nats"},
            python,
            release=require_release(python),
        )
        self.nats: NatsServer | None = None
        self.frontend: ManagedProcess | None = None
        self.http_port = 0
        self.rl_port = 0
        self.startup_seconds: float | None = None
        self._engines: dict[str, RealEngine] = {}
        self._stopped = False
        self._lock = threading.RLock()
        self._sigterm = SigtermGuard()
        self._client = httpx.Client(timeout=10.0)

    # ----------------------------------------------------------------- addresses
    @property
    def scope(self) -> str:
        """The namespace the frontend reports."""
        return self.environment.scope

    def in_scope(self, engine: FleetEngine) -> bool:
        """Every engine of this fleet is in the frontend's scope."""
        return True

    @property
    def inference_world_size(self) -> int:
        """W: the sum of the live engines' tensor-parallel sizes."""
        return sum(e.world_size for e in self.engines if e.alive)

    @property
    def running(self) -> bool:
        """Whether NATS and the frontend run."""
        procs = [self.frontend, self.nats.process if self.nats else None]
        return not self._stopped and all(p is not None and p.alive() for p in procs)

    def memory_bytes(self) -> int:
        """Resident memory of every process of the fleet, engines' children included."""
        procs = [self.frontend, self.nats.process if self.nats else None]
        fixed = sum(_tree_rss(p.pid) for p in procs if p is not None and p.pid)
        return fixed + sum(e.memory_bytes() for e in self.engines)

    def describe(self) -> dict[str, Any]:
        """Where everything listens, as a JSON-ready mapping (what ``dynamo up`` prints)."""
        return {
            "release": self.environment.release.version,
            "engines_kind": "real",
            "frontend_url": self.frontend_url,
            "discovery_url": self.discovery_url,
            "http_url": self.http_url,
            "nats_url": self.nats.url if self.nats is not None else None,
            "scope": self.scope,
            "inference_world_size": self.inference_world_size,
            "startup_seconds": self.startup_seconds,
            "memory_bytes": self.memory_bytes(),
            "model_dir": str(self.model_dir) if self.model_dir else None,
            "workdir": str(self.workdir),
            "engines": [
                {
                    "key": e.key,
                    "label": e.label,
                    "instance_id": e.instance_id,
                    "world_size": e.world_size,
                    "vllm_http_url": e.http_url,
                    "system_url": e.system_url,
                    "admin_base_url": e.admin_base_url,
                    "routes": list(e.routes),
                    "alive": e.alive,
                }
                for e in self.engines
            ],
        }

    # ----------------------------------------------------------------- lifecycle
    def checkpoint(self, seed: int) -> Path:
        """A tiny Llama checkpoint (the served architecture) with the weights of ``seed``."""
        out = self.workdir / f"checkpoint-{seed}"
        if not (out / "config.json").exists():
            self._engine_python(
                [
                    "-m",
                    "prime_rl_dynamo.suite.harness.real.tiny_llama",
                    str(out),
                    "--seed",
                    str(seed),
                ],
                f"building the tiny Llama checkpoint (seed {seed})",
            )
        return out

    def _engine_python(self, args: list[str], what: str, timeout: float = 300.0) -> None:
        import subprocess

        env = {**os.environ, "PYTHONPATH": _repo_root(), "HF_HUB_OFFLINE": "1"}
        done = subprocess.run(
            [str(self.venv_python), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).splitlines()[-12:])
            raise HarnessError(f"{what} failed (exit {done.returncode}):\n{tail}")

    def start(self) -> RealEngineFleet:
        """Start NATS, the frontend, every engine and its sidecar; wait until all are listed."""
        began = time.monotonic()
        if self._stopped or self.frontend is not None:
            raise HarnessError("this fleet was started already; start a new RealEngineFleet")
        needed = memory_needed(self.tensor_parallel)
        available = available_memory()
        if self.check_memory and available is not None and available < needed:
            raise HarnessError(
                f"not enough memory for real engines with tensor parallel "
                f"{list(self.tensor_parallel)}: they need about {needed / 2**30:.1f} GiB, "
                f"the machine has {available / 2**30:.1f} GiB available (MemAvailable); stop "
                "other work or run fewer / smaller engines"
            )
        self.workdir.mkdir(mode=0o700)
        atexit.register(self.stop)
        self._sigterm.install()
        deadline = began + self.startup_timeout
        try:
            if self.model_dir is None:
                self.progress("real engines: building the tiny Llama (seed 0)")
                self.model_dir = self.checkpoint(0)
            self.nats = NatsServer(self.workdir, self.environment.base())
            self.nats.start(timeout=30.0)
            self.environment.nats_url = self.nats.url
            self._start_frontend(deadline)
            for spec in self.topology.engines():
                self._spawn(RealEngine(spec=spec))
            self._await_listed(deadline, began)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        self.progress(
            f"real engines: {len(self._engines)} engine(s) listed, W = "
            f"{self.inference_world_size}, in {self.startup_seconds:.0f} s, "
            f"{self.memory_bytes() / 2**30:.1f} GiB resident"
        )
        return self

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL) and remove the workdir. Idempotent."""
        if not self._first_stop():
            return
        try:
            procs: list[ManagedProcess] = []
            for engine in self.engines:
                procs.extend(p for p in (engine.sidecar, engine.engine) if p is not None)
            stop_all(procs, grace=10.0)
            stop_all([p for p in (self.frontend,) if p is not None], grace=3.0)
            if self.nats is not None:
                stop_all([self.nats.process], grace=3.0)
        finally:
            self._client.close()
            atexit.unregister(self.stop)
            self._sigterm.uninstall()
            if not self.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def _start_frontend(self, deadline: float) -> None:
        self.http_port, self.rl_port = free_port(), free_port()
        argv = [
            self.python,
            "-m",
            "prime_rl_dynamo.suite.harness.frontend",
            "--http-port",
            str(self.http_port),
        ]
        self.frontend = ManagedProcess(
            "frontend",
            argv,
            self.environment.frontend(self.rl_port),
            self.workdir / "frontend.log",
        )
        self.frontend.start()
        while time.monotonic() < deadline and self.frontend.alive():
            with contextlib.suppress(httpx.HTTPError):
                if self._client.get(self.discovery_url, timeout=2.0).status_code == 200:
                    return
            time.sleep(0.1)
        raise HarnessError(
            f"the Dynamo frontend ({self.discovery_url}) did not serve\n{self.frontend.tail()}"
        )

    def _spawn(self, engine: RealEngine) -> None:
        spec = engine.spec
        assert self.model_dir is not None
        http_port, grpc_port, system_port = free_port(), free_port(), free_system_port()
        engine.http_url = f"http://127.0.0.1:{http_port}"
        engine.model_dir = str(self.model_dir)
        engine.grpc_port = grpc_port
        engine.instance_id = None
        engine.admin_base_url = engine.system_url = None
        bindir = str(self.venv_python.parent)
        env = {
            **self.environment.base(),
            # vllm-rs starts its Python engine as "python3" from PATH.
            "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
            "PYTHONPATH": _repo_root(),
            "HF_HUB_OFFLINE": "1",
            "VLLM_SERVER_DEV_MODE": "1",  # /collective_rpc, /pause, /resume on vLLM's HTTP
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "VLLM_PLUGINS": "",
            "VLLM_CPU_OMP_THREADS_BIND": _threads_bind(spec.tp),
        }
        log = self.workdir / f"{spec.component}"
        argv = [
            str(self.venv_python.parent / "vllm-rs"),
            "serve",
            str(self.model_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(http_port),
            "--grpc-port",
            str(grpc_port),
            "--",
            "--served-model-name",
            MODEL_NAME,
            "--dtype",
            "bfloat16",
            "--max-model-len",
            "256",
            "--tensor-parallel-size",
            str(spec.tp),
            "--worker-extension-cls",
            EXTENSION,
            "--enforce-eager",
        ]
        engine.engine = ManagedProcess(
            f"vllm-{spec.component}", argv, env, Path(f"{log}-vllm.log"), native=True
        )
        engine.engine.start()
        sidecar_env = {
            **env,
            "DYN_NAMESPACE": spec.namespace,
            "DYN_COMPONENT": spec.component,
            "DYN_SYSTEM_PORT": str(system_port),
            "DYN_LOG": "info",
        }
        sidecar_argv = [
            str(self.venv_python),
            "-m",
            "dynamo.vllm.sidecar",
            "--grpc-endpoint",
            f"127.0.0.1:{grpc_port}",
            "--vllm-http-endpoint",
            engine.http_url,
            "--enable-rl",
        ]
        engine.sidecar = ManagedProcess(
            f"sidecar-{spec.component}", sidecar_argv, sidecar_env, Path(f"{log}-sidecar.log")
        )
        engine.sidecar.start()
        with self._lock:
            self._engines[spec.key] = engine

    def _await_listed(self, deadline: float, began: float) -> dict[str, Any]:
        """Wait until every live engine is listed without an error; fill in what it says."""
        next_line = time.monotonic() + _PROGRESS_EVERY
        seen_ready: set[str] = set()
        last: dict[str, Any] | None = None
        while True:
            with contextlib.suppress(HarnessError):
                last = self.listing()
                self._adopt(last)
            ready = {e.key for e in self.engines if e.instance_id is not None}
            for key in sorted(ready - seen_ready):
                self.progress(f"real engines: {key} listed after {time.monotonic() - began:.0f} s")
            seen_ready = ready
            if all(e.instance_id is not None for e in self.engines):
                assert last is not None
                return last
            for engine in self.engines:
                for proc in (engine.engine, engine.sidecar):
                    if proc is not None and not proc.alive():
                        raise HarnessError(
                            f"{proc.describe()} exited while the fleet started\n{proc.tail(20)}"
                        )
            if time.monotonic() >= deadline:
                raise HarnessError(
                    f"real engines not all listed after {self.startup_timeout:.0f} s\n"
                    + self._log_tails()
                )
            if time.monotonic() >= next_line:
                waiting = [e.key for e in self.engines if e.key not in ready]
                self.progress(
                    f"real engines: loading {', '.join(waiting)} "
                    f"({time.monotonic() - began:.0f} s, "
                    f"{self.memory_bytes() / 2**30:.1f} GiB resident)"
                )
                next_line = time.monotonic() + _PROGRESS_EVERY
            time.sleep(0.5)

    def _adopt(self, body: dict[str, Any]) -> None:
        by_component = {}
        for worker in body.get("workers", []):
            if isinstance(worker, dict) and "error" not in worker and worker.get("admin_base_url"):
                by_component[worker.get("component")] = worker
        with self._lock:
            for engine in self._engines.values():
                worker = by_component.get(engine.spec.component)
                if worker is None or not engine.alive:
                    continue
                engine.instance_id = int(worker["instance_id"])
                engine.system_url = worker.get("system_url")
                engine.admin_base_url = worker.get("admin_base_url")
                engine.routes = tuple(worker.get("routes") or ())
                engine.world_size = int(worker.get("world_size") or engine.spec.world_size)

    def _log_tails(self, lines: int = 15) -> str:
        parts = []
        for proc in [self.frontend, *(p for e in self.engines for p in (e.engine, e.sidecar))]:
            if proc is not None:
                parts.append(f"--- {proc.describe()} ---\n{proc.tail(lines)}")
        return "\n".join(parts)

    # ----------------------------------------------------------------- the listing
    def expected_ready(self) -> int:
        """Every live engine is listed without an error."""
        return sum(1 for e in self.engines if e.alive)

    def wait_ready(self, n: int | None = None, timeout: float = 120.0) -> dict[str, Any]:
        """Poll until exactly ``n`` (default every live engine) workers are listed ready."""
        want = self.expected_ready() if n is None else n
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            with contextlib.suppress(HarnessError):
                last = self.listing()
                ready = [w for w in last.get("workers", []) if "error" not in w]
                if len(ready) == want:
                    return last
            if time.monotonic() >= deadline:
                raise HarnessError(
                    f"timed out after {timeout:.0f} s waiting for {want} ready worker(s); "
                    f"last listing: {last!r:.500}"
                )
            time.sleep(0.2)

    # ----------------------------------------------------------------- membership
    def kill(self, key: str) -> list[str]:
        """SIGKILL the engine's vLLM process tree and its sidecar."""
        engine = self.engine(key)
        for proc in (engine.sidecar, engine.engine):
            if proc is not None:
                proc.kill()
        return [key]

    def restart(self, key: str) -> list[RealEngine]:
        """Stop the engine (if alive) and start it again; waits until it is listed."""
        engine = self.engine(key)
        stop_all([p for p in (engine.sidecar, engine.engine) if p is not None], grace=10.0)
        self._spawn(RealEngine(spec=engine.spec))
        began = time.monotonic()
        self._await_listed(began + self.startup_timeout, began)
        return [self.engine(key)]

    def resize(self, key: str, world_size: int) -> RealEngine:
        """Restart the engine with another tensor-parallel size."""
        engine = self.engine(key)
        stop_all([p for p in (engine.sidecar, engine.engine) if p is not None], grace=10.0)
        spec = replace(engine.spec, tp=world_size, world_size=world_size)
        self._spawn(RealEngine(spec=spec))
        began = time.monotonic()
        self._await_listed(began + self.startup_timeout, began)
        return self.engine(key)

    def join(self, key: str) -> RealEngine:
        """Not supported: every engine of a real fleet starts with it."""
        raise HarnessError(
            "a real-engine fleet starts every engine at once; join() is not supported"
        )

    def remove(self, key: str) -> None:
        """Stop the engine and forget it."""
        engine = self.engine(key)
        stop_all([p for p in (engine.sidecar, engine.engine) if p is not None], grace=10.0)
        with self._lock:
            del self._engines[key]

    def add(self, component: str, **options: Unpack[EngineOptions]) -> list[RealEngine]:
        """Not supported: a real fleet's engines are fixed by ``tensor_parallel``."""
        raise HarnessError("a real-engine fleet's engines are fixed; add() is not supported")


def _threads_bind(tp: int) -> str:
    """``VLLM_CPU_OMP_THREADS_BIND``: one CPU per rank (``0|1`` for TP 2 on two cores), every
    CPU for a TP 1 engine (``0-1``)."""
    cpus = os.cpu_count() or 1
    if tp == 1:
        return f"0-{cpus - 1}" if cpus > 1 else "0"
    return "|".join(str(rank % cpus) for rank in range(tp))


def _repo_root() -> str:
    """The directory holding the ``prime_rl_dynamo`` package (for the engines' PYTHONPATH)."""
    return str(Path(__file__).resolve().parents[4])
