"""A drop-in inference pool for Prime-RL's orchestrator, built on this package's client.

``DynamoInferencePool`` has every member Prime-RL reads on its policy inference pool (the
``InferencePool`` protocol below; ``PRIME_RL_SURFACE`` lists each with the Prime-RL source lines
that read it): discovery, readiness, rank plans, credentials and weight updates come from
``client``, ``plan``, ``admin`` and ``native_nccl``. It never imports ``prime_rl``: Prime-RL's
config objects are read by duck typing. The data plane (``score``, ``train_client``,
``eval_client``) stays Prime-RL's and is forwarded to.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx

from prime_rl_dynamo.admin import AdminPool, EngineResult, raise_failed
from prime_rl_dynamo.client import Discovery, DiscoveryClient
from prime_rl_dynamo.config import DynamoClientConfig
from prime_rl_dynamo.errors import AdminError, ConfigError, DataPlaneMissing, TopologyError
from prime_rl_dynamo.native_nccl import (
    CONTROL_ROUTES,
    FINISH_ROUTE,
    GET_VERSION_ROUTE,
    IS_PAUSED_ROUTE,
    PAUSE_ROUTE,
    RESUME_ROUTE,
    START_ROUTE,
    TRAINER_ROUTES,
    UPDATE_ROUTE,
    VERSION_ROUTE,
    EngineRoutes,
    NativeEngine,
)
from prime_rl_dynamo.plan import BroadcastPlan, Convention, check_rendezvous
from prime_rl_dynamo.prime_rl_config import (
    client_config_from_prime_rl,
    nccl_convention_from_prime_rl,
    trainer_config_from_prime_rl,
)
from prime_rl_dynamo.wire import WorkerId

__all__ = [
    "NATIVE_NCCL_OWNERS",
    "PRIME_RL_REVISION",
    "PRIME_RL_SURFACE",
    "DataPlane",
    "DynamoInferencePool",
    "InferencePool",
    "client_config_from_prime_rl",
    "trainer_config_from_prime_rl",
]

_log = logging.getLogger(__name__)

#: The file Prime's trainer waits for before it broadcasts a step's weights over NCCL.
NCCL_READY = "NCCL_READY"

#: The engines' admin APIs the pool can drive: Prime-RL's admin server (SPEC §8.3 routes) or vLLM's
#: dev-mode server, where init and updates go through ``/collective_rpc``.
ADMIN_APIS = ("prime", "vllm")

#: Who initialises vLLM's native weight-transfer engine under ``vllm-native-nccl``: the trainer
#: (Prime-RL 73164c322; the pool only pauses, signals and waits for the version) or the
#: orchestrator's pool (init through ``/collective_rpc``, then the native start/update/finish).
NATIVE_NCCL_OWNERS = ("trainer", "orchestrator")

#: The Prime-RL revision whose code ``PRIME_RL_SURFACE`` (and docs/prime-rl/) was read from.
PRIME_RL_REVISION = "73164c322"

#: Every member Prime-RL reads on its policy inference pool at ``PRIME_RL_REVISION``: name ->
#: the source lines (path:line in PrimeIntellect-ai/prime-rl) that read it. The orchestrator, its
#: dispatcher, its weight watcher and its algorithms were searched for every ``pool.X`` read on the
#: object ``setup_inference_pool`` returns; the ``InferencePool`` protocol has exactly these.
PRIME_RL_SURFACE: Mapping[str, tuple[str, ...]] = {
    "model_name": (
        "src/prime_rl/orchestrator/orchestrator.py:266",
        "src/prime_rl/orchestrator/dispatcher.py:218",
        "src/prime_rl/orchestrator/algo/opsd.py:51",
    ),
    "wait_for_ready": ("src/prime_rl/orchestrator/orchestrator.py:269",),
    "init_nccl_broadcast": ("src/prime_rl/orchestrator/orchestrator.py:280",),
    "init_nixl_broadcast": ("src/prime_rl/orchestrator/orchestrator.py:287",),
    "update_weights": (
        "src/prime_rl/orchestrator/orchestrator.py:344",
        "src/prime_rl/orchestrator/watcher.py:139",
    ),
    "update_model_name": (
        "src/prime_rl/orchestrator/orchestrator.py:361",
        "src/prime_rl/orchestrator/watcher.py:150",
    ),
    "admin_clients": ("src/prime_rl/orchestrator/orchestrator.py:401",),
    "train_client": ("src/prime_rl/orchestrator/dispatcher.py:494",),
    "eval_client": ("src/prime_rl/orchestrator/dispatcher.py:494",),
    "score": ("src/prime_rl/orchestrator/algo/opsd.py:72",),
    "stop": ("src/prime_rl/orchestrator/orchestrator.py:954",),
}


@runtime_checkable
class InferencePool(Protocol):
    """Every member Prime-RL's orchestrator, dispatcher, weight watcher and algorithms read on the
    policy inference pool at ``PRIME_RL_REVISION`` (``PRIME_RL_SURFACE`` names the source lines)."""

    @property
    def model_name(self) -> str | None:
        """The served model name (the LoRA adapter's after ``update_model_name``)."""
        ...

    @property
    def train_client(self) -> Any:
        """The data-plane client config train rollouts are pinned to (the dispatcher's)."""
        ...

    @property
    def eval_client(self) -> Any:
        """The data-plane client config eval rollouts are pinned to (the dispatcher's)."""
        ...

    @property
    def admin_clients(self) -> Sequence[httpx.AsyncClient]:
        """One HTTP client per engine, in canonical order, base URL = the engine's admin URL."""
        ...

    def update_model_name(self, model_name: str) -> None:
        """The served model name changed (a LoRA adapter)."""
        ...

    async def wait_for_ready(self, model_name: str | None, timeout: float | None = None) -> None:
        """Return once every engine is healthy and serves ``model_name``."""
        ...

    async def init_nccl_broadcast(
        self, host: str, port: int, timeout: float, inference_world_size: int | None = None
    ) -> None:
        """Initialise the NCCL weight broadcast on every engine with its rank offset."""
        ...

    async def init_nixl_broadcast(
        self,
        host: str,
        port: int,
        timeout: float,
        inference_world_size: int | None,
        session_id: str,
    ) -> None:
        """Initialise the NIXL weight transfer on every engine with its rank offset."""
        ...

    async def update_weights(
        self,
        weight_dir: str | os.PathLike[str] | None,
        lora_name: str | None = None,
        step: int = 0,
        native_nccl: bool = False,
    ) -> None:
        """Pause, update and resume every engine."""
        ...

    async def score(self, token_ids: Any) -> Any:
        """Prefill log-probs through the data-plane client."""
        ...

    async def stop(self) -> None:
        """Close everything."""
        ...


@runtime_checkable
class DataPlane(Protocol):
    """Prime-RL's data-plane object the pool delegates ``score`` to (``stop`` and
    ``update_model_name`` are forwarded too when it has them)."""

    async def score(self, token_ids: Any) -> Any:
        """Prefill log-probs for ``token_ids``."""
        ...


class DynamoInferencePool:
    """Prime-RL's inference pool over Dynamo-discovered engines (see ``InferencePool``).

    Build it with ``await DynamoInferencePool.from_config(client_config, model_name,
    inference_world_size=W)``: that waits for a ready, stable listing (READY-1..6, two identical
    polls: READY-4), plans the broadcast in canonical order (refused before any request unless it
    covers [0, W) exactly once: RANK-1, 2, 6) and opens one admin client per engine with the
    credentials (CRED-1..4; engines outside an allow-list get no credential and a warning). Every
    init and weight update re-verifies the topology first (TOPO-1). Every error is a
    ``PrimeRLDynamoError``.
    """

    def __init__(
        self,
        config: DynamoClientConfig,
        discovery_client: DiscoveryClient,
        discovery: Discovery,
        admin: AdminPool,
        *,
        nccl_convention: Convention = Convention.PRIME_NCCL,
        native_nccl_owner: str = "trainer",
        admin_api: str = "prime",
        data_plane: DataPlane | None = None,
        deadline: float | None = None,
        engine_routes: EngineRoutes | None = None,
    ) -> None:
        """Use ``from_config``; this wires already-built parts together."""
        self.config = config
        self.discovery_client = discovery_client
        self.discovery = discovery
        self.admin = admin
        self.nccl_convention = nccl_convention
        if admin_api not in ADMIN_APIS:
            raise ConfigError(f"admin_api must be one of {list(ADMIN_APIS)}; found {admin_api!r}")
        if native_nccl_owner not in NATIVE_NCCL_OWNERS:
            raise ConfigError(
                f"native_nccl_owner must be one of {list(NATIVE_NCCL_OWNERS)}; "
                f"found {native_nccl_owner!r}"
            )
        self.native_nccl_owner = native_nccl_owner
        self.admin_api = admin_api
        self.data_plane = data_plane
        #: The engines' system servers (Dynamo's engine routes); None when an engine lists none.
        self.engine_routes = engine_routes
        self._model_name = config.model
        # The budget of the native lifecycle's wait for the weight version (init's timeout).
        self._native_timeout = config.update_timeout
        #: The convention of the last broadcast initialised (None before any init).
        self.convention: Convention | None = None
        #: The step of the last successful weight update.
        self.weight_step: int | None = None
        self._deadline = deadline
        self._stopped = False
        # One init or update at a time: two interleaved pause/resume cycles would unpause early.
        self._mutating = asyncio.Lock()

    @classmethod
    async def from_config(
        cls,
        client_config: Any,
        model_name: str | None,
        inference_world_size: int | None = None,
        **kwargs: Any,
    ) -> DynamoInferencePool:
        """Discover, plan and open the admin clients; returns once the fleet is ready.

        ``client_config`` is Prime-RL's ``client`` config (or None with ``discovery_url=``).
        Keyword arguments: ``weight_broadcast`` (Prime-RL's config, for its inference_world_size
        and type), ``nccl_convention`` (``"prime-nccl"``, default, or ``"vllm-native-nccl"``:
        what ``init_nccl_broadcast`` sends), ``admin_api`` (``"prime"``, default: the
        ``/init_broadcaster`` and ``/update_weights`` routes; ``"vllm"``: both through vLLM's
        ``/collective_rpc``), ``data_plane`` (what ``score`` runs on),
        ``disallowed`` (``"anonymous"``, default: engines outside the allow-list are driven
        without credentials; ``"refuse"``), ``environ`` (instead of ``os.environ``),
        ``transport`` (an httpx transport, for tests), and any ``DynamoClientConfig`` field.
        Prime-RL's data-plane arguments (``train_client_type``, ``eval_client_type``,
        ``renderer_config``) are accepted and left to the data plane.
        """
        for data_plane_only in ("train_client_type", "eval_client_type", "renderer_config"):
            kwargs.pop(data_plane_only, None)
        weight_broadcast = kwargs.pop("weight_broadcast", None)
        nccl_convention, source = nccl_convention_from_prime_rl(
            client_config, kwargs.pop("nccl_convention", None)
        )
        native_nccl_owner = kwargs.pop("native_nccl_owner", "trainer")
        if native_nccl_owner not in NATIVE_NCCL_OWNERS:
            raise ConfigError(
                f"native_nccl_owner must be one of {list(NATIVE_NCCL_OWNERS)}; "
                f"found {native_nccl_owner!r}"
            )
        admin_api = kwargs.pop("admin_api", "prime")
        if admin_api not in ADMIN_APIS:
            raise ConfigError(f"admin_api must be one of {list(ADMIN_APIS)}; found {admin_api!r}")
        data_plane = kwargs.pop("data_plane", None)
        disallowed = kwargs.pop("disallowed", "anonymous")
        environ: Mapping[str, str] | None = kwargs.pop("environ", None)
        transport: httpx.AsyncBaseTransport | None = kwargs.pop("transport", None)
        if data_plane is not None and not isinstance(data_plane, DataPlane):
            raise ConfigError(
                f"data_plane must have an async score(token_ids); found {type(data_plane).__name__}"
            )
        config = client_config_from_prime_rl(
            client_config,
            model_name=model_name,
            inference_world_size=inference_world_size,
            weight_broadcast=weight_broadcast,
            **kwargs,
        )
        if nccl_convention is Convention.VLLM_NATIVE_NCCL and config.weight_broadcast == "nccl":
            # Checked now, not at init: vLLM native admits only a one-process trainer (RANK-4).
            config = dataclasses.replace(config, weight_broadcast="vllm-native-nccl")
        started = time.monotonic()
        deadline = started + config.discovery_timeout
        # Credentials are resolved before the first request: an unset variable fails here (CRED-2).
        options = config.pool_options(environ)
        options["credentials"].resolve(environ)
        discovery_client = config.discovery_client(environ, transport=transport)
        _log.info(
            "waiting up to %.0f s for %s to list engines of %s summing to W=%d",
            config.discovery_timeout,
            discovery_client.url,
            repr(config.model) if config.model is not None else "any model",
            config.inference_world_size,
        )
        try:
            discovery = await discovery_client.wait_ready()
            # The plan is refused here, before any admin request, unless it covers [0, W) once.
            plan = discovery.plan(
                config.convention or Convention.PRIME_NCCL,
                trainer_world_size=config.trainer_world_size,
            )
            admin = AdminPool.from_plan(
                plan,
                discovery=discovery_client,
                disallowed=disallowed,
                transport=transport,
                **options,
            )
            engine_routes = _engine_routes(
                discovery, plan, disallowed=disallowed, transport=transport, **options
            )
        except BaseException:
            await discovery_client.aclose()
            raise
        if config.weight_broadcast in ("nccl", "vllm-native-nccl"):
            owner = (
                f", initialised by the {native_nccl_owner}"
                if nccl_convention is (Convention.VLLM_NATIVE_NCCL)
                else ""
            )
            _log.info("NCCL convention %s (from %s)%s", nccl_convention.value, source, owner)
        _log.info(
            "ready after %d poll(s) in %.1f s: %d engine(s), offsets %s",
            discovery.polls,
            time.monotonic() - started,
            len(plan.engines),
            plan.rank_offsets,
        )
        if admin.anonymous:
            outside = [
                f"{label} ({httpx.URL(plan.engine(label).admin_base_url or '').host})"
                for label in admin.anonymous
            ]
            _log.warning(
                "CRED-3: %d engine(s) outside the admin host allow-list are driven without "
                "credentials: %s",
                len(outside),
                ", ".join(outside),
            )
        return cls(
            config,
            discovery_client,
            discovery,
            admin,
            nccl_convention=nccl_convention,
            native_nccl_owner=native_nccl_owner,
            admin_api=admin_api,
            data_plane=data_plane,
            deadline=deadline,
            engine_routes=engine_routes,
        )

    # --- the orchestrator's surface ---------------------------------------------------------------

    @property
    def model_name(self) -> str | None:
        """The served model name (the pool's model, or the name ``update_model_name`` set)."""
        return self._model_name

    @property
    def train_client(self) -> Any:
        """The data plane's ``train_client`` (Prime-RL's dispatcher pins train rollouts to it)."""
        return self._data_plane_member("train_client")

    @property
    def eval_client(self) -> Any:
        """The data plane's ``eval_client`` (Prime-RL's dispatcher pins eval rollouts to it)."""
        return self._data_plane_member("eval_client")

    def _data_plane_member(self, name: str) -> Any:
        if self.data_plane is None or not hasattr(self.data_plane, name):
            what = (
                "no data_plane was injected"
                if self.data_plane is None
                else (f"the injected data_plane ({type(self.data_plane).__name__}) has no {name}")
            )
            raise DataPlaneMissing(
                f"{name} is the data plane's (the OpenAI client config rollouts are pinned to), "
                f"which this pool does not replace, and {what}: pass data_plane=<Prime-RL's own "
                "InferencePool over client.base_url> to DynamoInferencePool.from_config"
            )
        return getattr(self.data_plane, name)

    @property
    def admin_clients(self) -> list[httpx.AsyncClient]:
        """One ``httpx.AsyncClient`` per engine, canonical order, credentials attached (CRED-2/3)."""
        return [self.admin.http_client(e.label) for e in self.admin.engines]

    @property
    def plan(self) -> BroadcastPlan:
        """The plan of the last init (before any: the one checked at start-up)."""
        plan = self.admin.plan
        assert plan is not None  # from_config always builds the pool from a plan
        return plan

    def update_model_name(self, model_name: str) -> None:
        """The served model name changed (a LoRA adapter); the engines and the plan stay."""
        if not isinstance(model_name, str) or not model_name:
            raise ConfigError(f"model_name must be a non-empty string; found {model_name!r}")
        self._model_name = model_name
        forward = getattr(self.data_plane, "update_model_name", None)
        if callable(forward):
            forward(model_name)

    async def wait_for_ready(self, model_name: str | None, timeout: float | None = None) -> None:
        """The fleet still matches the plan (TOPO-1) and every engine answers health 2xx (ADMIN-1).

        ``model_name`` must be the model the pool was built for (or the name set by
        ``update_model_name``). ``timeout`` None: the first call shares from_config's
        ``wait_for_ready_timeout`` budget, later calls get a fresh one. Health is retried until
        the deadline while engines do not answer or answer 5xx, 408, 409 or 429; then, or at
        once for any other failure (a redirect, another 4xx, a reply that is not a JSON
        object), AdminError names the engines that were not healthy.
        """
        self._require_open()
        served = {self.config.model, self.model_name}
        if model_name is not None and self.config.model is not None and model_name not in served:
            raise ConfigError(
                f"READY-5: this pool serves model {self.config.model!r}; wait_for_ready was "
                f"asked for {model_name!r} (build another pool for another model)",
                requirement="READY-5",
            )
        now = time.monotonic()
        if timeout is not None:
            deadline = now + float(timeout)
        elif self._deadline is not None:
            deadline = self._deadline
        else:
            deadline = now + self.config.discovery_timeout
        self._deadline = None
        await self.admin.verify_topology(timeout=self._budget(deadline))
        await wait_healthy(self.admin, deadline, self.config.poll_interval)

    async def init_nccl_broadcast(
        self, host: str, port: int, timeout: float, inference_world_size: int | None = None
    ) -> None:
        """The NCCL group, per ``nccl_convention``: Prime's broadcaster (``/init_broadcaster``
        with each engine's offset, RANK-3), or vLLM's native engine (RANK-4). Native and owned by
        the trainer (Prime-RL 73164c322): nothing is sent; W, the fleet (TOPO-1) and every
        engine's native routes are checked, and ``timeout`` becomes the budget of each step's wait
        for the weight version. Owned by the orchestrator: ``/collective_rpc``
        ``init_weight_transfer_engine`` with each engine's offset."""
        if self._trainer_owned(self.nccl_convention):
            await self._check_trainer_owned(host, port, timeout, inference_world_size)
            return
        await self._init(self.nccl_convention, host, port, timeout, inference_world_size, None)

    async def init_nixl_broadcast(
        self,
        host: str,
        port: int,
        timeout: float,
        inference_world_size: int | None,
        session_id: str,
    ) -> None:
        """Send each engine its NIXL rank offset and the shared ``session_id`` (RANK-5)."""
        await self._init(Convention.NIXL, host, port, timeout, inference_world_size, session_id)

    async def update_weights(
        self,
        weight_dir: str | os.PathLike[str] | None,
        lora_name: str | None = None,
        step: int = 0,
        native_nccl: bool = False,
    ) -> None:
        """Re-verify the topology (TOPO-1), then pause, ``update_weights``, resume every engine.

        Engines are resumed even when the update fails (AdminError then names the engines and
        what each answered). After an NCCL init, or with ``native_nccl``, ``weight_dir/NCCL_READY``
        is touched first: Prime's trainer waits for it before broadcasting. LoRA adapters are not
        driven through this pool (ConfigError).
        """
        self._require_open()
        if lora_name is not None:
            raise ConfigError(
                f"update_weights(lora_name={lora_name!r}): LoRA adapters are not loaded through "
                "the Dynamo pool; only full weight updates are"
            )
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ConfigError(f"step must be an integer >= 0; found {step!r}")
        nccl = native_nccl or self.convention in (
            Convention.PRIME_NCCL,
            Convention.VLLM_NATIVE_NCCL,
        )
        if native_nccl and weight_dir is None:
            raise ConfigError("update_weights(native_nccl=True) needs a weight_dir")
        if weight_dir is not None and not isinstance(weight_dir, (str, os.PathLike)):
            raise ConfigError(f"weight_dir must be a path or None; found {weight_dir!r}")
        path = None if weight_dir is None else Path(weight_dir)
        if self.convention is Convention.VLLM_NATIVE_NCCL:
            if path is None:
                raise ConfigError("a native NCCL weight update needs the step's weight_dir")
            async with self._mutating:
                await self.admin.verify_topology(timeout=self.config.request_timeout)
                if self.native_nccl_owner == "trainer":
                    await self._native_step(path, str(step))
                else:
                    await self._orchestrated_step(path, str(step))
            self.weight_step = step
            return
        request = self._update_request(path)
        async with self._mutating:
            await self._update(path, nccl, request)
        self.weight_step = step

    async def _update(
        self, path: Path | None, nccl: bool, request: tuple[str, dict[str, Any]] | None
    ) -> None:
        await self.admin.verify_topology(timeout=self.config.request_timeout)
        if nccl and path is not None:
            _signal_trainer(path)
        # Already verified above; AdminPool resumes every engine it paused, whatever happens.
        await self.admin.update_weights(
            None if path is None else str(path), verify=False, request=request
        )

    def _update_request(self, path: Path | None) -> tuple[str, dict[str, Any]] | None:
        """vLLM's RPC form of the update (None: the admin API's own ``/update_weights``)."""
        if self.admin_api != "vllm":
            return None
        weight_dir = None if path is None else str(path)
        if self.config.weight_broadcast == "filesystem":
            if weight_dir is None:
                raise ConfigError("a filesystem weight update needs a weight_dir")
            kwargs = {"weights_path": weight_dir}
            return "/collective_rpc", {"method": "reload_weights", "args": [], "kwargs": kwargs}
        rpc = {"method": "update_weights_from_path", "args": [weight_dir], "kwargs": {}}
        return "/collective_rpc", rpc

    async def score(self, token_ids: Any) -> Any:
        """Delegates to the injected ``data_plane``; ConfigError naming what to inject otherwise."""
        if self.data_plane is None:
            raise ConfigError(
                "score() runs on Prime-RL's data-plane client, which this pool does not replace: "
                "pass data_plane=<an object with async score(token_ids)> to "
                "DynamoInferencePool.from_config (for example Prime-RL's own pool over the "
                "frontend's base_url)"
            )
        return await self.data_plane.score(token_ids)

    async def stop(self) -> None:
        """Close every admin client, the discovery client and the data plane (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        try:
            await self.admin.aclose()
            if self.engine_routes is not None:
                await self.engine_routes.aclose()
            await self.discovery_client.aclose()
        finally:
            stop = getattr(self.data_plane, "stop", None)
            if callable(stop):
                result = stop()
                if hasattr(result, "__await__"):
                    await result

    # --- internals --------------------------------------------------------------------------------

    async def _init(
        self,
        convention: Convention,
        host: str,
        port: int,
        timeout: float,
        inference_world_size: int | None,
        session_id: str | None,
    ) -> None:
        self._require_open()
        world = self._check_world(inference_world_size, "no engine was initialised")
        check_rendezvous(host, port, timeout)
        async with self._mutating:
            await self.admin.verify_topology(timeout=self.config.request_timeout)
            plan = self.discovery.plan(
                convention,
                trainer_world_size=self.config.trainer_world_size,
                inference_world_size=world,
            )
            await self.admin.init_broadcast(
                plan,
                host=host,
                port=port,
                timeout=timeout,
                session_id=session_id,
                via_rpc=self.admin_api == "vllm",
            )
            self.convention = convention

    def _check_world(self, inference_world_size: int | None, consequence: str) -> int:
        """The pool's W; TopologyError (RANK-2) when an init is asked for another one."""
        world = self.plan.inference_world_size
        if inference_world_size is not None and inference_world_size != world:
            raise TopologyError(
                f"RANK-2: init was asked for inference_world_size {inference_world_size}, but the "
                f"pool was built and planned for {world}; {consequence}",
                requirement="RANK-2",
            )
        return world

    def _trainer_owned(self, convention: Convention | None) -> bool:
        return convention is Convention.VLLM_NATIVE_NCCL and self.native_nccl_owner == "trainer"

    def _require_routes(self, what: str) -> EngineRoutes:
        if self.engine_routes is None:
            lacking = [e.label for e in self.plan.engines if e.label not in self._system_urls()]
            raise ConfigError(
                f"{what} drives Dynamo's engine routes on each engine's system_url, and these "
                f"engines list none: {', '.join(lacking) or 'all'}"
            )
        return self.engine_routes

    def _system_urls(self) -> set[str]:
        return {str(_worker_id(w)) for w in self.discovery.workers if w.system_url}

    async def _check_trainer_owned(
        self, host: str, port: int, timeout: float, inference_world_size: int | None
    ) -> None:
        self._require_open()
        check_rendezvous(host, port, timeout)
        self._check_world(inference_world_size, "the trainer's group would not complete")
        routes = self._require_routes("vLLM native NCCL owned by the trainer")
        lacking = [
            f"{e.label}: {e.missing((*CONTROL_ROUTES, *TRAINER_ROUTES))}"
            for e in routes.engines
            if e.missing((*CONTROL_ROUTES, *TRAINER_ROUTES))
        ]
        if lacking:
            raise ConfigError(
                "vLLM native NCCL owned by the trainer needs every engine to list the control "
                f"and update routes; missing: {'; '.join(lacking)}"
            )
        async with self._mutating:
            await self.admin.verify_topology(timeout=self.config.request_timeout)
            self._native_timeout = float(timeout)
            self.convention = Convention.VLLM_NATIVE_NCCL
        _log.info(
            "vLLM native NCCL: the trainer initialises the group of %d (no init sent from here)",
            self.plan.group_world_size,
        )

    async def _paused(
        self, routes: EngineRoutes, path: Path, step: Callable[[], Awaitable[None]]
    ) -> None:
        """Pause every engine, confirm it, signal the trainer, run ``step``; always resume every
        engine this paused, whatever happened (even cancellation)."""
        if not path.is_dir():
            raise ConfigError(
                f"weight_dir {str(path)!r} is not a directory; the trainer waits for "
                f"{NCCL_READY} there"
            )
        paused: list[str] = []
        failed = True
        try:
            pause = await routes.post(
                PAUSE_ROUTE, {"mode": "keep", "clear_cache": False}, check=False
            )
            paused = [label for label, r in pause.items() if r.ok]
            raise_failed(PAUSE_ROUTE, pause)
            confirmed = await routes.post(IS_PAUSED_ROUTE, {})
            running = [
                label
                for label, r in confirmed.items()
                if not isinstance(r.body, dict) or r.body.get("is_paused") is not True
            ]
            if running:
                raise AdminError(
                    f"NATIVE-2: {IS_PAUSED_ROUTE} did not confirm the pause on "
                    f"{', '.join(running)}; nothing was sent",
                    engine=running[0],
                    results={IS_PAUSED_ROUTE: confirmed},
                    requirement="NATIVE-2",
                )
            await step()
            failed = False
        finally:
            if paused:
                resumed = await asyncio.shield(
                    routes.post(RESUME_ROUTE, {}, engines=paused, check=False)
                )
                if not failed:
                    raise_failed(RESUME_ROUTE, resumed)

    async def _native_step(self, path: Path, version: str) -> None:
        """Trainer-owned: pause, confirm, ``NCCL_READY``, wait for the version, resume."""
        routes = self._require_routes("a native NCCL weight update")

        async def step() -> None:
            _signal_trainer(path)
            await self._wait_for_version(routes, version)

        await self._paused(routes, path, step)

    async def _orchestrated_step(self, path: Path, version: str) -> None:
        """Orchestrator-owned: pause, confirm, ``NCCL_READY``, vLLM's start / update / finish with
        the trainer's ``update_info`` (its file in the step's directory), the version, resume."""
        routes = self._require_routes("a native NCCL weight update")
        update_info = _read_update_info(path)

        async def step() -> None:
            _signal_trainer(path)
            budget = self._native_timeout
            await routes.post(START_ROUTE, {}, timeout=budget)
            await routes.post(UPDATE_ROUTE, {"update_info": update_info}, timeout=budget)
            await routes.post(FINISH_ROUTE, {"weight_version": version}, timeout=budget)
            await routes.post(VERSION_ROUTE, {"new_version": version})

        await self._paused(routes, path, step)

    async def _wait_for_version(self, routes: EngineRoutes, version: str) -> None:
        deadline = time.monotonic() + self._native_timeout
        while True:
            versions = await routes.post(GET_VERSION_ROUTE, {})
            behind = {
                label: r.body.get("weight_version") if isinstance(r.body, dict) else None
                for label, r in versions.items()
                if not isinstance(r.body, dict) or r.body.get("weight_version") != version
            }
            if not behind:
                return
            if time.monotonic() + _VERSION_POLL >= deadline:
                shown = ", ".join(f"{k} reports {v!r}" for k, v in behind.items())
                raise AdminError(
                    f"NATIVE-2: the trainer did not commit weight version {version!r} within "
                    f"{self._native_timeout:g} s ({shown}); every engine is resumed",
                    engine=next(iter(behind)),
                    results={GET_VERSION_ROUTE: versions},
                    requirement="NATIVE-2",
                )
            await asyncio.sleep(_VERSION_POLL)

    def _budget(self, deadline: float) -> float:
        return max(0.001, deadline - time.monotonic())

    def _require_open(self) -> None:
        if self._stopped:
            raise ConfigError("the pool was stopped; build a new one with from_config")


#: How often the trainer-owned update reads the weight version (Prime-RL's own interval).
_VERSION_POLL = 0.1
#: The file in a step's directory holding the trainer's ``update_info`` (orchestrator-owned).
UPDATE_INFO_FILE = "NCCL_UPDATE_INFO.json"


def _signal_trainer(path: Path) -> None:
    """Touch ``path/NCCL_READY``: Prime's trainer waits for it before it sends a step."""
    if not path.is_dir():
        raise ConfigError(
            f"weight_dir {str(path)!r} is not a directory; Prime's trainer waits for "
            f"{NCCL_READY} there"
        )
    try:
        (path / NCCL_READY).touch()
    except OSError as exc:
        raise ConfigError(
            f"cannot signal the trainer: touching {path / NCCL_READY} failed: {exc}"
        ) from None


def _read_update_info(path: Path) -> dict[str, Any]:
    file = path / UPDATE_INFO_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"orchestrator-owned native NCCL needs the trainer's update_info in {file} (the "
            "tensors' names, dtypes and shapes it sends); none is there"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the trainer's update_info from {file}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file} must hold a JSON object; found {type(data).__name__}")
    return data


def _worker_id(worker: Any) -> WorkerId:
    return WorkerId.of(worker)


def _engine_routes(
    discovery: Discovery, plan: BroadcastPlan, **options: Any
) -> EngineRoutes | None:
    """The engines' system servers in plan order (None when one lists no system_url)."""
    workers = {WorkerId.of(w): w for w in discovery.workers}
    engines = []
    for planned in plan.engines:
        worker = workers.get(planned.identity)
        if worker is None or not worker.system_url:
            return None
        engines.append(
            NativeEngine(
                planned.identity,
                worker.system_url,
                planned.world_size,
                planned.first_rank + 1,
                tuple(worker.routes),
            )
        )
    return EngineRoutes(engines, **options)


async def wait_healthy(admin: AdminPool, deadline: float, poll_interval: float) -> None:
    """Every engine's health 2xx (ADMIN-1), retried until ``deadline`` (monotonic) while engines
    do not answer or answer 5xx, 408, 409 or 429; any other failure (a redirect, another 4xx, a
    reply that is not a JSON object) raises AdminError at once."""
    while True:
        try:
            await admin.health()
            return
        except AdminError as exc:
            # Only "not up yet" is waited out; a redirect, a 4xx or a bad reply will not heal.
            failed = [r for by in exc.results.values() for r in by.values() if not r.ok]
            if any(not _transient(r) for r in failed):
                raise
            if time.monotonic() + poll_interval >= deadline:
                raise
        await asyncio.sleep(poll_interval)


def _transient(result: EngineResult) -> bool:
    """A health failure worth waiting out: no answer yet, a 5xx, or 408/409/429."""
    code = result.status_code
    return code is None or code >= 500 or code in (408, 409, 429)


if TYPE_CHECKING:
    # Checked by mypy: the pool satisfies the orchestrator's protocol.
    def _satisfies(pool: DynamoInferencePool) -> InferencePool:
        return pool
