"""vLLM's native NCCL weight transfer over Dynamo's engine routes: the trainer's group, and the calls.

Prime-RL 73164c322 (PR #3296's branch) divides vLLM's native weight transfer between two processes. The
**trainer** owns vLLM's weight-transfer engine: it discovers the engines, gives each its rank offset,
and calls ``{system_url}/engine/update/init_weight_transfer_engine`` once, then for every step
``update/start_weight_update``, ``update/update_weights``, ``update/finish_weight_update`` and
``update/update_weight_version``. The **orchestrator** pauses the engines, confirms they are paused,
tells the trainer to send (a ``NCCL_READY`` file), waits for the step's weight version and resumes.

This module is the trainer's half, built on the discovery client and the rank plans:

- :class:`NativeNcclGroup` is the group a ready snapshot gives (pure data): per engine its
  ``init_info`` with its offset (``1 +`` the exclusive prefix sum, RANK-4), the group's world size
  ``1 + W``, and the engine routes to call, in order (:data:`TRAINER_ROUTES`).
- :class:`EngineRoutes` posts one route to every engine's system server, with the credentials
  (CRED-2/3), following no redirect (CRED-4), and fails on any failed reply (ADMIN-3).
- :class:`NativeNcclTrainer` is vLLM's trainer-side client protocol (what
  ``WeightTransferTrainerFactory.trainer_init(..., client=...)`` calls) over those routes; it
  re-reads the listing before the init and before each update (TOPO-1) and initialises each engine
  once (NATIVE-1). :class:`SyncNativeNcclTrainer` is the same for synchronous callers such as
  Prime-RL's trainer.

The orchestrator's half is ``prime_rl_dynamo.prime_rl.DynamoInferencePool`` with
``nccl_convention="vllm-native-nccl"``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import httpx

from prime_rl_dynamo._bounded import AsyncClosing
from prime_rl_dynamo._fanout import AdminEngine, EngineResult
from prime_rl_dynamo.admin import AdminPool, verify_fleet
from prime_rl_dynamo.client import Discovery, DiscoveryClient
from prime_rl_dynamo.config import DynamoClientConfig
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.plan import BroadcastPlan, Convention, Roster, check_rendezvous
from prime_rl_dynamo.prime_rl_config import trainer_config_from_prime_rl
from prime_rl_dynamo.topology_diff import EngineState
from prime_rl_dynamo.wire import Labelled, WorkerId

__all__ = [
    "CONTROL_ROUTES",
    "INIT_ROUTE",
    "TRAINER_ROUTES",
    "UPDATE_ROUTES",
    "EngineRoutes",
    "NativeEngine",
    "NativeNcclGroup",
    "NativeNcclTrainer",
    "SyncNativeNcclTrainer",
]

#: The trainer's routes: the init once, then per step start, update, finish and the version.
INIT_ROUTE = "update/init_weight_transfer_engine"
START_ROUTE = "update/start_weight_update"
UPDATE_ROUTE = "update/update_weights"
FINISH_ROUTE = "update/finish_weight_update"
VERSION_ROUTE = "update/update_weight_version"
UPDATE_ROUTES: tuple[str, ...] = (START_ROUTE, UPDATE_ROUTE, FINISH_ROUTE, VERSION_ROUTE)
TRAINER_ROUTES: tuple[str, ...] = (INIT_ROUTE, *UPDATE_ROUTES)

#: The orchestrator's routes around a step: pause, confirm, read the version, resume.
PAUSE_ROUTE = "control/pause_generation"
IS_PAUSED_ROUTE = "control/is_paused"
GET_VERSION_ROUTE = "control/get_weight_version"
RESUME_ROUTE = "control/resume_generation"
CONTROL_ROUTES: tuple[str, ...] = (PAUSE_ROUTE, IS_PAUSED_ROUTE, GET_VERSION_ROUTE, RESUME_ROUTE)

_T = TypeVar("_T")


def route_path(route: str) -> str:
    """The path of an engine route under ``system_url`` (``/engine/<route>``)."""
    return f"/engine/{route}"


@dataclass(frozen=True, slots=True)
class NativeEngine(Labelled):
    """One engine of the group: where its routes are, what it lists and its place in the group."""

    identity: WorkerId
    system_url: str
    world_size: int
    #: The NCCL rank of the engine's first worker (1 + the exclusive prefix sum: RANK-4).
    rank_offset: int
    routes: tuple[str, ...]

    def missing(self, routes: Sequence[str]) -> list[str]:
        """Those of ``routes`` the engine does not list."""
        return [r for r in routes if r not in self.routes]


@dataclass(frozen=True, slots=True)
class NativeNcclGroup(Roster[NativeEngine]):
    """vLLM's native NCCL group of a ready snapshot: the trainer at rank 0, engine *i* from
    ``1 + p_i``, ``world_size = 1 + W`` (RANK-4); engines in canonical order (RANK-1)."""

    plan: BroadcastPlan
    engines: tuple[NativeEngine, ...]
    master_address: str
    master_port: int

    @property
    def world_size(self) -> int:
        """The group's size: the trainer plus every inference rank (``1 + W``)."""
        return self.plan.group_world_size

    def init_info(
        self, engine: NativeEngine, trainer_info: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``init_info`` engine ``engine`` is sent: the trainer's own fields (vLLM's trainer
        engine may add some), then the group's coordinates and the engine's ``rank_offset``.

        ConfigError (RANK-4) when the trainer's info disagrees with the group on its world size,
        address or port: a group of two sizes never completes its rendezvous.
        """
        info = dict(trainer_info or {})
        mine = {
            "master_address": self.master_address,
            "master_port": self.master_port,
            "world_size": self.world_size,
        }
        clash = [f"{k}={info[k]!r} (group: {v!r})" for k, v in mine.items() if info.get(k, v) != v]
        if clash:
            raise ConfigError(
                f"RANK-4: the trainer's init_info disagrees with the discovered group: "
                f"{', '.join(clash)}; no engine was initialised",
                requirement="RANK-4",
            )
        return {**info, **mine, "rank_offset": engine.rank_offset}

    def init_calls(
        self, trainer_info: Mapping[str, Any] | None = None
    ) -> list[tuple[NativeEngine, str, dict[str, Any]]]:
        """The init, in order: ``(engine, route, body)`` once per engine."""
        return [
            (e, INIT_ROUTE, {"init_info": self.init_info(e, trainer_info)}) for e in self.engines
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: the group and, per engine, its init_info and routes."""
        return {
            "convention": Convention.VLLM_NATIVE_NCCL.value,
            "world_size": self.world_size,
            "trainer_rank": 0,
            "routes": {"init": INIT_ROUTE, "update": list(UPDATE_ROUTES)},
            "engines": [
                {
                    "label": e.label,
                    "system_url": e.system_url,
                    "world_size": e.world_size,
                    "init_info": self.init_info(e),
                }
                for e in self.engines
            ],
        }

    @classmethod
    def from_discovery(
        cls,
        discovery: Discovery,
        *,
        master_address: str,
        master_port: int,
        require: Sequence[str] = TRAINER_ROUTES,
    ) -> NativeNcclGroup:
        """The group of a ready discovery (``discovery.inference_world_size`` is W).

        Refused (before any request) unless the plan covers ``[0, W)`` once (RANK-2, RANK-6),
        every engine lists a ``system_url`` and the routes ``require`` names (ConfigError naming
        each engine and what it lacks), and the coordinates are usable.
        """
        check_rendezvous(master_address, master_port, names=("master_address", "master_port"))
        plan = discovery.plan(Convention.VLLM_NATIVE_NCCL)
        workers = {WorkerId.of(w): w for w in discovery.workers}
        engines: list[NativeEngine] = []
        lacking: list[str] = []
        for planned in plan.engines:
            worker = workers[planned.identity]
            routes = tuple(worker.routes)
            if not worker.system_url:
                lacking.append(f"{planned.label}: no system_url")
                continue
            engine = NativeEngine(
                planned.identity, worker.system_url, planned.world_size, planned.rank_offset, routes
            )
            missing = engine.missing(require)
            if missing:
                lacking.append(f"{planned.label}: routes {missing} not listed")
            engines.append(engine)
        if lacking:
            raise ConfigError(
                "vLLM native NCCL over Dynamo's engine routes needs every engine's system_url and "
                "routes; " + "; ".join(lacking)
            )
        return cls(plan, tuple(engines), master_address, master_port)


