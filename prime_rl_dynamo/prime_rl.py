"""A drop-in inference pool for Prime-RL's orchestrator, built on this package's client.

``DynamoInferencePool`` has exactly the surface Prime-RL's orchestrator drives (the
``InferencePool`` protocol below): discovery, readiness, rank plans, credentials and weight updates
come from ``client``, ``plan`` and ``admin``. It never imports ``prime_rl``: Prime-RL's config
objects are read by duck typing. The data plane (``score``, the OpenAI clients) stays Prime-RL's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx

from prime_rl_dynamo.admin import AdminPool, EngineResult
from prime_rl_dynamo.client import Discovery, DiscoveryClient
from prime_rl_dynamo.config import DynamoClientConfig
from prime_rl_dynamo.defaults import API_KEY_VAR, DISCOVERY_TIMEOUT
from prime_rl_dynamo.errors import AdminError, ConfigError, TopologyError
from prime_rl_dynamo.plan import BroadcastPlan, Convention
from prime_rl_dynamo.redaction import shown_url

__all__ = [
    "DataPlane",
    "DynamoInferencePool",
    "InferencePool",
    "client_config_from_prime_rl",
]

_log = logging.getLogger(__name__)

#: Prime-RL's default for ``client.wait_for_ready_timeout`` and ``client.api_key_var``.
PRIME_RL_WAIT_FOR_READY_TIMEOUT = DISCOVERY_TIMEOUT
PRIME_RL_API_KEY_VAR = API_KEY_VAR
#: The file Prime's trainer waits for before it broadcasts a step's weights over NCCL.
NCCL_READY = "NCCL_READY"

#: The engines' admin APIs the pool can drive: Prime-RL's admin server (SPEC §8.3 routes) or vLLM's
#: dev-mode server, where init and updates go through ``/collective_rpc``.
ADMIN_APIS = ("prime", "vllm")

#: Prime-RL's ``weight_broadcast.type`` -> this package's ``DynamoClientConfig.weight_broadcast``.
_BROADCAST_TYPES = {"nccl": "nccl", "nixl": "nixl", "filesystem": "filesystem"}


@runtime_checkable
class InferencePool(Protocol):
    """What Prime-RL's orchestrator calls on an inference pool, and nothing else."""

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


def _get(obj: Any, name: str) -> Any:
    """A field of a config object or mapping (None when absent): Prime-RL's objects, duck-typed."""
    if obj is None:
        return None
    try:
        if isinstance(obj, Mapping):
            return obj.get(name)
        return getattr(obj, name, None)
    except Exception as exc:  # a property of someone else's config object: refuse, say which
        raise ConfigError(
            f"reading {name!r} of the {type(obj).__name__} config raised {type(exc).__name__}; "
            "expected a plain value"
        ) from None


def _url_text(value: Any, where: str) -> str:
    """A discovery URL given as text or as a URL object (pydantic's AnyHttpUrl, httpx.URL)."""
    if isinstance(value, str):
        return value
    if type(value).__name__ in ("AnyHttpUrl", "HttpUrl", "AnyUrl", "Url", "URL"):
        return str(value)
    raise ConfigError(
        f"{where} must be a URL string such as http://frontend:8001; found {type(value).__name__}"
    )


