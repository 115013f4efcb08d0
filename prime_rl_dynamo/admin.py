"""Admin pool: one HTTP client per discovered engine, credentials under a stated policy, fan-out.

Credentials (API key as Bearer, static headers, headers from named environment variables) go with
every admin call (CRED-2), only to hosts an allow-list permits when one is set (CRED-3), never to a
URL with user info (CRED-1) and never across a redirect, as admin calls follow none (CRED-4).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json as json_lib
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from prime_rl_dynamo._http import redact_url as _redact
from prime_rl_dynamo._http import scrub, secret_values, tls_context
from prime_rl_dynamo._urls import host_problem
from prime_rl_dynamo.client import Discovery, DiscoveryClient, WorkerLike, assess_snapshot
from prime_rl_dynamo.errors import (
    AdminError,
    ConfigError,
    TopologyChangedError,
    TopologyError,
)
from prime_rl_dynamo.plan import BroadcastPlan, EnginePlan, canonical_key, topology_diff

__all__ = [
    "AdminEngine",
    "AdminPool",
    "Credentials",
    "EngineResult",
    "host_allowed",
]

Identity = tuple[str, str, str, int]

_log = logging.getLogger(__name__)


def _host_key(text: str) -> str:
    """A host as the allow-list compares it: no brackets, exactly one trailing dot removed
    (``name.`` is the same DNS name as ``name``; ``name..`` is not), lower case, and a Unicode name
    in its ASCII (punycode) form, since httpx hands the pool ``bücher.example`` for an
    ``xn--bcher-kva.example`` URL."""
    name = text.strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name.endswith("."):
        name = name[:-1]
    name = name.lower()
    if not name.isascii():
        # Left as is when not a valid name: it then matches only itself (config time refuses it).
        name = _ascii_name(name) or name
    return name


def _ascii_name(name: str) -> str | None:
    """The punycode form of a Unicode host name as httpx encodes it (None: not a valid name)."""
    try:
        return httpx.URL(scheme="http", host=name).raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError, ValueError):
        return None


def host_allowed(host: str, patterns: Sequence[str]) -> bool:
    """Whether ``host`` matches an allow-list entry: exact name, ``*.suffix`` wildcard, or CIDR.

    Names are compared case-insensitively, with one trailing dot ignored and Unicode names in
    their punycode form, and never resolved: a DNS answer must not widen the list.
    ``*.example.com`` matches ``a.example.com`` and ``a.b.example.com`` but not ``example.com``.
    """
    name = _host_key(host)
    try:
        addr: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(name)
    except ValueError:
        addr = None
    for raw in patterns:
        pattern = raw.strip()
        if "/" in pattern:
            try:
                network = ipaddress.ip_network(pattern.strip("[]"), strict=False)
            except ValueError:
                continue
            if addr is not None and addr.version == network.version and addr in network:
                return True
            continue
        if pattern.startswith("*."):
            suffix = "." + _host_key(pattern[2:])
            if addr is None and name.endswith(suffix) and len(name) > len(suffix):
                return True
            continue
        pattern = _host_key(pattern)
        if not pattern:
            continue
        if pattern == "*":
            return True
        if addr is not None:
            try:
                if ipaddress.ip_address(pattern) == addr:
                    return True
            except ValueError:
                continue
        elif name == pattern:
            return True
    return False


def _check_allow_list(patterns: Sequence[str]) -> None:
    """Refuse entries that are malformed or can never match a host (a port, a scheme, user info)."""

    def refuse(raw: str, why: str) -> ConfigError:
        return ConfigError(f"CRED-3: allow-list entry {raw!r} {why}", requirement="CRED-3")

    for raw in patterns:
        pattern = raw.strip()
        if "/" in pattern and "://" not in pattern:
            try:
                ipaddress.ip_network(pattern.strip("[]"), strict=False)
            except ValueError as exc:
                raise refuse(raw, f"is not a CIDR: {exc}") from None
            continue
        shape = "must be a host name, '*.suffix', an IP address or a CIDR"
        if not pattern or (
            "*" in pattern
            and pattern != "*"
            and not (pattern.startswith("*.") and "*" not in pattern[2:])
        ):
            raise refuse(raw, shape)
        if "://" in pattern or "@" in pattern or "/" in pattern:
            raise refuse(raw, f"{shape}, not a URL: it is compared with the host alone")
        bare = pattern[1:-1] if pattern.startswith("[") and pattern.endswith("]") else pattern
        if ":" in bare or pattern.startswith("["):
            try:
                ipaddress.ip_address(bare)
            except ValueError:
                raise refuse(
                    raw,
                    f"{shape}; it names a port, which never matches: entries are compared with "
                    "the host alone",
                ) from None
            continue
        if any(c.isspace() or c in "?#%\\" for c in pattern):
            raise refuse(raw, shape)
        if pattern != "*" and "" in _host_key(pattern.removeprefix("*.")).split("."):
            raise refuse(raw, "has an empty label (two dots in a row, or a leading dot)")
        if not pattern.isascii() and _ascii_name(_host_key(pattern.removeprefix("*."))) is None:
            raise refuse(raw, "is not a valid internationalised host name")


_HEADER_SAFE = frozenset(chr(c) for c in range(0x20, 0x7F)) | {"\t"}


def _secret_value(value: str, where: str) -> str:
    """A credential as it goes on the wire: one trailing newline (``\\n`` or ``\\r\\n``, as a
    mounted secret file ends) is stripped; any other line break, control or non-ASCII character
    is refused, naming where the value came from and never the value (CRED-2)."""
    if value.endswith("\r\n"):
        value = value[:-2]
    elif value.endswith("\n"):
        value = value[:-1]
    bad = next((i for i, c in enumerate(value) if c not in _HEADER_SAFE), None)
    if bad is None and value != value.strip(" \t"):
        bad = 0 if value[:1] in " \t" else len(value) - 1
    if bad is not None:
        char = value[bad]
        kind = (
            "a line break"
            if char in "\r\n"
            else "a non-ASCII character"
            if not char.isascii()
            else "leading or trailing white space"
            if char in " \t"
            else "a control character"
        )
        raise ConfigError(
            f"CRED-2: {where} holds {kind} at position {bad} (of {len(value)}), which no HTTP "
            "header can carry; fix the secret (one trailing newline is stripped, nothing else); "
            "the value is not shown",
            requirement="CRED-2",
        )
    return value


@dataclass(frozen=True)
class Credentials:
    """What admin calls carry; secrets are kept out of ``repr``.

    ``headers_from_env`` maps a header name to the environment variable holding its value.
    ``allowed_hosts`` None means no allow-list (credentials go to every discovered engine).
    """

    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    headers_from_env: Mapping[str, str] = field(default_factory=dict)
    allowed_hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.allowed_hosts is not None:
            object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))
            _check_allow_list(self.allowed_hosts or ())
        if self.api_key is not None:
            object.__setattr__(self, "api_key", _secret_value(self.api_key, "the api_key"))
        object.__setattr__(
            self,
            "headers",
            {name: _secret_value(v, f"header {name}") for name, v in self.headers.items()},
        )

    @classmethod
    def from_env(
        cls,
        *,
        api_key_var: str | None = "VLLM_API_KEY",
        headers: Mapping[str, str] | None = None,
        headers_from_env: Mapping[str, str] | None = None,
        allowed_hosts: Sequence[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Credentials:
        """Credentials as Prime-RL configures them: the API key is read from ``api_key_var``."""
        env = os.environ if environ is None else environ
        key = env.get(api_key_var) if api_key_var else None
        return cls(
            api_key=key,
            headers=dict(headers or {}),
            headers_from_env=dict(headers_from_env or {}),
            allowed_hosts=tuple(allowed_hosts) if allowed_hosts is not None else None,
        )

    def resolve(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The headers to send: static, then from the environment (overriding), then Bearer key.

        An unset or ``"EMPTY"`` key sends no Authorization (Prime-RL's convention). A named
        environment variable that is unset is an error (CRED-2): silently dropping it would
        repeat the original change's bug of unauthenticated admin calls.
        """
        env = os.environ if environ is None else environ
        out = dict(self.headers)
        missing = [
            f"{header} <- ${var}" for header, var in self.headers_from_env.items() if var not in env
        ]
        if missing:
            raise ConfigError(
                "CRED-2: headers_from_env names unset environment variables: " + ", ".join(missing),
                requirement="CRED-2",
            )
        out.update(
            {
                header: _secret_value(env[var], f"header {header} <- ${var}")
                for header, var in self.headers_from_env.items()
            }
        )
        if self.api_key and self.api_key != "EMPTY":
            out["Authorization"] = f"Bearer {self.api_key}"
        return out

    def allows(self, host: str) -> bool:
        """Whether credentials may go to ``host`` (always, when no allow-list is set)."""
        return self.allowed_hosts is None or host_allowed(host, self.allowed_hosts)


