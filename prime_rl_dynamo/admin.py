"""Admin pool: the operations Prime-RL runs on every engine's admin API, and their policy.

Credentials (prime_rl_dynamo.credentials decides what they are and which hosts may receive them)
go with every admin call (CRED-2), never to a URL with user info (CRED-1) and never across a
redirect, as admin calls follow none (CRED-4). The calls themselves, one bounded HTTP client per
engine and a fan-out where every call settles, are prime_rl_dynamo._fanout's; this module says
what they mean: pause, update, resume whatever happened, init the broadcast, re-verify the fleet.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import httpx

from prime_rl_dynamo._bounded import AsyncClosing
from prime_rl_dynamo._fanout import (
    ADMIN_MAX_BODY_BYTES,
    AdminEngine,
    EngineCalls,
    admin_url,
)
from prime_rl_dynamo.client import Discovery, DiscoveryClient, assess_snapshot
from prime_rl_dynamo.credentials import Credentials, host_allowed
from prime_rl_dynamo.defaults import ADMIN_TIMEOUT, UPDATE_TIMEOUT
from prime_rl_dynamo.errors import AdminError, ConfigError, TopologyChangedError, TopologyError
from prime_rl_dynamo.observation import EngineResult
from prime_rl_dynamo.plan import BroadcastPlan, EnginePlan, Rendezvous
from prime_rl_dynamo.redaction import secret_values, shown_url
from prime_rl_dynamo.topology_diff import EngineState, TopologyDiff
from prime_rl_dynamo.wire import WorkerId

if TYPE_CHECKING:
    from prime_rl_dynamo._models import Worker

__all__ = [
    "ADMIN_MAX_BODY_BYTES",
    "AdminEngine",
    "AdminPool",
    "Credentials",
    "EngineResult",
    "host_allowed",
    "live_workers",
    "raise_failed",
    "verify_fleet",
]

_log = logging.getLogger(__name__)


def _engine_from_worker(worker: Worker | EnginePlan) -> AdminEngine:
    identity = WorkerId(*worker.identity) if isinstance(worker, EnginePlan) else WorkerId.of(worker)
    label = worker.label
    if worker.admin_base_url is None:
        raise ConfigError(
            f"READY-2: {label} has no admin_base_url; the admin pool cannot drive it",
            requirement="READY-2",
        )
    return AdminEngine(label, worker.admin_base_url, worker.world_size, identity)


class AdminPool(AsyncClosing):
    """Drives every engine's admin API (health, pause, resume, init_broadcast, update_weights).

    Credentials are resolved once at construction, so a missing secret fails before any request.
    With ``disallowed="refuse"`` (default) an engine outside the allow-list is refused up front
    (CRED-3); with ``"anonymous"`` it is driven without credentials.
    """

    def __init__(
        self,
        engines: Sequence[AdminEngine],
        *,
        credentials: Credentials | None = None,
        disallowed: Literal["refuse", "anonymous"] = "refuse",
        timeout: float = ADMIN_TIMEOUT,
        update_timeout: float = UPDATE_TIMEOUT,
        max_concurrency: int = 16,
        discovery: DiscoveryClient | None = None,
        plan: BroadcastPlan | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not engines:
            raise ConfigError("the admin pool needs at least one engine")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be >= 1; found {max_concurrency}")
        if disallowed not in ("refuse", "anonymous"):
            raise ConfigError(f"disallowed must be 'refuse' or 'anonymous'; found {disallowed!r}")
        labels = [e.label for e in engines]
        dup = sorted({label for label in labels if labels.count(label) > 1})
        if dup:
            raise ConfigError(
                f"LIST-2: engines listed twice: {', '.join(dup)}", requirement="LIST-2"
            )
        creds = credentials or Credentials()
        secret = creds.resolve(environ)
        self.engines: tuple[AdminEngine, ...] = tuple(engines)
        self.credentials = creds
        self.timeout = timeout
        self.update_timeout = update_timeout
        self.discovery = discovery
        self.plan = plan
        self.anonymous: list[str] = []
        # Decide every engine's headers before opening any client, so a refusal leaks nothing.
        headers_of: dict[str, dict[str, str]] = {}
        refused: list[str] = []
        for engine in self.engines:
            url = admin_url(engine)
            headers = secret
            if secret and not creds.allows(url.host):
                if disallowed == "refuse":
                    refused.append(f"{engine.label} ({url.host})")
                    continue
                headers = {}
                self.anonymous.append(engine.label)
                _log.warning(
                    "CRED-3: driving engine %s at host %s without credentials: the host is "
                    "outside the admin host allow-list %s",
                    engine.label,
                    url.host,
                    list(creds.allowed_hosts or ()),
                )
            headers_of[engine.label] = headers
        if refused:
            raise ConfigError(
                "CRED-3: credentials are configured but these engines are outside the admin host "
                f"allow-list {list(creds.allowed_hosts or ())}: {', '.join(refused)}; refusing to "
                "drive them (allow the hosts, or pass disallowed='anonymous')",
                requirement="CRED-3",
            )
        self._calls = EngineCalls(
            self.engines,
            headers_of,
            secrets=secret_values(secret),
            timeout=timeout,
            max_concurrency=max_concurrency,
            transport=transport,
        )

    @classmethod
    def from_discovery(cls, discovery: Discovery, **kwargs: Any) -> AdminPool:
        """A pool over a ready discovery's matching workers (they need an admin_base_url)."""
        return cls([_engine_from_worker(w) for w in discovery.workers], **kwargs)

    @classmethod
    def from_plan(cls, plan: BroadcastPlan, **kwargs: Any) -> AdminPool:
        """A pool over a plan's engines, remembering the plan for init_broadcast and verify_topology."""
        kwargs.setdefault("plan", plan)
        return cls([_engine_from_worker(e) for e in plan.engines], **kwargs)

    @classmethod
    def from_urls(cls, urls: Sequence[str], **kwargs: Any) -> AdminPool:
        """A pool over a static admin URL list (labels are the URLs as messages quote them: no user info, query or fragment)."""
        return cls([AdminEngine(shown_url(u), u) for u in urls], **kwargs)

    @staticmethod
    def check_url(url: str) -> str:
        """Refuse an unusable admin URL (CRED-1, WORKER-8); returns the base URL the pool uses."""
        return str(admin_url(AdminEngine(shown_url(url), url)))

    async def aclose(self) -> None:
        """Close every engine's HTTP client."""
        await self._calls.aclose()

    def http_client(self, label: str) -> httpx.AsyncClient:
        """The HTTP client of the engine ``label`` (base URL its admin URL, its credentials)."""
        return self._calls.client(label)

    # --- one call, fan-out ---------------------------------------------------------------------

    @staticmethod
    def _raise_on_failure(
        operation: str, results: Mapping[str, EngineResult], extra: str = ""
    ) -> None:
        requirement = "ADMIN-2" if operation != "health" else "ADMIN-1"
        raise_failed(operation, results, extra, requirement=requirement)

    async def call_each(
        self,
        operation: str,
        path: str,
        bodies: Mapping[str, Any],
        *,
        timeout: float | None = None,
        check: bool = True,
    ) -> dict[str, EngineResult]:
        """``POST path`` on every engine ``bodies`` names (label -> JSON body), concurrently.

        Every call settles; with ``check`` an AdminError (ADMIN-3) names each engine that failed
        (a non-2xx reply, a redirect, or a 2xx body with ``"status": "error"``).
        """
        targets = [e for e in self.engines if e.label in bodies]
        unknown = sorted(set(bodies) - {e.label for e in targets})
        if unknown:
            raise ConfigError(f"{operation}: no such engine(s) in this pool: {', '.join(unknown)}")
        results = await asyncio.gather(
            *(
                self._calls.call(e, operation, "POST", path, json=bodies[e.label], timeout=timeout)
                for e in targets
            )
        )
        by_label = {r.engine: r for r in results}
        if check:
            raise_failed(operation, by_label)
        return by_label

    # --- operations ----------------------------------------------------------------------------

    async def _everywhere(
        self, operation: str, method: str, path: str, **kwargs: Any
    ) -> dict[str, EngineResult]:
        """One call fanned out to every engine; AdminError naming each engine it failed on."""
        results = await self._calls.fanout(operation, method, path, **kwargs)
        self._raise_on_failure(operation, results)
        return results

    async def health(self) -> dict[str, EngineResult]:
        """``GET {admin}/health`` on every engine; AdminError naming those not healthy.

        ADMIN-1 asks for a 2xx only: stock vLLM answers 200 with an empty body."""
        return await self._everywhere("health", "GET", "/health", status_only=True)

    async def pause(
        self, *, mode: str = "keep", clear_cache: bool = False
    ) -> dict[str, EngineResult]:
        """``POST {admin}/pause`` on every engine; on failure resumes the ones it paused."""
        results = await self._calls.fanout(
            "pause",
            "POST",
            "/pause",
            params={"mode": mode, "clear_cache": str(clear_cache).lower()},
        )
        paused = [e for e in self.engines if results[e.label].ok]
        if len(paused) != len(self.engines):
            resumed = await self._calls.fanout("resume", "POST", "/resume", engines=paused)
            self._raise_on_failure(
                "pause", results, f" (resumed {len(paused)} paused engine(s): {_summary(resumed)})"
            )
        return results

    async def resume(self) -> dict[str, EngineResult]:
        """``POST {admin}/resume`` on every engine."""
        return await self._everywhere("resume", "POST", "/resume")

    async def init_broadcast(
        self,
        plan: BroadcastPlan | None = None,
        *,
        host: str,
        port: int,
        timeout: float,
        session_id: str | None = None,
        quantize_in_weight_transfer: bool = False,
        via_rpc: bool = False,
    ) -> dict[str, EngineResult]:
        """Send each engine its planned offsets (``/init_broadcaster`` or ``/collective_rpc``).

        The plan must cover exactly the pool's engines, with the same admin URLs; otherwise
        TopologyError before any request, as is an unusable host, port or timeout (ConfigError:
        see ``plan.Rendezvous``). Not retried: joining a rendezvous is not idempotent.
        """
        plan = plan or self.plan
        if plan is None:
            raise ConfigError(
                "init_broadcast needs a plan (pass one, or build the pool with from_plan)"
            )
        rendezvous = Rendezvous(
            host, port, timeout, session_id, quantize_in_weight_transfer, via_rpc
        )
        mine = {e.label: e.admin_base_url for e in self.engines}
        planned = {e.label: e.admin_base_url for e in plan.engines}
        if mine != planned:
            diff = TopologyDiff.between(_states(self.engines), _plan_states(plan))
            raise TopologyError(
                "RANK-6: the plan does not cover exactly this pool's engines: "
                + "; ".join(diff.lines()),
                requirement="RANK-6",
            )
        requests = {e.label: plan.init_request(e, rendezvous) for e in plan.engines}
        call_timeout = max(self.timeout, float(timeout) + 30.0)

        async def one(engine: AdminEngine) -> EngineResult:
            path, body = requests[engine.label]
            return await self._calls.call(
                engine, "init_broadcast", "POST", path, json=body, timeout=call_timeout
            )

        results = {r.engine: r for r in await asyncio.gather(*(one(e) for e in self.engines))}
        self.plan = plan
        self._raise_on_failure("init_broadcast", results)
        return results

    async def update_weights(
        self,
        weight_dir: str | None,
        *,
        pause: bool = True,
        verify: bool | None = None,
        request: tuple[str, Any] | None = None,
        api: Literal["admin", "vllm"] = "admin",
    ) -> dict[str, EngineResult]:
        """Pause, ``POST {admin}/update_weights`` on every engine, resume every engine it paused.

        ``api="vllm"``: the update from a path that stock vLLM serves, ``/collective_rpc`` with
        ``reload_weights`` and ``weights_path`` (vLLM 0.31's own ``/update_weights`` is its
        native weight-transfer route: it refuses ``weight_dir`` with a 400). ``request`` (path,
        JSON body) replaces the update call outright, e.g. ``update_weights_from_path``; the
        default is ``/update_weights {"weight_dir": ...}``.

        With a discovery client, the topology is re-verified first (TOPO-1; ``verify=False`` skips
        it). On any failure AdminError names the engines; its ``results`` maps each phase
        (pause, update_weights, resume) to the per-engine results.
        """
        path, body = request or _update_request(weight_dir, api)
        if verify is None:
            verify = self.discovery is not None
        if verify:
            await self.verify_topology()
        phases: dict[str, dict[str, EngineResult]] = {}
        paused: list[AdminEngine] = []
        failure: str | None = None
        try:
            if pause:
                phases["pause"] = await self._calls.fanout(
                    "pause", "POST", "/pause", params={"mode": "keep", "clear_cache": "false"}
                )
                paused = [e for e in self.engines if phases["pause"][e.label].ok]
                if len(paused) != len(self.engines):
                    failure = "pause"
            if failure is None:
                phases["update_weights"] = await self._calls.fanout(
                    "update_weights", "POST", path, json=body, timeout=self.update_timeout
                )
                if not all(r.ok for r in phases["update_weights"].values()):
                    failure = "update_weights"
        finally:
            # Resume every engine this call paused, whatever happened (even cancellation).
            if paused:
                phases["resume"] = await asyncio.shield(
                    self._calls.fanout("resume", "POST", "/resume", engines=paused)
                )
        if (
            failure is None
            and "resume" in phases
            and not all(r.ok for r in phases["resume"].values())
        ):
            failure = "resume"
        if failure is not None:
            failed = [r for r in phases[failure].values() if not r.ok]
            lines = "; ".join(f"{r.engine}: {r.error}" for r in failed)
            resumed = f"; resumed: {_summary(phases['resume'])}" if "resume" in phases else ""
            raise AdminError(
                f"update_weights failed at {failure} on {len(failed)} engine(s): {lines}{resumed}",
                engine=failed[0].engine,
                results=phases,
                requirement="ADMIN-2",
            )
        return phases["update_weights"]

    async def verify_topology(self, *, timeout: float = 30.0, wait: float = 0.0) -> None:
        """Re-discover and raise TopologyChangedError (TOPO-1) if the fleet no longer matches.

        The reference is the plan when there is one, else the engines the pool was built with.
        Engines now reporting ``error`` count as removed. Transport errors are retried until
        ``timeout``; they never count as a change. ``wait``: on a protocol 2 frontend, first
        wait up to that long for the listing to change (the change feed), so a death or a resize
        raises within a fraction of a second; on protocol 1 the check is immediate.
        """
        if self.discovery is None:
            raise ConfigError("verify_topology needs a discovery client (pass discovery=...)")
        expected = _plan_states(self.plan) if self.plan is not None else _states(self.engines)
        await verify_fleet(
            self.discovery, expected, "admin_base_url", "the plan", timeout=timeout, wait=wait
        )