def _mapping(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must map header names to strings; found {type(value).__name__}")
    bad = [k for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise ConfigError(f"{where} must map header names to strings; bad entries: {bad}")
    return dict(value)


def client_config_from_prime_rl(
    client_config: Any = None,
    *,
    model_name: str | None = None,
    inference_world_size: int | None = None,
    weight_broadcast: Any = None,
    **settings: Any,
) -> DynamoClientConfig:
    """This package's validated config from Prime-RL's ``client`` (and ``weight_broadcast``) config.

    Read by duck typing from objects or mappings: ``dynamo.discovery_url`` (latest Prime-RL) or
    ``dynamo_discovery_url`` (older), ``api_key_var`` (its value ``EMPTY`` or unset: no key),
    ``headers``, ``headers_from_env`` (header -> environment variable), ``wait_for_ready_timeout``;
    ``weight_broadcast.inference_world_size`` and ``weight_broadcast.type``. Plain keyword
    arguments win: ``discovery_url`` and any ``DynamoClientConfig`` field (``api_key``,
    ``admin_allowed_hosts``, ``poll_interval``, ...). ConfigError names what is missing.
    """
    settings = dict(settings)
    urls = {
        "discovery_url (keyword)": settings.pop("discovery_url", None),
        "client.dynamo.discovery_url": _get(_get(client_config, "dynamo"), "discovery_url"),
        "client.dynamo_discovery_url": _get(client_config, "dynamo_discovery_url"),
    }
    given = {k: _url_text(v, k) for k, v in urls.items() if v is not None}
    if not given:
        raise ConfigError(
            "no Dynamo discovery URL: set client.dynamo.discovery_url (latest Prime-RL), "
            "client.dynamo_discovery_url (older) or pass discovery_url=..."
        )
    if "discovery_url (keyword)" not in given and len(set(given.values())) > 1:
        raise ConfigError(
            "client.dynamo.discovery_url and client.dynamo_discovery_url disagree: "
            + ", ".join(f"{k}={shown_url(v)!r}" for k, v in given.items())
            + " (user info and queries are not shown)"
        )
    url = next(iter(given.values()))
    world = inference_world_size
    if world is None:
        world = _get(weight_broadcast, "inference_world_size")
    if world is None:
        raise ConfigError(
            "RANK-2: Dynamo inference requires an explicit inference_world_size (pass "
            "inference_world_size=..., or set weight_broadcast.inference_world_size); it is never "
            "derived from the listing",
            requirement="RANK-2",
        )
    kind = _get(weight_broadcast, "type")
    if kind is not None and (not isinstance(kind, str) or kind not in _BROADCAST_TYPES):
        found = repr(kind) if isinstance(kind, str) else f"a {type(kind).__name__}"
        raise ConfigError(
            f"weight_broadcast.type must be one of {sorted(_BROADCAST_TYPES)}; found {found}"
        )
    api_key_var = _get(client_config, "api_key_var")
    if api_key_var is not None and not isinstance(api_key_var, str):
        raise ConfigError(
            "client.api_key_var must name an environment variable (a string such as "
            f"{PRIME_RL_API_KEY_VAR!r}); found a {type(api_key_var).__name__}"
        )
    timeout = _get(client_config, "wait_for_ready_timeout")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        found = f"{timeout!r} (a {type(timeout).__name__})"
        raise ConfigError(
            f"client.wait_for_ready_timeout must be a number of seconds > 0; found {found}"
        )
    values: dict[str, Any] = {
        "dynamo_discovery_url": url,
        "inference_world_size": world,
        "model": model_name,
        "weight_broadcast": _BROADCAST_TYPES[kind] if kind is not None else "nccl",
        "api_key_var": PRIME_RL_API_KEY_VAR if api_key_var is None else api_key_var,
        "headers": _mapping(_get(client_config, "headers"), "client.headers"),
        "headers_from_env": _mapping(
            _get(client_config, "headers_from_env"), "client.headers_from_env"
        ),
        "discovery_timeout": PRIME_RL_WAIT_FOR_READY_TIMEOUT if timeout is None else timeout,
    }
    allowed = _get(client_config, "admin_allowed_hosts")
    if allowed is not None:
        values["admin_allowed_hosts"] = allowed
    values.update(settings)
    try:
        return DynamoClientConfig(**values)
    except TypeError as exc:  # an unknown keyword: say which settings exist
        known = ", ".join(sorted(DynamoClientConfig.__dataclass_fields__))
        raise ConfigError(f"{exc}; the settings are: discovery_url, {known}") from None


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
        admin_api: str = "prime",
        data_plane: DataPlane | None = None,
        deadline: float | None = None,
    ) -> None:
        """Use ``from_config``; this wires already-built parts together."""
        self.config = config
        self.discovery_client = discovery_client
        self.discovery = discovery
        self.admin = admin
        self.nccl_convention = nccl_convention
        if admin_api not in ADMIN_APIS:
            raise ConfigError(f"admin_api must be one of {list(ADMIN_APIS)}; found {admin_api!r}")
        self.admin_api = admin_api
        self.data_plane = data_plane
        self.model_name = config.model
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
        nccl_convention = Convention.parse(
            kwargs.pop("nccl_convention", None) or Convention.PRIME_NCCL
        )
        if nccl_convention is Convention.NIXL:
            raise ConfigError("nccl_convention must be prime-nccl or vllm-native-nccl, not nixl")
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
        except BaseException:
            await discovery_client.aclose()
            raise
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
            admin_api=admin_api,
            data_plane=data_plane,
            deadline=deadline,
        )

    # --- the orchestrator's surface ---------------------------------------------------------------

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
        self.model_name = model_name
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
        while True:
            try:
                await self.admin.health()
                return
            except AdminError as exc:
                # Only "not up yet" is waited out; a redirect, a 4xx or a bad reply will not heal.
                failed = [r for by in exc.results.values() for r in by.values() if not r.ok]
                if any(not _transient(r) for r in failed):
                    raise
                if time.monotonic() + self.config.poll_interval >= deadline:
                    raise
            await asyncio.sleep(self.config.poll_interval)

    async def init_nccl_broadcast(
        self, host: str, port: int, timeout: float, inference_world_size: int | None = None
    ) -> None:
        """Send each engine its NCCL rank offset (``nccl_convention``: Prime's broadcaster via
        ``/init_broadcaster``, RANK-3; or vLLM's native engine via ``/collective_rpc``, RANK-4)."""
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
        request = self._update_request(path)
        async with self._mutating:
            await self._update(path, nccl, request)
        self.weight_step = step

    async def _update(
        self, path: Path | None, nccl: bool, request: tuple[str, dict[str, Any]] | None
    ) -> None:
        await self.admin.verify_topology(timeout=self.config.request_timeout)
        if nccl and path is not None:
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
        world = self.plan.inference_world_size
        if inference_world_size is not None and inference_world_size != world:
            raise TopologyError(
                f"RANK-2: init was asked for inference_world_size {inference_world_size}, but the "
                f"pool was built and planned for {world}; no engine was initialised",
                requirement="RANK-2",
            )
        if not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
            raise ConfigError(f"timeout must be a finite number > 0; found {timeout!r}")
        if not isinstance(host, str) or not host:
            raise ConfigError(f"host must be a non-empty string; found {host!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ConfigError(f"port must be an integer in 1..65535; found {port!r}")
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

    def _budget(self, deadline: float) -> float:
        return max(0.001, deadline - time.monotonic())

    def _require_open(self) -> None:
        if self._stopped:
            raise ConfigError("the pool was stopped; build a new one with from_config")


def _transient(result: EngineResult) -> bool:
    """A health failure worth waiting out: no answer yet, a 5xx, or 408/409/429."""
    code = result.status_code
    return code is None or code >= 500 or code in (408, 409, 429)


if TYPE_CHECKING:
    # Checked by mypy: the pool satisfies the orchestrator's protocol.
    def _satisfies(pool: DynamoInferencePool) -> InferencePool:
        return pool
