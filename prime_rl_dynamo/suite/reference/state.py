"""Live state of a reference fleet: each engine's membership, liveness and admin state.

Membership changes come from three places: the programmatic API (kill, remove, add, resize),
the topology's schedule (applied lazily, in order, once each) and the ``churn`` fault (a pure,
seeded function of the elapsed time, overlaid on the listing without mutating anything).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from prime_rl_dynamo._urls import url_host
from prime_rl_dynamo.suite.reference.listing import WorkerView
from prime_rl_dynamo.topology import EngineSpec, MembershipEvent
from prime_rl_dynamo.wire import Labelled, WorkerId

__all__ = ["FleetState", "ReferenceEngine", "churn_view"]


@dataclass(eq=False)
class ReferenceEngine(Labelled):
    """One engine of a reference fleet: its spec, where it listens and what it has been told."""

    spec: EngineSpec
    port: int
    host: str  # the host the fleet binds (the URLs advertise spec.admin_host when set)
    world_size: int = 0  # current world size (resizes change it)
    member: bool = True  # listed by the frontend
    alive: bool = True  # its servers answer (a killed engine is listed with an error)
    paused: bool = False
    weight_dirs: list[str | None] = field(default_factory=list)
    broadcaster: dict[str, Any] | None = None
    weight_version: str | None = None  # engine route update/update_weight_version
    # Admin misbehaviours the client profile sets on a running fleet (not in topology files):
    admin_redirect_host: str | None = None  # answer 307 to the same URL under this host name
    admin_redirect_path: str | None = None  # answer 307 to the same origin, under this path
    admin_error_in_200: bool = False  # answer inits 200 {"status": "error", ...} (engine routes)
    resize_after_init: int | None = None  # report this world size once an init was answered

    def __post_init__(self) -> None:
        if not self.world_size:
            self.world_size = self.spec.world_size

    @property
    def key(self) -> str:
        """The engine key, ``<namespace>.<component>#<index>``."""
        return self.spec.key

    @property
    def instance_id(self) -> int:
        """The instance id the listing carries."""
        return self.spec.instance_id

    @property
    def identity(self) -> WorkerId:
        """The worker's identity as the frontend lists it."""
        return WorkerId.of(self.spec)

    @property
    def advertised_host(self) -> str:
        """Host name the engine's URLs carry."""
        return self.spec.admin_host or self.host

    @property
    def system_url(self) -> str:
        """Base URL of the worker system server (GET /health, POST /engine/{route})."""
        host = self.advertised_host
        return f"http://{url_host(host)}:{self.port}"

    @property
    def admin_base_url(self) -> str:
        """Base URL of the admin API (paths such as /pause are appended), with a trailing ``/``
        as Dynamo's vLLM sidecar presents it: a client that appends ``/pause`` to it as it is
        sends ``//pause`` and gets a 404 (docs/findings.md RE3)."""
        return f"{self.system_url}/admin/"

    def view(self) -> WorkerView:
        """How the frontend lists this engine right now."""
        spec = self.spec
        error: str | None = None
        if spec.faults.dead or not self.alive:
            error = f"Unavailable: TCP connection to 127.0.0.1:{self.port} failed"
        elif spec.faults.reply_error is not None:
            error = spec.faults.reply_error
        view = WorkerView(
            namespace=spec.namespace,
            component=spec.component,
            endpoint=spec.endpoint,
            instance_id=spec.instance_id,
            port=self.port,
        )
        if error is not None:
            return replace(view, error=error)
        return replace(
            view,
            routes=spec.routes,
            system_url=self.system_url if spec.system else None,
            admin_base_url=self.admin_base_url if spec.admin else None,
            model=spec.model,
            world_size=self.world_size,
            weight_transfer_backend=spec.weight_transfer_backend,
        )