@dataclass(frozen=True)
class AdminEngine:
    """One engine the pool drives: its label (worker label or URL) and admin base URL."""

    label: str
    admin_base_url: str
    world_size: int | None = None
    identity: Identity | None = None


@dataclass(frozen=True)
class EngineResult:
    """What one engine answered to one admin call."""

    engine: str
    operation: str
    ok: bool
    status_code: int | None = None
    body: Any = None
    error: str | None = None
    elapsed: float = 0.0

    def __str__(self) -> str:
        state = "ok" if self.ok else f"FAILED: {self.error}"
        code = f" [{self.status_code}]" if self.status_code is not None else ""
        return f"{self.operation} {self.engine}{code}: {state}"


def _engine_from_worker(worker: WorkerLike | EnginePlan) -> AdminEngine:
    if isinstance(worker, EnginePlan):
        identity = worker.identity
        label = worker.label
    else:
        identity = canonical_key(worker)
        label = worker.label
    if worker.admin_base_url is None:
        raise ConfigError(
            f"READY-2: {label} has no admin_base_url; the admin pool cannot drive it",
            requirement="READY-2",
        )
    return AdminEngine(label, worker.admin_base_url, worker.world_size, identity)


#: Admin replies are small JSON objects; anything past this is refused, not truncated.
ADMIN_MAX_BODY_BYTES = 1 << 20


