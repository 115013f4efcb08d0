"""Stub worker processes: packing engines into processes, their spec files, starting, readiness.

Each stub process (``prime_rl_dynamo.suite.harness.stub_worker``) reads a JSON spec naming its engines
and what they answer, writes a ready file with their instance ids and URLs once registered, and
appends every call it serves to a JSON-lines recording that ``StubRecorder`` reads back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.suite.harness._environment import FleetEnvironment
from prime_rl_dynamo.suite.harness._model import write_model_dir
from prime_rl_dynamo.suite.harness._process import ManagedProcess, stop_all
from prime_rl_dynamo.suite.recording import RecordedRequest, Recorder
from prime_rl_dynamo.topology import EngineSpec, Topology

__all__ = ["StubLauncher", "StubOptions", "StubProcess", "StubRecorder"]

# Above this many engines a stub process hosts several (each with its own runtime): one Python
# process per engine costs ~85 MB and about a second of CPU to start (docs/harness.md, Scale).
_AUTO_PACK_ABOVE = 16
_AUTO_PACK_SIZE = 8


@dataclass
class StubOptions:
    """How the stub workers of one fleet behave beyond what the topology says.

    ``replies``: raw routes replies by engine key, sent verbatim instead of the topology's (to see
    how the real frontend treats a malformed reply; ``{admin_base_url}`` / ``{system_url}`` in a
    string value become the engine's own URLs). ``register_models``: each engine registers its
    topology model through the runtime; ``extra_models`` adds more names per engine key.
    ``resize_after_init``: engine key -> the world size its routes reply reports once its admin
    API answered a broadcast init (read when a stub is launched, so a restart applies a change).
    ``engines_per_process``: None packs one per process up to 16 engines, then 8.
    """

    replies: dict[str, dict[str, Any]] = field(default_factory=dict)
    register_models: bool = True
    extra_models: dict[str, list[str]] = field(default_factory=dict)
    resize_after_init: dict[str, int] = field(default_factory=dict)
    engines_per_process: int | None = None

    def check(self, topology: Topology) -> None:
        """HarnessError unless ``engines_per_process`` is at least 1 and every engine key the
        options name is in ``topology``."""
        if self.engines_per_process is not None and self.engines_per_process < 1:
            raise HarnessError(f"engines_per_process must be >= 1, got {self.engines_per_process}")
        keys = {s.key for s in topology.engines()}
        for name, by_key in (("replies", self.replies), ("extra_models", self.extra_models)):
            unknown = sorted(set(by_key) - keys)
            if unknown:
                raise HarnessError(f"{name} name engines not in the topology: {unknown}")


class StubProcess(ManagedProcess):
    """A stub worker process and the engines it hosts."""

    def __init__(
        self, name: str, specs: list[EngineSpec], env: dict[str, str], workdir: Path, python: str
    ) -> None:
        self.specs = specs
        self.keys = [s.key for s in specs]
        self.spec_file = workdir / f"{name}.spec.json"
        self.ready_file = workdir / f"{name}.ready.json"
        self.record_file = workdir / f"{name}.record.jsonl"
        argv = [
            python,
            "-m",
            "prime_rl_dynamo.suite.harness.stub_worker",
            "--spec",
            str(self.spec_file),
        ]
        super().__init__(name, argv, env, workdir / f"{name}.log")


class StubRecorder(Recorder):
    """A Recorder fed by the JSON-lines files the stub processes write (read on demand)."""

    def __init__(self, files: Callable[[], list[Path]]) -> None:
        super().__init__()
        self._files = files
        self._offsets: dict[Path, int] = {}
        self._read_lock = threading.Lock()

    def _refresh(self) -> None:
        with self._read_lock:
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


class StubLauncher:
    """Starts and stops the stub processes of one fleet; keeps the stopped ones' recordings."""

    def __init__(self, environment: FleetEnvironment, options: StubOptions) -> None:
        self.environment = environment
        self.options = options
        self.live: list[StubProcess] = []
        self.retired: list[StubProcess] = []
        self._counter = 0
        self.recorder = StubRecorder(lambda: [s.record_file for s in [*self.retired, *self.live]])

    def pack(
        self, specs: Sequence[EngineSpec], known: Collection[str] = ()
    ) -> list[list[EngineSpec]]:
        """Engines grouped into processes; ``known`` are the keys of the fleet's other engines
        (the automatic packing depends on the fleet's size)."""
        per = self.options.engines_per_process
        if per is None:
            total = len(set(known) | {s.key for s in specs})
            per = 1 if total <= _AUTO_PACK_ABOVE else _AUTO_PACK_SIZE
        # Engines that will be killed on purpose get a process of their own.
        solo = [[s] for s in specs if s.faults.dead]
        rest = [s for s in specs if not s.faults.dead]
        return solo + [rest[i : i + per] for i in range(0, len(rest), per)]

    def models_of(self, spec: EngineSpec) -> list[dict[str, str]]:
        """The models an engine registers ({"name", "path"}): the topology model (when set and
        ``register_models``), then its ``extra_models`` (a repeated name registers twice)."""
        names = [spec.model] if self.options.register_models and spec.model is not None else []
        names += self.options.extra_models.get(spec.key, [])
        root = self.environment.workdir / "models"
        return [{"name": n, "path": str(write_model_dir(root, n))} for n in names]

    def spawn(self, specs: Sequence[EngineSpec], known: Collection[str] = ()) -> list[StubProcess]:
        """Write a spec file per process and start the processes (without waiting for them)."""
        started: list[StubProcess] = []
        env = self.environment.base()
        workdir = self.environment.workdir
        for chunk in self.pack(specs, known):
            self._counter += 1
            stub = StubProcess(
                f"stub-{self._counter:03d}", chunk, env, workdir, self.environment.python
            )
            stub.spec_file.write_text(json.dumps(self._spec(stub)), encoding="utf-8")
            self.live.append(stub)
            stub.start()
            started.append(stub)
        return started

    def _spec(self, stub: StubProcess) -> dict[str, Any]:
        options = self.options
        return {
            "discovery": self.environment.discovery,
            "request_plane": self.environment.request_plane,
            "record": str(stub.record_file),
            "ready": str(stub.ready_file),
            "engines": [
                {
                    **asdict(s),
                    "reply": options.replies.get(s.key),
                    "models": self.models_of(s),
                    "resize_after_init": options.resize_after_init.get(s.key),
                }
                for s in stub.specs
            ],
        }

    def wait_ready(
        self, stubs: Sequence[StubProcess], timeout: float
    ) -> Iterator[tuple[StubProcess, dict[str, Any]]]:
        """Each stub with its ready file's ``engines`` (key -> instance_id and URLs), as it gets
        ready; HarnessError when one exits or ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        pending = list(stubs)
        while pending:
            for stub in list(pending):
                if stub.ready_file.exists():
                    pending.remove(stub)
                    yield stub, json.loads(stub.ready_file.read_text(encoding="utf-8"))["engines"]
                elif not stub.alive():
                    raise HarnessError(f"stub worker {stub.describe()} exited during start-up")
            if pending and time.monotonic() > deadline:
                names = ", ".join(s.name for s in pending)
                raise HarnessError(f"stub workers not ready after {timeout:.0f} s: {names}")
            if pending:
                time.sleep(0.05)

    def named(self, name: str) -> StubProcess | None:
        """The live stub process of this name."""
        return next((s for s in self.live if s.name == name), None)

    def retire(self, stub: StubProcess) -> None:
        """Stop the process gracefully (its engines deregister); its recordings stay readable."""
        if stub.alive():
            stop_all([stub], grace=5.0)
        self.live.remove(stub)
        self.retired.append(stub)

    def stop(self) -> None:
        """Stop every live stub process (SIGTERM, then SIGKILL)."""
        stop_all(self.live, grace=3.0)