class FleetState:
    """Every engine, by key and by port, plus the schedule still to apply."""

    def __init__(
        self, engines: Iterable[ReferenceEngine], schedule: Iterable[MembershipEvent] = ()
    ) -> None:
        self.engines: list[ReferenceEngine] = list(engines)
        self.lock = threading.RLock()
        self._pending = sorted(schedule, key=lambda ev: ev.at)
        # Called (in the applying thread) after each scheduled event, e.g. to close a port.
        self.listeners: list[Callable[[MembershipEvent, ReferenceEngine], None]] = []
        # Ports never change (a restarted engine rebinds its own), so one index serves all.
        self._by_port = {e.port: e for e in self.engines}
        by_key = {e.key: e for e in self.engines}
        for event in self._pending:
            if event.engine not in by_key:
                from prime_rl_dynamo.errors import ConfigError

                raise ConfigError(
                    f"schedule event at {event.at}s names engine {event.engine!r}, which the "
                    f"topology does not have (engines: {', '.join(sorted(by_key))})"
                )

    def by_key(self, key: str) -> ReferenceEngine:
        """The engine with this key (KeyError naming the known keys otherwise)."""
        with self.lock:
            for engine in self.engines:
                if engine.key == key:
                    return engine
        known = ", ".join(e.key for e in self.engines)
        raise KeyError(f"no engine {key!r} in the reference fleet (engines: {known})")

    def by_port(self, port: int) -> ReferenceEngine | None:
        """The engine serving on this port, if any."""
        return self._by_port.get(port)

    def apply_schedule(self, elapsed: float) -> list[MembershipEvent]:
        """Apply every scheduled event due by ``elapsed`` seconds; returns those applied."""
        applied = []
        with self.lock:
            while self._pending and self._pending[0].at <= elapsed:
                event = self._pending.pop(0)
                engine = self.by_key(event.engine)
                if event.action == "join":
                    engine.member = True
                elif event.action == "leave":
                    engine.member = False
                elif event.action == "resize" and event.world_size is not None:
                    engine.world_size = event.world_size
                elif event.action == "kill":
                    engine.alive = False
                elif event.action == "revive":
                    engine.alive = True
                applied.append(event)
                for listener in self.listeners:
                    listener(event, engine)
        return applied

    def adopt(self, engine: ReferenceEngine) -> None:
        """Add a new engine (e.g. ReferenceFleet.add) to the fleet."""
        with self.lock:
            if any(e.key == engine.key for e in self.engines):
                raise KeyError(f"engine {engine.key!r} is already in the reference fleet")
            self.engines.append(engine)
            self._by_port[engine.port] = engine

    def members(self) -> list[ReferenceEngine]:
        """Engines currently listed."""
        with self.lock:
            return [e for e in self.engines if e.member]


def churn_view(
    members: list[ReferenceEngine],
    spares: list[ReferenceEngine],
    *,
    period: float,
    elapsed: float,
    seed: int,
) -> list[WorkerView]:
    """The listing under ``churn=period``: even epochs as is, odd epochs with one change.

    Epoch ``k = floor(elapsed / period)``; odd epochs pick, by ``(seed, k)``, one of: an engine
    leaves, an engine's world size doubles, or a spare engine joins. Deterministic in time.
    """
    views = [e.view() for e in members]
    epoch = int(elapsed // period)
    if epoch % 2 == 0 or not views:
        return views
    rng = random.Random(f"{seed}:churn:{epoch}")
    actions = ["leave", "resize"] + (["join"] if spares else [])
    action = actions[epoch // 2 % len(actions)]
    if action == "join":
        spare = spares[rng.randrange(len(spares))]
        return [*views, spare.view()]
    index = rng.randrange(len(views))
    if action == "leave":
        return views[:index] + views[index + 1 :]
    view = views[index]
    if view.world_size is None:
        return views[:index] + views[index + 1 :]
    resized = replace(view, world_size=view.world_size * 2)
    return [*views[:index], resized, *views[index + 1 :]]