async def verify_fleet(
    discovery: DiscoveryClient,
    expected: Sequence[EngineState],
    address: Literal["admin_base_url", "system_url"],
    what: str,
    *,
    timeout: float = 30.0,
    wait: float = 0.0,
) -> None:
    """TOPO-1: re-read the listing; TopologyChangedError naming ``what`` was expected (the plan,
    the native NCCL group) when the matching engines, their world sizes or their ``address``
    (the URL the caller drives) differ from ``expected`` (an engine now reporting error counts
    as gone). ``timeout`` and ``wait`` as :func:`live_workers`."""
    matching = await live_workers(discovery, timeout=timeout, wait=wait)
    live = [
        EngineState(WorkerId.of(w), w.world_size, getattr(w, address), w.error) for w in matching
    ]
    diff = TopologyDiff.between(expected, live)
    if diff:
        raise TopologyChangedError(
            f"TOPO-1: the fleet at {discovery.url} no longer matches {what}:\n{diff}", diff=diff
        )


def raise_failed(
    operation: str,
    results: Mapping[str, EngineResult],
    extra: str = "",
    *,
    requirement: str = "ADMIN-3",
) -> None:
    """AdminError naming every engine of ``results`` that failed (nothing when none did)."""
    failed = [r for r in results.values() if not r.ok]
    if failed:
        lines = "; ".join(f"{r.engine}: {r.error}" for r in failed)
        raise AdminError(
            f"{operation} failed on {len(failed)} of {len(results)} engine(s): {lines}{extra}",
            engine=failed[0].engine,
            results={operation: dict(results)},
            requirement=requirement,
        )


