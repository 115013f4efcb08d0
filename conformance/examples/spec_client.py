"""A client written from SPEC.md alone (no prime_rl_dynamo.client, no AdminPool), and its zoo.

``run`` is the faithful version: it polls with backoff and Retry-After, caps the body, follows no
redirect, ignores proxy variables, validates every listing, plans after two identical complete
polls, orders canonically, sends credentials only where the allow-list lets it, speaks the
``collective_rpc`` wire forms trainers use (keywords for prime-nccl, positional args for NIXL,
``init_weight_transfer_engine`` for vLLM native, or Dynamo's engine route
``update/init_weight_transfer_engine`` where the worker lists it), treats a failed admin call as a failure and
re-verifies the fleet before a weight update.

``ZOO`` maps each bug to the one client requirement it breaks; ``zoo_client(bug)`` is the same
client with that one bug (conformance/examples/zoo.py exposes each as ``module:function``).
"""

from __future__ import annotations

import email.utils
import functools
import json
import os
import random
import ssl
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from conformance.examples._contract import ClientCall, ClientFunction, contract_client
from prime_rl_dynamo.wire import WORKER_FIELDS, WorkerId

__all__ = ["ZOO", "ZOO_TABLE", "run", "zoo_client"]

#: Every natural bug of the zoo, as data (zoo.json): bug -> its row: the requirement it breaks
#: (``breaks``), what it does (``does``), the check that must fail (``check``), every requirement it
#: fails (``fails``), the check's reason code (``reason``), and optionally its function name in
#: conformance/examples/zoo.py (``function``) and why it fails more than one (``note``).
ZOO_TABLE: dict[str, dict[str, Any]] = json.loads(
    Path(__file__).with_name("zoo.json").read_text(encoding="utf-8")
)

#: bug -> (the requirement it breaks, what it does).
ZOO: dict[str, tuple[str, str]] = {
    bug: (row["breaks"], row["does"]) for bug, row in ZOO_TABLE.items()
}

CAP = 8 * 1024 * 1024
_ROUTE = "update/init_weight_transfer_engine"
POLL_INTERVAL = 0.1
_TOP = {"protocol_version", "namespace", "workers"}
_WORKER = frozenset(WORKER_FIELDS)


class Refused(RuntimeError):
    """The client refuses (fatal, not retried): ``requirement`` is the ID it refuses under and
    ``result`` what SPEC asks the error to say (both go to the structured result)."""

    def __init__(self, requirement: str, message: str, **result: Any) -> None:
        super().__init__(f"{requirement}: {message}")
        self.requirement = requirement
        self.result = result


class _Retry(Exception):
    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.wait = wait


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())


def _resolves_into(host: str, block: str) -> bool:
    """The bug resolves-for-cidr: whether ``host``, resolved, falls in the CIDR ``block``."""
    import ipaddress
    import socket

    try:
        return ipaddress.ip_address(socket.gethostbyname(host)) in ipaddress.ip_network(block)
    except (OSError, ValueError):
        return False


def _label(w: dict[str, Any]) -> str:
    return str(WorkerId.from_entry(w))