class EngineRoutes(AsyncClosing):
    """One bounded HTTP client per engine's system server; a route posted to every engine.

    Credentials go with every call to an allowed host (CRED-2/3), no redirect is followed
    (CRED-4), and any failed reply fails the call (ADMIN-3, including Dynamo's ``200`` replies with
    ``"status": "error"``).
    """

    def __init__(
        self,
        engines: Sequence[NativeEngine],
        *,
        disallowed: Literal["refuse", "anonymous"] = "anonymous",
        **options: Any,
    ) -> None:
        self.engines = tuple(engines)
        options.pop("update_timeout", None)
        self._pool = AdminPool(
            [AdminEngine(e.label, e.system_url, e.world_size, e.identity) for e in self.engines],
            disallowed=disallowed,
            **options,
        )

    @property
    def anonymous(self) -> list[str]:
        """The engines driven without credentials (outside the allow-list)."""
        return list(self._pool.anonymous)

    def http_client(self, label: str) -> httpx.AsyncClient:
        """The HTTP client of engine ``label`` (base URL its system_url, its credentials)."""
        return self._pool.http_client(label)

    async def aclose(self) -> None:
        """Close every engine's HTTP client."""
        await self._pool.aclose()

    async def post(
        self,
        route: str,
        body: Mapping[str, Any] | None = None,
        *,
        bodies: Mapping[str, Any] | None = None,
        engines: Sequence[str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> dict[str, EngineResult]:
        """``POST {system_url}/engine/<route>`` on every engine (or ``engines``, by label) with
        ``body`` (or each engine's entry of ``bodies``); AdminError naming the failures."""
        labels = list(engines) if engines is not None else [e.label for e in self.engines]
        payload = dict(bodies) if bodies is not None else {k: dict(body or {}) for k in labels}
        return await self._pool.call_each(
            route, route_path(route), payload, timeout=timeout, check=check
        )


def engine_states(engines: Sequence[NativeEngine]) -> list[EngineState]:
    """The group's engines as a topology comparison sees them (system_url as the address)."""
    return [EngineState(e.identity, e.world_size, e.system_url) for e in engines]


async def verify_group(discovery: DiscoveryClient, engines: Sequence[NativeEngine]) -> None:
    """Re-read the listing; TopologyChangedError (TOPO-1) when the matching engines, their world
    sizes or system URLs differ from ``engines`` (an engine now reporting error counts as gone)."""
    await verify_fleet(discovery, engine_states(engines), "system_url", "the native NCCL group")


@dataclass(eq=False)
class NativeNcclTrainer(AsyncClosing):
    """The trainer's client of vLLM's native weight transfer over Dynamo's engine routes.

    Its methods are vLLM's trainer-side client protocol, in the order the trainer calls them:
    :meth:`init_weight_transfer_engine` once, then per step :meth:`start_weight_update`,
    :meth:`update_weights`, :meth:`finish_weight_update` and :meth:`update_weight_version`.
    The listing is re-read before the init and before each update starts (TOPO-1); a second init
    is refused (NATIVE-1: exactly one party initialises each engine, once). Build it with
    :meth:`connect`; the constructor only wires already-built parts together.
    """

    group: NativeNcclGroup
    routes: EngineRoutes = field(repr=False)
    #: Re-reads the listing (TOPO-1); None: no re-verification.
    discovery: DiscoveryClient | None = field(default=None, kw_only=True, repr=False)
    #: The budget of each call to the engines (None: the routes' own timeout).
    timeout: float | None = field(default=None, kw_only=True)
    initialised: bool = field(default=False, init=False)

    @classmethod
    async def connect(
        cls,
        config: DynamoClientConfig,
        *,
        master_address: str,
        master_port: int,
        environ: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        disallowed: Literal["refuse", "anonymous"] = "anonymous",
    ) -> NativeNcclTrainer:
        """Discover (a ready, stable snapshot summing to ``config.inference_world_size``), build
        the group and open one client per engine's system server. Nothing is sent to an engine."""
        options = config.pool_options(environ)
        options["credentials"].resolve(environ)
        discovery_client = config.discovery_client(environ, transport=transport)
        try:
            discovery = await discovery_client.wait_ready()
            group = NativeNcclGroup.from_discovery(
                discovery, master_address=master_address, master_port=master_port
            )
            routes = EngineRoutes(
                group.engines, disallowed=disallowed, transport=transport, **options
            )
        except BaseException:
            await discovery_client.aclose()
            raise
        return cls(group, routes, discovery=discovery_client, timeout=config.update_timeout)

    async def aclose(self) -> None:
        """Close the engines' clients and the discovery client."""
        try:
            await self.routes.aclose()
        finally:
            if self.discovery is not None:
                await self.discovery.aclose()

    async def verify_topology(self) -> None:
        """TOPO-1: the listing still shows the group's engines (no-op without a discovery client)."""
        if self.discovery is not None:
            await verify_group(self.discovery, self.group.engines)

    async def init_weight_transfer_engine(
        self, init_info: Mapping[str, Any] | None = None
    ) -> dict[str, EngineResult]:
        """``update/init_weight_transfer_engine {"init_info": ...}`` on every engine, each with its
        offset; refused when already initialised (NATIVE-1) or when the fleet changed (TOPO-1)."""
        if self.initialised:
            raise ConfigError(
                "NATIVE-1: the native weight-transfer engine was already initialised on every "
                "engine; a second init would join a second rendezvous",
                requirement="NATIVE-1",
            )
        await self.verify_topology()
        calls = self.group.init_calls(init_info)
        self.initialised = True
        return await self.routes.post(
            INIT_ROUTE, bodies={e.label: body for e, _, body in calls}, timeout=self.timeout
        )

    def _require_init(self, what: str) -> None:
        if not self.initialised:
            raise ConfigError(
                f"{what} before init_weight_transfer_engine: the engines have no native "
                "weight-transfer engine yet",
                requirement="NATIVE-2",
            )

    async def start_weight_update(self, **body: Any) -> dict[str, EngineResult]:
        """Re-read the listing (TOPO-1), then ``update/start_weight_update`` on every engine."""
        self._require_init("start_weight_update")
        await self.verify_topology()
        return await self.routes.post(START_ROUTE, body, timeout=self.timeout)

    async def update_weights(self, update_info: Mapping[str, Any]) -> dict[str, EngineResult]:
        """``update/update_weights {"update_info": ...}`` on every engine (the tensors' names,
        dtypes and shapes; the data itself goes over the NCCL group)."""
        self._require_init("update_weights")
        if not isinstance(update_info, Mapping):
            raise ConfigError(f"update_info must be a mapping; found {type(update_info).__name__}")
        return await self.routes.post(
            UPDATE_ROUTE, {"update_info": dict(update_info)}, timeout=self.timeout
        )

    async def finish_weight_update(
        self, weight_version: str | None = None
    ) -> dict[str, EngineResult]:
        """``update/finish_weight_update {"weight_version": ...}`` on every engine."""
        self._require_init("finish_weight_update")
        return await self.routes.post(
            FINISH_ROUTE, {"weight_version": weight_version}, timeout=self.timeout
        )

    async def update_weight_version(self, weight_version: str) -> dict[str, EngineResult]:
        """``update/update_weight_version {"new_version": ...}`` on every engine: the step is
        committed (the orchestrator resumes once every engine reports it)."""
        self._require_init("update_weight_version")
        return await self.routes.post(
            VERSION_ROUTE, {"new_version": str(weight_version)}, timeout=self.timeout
        )


class SyncNativeNcclTrainer:
    """:class:`NativeNcclTrainer` for synchronous callers (vLLM's trainer engine calls its client
    synchronously), on a private event loop in a daemon thread. Close it with :meth:`close`."""

    def __init__(self, trainer: NativeNcclTrainer, loop: asyncio.AbstractEventLoop) -> None:
        """Use :meth:`connect` or :meth:`from_prime_rl`."""
        self._trainer = trainer
        self._loop = loop
        self._closed = False

    @staticmethod
    def _start_loop() -> asyncio.AbstractEventLoop:
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="native-nccl-trainer", daemon=True).start()
        return loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(work, loop).result()

    @classmethod
    def connect(cls, config: DynamoClientConfig, **kwargs: Any) -> SyncNativeNcclTrainer:
        """:meth:`NativeNcclTrainer.connect` with the same arguments, blocking until ready."""
        loop = cls._start_loop()
        try:
            trainer = cls._run(loop, NativeNcclTrainer.connect(config, **kwargs))
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            raise
        return cls(trainer, loop)

    @classmethod
    def from_prime_rl(cls, weight_broadcast: Any, **kwargs: Any) -> SyncNativeNcclTrainer:
        """From Prime-RL's trainer ``weight_broadcast`` config (type ``nccl`` with ``dynamo``):
        ``dynamo.discovery_url``, ``dynamo.model_name``, ``dynamo.headers``,
        ``dynamo.headers_from_env``, ``dynamo.api_key_var``, ``dynamo.admin_allowed_hosts``,
        ``inference_world_size``, ``host``, ``port`` and ``timeout`` (the discovery deadline and
        each call's budget). ``kwargs``: those of :meth:`NativeNcclTrainer.connect`."""
        config, address, port = trainer_config_from_prime_rl(weight_broadcast)
        return cls.connect(config, master_address=address, master_port=port, **kwargs)

    @property
    def group(self) -> NativeNcclGroup:
        """The group (per engine its init_info with offset; the world size ``1 + W``)."""
        return self._trainer.group

    def _call(self, work: Awaitable[_T]) -> _T:
        if self._closed:
            raise ConfigError("the trainer's client was closed; connect again")

        async def run() -> _T:
            return await work

        return self._run(self._loop, run())

    def init_weight_transfer_engine(self, init_info: Mapping[str, Any] | None = None) -> None:
        """See :meth:`NativeNcclTrainer.init_weight_transfer_engine`."""
        self._call(self._trainer.init_weight_transfer_engine(init_info))

    def start_weight_update(self, **body: Any) -> None:
        """See :meth:`NativeNcclTrainer.start_weight_update`."""
        self._call(self._trainer.start_weight_update(**body))

    def update_weights(self, update_info: Mapping[str, Any]) -> None:
        """See :meth:`NativeNcclTrainer.update_weights`."""
        self._call(self._trainer.update_weights(update_info))

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        """See :meth:`NativeNcclTrainer.finish_weight_update`."""
        self._call(self._trainer.finish_weight_update(weight_version))

    def update_weight_version(self, weight_version: str) -> None:
        """See :meth:`NativeNcclTrainer.update_weight_version`."""
        self._call(self._trainer.update_weight_version(weight_version))

    def close(self) -> None:
        """Close the clients and stop the private loop (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._run(self._loop, self._trainer.aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
