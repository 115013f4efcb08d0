"""Prime-RL main's admin plane over Dynamo-discovered engines: the ``AdminPlane`` seam.

Prime-RL main's orchestrator builds its control plane with ``setup_admin_plane(client_config,
model_name)`` (src/prime_rl/orchestrator/clients.py) and drives it through the weight transports:
``wait_for_ready``, ``initialize_nccl`` (or ``init_nixl_broadcast``), ``update_weights`` per step
with the four-stage handshake's acknowledgement in ``on_paused``, ``aclose``. ``DynamoAdminPlane``
has exactly that surface (``ADMIN_PLANE_SURFACE`` is it as data, with main's source lines) and is
what ``docs/prime-rl/main-<commit>.patch`` makes ``setup_admin_plane`` return for
``client.dynamo.enabled``.

Main's own ``DynamoAdminPlane`` takes one engine of world size 1, and its generic ``AdminPlane``
splits ranks evenly. This one takes N engines of any world sizes: discovery, readiness, the rank
plan (exclusive prefix sums: RANK-3/5), credentials (CRED-1..4), the body cap and TOPO-1 come from
``client``, ``plan``, ``admin`` and ``credentials``. It keeps main's safeties: two identical
snapshots before binding (READY-4), the topology re-read before every collective, NCCL initialised
once, a failed NCCL update terminal with the engines left paused, 4xx fatal and 5xx or transport
failures retried for pause, resume and path updates, ``trust_env`` off. It never imports
``prime_rl``: main's config objects are read by duck typing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from prime_rl_dynamo.admin import AdminEngine, AdminPool, EngineResult, verify_fleet
from prime_rl_dynamo.admin import _update_request as _stock_reload
from prime_rl_dynamo.client import Discovery, DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.credentials import Credentials
from prime_rl_dynamo.defaults import ADMIN_TIMEOUT, POLL_INTERVAL, UPDATE_TIMEOUT
from prime_rl_dynamo.errors import AdminError, ConfigError
from prime_rl_dynamo.plan import BroadcastPlan, Convention, EnginePlan, Rendezvous
from prime_rl_dynamo.prime_rl import wait_healthy
from prime_rl_dynamo.prime_rl_config import (
    admin_settings_from_prime_rl,
    discovery_url_from_prime_rl,
)
from prime_rl_dynamo.topology_diff import EngineState
from prime_rl_dynamo.wire import WorkerId

__all__ = [
    "ADMIN_APIS",
    "ADMIN_PLANE_SURFACE",
    "MAIN_RECEIVERS",
    "MAIN_STARTUP",
    "PRIME_RL_MAIN_FILES",
    "PRIME_RL_MAIN_REVISION",
    "WORKER_INIT_BROADCASTER",
    "DynamoAdminPlane",
    "Member",
    "Receiver",
]

#: The index commit of the version of src/prime_rl/orchestrator/clients.py the surface, the call
#: order and docs/prime-rl/main-<revision>.patch were read from.
PRIME_RL_MAIN_REVISION = "009c03036"

#: Every Prime-RL main file version read: path -> (the search index's file id, its commit or "").
PRIME_RL_MAIN_FILES: Mapping[str, tuple[str, str]] = {
    "src/prime_rl/orchestrator/clients.py": (
        "68664415418",
        "009c030360dc019286f348086f872efdb440ed91",
    ),
    "src/prime_rl/orchestrator/orchestrator.py": ("71054497553", ""),
    "src/prime_rl/inference/dynamo.py": ("66335729372", "02e7f45fc188c8b8ec145f28cb71ee749af30761"),
    "src/prime_rl/inference/dynamo.py@engine-routes": ("68547588811", ""),
    "packages/prime-rl-configs/src/prime_rl/configs/shared.py": ("71158164215", ""),
    "src/prime_rl/inference/vllm/server.py": ("59574568362", ""),
    "src/prime_rl/inference/vllm/worker/nccl.py": ("68570754981", ""),
    "src/prime_rl/transports/weights/base.py": (
        "70075129677",
        "114f3ca4581860d6f12cb403b083d22a7a151adb",
    ),
    "src/prime_rl/transports/weights/nccl.py": ("68410871743", ""),
    "src/prime_rl/transports/weights/filesystem.py": ("70574093275", ""),
    "src/prime_rl/transports/weights/nixl/nixl.py": ("59378821306", ""),
}

REQUIRED = "<required>"


@dataclass(frozen=True)
class Member:
    """One member of main's ``AdminPlane``: where main defines it and its parameters after
    ``self`` as (name, ``"positional"`` or ``"keyword"``, default or ``REQUIRED``); None for an
    attribute."""

    source: str
    params: tuple[tuple[str, str, Any], ...] | None


_CLIENTS = "src/prime_rl/orchestrator/clients.py"

#: Main's ``AdminPlane`` at ``PRIME_RL_MAIN_REVISION``, member by member (``__init__`` is the call
#: ``setup_admin_plane`` makes). ``DynamoAdminPlane`` has each with these exact parameters.
ADMIN_PLANE_SURFACE: Mapping[str, Member] = {
    "__init__": Member(
        f"{_CLIENTS}:268",
        (("client_config", "positional", REQUIRED), ("model_name", "positional", REQUIRED)),
    ),
    "clients": Member(f"{_CLIENTS}:94", None),
    "wait_for_ready": Member(f"{_CLIENTS}:105", (("model_name", "positional", REQUIRED),)),
    "initialize_nccl": Member(
        f"{_CLIENTS}:116",
        (
            ("host", "keyword", REQUIRED),
            ("port", "keyword", REQUIRED),
            ("timeout", "keyword", REQUIRED),
            ("inference_world_size", "keyword", REQUIRED),
            ("quantize_in_weight_transfer", "keyword", False),
        ),
    ),
    "update_weights": Member(
        f"{_CLIENTS}:158",
        (
            ("weight_dir", "positional", REQUIRED),
            ("transport", "keyword", REQUIRED),
            ("step", "keyword", 0),
            ("on_paused", "keyword", None),
            ("version_uid", "keyword", None),
            ("phase_timer", "keyword", None),
        ),
    ),
    "aclose": Member(f"{_CLIENTS}:258", ()),
    # Not on main's AdminPlane: main's init_nixl_broadcast(admin_plane, ...) reads .clients and
    # splits evenly; the patch makes it call this when the plane has it (the keyword shape of
    # main's DynamoAdminPlane.initialize_nixl, src/prime_rl/inference/dynamo.py).
    "initialize_nixl": Member(
        f"{_CLIENTS}:534",
        (
            ("host", "keyword", REQUIRED),
            ("port", "keyword", REQUIRED),
            ("timeout", "keyword", REQUIRED),
            ("inference_world_size", "keyword", REQUIRED),
            ("session_id", "keyword", REQUIRED),
        ),
    ),
}

#: Main's worker method ``NCCLWeightUpdateWorker.init_broadcaster`` after ``self``
#: (src/prime_rl/inference/vllm/worker/nccl.py; the HTTP route of server.py reads the same names):
#: what a ``collective_rpc`` init's positional ``args`` bind to. No ``engine_world_size``.
WORKER_INIT_BROADCASTER: tuple[tuple[str, Any], ...] = (
    ("host", REQUIRED),
    ("port", REQUIRED),
    ("rank_offset", REQUIRED),
    ("inference_world_size", REQUIRED),
    ("timeout", REQUIRED),
    ("quantize_in_weight_transfer", False),
    ("session_id", "default"),
)


@dataclass(frozen=True)
class Receiver:
    """How main's weight receiver of one transport drives the plane (transports/weights/).

    ``initialize``: the one-time call (None: nothing). ``receive``: one step, in order, in
    the words of main's code: ``ack`` touches ``.receiver_ready`` (base.py's four-stage
    handshake: ``.sender_ready``, ``.receiver_ready``, ``.started``, ``.finished``),
    ``wait_finished`` waits for ``.finished``, ``wait_ready`` for the trainer's NIXL
    notification, ``update`` is ``update_weights``; ``on_paused``: the update acknowledges in
    its ``on_paused``; ``weight_dir``: whether the update gets the step's directory (else None).
    """

    initialize: str | None
    receive: tuple[str, ...]
    on_paused: bool
    weight_dir: bool
    source: str


#: Prime-RL main's orchestrator start-up: ``setup_admin_plane(config.model.client,
#: config.model.name)`` then ``wait_for_ready(model)`` (orchestrator.py), before any receiver.
MAIN_STARTUP: tuple[str, ...] = ("setup_admin_plane", "wait_for_ready")

#: Main's weight receivers, by transport (every one ends with ``aclose`` at shutdown).
MAIN_RECEIVERS: Mapping[str, Receiver] = {
    "filesystem": Receiver(
        None,
        ("ack", "wait_finished", "update"),
        False,
        True,
        "src/prime_rl/transports/weights/filesystem.py (index id 70574093275)",
    ),
    "nccl": Receiver(
        "initialize_nccl",
        ("update",),
        True,
        True,
        "src/prime_rl/transports/weights/nccl.py (index id 68410871743)",
    ),
    "nixl": Receiver(
        "init_nixl_broadcast",
        ("ack", "wait_ready", "update"),
        False,
        False,
        "src/prime_rl/transports/weights/nixl/nixl.py (index id 59378821306)",
    ),
}

#: How the plane talks to the engines: ``"vllm"`` (Dynamo's worker: vLLM's ``/collective_rpc``
#: with main's positional ``init_broadcaster`` args, as main's DynamoAdminPlane), ``"prime"``
#: (Prime-RL's own server routes, ``/init_broadcaster`` and ``/update_weights`` by field name),
#: ``"engine_routes"`` (Dynamo's Python worker: ``/engine/*`` on each ``system_url`` with
#: ``engine_rpc``), ``"stock_vllm"`` (stock vLLM, no Prime worker extension: a filesystem update
#: is vLLM's own ``/collective_rpc`` ``reload_weights`` with ``weights_path``, as
#: ``AdminPool.update_weights(api="vllm")``; main's ``update_weights_from_path`` is Prime's
#: extension method, which stock vLLM 0.31 does not have).
ADMIN_APIS = ("vllm", "prime", "engine_routes", "stock_vllm")
_TRANSPORTS = ("filesystem", "nccl", "nixl", "mx_refit")
#: Main's retry bound for pause, resume and path updates: 10 attempts within twice the budget.
_ATTEMPTS = 10


@dataclass(frozen=True)
class _Form:
    pause: tuple[str, Any]
    resume: tuple[str, Any]


_PAUSE_QUERY = "/pause?mode=keep&clear_cache=false"
_FORMS = {
    "vllm": _Form((_PAUSE_QUERY, None), ("/resume", None)),
    "prime": _Form((_PAUSE_QUERY, None), ("/resume", None)),
    "stock_vllm": _Form((_PAUSE_QUERY, None), ("/resume", None)),
    "engine_routes": _Form(
        ("/engine/pause_generation", {"mode": "keep", "clear_cache": False}),
        ("/engine/resume_generation", {}),
    ),
}


class DynamoAdminPlane:
    """Prime-RL main's ``AdminPlane`` over every engine Dynamo lists for the model.

    ``DynamoAdminPlane(client_config, model_name)`` reads main's ``ClientConfig`` (``dynamo``,
    ``base_url``, ``api_key_var``, ``headers``, ``headers_from_env``, ``wait_for_ready_timeout``)
    and sends nothing; ``wait_for_ready`` discovers and binds ``clients`` (one per engine,
    canonical order, credentials attached). Keywords beyond main's: ``admin_api`` (one of
    ``ADMIN_APIS``, default ``"vllm"``), ``disallowed`` (``"anonymous"`` or ``"refuse"`` for
    engines outside ``client.dynamo.admin_allowed_hosts``), ``environ``, ``transport`` (tests).
    Every error is a ``PrimeRLDynamoError`` naming the requirement.
    """

    def __init__(
        self,
        client_config: Any,
        model_name: str,
        *,
        admin_api: str = "vllm",
        disallowed: Literal["refuse", "anonymous"] = "anonymous",
        poll_interval: float = POLL_INTERVAL,
        environ: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if admin_api not in ADMIN_APIS:
            raise ConfigError(f"admin_api must be one of {list(ADMIN_APIS)}; found {admin_api!r}")
        if not isinstance(model_name, str) or not model_name:
            raise ConfigError(f"model_name must be a non-empty string; found {model_name!r}")
        settings = admin_settings_from_prime_rl(client_config, main=True)
        self.admin_api = admin_api
        self.model_name = model_name
        #: One client per engine after ``wait_for_ready`` (main's ``AdminPlane.clients``).
        self.clients: list[httpx.AsyncClient] = []
        self._timeout = float(settings["discovery_timeout"])
        self._poll_interval = poll_interval
        self._environ = environ
        self._transport = transport
        self._disallowed = disallowed
        # Credentials are read now: an unset variable named by headers_from_env fails here.
        self._credentials = Credentials.from_env(
            api_key_var=settings["api_key_var"],
            headers=settings["headers"],
            headers_from_env=settings["headers_from_env"],
            allowed_hosts=settings.get("admin_allowed_hosts"),
            environ=environ,
        )
        self._credentials.resolve(environ)
        self._discovery_client = DiscoveryClient(
            discovery_url_from_prime_rl(client_config),
            ReadinessPolicy(
                None,
                require_world_size=False,
                require_admin=admin_api != "engine_routes",
                model=model_name,
            ),
            PollingPolicy(timeout=self._timeout, poll_interval=poll_interval),
            trust_env=False,
            transport=transport,
        )
        self._discovery: Discovery | None = None
        self._pool: AdminPool | None = None
        self._healthy_pool: AdminPool | None = None  # the binding whose health was checked
        self._deadline = 0.0  # the readiness budget's end (monotonic), from wait_for_ready
        self._engines: dict[str, EnginePlan] = {}
        self._nccl: Literal["uninitialized", "ready", "terminal"] = "uninitialized"
        self._terminal: str | None = None
        self._lock = asyncio.Lock()

    # --- main's surface ---------------------------------------------------------------------------

    async def wait_for_ready(self, model_name: str) -> None:
        """Two identical ready listings of ``model_name``'s engines (READY-1..6); binds ``clients``.
        Within ``client.wait_for_ready_timeout``. Nothing is sent to an engine yet: main's
        ``wait_for_ready`` has no W, so the engines' health (ADMIN-1) is checked once a plan for
        the W of the first collective is accepted (RANK-2: no request before it)."""
        if model_name != self.model_name:
            raise ConfigError(
                f"READY-5: this plane was built for model {self.model_name!r}; wait_for_ready was "
                f"asked for {model_name!r}",
                requirement="READY-5",
            )
        self._require_live()
        self._deadline = time.monotonic() + self._timeout
        await self._bind(await self._discovery_client.wait_ready(timeout=self._timeout))

    async def initialize_nccl(
        self,
        *,
        host: str,
        port: int,
        timeout: int,
        inference_world_size: int,
        quantize_in_weight_transfer: bool = False,
    ) -> None:
        """Join every engine to Prime's NCCL broadcaster once, each at its prefix-sum offset
        (RANK-3; the plan covers [0, W) exactly once or nothing is sent: RANK-2/6), after
        re-reading the topology (TOPO-1). A failure is terminal: restart the engines."""
        async with self._lock:
            if self._nccl != "uninitialized":
                raise ConfigError(
                    f"NCCL is {self._nccl}: Prime's broadcaster is initialised once per engine "
                    "start; restart the inference engines before initialising again"
                )
            meet = Rendezvous(host, port, timeout, None, quantize_in_weight_transfer)
            # A refused plan or a changed fleet sends nothing: the plane stays usable.
            plan = await self._plan(Convention.PRIME_NCCL, inference_world_size)
            try:
                await self._send_init(plan, meet)
            except BaseException:
                self._terminate("the NCCL initialisation failed")
                raise
            self._nccl = "ready"

    async def initialize_nixl(
        self,
        *,
        host: str,
        port: int,
        timeout: int,
        inference_world_size: int,
        session_id: str,
    ) -> None:
        """Send every engine its NIXL rank offset (prefix sums: RANK-5) and the shared
        ``session_id`` (RANK-8), after re-reading the topology (TOPO-1)."""
        if not isinstance(session_id, str) or not session_id:
            raise ConfigError("NIXL init needs a non-empty session_id shared by every engine")
        async with self._lock:
            meet = Rendezvous(host, port, timeout, session_id)
            await self._send_init(await self._plan(Convention.NIXL, inference_world_size), meet)

    async def update_weights(
        self,
        weight_dir: os.PathLike[str] | str | None,
        *,
        transport: str,
        step: int = 0,
        on_paused: Callable[[], None] | None = None,
        version_uid: str | None = None,
        phase_timer: Any = None,
    ) -> None:
        """Re-read the topology (TOPO-1), pause every engine (``mode=keep``, cache kept), call
        ``on_paused`` once (the handshake's acknowledgement), load ``weight_dir`` on every engine,
        resume every engine. A failed NCCL update leaves the engines paused and the plane
        terminal (a half-received broadcast must not serve); any other failure resumes them.
        ``phase_timer`` (main's mx_refit timing) is accepted and not used."""
        del phase_timer
        if transport not in _TRANSPORTS:
            raise ConfigError(f"transport must be one of {list(_TRANSPORTS)}; found {transport!r}")
        if transport == "mx_refit":
            raise ConfigError(
                "transport mx_refit (ModelExpress refit) is not driven through Dynamo discovery"
            )
        if self.admin_api == "stock_vllm" and transport != "filesystem":
            raise ConfigError(
                f"admin_api 'stock_vllm' reloads weights from a path (transport filesystem); "
                f"a {transport} update needs Prime's worker extension (admin_api 'vllm')"
            )
        if weight_dir is None and transport != "nixl":
            raise ConfigError(f"a {transport} weight update needs the step's weight_dir")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ConfigError(f"step must be an integer >= 0; found {step!r}")
        if transport == "nccl" and self._nccl != "ready":
            raise ConfigError(f"an NCCL update needs a ready NCCL group; it is {self._nccl}")
        directory = None if weight_dir is None else os.fspath(weight_dir)
        async with self._lock:
            pool = self._require_pool()
            await self._verify()
            await self._healthy()
            form = _FORMS[self.admin_api]
            paused = await self._retried(pool, "pause", *form.pause)
            if paused:
                await self._resume(pool, paused)
                raise _failed("pause", paused, " (every engine it paused was resumed)")
            try:
                if on_paused is not None:
                    on_paused()
                failed = await self._update(pool, directory, transport, step, version_uid)
            except BaseException:
                await self._after_failed_update(pool, transport)
                raise
            if failed:
                await self._after_failed_update(pool, transport)
                state = "paused; restart required" if transport == "nccl" else "resumed"
                raise _failed("update_weights", failed, f" (every engine {state})")
            resumed = await self._retried(pool, "resume", *form.resume)
            if resumed:
                if transport == "nccl":
                    self._terminate("a resume after an NCCL update failed")
                raise _failed("resume", resumed)

    async def aclose(self) -> None:
        """Close every engine's client and the discovery client (idempotent)."""
        if self._pool is not None:
            await self._pool.aclose()
        await self._discovery_client.aclose()
        self.clients = []

    # --- internals --------------------------------------------------------------------------------

    @property
    def plan(self) -> BroadcastPlan | None:
        """The plan of the last initialisation (None before any)."""
        return self._pool.plan if self._pool is not None else None

    async def _plan(self, convention: Convention, world: int) -> BroadcastPlan:
        """A listing that sums to W (READY-3: a shorter one is pending until the readiness budget
        ends, then POLL-5 says the sum found), TOPO-1, the plan (refused unless it covers [0, W)
        once), then every engine's health (ADMIN-1): nothing reaches an engine before the plan."""
        self._require_pool()
        assert self._discovery is not None
        if self._discovery.world_size_sum != world:
            await self._bind(await self._wait_for(world))
        await self._verify()
        plan = self._discovery.plan(convention, inference_world_size=world)
        await self._healthy()
        return plan

    async def _wait_for(self, world: int) -> Discovery:
        """Two identical listings summing to ``world``, within what is left of the readiness budget
        (at least two polls)."""
        client = self._discovery_client
        kept = client.policy
        client.policy = dataclasses.replace(kept, inference_world_size=world)
        budget = max(self._deadline - time.monotonic(), 2 * self._poll_interval + 1.0)
        try:
            return await client.wait_ready(timeout=budget)
        finally:
            client.policy = kept

    async def _bind(self, discovery: Discovery) -> None:
        """One client per listed engine (canonical order, credentials attached); nothing sent."""
        engines = [_admin_engine(w, self.admin_api) for w in discovery.workers]
        pool = AdminPool(
            engines,
            credentials=self._credentials,
            disallowed=self._disallowed,
            timeout=ADMIN_TIMEOUT,
            update_timeout=UPDATE_TIMEOUT,
            discovery=self._discovery_client,
            transport=self._transport,
            environ=self._environ,
        )
        if self._pool is not None:
            await self._pool.aclose()
        self._discovery, self._pool, self._healthy_pool = discovery, pool, None
        self.clients = [pool.http_client(e.label) for e in pool.engines]

    async def _healthy(self) -> None:
        """Every bound engine's health 2xx (ADMIN-1), once per binding, waited out within what is
        left of the readiness budget."""
        pool = self._require_pool()
        if self._healthy_pool is not pool:
            deadline = max(self._deadline, time.monotonic() + self._poll_interval)
            await wait_healthy(pool, deadline, self._poll_interval)
            self._healthy_pool = pool

    async def _send_init(self, plan: BroadcastPlan, meet: Rendezvous) -> None:
        pool = self._require_pool()
        self._engines = {e.label: e for e in plan.engines}
        requests = {e.label: self._init_request(e, plan, meet) for e in plan.engines}
        path = next(iter(requests.values()))[0]
        results = await pool.call_each(
            "init_broadcast",
            path,
            {label: body for label, (_, body) in requests.items()},
            timeout=max(ADMIN_TIMEOUT, float(meet.timeout) + 30.0),
            check=False,
        )
        failed = self._failures(results, path)
        if failed:
            raise _failed("init_broadcast", failed)
        pool.plan = plan

    def _init_request(
        self, engine: EnginePlan, plan: BroadcastPlan, meet: Rendezvous
    ) -> tuple[str, dict[str, Any]]:
        """Main's call forms: positional args bound to main's worker signature, or fields by name."""
        fields: dict[str, Any] = {
            "host": meet.host,
            "port": meet.port,
            "rank_offset": engine.rank_offset,
            "inference_world_size": plan.inference_world_size,
            "timeout": meet.timeout,
            "quantize_in_weight_transfer": meet.quantize_in_weight_transfer,
        }
        if meet.session_id is not None:
            fields["session_id"] = meet.session_id
        if self.admin_api in ("vllm", "stock_vllm"):
            args = [fields[name] for name, _ in WORKER_INIT_BROADCASTER if name in fields]
            rpc = {
                "method": "init_broadcaster",
                "args": args,
                "kwargs": {},
                "timeout": meet.timeout,
            }
            return "/collective_rpc", rpc
        if self.admin_api == "engine_routes":
            named = {**fields, "session_id": meet.session_id or "default"}
            return "/engine/init_weights_update_group", {"engine_rpc": "init_broadcaster", **named}
        return "/init_broadcaster", fields

    async def _update(
        self,
        pool: AdminPool,
        directory: str | None,
        transport: str,
        step: int,
        version_uid: str | None,
    ) -> dict[str, str]:
        if self.admin_api == "vllm":
            path = "/collective_rpc"
            body: dict[str, Any] = {
                "method": "update_weights_from_path",
                "args": [directory],
                "kwargs": {},
                "timeout": pool.update_timeout,
            }
        elif self.admin_api == "stock_vllm":
            path, body = _stock_reload(directory, "vllm")
        elif self.admin_api == "engine_routes":
            path = "/engine/update_weights_from_distributed"
            body = {
                "engine_rpc": "update_weights_from_path",
                "weight_dir": directory,
                "weight_version": step,
            }
        else:
            path, body = "/update_weights", {"weight_dir": directory, "version_uid": version_uid}
        if transport == "nccl":  # a collective: joining twice is not idempotent, so no retry
            results = await pool.call_each(
                "update_weights",
                path,
                {e.label: body for e in pool.engines},
                timeout=pool.update_timeout,
                check=False,
            )
            return self._failures(results, path)
        return await self._retried(pool, "update_weights", path, body, pool.update_timeout)

    async def _retried(
        self,
        pool: AdminPool,
        operation: str,
        path: str,
        body: Any,
        budget: float = ADMIN_TIMEOUT,
    ) -> dict[str, str]:
        """``POST path`` on every engine, retrying those that answered 5xx or not at all (main:
        10 attempts within twice the budget, backing off); a 4xx or a bad 2xx is final. Returns
        label -> what failed (empty: every engine succeeded)."""
        deadline = time.monotonic() + 2 * budget
        todo = [e.label for e in pool.engines]
        failed: dict[str, str] = {}
        for attempt in range(_ATTEMPTS):
            results = await pool.call_each(
                operation, path, {label: body for label in todo}, timeout=budget, check=False
            )
            failed = self._failures(results, path)
            todo = [label for label in failed if _retryable(results[label])]
            wait = min(self._poll_interval * 2**attempt, 10.0)
            if not todo or time.monotonic() + wait >= deadline:
                return failed
            await asyncio.sleep(wait)
        return failed

    def _failures(self, results: Mapping[str, EngineResult], path: str) -> dict[str, str]:
        """Each engine whose call failed, with why; ``/collective_rpc`` must answer one null
        result per worker process (``{"results": [null]}`` for an engine of world size 1)."""
        failed = {label: str(r.error) for label, r in results.items() if not r.ok}
        if path == "/collective_rpc":
            for label, r in results.items():
                want = {"results": [None] * self._world_size(label)}
                if r.ok and r.body != want:
                    failed[label] = f"ADMIN-2: expected {want}; found {r.body!r}"
        return failed

    def _world_size(self, label: str) -> int:
        planned = self._engines.get(label)
        if planned is not None:
            return planned.world_size
        assert self._pool is not None
        engine = next(e for e in self._pool.engines if e.label == label)
        return engine.world_size or 1

    async def _resume(self, pool: AdminPool, labels: Mapping[str, str] | None = None) -> None:
        path, body = _FORMS[self.admin_api].resume
        paused = [e.label for e in pool.engines if labels is None or e.label not in labels]
        await asyncio.shield(
            pool.call_each("resume", path, {label: body for label in paused}, check=False)
        )

    async def _after_failed_update(self, pool: AdminPool, transport: str) -> None:
        if transport == "nccl":
            self._terminate("an NCCL weight update failed; the engines stay paused")
        else:
            await self._resume(pool)

    def _terminate(self, why: str) -> None:
        self._nccl = "terminal"
        self._terminal = why

    async def _verify(self) -> None:
        """TOPO-1: the listing still shows the engines the plane bound (by the URL it drives)."""
        pool = self._require_pool()
        if self.admin_api == "engine_routes":
            expected = [_state(e) for e in pool.engines]
            await verify_fleet(self._discovery_client, expected, "system_url", "the bound engines")
        else:
            await pool.verify_topology()

    def _require_pool(self) -> AdminPool:
        self._require_live()
        if self._pool is None:
            raise ConfigError("call wait_for_ready first: no engine is bound yet")
        return self._pool

    def _require_live(self) -> None:
        if self._terminal is not None:
            raise ConfigError(
                f"the Dynamo admin plane is terminal ({self._terminal}); restart the inference "
                "engines and the orchestrator"
            )


def _admin_engine(worker: Any, admin_api: str) -> AdminEngine:
    identity = WorkerId.of(worker)
    url = worker.system_url if admin_api == "engine_routes" else worker.admin_base_url
    if not url:
        field = "system_url" if admin_api == "engine_routes" else "admin_base_url"
        raise ConfigError(
            f"READY-2: {worker.label} lists no {field}; admin_api {admin_api!r} drives that URL",
            requirement="READY-2",
        )
    return AdminEngine(worker.label, url, worker.world_size, identity)


def _state(engine: AdminEngine) -> EngineState:
    assert engine.identity is not None
    return EngineState(engine.identity, engine.world_size, engine.admin_base_url)


def _retryable(result: EngineResult) -> bool:
    """Main's rule: transport failures and 5xx are retried; a 4xx will not heal."""
    return result.status_code is None or result.status_code >= 500


def _failed(operation: str, failed: Mapping[str, str], extra: str = "") -> AdminError:
    lines = "; ".join(f"{label}: {why}" for label, why in failed.items())
    return AdminError(
        f"{operation} failed on {len(failed)} engine(s): {lines}{extra}",
        engine=next(iter(failed)),
        results={},
        requirement="ADMIN-2",
    )