@functools.cache
def _tls() -> ssl.SSLContext:
    """The verifying TLS context every run shares: what httpx builds for a client that does not
    trust the environment (the certifi bundle), built once per process, not once per run (loading
    the bundle costs about 30 ms of CPU, and a profile makes some 50 runs)."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class _Client:
    def __init__(self, call: ClientCall, bugs: frozenset[str]) -> None:
        self.call = call
        self.bugs = bugs
        proxy = os.environ.get("ALL_PROXY") if "honours-all-proxy" in bugs else None
        self.http = httpx.Client(
            timeout=min(call.timeout, 5.0),
            trust_env="trusts-proxy-env" in bugs,
            follow_redirects="follows-listing-redirects" in bugs,
            proxy=proxy or None,
            verify=_tls(),
        )
        url = httpx.URL(call.discovery_url)
        if url.userinfo and "accepts-userinfo-url" not in bugs:
            raise Refused(
                "CRED-1", "the discovery URL carries user info; refused before any request"
            )
        self.url = url
        self.deadline = time.monotonic() + call.timeout
        self.failures: list[str] = []  # continues-after-failure: failed calls, raised at the end
        self.last_sum: int | None = None  # the last snapshot's sum, for the deadline's result
        self.namespace: Any = None  # the last listing's top-level namespace
        self.last_matching: list[dict[str, Any]] = []  # the last snapshot's matching entries
        self.retried_once = False  # the *-retry-once bugs
        self.cap = call.max_body_bytes or CAP
        if "ignores-cap-setting" in bugs:
            self.cap = CAP
        elif "small-fixed-cap" in bugs:
            self.cap = 512 * 1024

    # -- polling -----------------------------------------------------------------------------

    def _get(self) -> dict[str, Any]:
        bugs = self.bugs
        try:
            with self.http.stream("GET", self.url) as response:
                status = response.status_code
                if 300 <= status < 400:
                    where = response.headers.get("location", "?")
                    raise Refused("POLL-4", f"redirect to {where} not followed")
                if status == 429 and "fixed-retry" in bugs:
                    raise _Retry(f"HTTP {status}", 1.0)
                if status == 429 or status >= 500:
                    if status == 429 and "429-fatal" in bugs:
                        raise Refused("POLL-1", "HTTP 429: rate limited")
                    if status >= 500 and "5xx-fatal" in bugs:
                        raise Refused("POLL-1", f"HTTP {status}")
                    wait = _retry_after(response.headers.get("retry-after"))
                    raise _Retry(f"HTTP {status}", wait)
                if status != 200:
                    if "retries-4xx" in bugs:
                        raise _Retry(f"HTTP {status}")
                    raise Refused("POLL-2", f"HTTP {status} from {self.url}")
                length = int(response.headers.get("content-length") or 0)
                if length > self.cap:
                    if "retries-oversized" in bugs:
                        raise _Retry(f"body of {length} bytes")
                    raise Refused("POLL-3", f"body of {length} bytes exceeds the cap", cap=self.cap)
                data = bytearray()
                for chunk in response.iter_raw():
                    data += chunk
                    if len(data) > self.cap:
                        raise Refused("POLL-3", "body exceeds the cap", cap=self.cap)
        except httpx.TransportError as exc:
            if "reset-fatal" in bugs:
                raise Refused("POLL-1", f"transport error: {type(exc).__name__}") from None
            raise _Retry(f"transport error: {type(exc).__name__}") from None
        try:
            body = json.loads(bytes(data))
        except ValueError as exc:
            raise Refused("POLL-2", f"the body is not JSON: {exc}") from None
        return self._validated(body)

    def _validated(self, body: Any) -> dict[str, Any]:
        from prime_rl_dynamo.errors import ProtocolError
        from prime_rl_dynamo.validate import detect_dialect, validate_body

        bugs = self.bugs
        version = body.get("protocol_version") if isinstance(body, dict) else None
        if version not in (1, None) and "ignores-version" in bugs:
            body = {**body, "protocol_version": 1}
        elif version not in (1, None):
            if "version-retry-once" in bugs and not self.retried_once:
                self.retried_once = True
                raise _Retry(f"protocol_version {version!r}, once more")
            if "retries-version" in bugs:
                raise _Retry(f"protocol_version {version!r}")
            raise Refused("VERSION-2", f"protocol_version {version!r} is not 1")
        if "field-checks-smg" in bugs and isinstance(body, dict) and "namespace" not in body:
            raise Refused("POLL-2", "field 'namespace' is missing")
        if detect_dialect(body) == "smg":
            if "retries-smg" in bugs:
                raise _Retry("another dialect")
            if "dialect-after-retry" in bugs and not self.retried_once:
                self.retried_once = True
                raise _Retry("another dialect, once more")
            raise Refused("DIALECT-1", "the body is in another dialect (the SMG gateway's)")
        if "rejects-unknown-top" in bugs and isinstance(body, dict) and set(body) - _TOP:
            raise Refused("BODY-5", f"unknown top-level field(s) {sorted(set(body) - _TOP)}")
        if "rejects-unknown-transport" in bugs and isinstance(body, dict):
            for w in body.get("workers", []):
                kinds = set(w.get("transport") or {}) - {"tcp", "nats_tcp", "http"}
                if kinds:
                    raise Refused("BODY-5", f"unknown transport kind(s) {sorted(kinds)}")
        if "rejects-unknown-fields" in bugs and isinstance(body, dict):
            extra = set(body) - _TOP
            for w in body.get("workers", []):
                extra |= set(w) - _WORKER
            if extra:
                raise Refused("BODY-5", f"unknown field(s) {sorted(extra)}")
        try:
            validate_body(body)
        except ProtocolError as exc:
            ignored = {
                "arrival-order": {"LIST-1"},
                "skips-list-6": {"LIST-6"},
                "accepts-listed-userinfo": {"WORKER-8"},
            }
            skipped: set[str] = set().union(*(ids for bug, ids in ignored.items() if bug in bugs))
            broken = {v.requirement for v in exc.violations} or {str(exc.requirement)}
            if not (broken and broken <= skipped):
                if "retries-schema" in bugs:
                    raise _Retry(f"{exc.requirement}") from None
                raise Refused("POLL-2", str(exc), broken=sorted(str(b) for b in broken)) from None
        return dict(body)

    def _matches(self, w: dict[str, Any]) -> bool:
        model = self.call.model
        if model is None or "ignores-model-filter" in self.bugs:
            return True
        if "excludes-model-less" in self.bugs:
            return w.get("model") == model
        if "model-less-same-namespace" in self.bugs and w.get("model") is None:
            return w.get("namespace") == self.namespace
        return w.get("model") in (None, model)

    def _assess(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str], int]:
        bugs = self.bugs
        self.namespace = body.get("namespace")
        matching = [w for w in body["workers"] if self._matches(w)]
        if not matching and "falls-back-to-every-model" in bugs:
            matching = list(body["workers"])
        if "drops-error" in bugs:
            matching = [w for w in matching if "error" not in w]
        if "drops-no-admin" in bugs:
            matching = [w for w in matching if "admin_base_url" in w]
        others = [w for w in body["workers"] if not self._matches(w)]
        reasons = []
        if "other-no-admin-pending" in bugs and any("admin_base_url" not in w for w in others):
            reasons.append("an entry lacks admin_base_url")
        for w in matching:
            if "error" in w:
                if "error-is-fatal" in bugs:
                    raise Refused("READY-1", f"{_label(w)} has error {w['error']!r}")
                if "ignores-error" not in bugs:
                    reasons.append(f"{_label(w)} has error {w['error']!r}")
            elif "admin_base_url" not in w or "world_size" not in w:
                if "no-admin-is-fatal" in bugs:
                    raise Refused("READY-2", f"{_label(w)} lacks admin_base_url")
                if "counts-no-admin" not in bugs:
                    reasons.append(f"{_label(w)} lacks admin_base_url or world_size")
        if not matching:
            if "empty-is-fatal" in bugs:
                raise Refused("READY-6", "no worker matches")
            if "empty-is-ready" in bugs:
                return matching, [], self.call.inference_world_size
            reasons.append("no worker matches")
        counted = [w for w in matching if "error" not in w or "ignores-error" in bugs]
        total = sum(w.get("world_size", 0) for w in counted)
        width = total if "derives-w" in bugs else self.call.inference_world_size
        self.last_sum, self.last_matching = total, matching
        accepted = ("sum-at-most-w" in bugs and total <= width) or (
            "sum-at-least-w" in bugs and total >= width
        )
        if total != width and not accepted:
            if "sum-is-fatal" in bugs:
                raise Refused("READY-3", f"world sizes sum to {total}, expected {width}")
            reasons.append(f"world sizes sum to {total}, expected inference_world_size {width}")
        return matching, reasons, width

    def wait_ready(self) -> tuple[list[dict[str, Any]], int]:
        previous: list[Any] | None = None
        interval = self.call.poll_interval or POLL_INTERVAL
        if "slow-pace" in self.bugs:  # slower than the pace it was given (and declared)
            interval *= 3
        # SPEC §10: a base of half the poll interval, doubling, capped at eight times the base.
        base = interval / 2
        backoff, polls, last = base, 0, "no listing read"
        while True:
            if time.monotonic() >= self.deadline and "no-deadline" not in self.bugs:
                raise self._deadline(polls, last)
            polls += 1
            wait = interval
            try:
                body = self._get()
            except _Retry as exc:
                if "streak-survives-failure" not in self.bugs:
                    previous = None
                last = str(exc)
                wait = exc.wait if exc.wait is not None else backoff * (1 + random.random())
                if exc.wait is None and "retries-at-once" in self.bugs:
                    wait = 0.0
                elif exc.wait is None and "fixed-interval-retry" in self.bugs:
                    wait = interval
                backoff = min(backoff * 2, 8 * base)
            else:
                matching, reasons, width = self._assess(body)
                if reasons:
                    if "streak-survives-pending" not in self.bugs:
                        previous = None
                    last = "; ".join(reasons)
                else:
                    fingerprint = [
                        (
                            _label(w),
                            w.get("system_url"),
                            w.get("admin_base_url"),
                            w.get("world_size"),
                        )[1 if "fingerprint-without-identity" in self.bugs else 0 :]
                        for w in sorted(matching, key=self._order)
                    ]
                    if previous == fingerprint or "one-poll" in self.bugs:
                        return self._ordered(matching), width
                    previous, last = fingerprint, "waiting for a second identical poll"
            left = self.deadline - time.monotonic()
            time.sleep(max(0.0, wait if "no-deadline" in self.bugs else min(wait, left)))

    def _deadline(self, polls: int, last: str) -> Refused:
        if "inits-at-deadline" in self.bugs and self.last_matching:  # best effort: start anyway
            usable = [w for w in self.last_matching if w.get("admin_base_url")]
            self.init(sorted(usable, key=self._order), self.call.inference_world_size)
        if "probes-before-refusal" in self.bugs:  # asks the engines before saying what lacked
            for w in self.last_matching:
                if w.get("admin_base_url"):
                    base = w["admin_base_url"].rstrip("/")
                    self.http.get(base + "/health", headers=self._headers(httpx.URL(base).host))
        found: dict[str, Any] = {}
        total, width = self.last_sum, self.call.inference_world_size
        if "deadline-swaps-numbers" in self.bugs:
            total, width = width, total
        if "deadline-without-sum" not in self.bugs and total is not None:
            found = {"world_size_sum": total, "inference_world_size": width}
        return Refused(
            "POLL-5", f"not ready after {self.call.timeout} s ({polls} polls): {last}", **found
        )

    def _ordered(self, matching: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if "arrival-order" in self.bugs:
            return list(matching)
        return sorted(matching, key=self._order)

    def _order(self, w: dict[str, Any]) -> tuple[Any, ...]:
        if "component-order" in self.bugs:
            return (w["component"], w["instance_id"])
        if "label-order" in self.bugs:
            return (_label(w),)
        return WorkerId.from_entry(w)

    # -- admin calls -------------------------------------------------------------------------

    def _allowed(self, host: str) -> bool:
        from prime_rl_dynamo.credentials import host_allowed

        allowed = self.call.credentials.allowed_hosts
        bugs = self.bugs
        if allowed is None or "ignores-allow-list" in bugs:
            return True
        if "case-sensitive-allow-list" in bugs:
            return host in allowed
        if "exact-only-allow-list" in bugs:
            return host.lower() in {e.lower() for e in allowed}
        suffixes = [e[2:].lower() for e in allowed if e.startswith("*.")]
        if "wildcard-bare-suffix" in bugs and any(host.lower().endswith(s) for s in suffixes):
            return True
        if "resolves-for-cidr" in bugs and any(
            _resolves_into(host, e) for e in allowed if "/" in e
        ):
            return True
        return host_allowed(host, allowed)

    def _headers(self, host: str) -> dict[str, str]:
        creds = self.call.credentials
        if "drops-credentials" in self.bugs or not self._allowed(host):
            return {}
        out = dict(creds.headers)
        if "no-env-headers" not in self.bugs:
            for header, var in creds.headers_from_env.items():
                out[header] = os.environ[var]
        if creds.api_key and (creds.api_key != "EMPTY" or "sends-empty-key" in self.bugs):
            out["Authorization"] = f"Bearer {creds.api_key}"
        return out

    def admin(
        self, worker: dict[str, Any], path: str, payload: Any = None, *, base: str | None = None
    ) -> None:
        base = (base or worker["admin_base_url"]).rstrip("/")
        bugs = self.bugs
        headers = self._headers(httpx.URL(base).host)
        url = base + path
        if "key-in-query" in bugs and self.call.credentials.api_key not in (None, "EMPTY"):
            url += ("&" if "?" in url else "?") + f"api_key={self.call.credentials.api_key}"
        response = self.http.post(
            url, json=payload, headers=headers, follow_redirects="follows-admin-redirects" in bugs
        )
        if response.is_redirect and "follows-admin-redirects-bare" in bugs:
            response = self.http.post(response.headers["location"], json=payload)
        if response.is_redirect and "follows-same-origin-admin-redirects" in bugs:
            moved = httpx.URL(url).join(response.headers["location"])
            if (moved.scheme, moved.host, moved.port) == (response.url.scheme, response.url.host,
                                                          response.url.port):  # fmt: skip
                response = self.http.post(moved, json=payload, headers=headers)
        if "swallows-init-errors" in bugs:
            return
        failed = not response.is_success
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("status") == "error" and "status-only" not in bugs:
            failed = True
        if failed:
            message = f"{path} on {_label(worker)} failed: HTTP {response.status_code}"
            if "continues-after-failure" in bugs:
                self.failures.append(message)
                return
            raise Refused("ADMIN-3", message)

    def _offset(self, i: int, engines: list[dict[str, Any]], width: int, prefix: int) -> int:
        """Engine i's rank offset from 0 (the exclusive prefix sum ``prefix``), or a bug's."""
        bugs = self.bugs
        if "even-split" in bugs:
            return i * (width // len(engines))
        if "offsets-by-index" in bugs:
            return i
        if "inclusive-prefix-sum" in bugs:
            return prefix + engines[i]["world_size"]
        return prefix

    def init(self, engines: list[dict[str, Any]], width: int) -> None:
        call = self.call
        bugs = self.bugs
        session = uuid.uuid4().hex
        offset = 0
        for i, w in enumerate(engines):
            mine = self._offset(i, engines, width, offset)
            offset += w["world_size"]
            port = call.master_port + i if "port-per-engine" in bugs else call.master_port
            timeout = call.timeout + i if "timeout-per-engine" in bugs else call.timeout
            host = call.master_address
            if "session-per-engine" in bugs:
                session = uuid.uuid4().hex
            if call.convention == "vllm-native-nccl" and "native-prime-init" not in bugs:
                info = {
                    "master_address": host,
                    "master_port": port,
                    "rank_offset": mine if "native-offsets-from-0" in bugs else mine + 1,
                    "world_size": width if "native-group-w" in bugs else width + 1,
                }
                if _ROUTE in w.get("routes", ()) and w.get("system_url"):
                    # The latest generation's form: Dynamo's engine route on the system server.
                    self.admin(w, "/engine/" + _ROUTE, {"init_info": info}, base=w["system_url"])
                    if "native-inits-both-forms" not in bugs:  # the bug: collective_rpc as well
                        continue
                payload: dict[str, Any] = {
                    "method": "init_weight_transfer_engine",
                    "kwargs": {"init_info": info},
                }
            elif call.convention == "nixl":
                first = mine + 1 if "nixl-offsets-from-1" in bugs else mine
                told = w["world_size"] if "nixl-w-per-engine" in bugs else width
                told += 1 if "nixl-group-size" in bugs else 0
                args: list[Any] = [host, port, first, told, timeout, session]
                payload = {"method": "init_broadcaster", "timeout": timeout, "args": args}
                if i and "timeout-first-engine-only" in bugs:  # the others take their default
                    args[4] = None
                    del payload["timeout"]
            else:
                kwargs = {
                    "host": host,
                    "port": port,
                    "rank_offset": mine + 1 if "prime-offsets-from-1" in bugs else mine,
                    "inference_world_size": width + 1 if "inference-w-plus-1" in bugs else width,
                    "engine_world_size": w["world_size"],
                    "timeout": timeout,
                    "quantize_in_weight_transfer": False,
                }
                payload = {"method": "init_broadcaster", "kwargs": kwargs}
                if "sixth-arg-default" in bugs:  # Prime-RL main's DynamoAdminPlane form
                    head = [
                        kwargs[k] for k in ("host", "port", "rank_offset", "inference_world_size")
                    ]
                    payload = {"method": "init_broadcaster", "args": [*head, timeout, "default"]}
            self.admin(w, "/collective_rpc", payload)

    def update(self, engines: list[dict[str, Any]], width: int) -> None:
        bugs = self.bugs if self.call.convention == "vllm-native-nccl" else frozenset()
        if "native-reinit-before-update" in bugs:  # so that a restarted engine rejoins the group
            self.init(engines, width)
        planned = {_label(w): w["world_size"] for w in engines}
        now = dict(planned)
        if "reverify-after-pause" in self.bugs:
            for w in engines:
                self.admin(w, "/pause?mode=keep&clear_cache=false")
        if "skips-reverify" not in self.bugs:
            body = self._get()
            now = {_label(w): w.get("world_size") for w in self._assess(body)[0]}
            if "reverify-ignores-resize" in self.bugs:
                now = {k: planned.get(k, v) for k, v in now.items()}
        if now != planned:
            changes = [
                f"resized {k}: {planned[k]} -> {now[k]}"
                for k in planned
                if k in now and now[k] != planned[k]
            ]
            changes += [f"removed {k}" for k in planned if k not in now]
            changes += [f"added {k}" for k in now if k not in planned]
            raise Refused("TOPO-1", "the fleet changed since the plan: " + "; ".join(changes))
        if "reverify-after-pause" not in self.bugs and "native-skips-pause" not in bugs:
            for w in engines:
                self.admin(w, "/pause?mode=keep&clear_cache=false")
        step_dir = "/tmp/weights/step-1" if "native-reloads-path" in bugs else None
        try:
            for w in engines:
                self.admin(w, "/update_weights", {"weight_dir": step_dir})
        finally:
            for w in engines:
                self.admin(w, "/resume")


def _drive(
    call: ClientCall,
    bugs: frozenset[str],
    once_ready: Callable[[list[dict[str, Any]]], frozenset[str]] | None = None,
) -> None:
    """Run the client; ``once_ready`` may add bugs after seeing the ready fleet's engines."""
    client = _Client(call, bugs)
    try:
        try:
            engines, width = client.wait_ready()
        except Refused:
            if "resumes-on-refusal" in bugs:  # the cleanup of a run that never started
                for w in client.last_matching:
                    if w.get("admin_base_url"):
                        client.admin(w, "/resume")
            raise
        if once_ready is not None:
            client.bugs = bugs | once_ready(engines)
        client.init(engines, width)
        client.update(engines, width)
        if client.failures:
            raise Refused("ADMIN-3", "; ".join(client.failures))
    finally:
        client.http.close()


def zoo_client(bug: str) -> ClientFunction:
    """The faithful client with one bug of ``ZOO``."""
    if bug not in ZOO:
        raise KeyError(f"no zoo client {bug!r}; expected one of {', '.join(ZOO)}")
    body: Callable[[ClientCall], None] = lambda call: _drive(call, frozenset({bug}))  # noqa: E731
    body.__module__, body.__doc__ = __name__, f"spec client with one bug: {ZOO[bug][1]}"
    return contract_client(body)


def _faithful(call: ClientCall) -> None:
    """The faithful client written from SPEC.md: passes every client requirement."""
    _drive(call, frozenset())


run = contract_client(_faithful)