class _ReplyTooLarge(Exception):
    def __init__(self, cap: int, response: httpx.Response) -> None:
        super().__init__(cap)
        self.cap = cap
        self.response = response


async def _read_capped(response: httpx.Response, cap: int) -> bytes:
    out = bytearray()
    async for chunk in response.aiter_bytes():
        out += chunk
        if len(out) > cap:
            raise _ReplyTooLarge(cap, response)
    return bytes(out)


class AdminPool:
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
        timeout: float = 300.0,
        update_timeout: float = 720.0,
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
        # An engine that echoes a credential back (a 401 quoting the header) must not put it into
        # an error message: replies are scrubbed of every credential value.
        self._secrets = secret_values(secret)
        self.engines: tuple[AdminEngine, ...] = tuple(engines)
        self.credentials = creds
        self.timeout = timeout
        self.update_timeout = update_timeout
        self.discovery = discovery
        self.plan = plan
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self.anonymous: list[str] = []
        # Decide every engine's headers before opening any client, so a refusal leaks nothing.
        plan_headers: dict[str, tuple[httpx.URL, dict[str, str]]] = {}
        refused: list[str] = []
        for engine in self.engines:
            url = _admin_url(engine)
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
            plan_headers[engine.label] = (url, headers)
        if refused:
            raise ConfigError(
                "CRED-3: credentials are configured but these engines are outside the admin host "
                f"allow-list {list(creds.allowed_hosts or ())}: {', '.join(refused)}; refusing to "
                "drive them (allow the hosts, or pass disallowed='anonymous')",
                requirement="CRED-3",
            )
        self._clients: dict[str, httpx.AsyncClient] = {
            label: httpx.AsyncClient(
                base_url=str(url),
                headers=headers,
                verify=tls_context(),
                follow_redirects=False,  # CRED-4: a redirect would carry the credentials elsewhere
                trust_env=False,
                timeout=timeout,
                transport=transport,
            )
            for label, (url, headers) in plan_headers.items()
        }

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
        """A pool over a static admin URL list (labels are the URLs, user info redacted)."""
        return cls([AdminEngine(_redact(u), u) for u in urls], **kwargs)

    @staticmethod
    def check_url(url: str) -> str:
        """Refuse an unusable admin URL (CRED-1, WORKER-8); returns the base URL the pool uses."""
        return str(_admin_url(AdminEngine(_redact(url), url)))

    async def __aenter__(self) -> AdminPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every engine's HTTP client."""
        await asyncio.gather(*(c.aclose() for c in self._clients.values()))

    def http_client(self, label: str) -> httpx.AsyncClient:
        """The HTTP client of the engine ``label`` (base URL its admin URL, its credentials)."""
        return self._clients[label]

    # --- one call, fan-out ---------------------------------------------------------------------

    async def _call(
        self,
        engine: AdminEngine,
        operation: str,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> EngineResult:
        client = self._clients[engine.label]
        budget = timeout or self.timeout

        async def exchange() -> tuple[httpx.Response, bytes]:
            request = client.build_request(
                method, path.lstrip("/"), json=json, params=params, timeout=budget
            )
            response = await client.send(request, stream=True)
            try:
                return response, await _read_capped(response, ADMIN_MAX_BODY_BYTES)
            finally:
                await response.aclose()

        async with self._semaphore:
            start = time.monotonic()
            try:
                # httpx bounds each read; the whole exchange gets the budget, so an engine that
                # dribbles a byte a second cannot hold verify_topology or health for minutes.
                response, content = await asyncio.wait_for(exchange(), timeout=budget)
            except asyncio.TimeoutError:
                return EngineResult(
                    engine.label,
                    operation,
                    False,
                    error=f"no complete answer within {budget:g} s (the whole exchange); given up",
                    elapsed=time.monotonic() - start,
                )
            except _ReplyTooLarge as exc:
                return EngineResult(
                    engine.label,
                    operation,
                    False,
                    exc.response.status_code,
                    None,
                    f"reply larger than {exc.cap} bytes; refused, not truncated",
                    time.monotonic() - start,
                )
            except httpx.HTTPError as exc:
                return EngineResult(
                    engine.label,
                    operation,
                    False,
                    error=scrub(f"{type(exc).__name__}: {exc}", self._secrets),
                    elapsed=time.monotonic() - start,
                )
        elapsed = time.monotonic() - start
        status = response.status_code
        try:
            payload = json_lib.loads(content) if content else None
        except ValueError:
            payload = content[:300].decode("utf-8", "replace")
        if self._secrets:
            payload = scrub(payload, self._secrets)
        error: str | None = None
        if response.is_redirect:
            where = scrub(_redact(response.headers.get("location", "?")), self._secrets)
            error = (
                f"CRED-4: answered a redirect to {where}; admin calls follow no redirect, so "
                "credentials never leave for another URL"
            )
        elif not response.is_success:
            message = payload.get("message") if isinstance(payload, dict) else payload
            error = f"HTTP {status}: {message}"
        elif not isinstance(payload, dict) or payload.get("status") == "error":
            error = (
                f"ADMIN-2: expected a JSON object reply without status 'error'; found {payload!r}"
            )
        return EngineResult(engine.label, operation, error is None, status, payload, error, elapsed)

    async def _fanout(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        engines: Sequence[AdminEngine] | None = None,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> dict[str, EngineResult]:
        targets = self.engines if engines is None else engines
        # Every call settles: one engine failing must not cancel its siblings mid-mutation.
        results = await asyncio.gather(
            *(
                self._call(e, operation, method, path, json=json, params=params, timeout=timeout)
                for e in targets
            )
        )
        return {r.engine: r for r in results}

    @staticmethod
    def _raise_on_failure(
        operation: str, results: Mapping[str, EngineResult], extra: str = ""
    ) -> None:
        failed = [r for r in results.values() if not r.ok]
        if failed:
            lines = "; ".join(f"{r.engine}: {r.error}" for r in failed)
            raise AdminError(
                f"{operation} failed on {len(failed)} of {len(results)} engine(s): {lines}{extra}",
                engine=failed[0].engine,
                results=dict(results),
                requirement="ADMIN-2" if operation != "health" else "ADMIN-1",
            )

    # --- operations ----------------------------------------------------------------------------

    async def health(self) -> dict[str, EngineResult]:
        """``GET {admin}/health`` on every engine; AdminError naming those not healthy."""
        results = await self._fanout("health", "GET", "/health")
        self._raise_on_failure("health", results)
        return results

    async def pause(
        self, *, mode: str = "keep", clear_cache: bool = False
    ) -> dict[str, EngineResult]:
        """``POST {admin}/pause`` on every engine; on failure resumes the ones it paused."""
        results = await self._fanout(
            "pause",
            "POST",
            "/pause",
            params={"mode": mode, "clear_cache": str(clear_cache).lower()},
        )
        paused = [e for e in self.engines if results[e.label].ok]
        if len(paused) != len(self.engines):
            resumed = await self._fanout("resume", "POST", "/resume", engines=paused)
            self._raise_on_failure(
                "pause", results, f" (resumed {len(paused)} paused engine(s): {_summary(resumed)})"
            )
        return results

    async def resume(self) -> dict[str, EngineResult]:
        """``POST {admin}/resume`` on every engine."""
        results = await self._fanout("resume", "POST", "/resume")
        self._raise_on_failure("resume", results)
        return results

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
        TopologyError before any request. Not retried: joining a rendezvous is not idempotent.
        """
        plan = plan or self.plan
        if plan is None:
            raise ConfigError(
                "init_broadcast needs a plan (pass one, or build the pool with from_plan)"
            )
        mine = {e.label: e.admin_base_url for e in self.engines}
        planned = {e.label: e.admin_base_url for e in plan.engines}
        if mine != planned:
            diff = topology_diff(
                [_as_plan_view(e) for e in self.engines],
                plan.engines,
            )
            raise TopologyError(
                f"RANK-6: the plan does not cover exactly this pool's engines: {str(diff).replace(chr(10), '; ')}",
                requirement="RANK-6",
            )
        requests = {
            e.label: plan.init_request(
                e,
                host=host,
                port=port,
                timeout=timeout,
                session_id=session_id,
                quantize_in_weight_transfer=quantize_in_weight_transfer,
                via_rpc=via_rpc,
            )
            for e in plan.engines
        }
        call_timeout = max(self.timeout, float(timeout) + 30.0)

        async def one(engine: AdminEngine) -> EngineResult:
            path, body = requests[engine.label]
            return await self._call(
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
    ) -> dict[str, EngineResult]:
        """Pause, ``POST {admin}/update_weights`` on every engine, resume every engine it paused.

        ``request`` (path, JSON body) replaces the update call, e.g. vLLM's ``/collective_rpc``
        with ``update_weights_from_path``; the default is ``/update_weights {"weight_dir": ...}``.

        With a discovery client, the topology is re-verified first (TOPO-1; ``verify=False`` skips
        it). On any failure AdminError names the engines; its ``results`` maps each phase
        (pause, update_weights, resume) to the per-engine results.
        """
        if verify is None:
            verify = self.discovery is not None
        if verify:
            await self.verify_topology()
        phases: dict[str, dict[str, EngineResult]] = {}
        paused: list[AdminEngine] = []
        failure: str | None = None
        try:
            if pause:
                phases["pause"] = await self._fanout(
                    "pause", "POST", "/pause", params={"mode": "keep", "clear_cache": "false"}
                )
                paused = [e for e in self.engines if phases["pause"][e.label].ok]
                if len(paused) != len(self.engines):
                    failure = "pause"
            if failure is None:
                path, body = request or ("/update_weights", {"weight_dir": weight_dir})
                phases["update_weights"] = await self._fanout(
                    "update_weights", "POST", path, json=body, timeout=self.update_timeout
                )
                if not all(r.ok for r in phases["update_weights"].values()):
                    failure = "update_weights"
        finally:
            # Resume every engine this call paused, whatever happened (even cancellation).
            if paused:
                phases["resume"] = await asyncio.shield(
                    self._fanout("resume", "POST", "/resume", engines=paused)
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
        snapshot = await self.discovery.snapshot(timeout=timeout, wait=wait)
        matching, _ = assess_snapshot(
            snapshot,
            inference_world_size=None,
            model=self.discovery.model,
            components=self.discovery.components,
            require_admin=False,
        )
        expected: Sequence[Any] = (
            self.plan.engines if self.plan is not None else [_as_plan_view(e) for e in self.engines]
        )
        live = [w for w in matching if w.error is None]
        diff = topology_diff(expected, live)
        errors = {w.label: w.error for w in matching if w.error is not None}
        if errors:
            removed = [
                f"{item} -- now reports error: {errors[item.split(' ', 1)[0]]}"
                if item.split(" ", 1)[0] in errors
                else item
                for item in diff.removed
            ]
            diff = type(diff)(
                added=diff.added, removed=removed, resized=diff.resized, moved=diff.moved
            )
        if diff:
            raise TopologyChangedError(
                f"TOPO-1: the fleet at {self.discovery.url} no longer matches the plan:\n{diff}",
                diff=diff,
            )


@dataclass(frozen=True)
class _PlanView:
    # PlannableWorker-compatible, so topology_diff keys an engine by its identity.
    namespace: str
    component: str
    endpoint: str
    instance_id: int
    world_size: int | None
    admin_base_url: str | None

    @property
    def identity(self) -> Identity:
        return (self.namespace, self.component, self.endpoint, self.instance_id)

    @property
    def label(self) -> str:
        return f"{self.namespace}.{self.component}.{self.endpoint}#{self.instance_id}"


def _as_plan_view(engine: AdminEngine) -> _PlanView:
    identity = engine.identity
    if identity is None:
        # A static URL engine has no identity; key it by its URL so diffs stay readable.
        identity = ("static", engine.admin_base_url, "admin", 0)
    return _PlanView(*identity, engine.world_size, engine.admin_base_url)


def _admin_url(engine: AdminEngine) -> httpx.URL:
    try:
        url = httpx.URL(engine.admin_base_url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"{engine.label}: admin_base_url is not a URL: {exc}") from None
    if url.userinfo:
        raise ConfigError(
            f"CRED-1: {engine.label}: admin_base_url carries user info; credentials never travel in URLs",
            requirement="CRED-1",
        )
    problem = host_problem(url.raw_host.decode("ascii", "replace"))
    if problem is not None:  # reading url.host would raise idna.IDNAError
        raise ConfigError(
            f"WORKER-8: {engine.label}: admin_base_url has an unusable host: {problem}",
            requirement="WORKER-8",
        )
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"WORKER-8: {engine.label}: admin_base_url must be an http(s) URL with a host; found "
            f"{engine.admin_base_url!r}",
            requirement="WORKER-8",
        )
    if url.query or url.fragment:
        raise ConfigError(
            f"WORKER-8: {engine.label}: admin_base_url must carry no query or fragment",
            requirement="WORKER-8",
        )
    # A trailing slash lets httpx append the admin paths under any base path (/admin -> /admin/pause).
    return url.copy_with(path=url.path.rstrip("/") + "/")


def _summary(results: Mapping[str, EngineResult]) -> str:
    ok = sum(1 for r in results.values() if r.ok)
    bad = [r.engine for r in results.values() if not r.ok]
    return f"{ok} ok" + (f", failed: {', '.join(bad)}" if bad else "")