async def live_workers(
    discovery: DiscoveryClient, *, timeout: float = 30.0, wait: float = 0.0
) -> tuple[Worker, ...]:
    """The workers a fresh listing shows for the discovery client's model and components (with
    or without admin URLs; those reporting error included): what a re-verification compares."""
    snapshot = await discovery.snapshot(timeout=timeout, wait=wait)
    policy = discovery.policy
    matching, _ = assess_snapshot(
        snapshot,
        inference_world_size=None,
        model=policy.model,
        components=policy.components,
        require_admin=False,
    )
    return matching


def _states(engines: Iterable[AdminEngine]) -> list[EngineState]:
    """The pool's engines as a comparison sees them; a static URL engine, which has no identity,
    is keyed by its URL so a diff stays readable."""
    return [
        EngineState(
            e.identity or WorkerId.static(e.admin_base_url),
            e.world_size,
            e.admin_base_url,
        )
        for e in engines
    ]


def _plan_states(plan: BroadcastPlan) -> list[EngineState]:
    return [
        EngineState(WorkerId(*e.identity), e.world_size, e.admin_base_url) for e in plan.engines
    ]


def _update_request(weight_dir: str | None, api: str) -> tuple[str, dict[str, Any]]:
    """The filesystem update of ``api``: the admin API's ``/update_weights``, or stock vLLM's
    ``/collective_rpc`` ``reload_weights`` (ConfigError for another api, or vLLM without a path)."""
    if api == "admin":
        return "/update_weights", {"weight_dir": weight_dir}
    if api != "vllm":
        raise ConfigError(f"api must be 'admin' or 'vllm'; found {api!r}")
    if weight_dir is None:
        raise ConfigError("a reload on stock vLLM (api='vllm') needs the weight_dir to load")
    rpc = {"method": "reload_weights", "args": [], "kwargs": {"weights_path": weight_dir}}
    return "/collective_rpc", rpc


def _summary(results: Mapping[str, EngineResult]) -> str:
    ok = sum(1 for r in results.values() if r.ok)
    bad = [r.engine for r in results.values() if not r.ok]
    return f"{ok} ok" + (f", failed: {', '.join(bad)}" if bad else "")
