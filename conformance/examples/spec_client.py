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
import json
import os
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from conformance.examples._contract import ClientCall, ClientFunction, contract_client
from prime_rl_dynamo.wire import WORKER_FIELDS, WorkerId

__all__ = ["ZOO", "run", "zoo_client"]

#: bug -> (the requirement it breaks, what it does). Taking W from the listing also initialises a
#: fleet told the wrong W, so "derives-w" breaks RANK-2 as well: the plan-level form of READY-3.
ZOO: dict[str, tuple[str, str]] = {
    "even-split": ("RANK-6", "offsets i * (W // n), ignoring each engine's world size"),
    "drops-credentials": ("CRED-2", "sends no credential to discovered engines"),
    "429-fatal": ("POLL-1", "treats 429 as fatal"),
    "one-poll": ("READY-4", "plans from a single complete poll"),
    "follows-admin-redirects": ("CRED-4", "follows admin redirects, credentials and all"),
    "ignores-allow-list": ("CRED-3", "sends credentials to every host"),
    "swallows-init-errors": ("ADMIN-3", "ignores the status of its init calls"),
    "retries-version": ("VERSION-2", "retries a protocol_version it does not implement"),
    "field-checks-smg": ("DIALECT-1", "refuses an SMG body field by field"),
    "derives-w": ("READY-3", "takes W from the listing instead of the operator"),
    "component-order": ("RANK-1", "orders engines by (component, instance_id) only"),
    "rejects-unknown-fields": ("BODY-5", "refuses unknown fields"),
    "skips-reverify": ("TOPO-1", "updates weights without re-reading the listing"),
}

CAP = 8 * 1024 * 1024
_ROUTE = "update/init_weight_transfer_engine"
POLL_INTERVAL = 0.1
_TOP = {"protocol_version", "namespace", "workers"}
_WORKER = frozenset(WORKER_FIELDS)


class Refused(RuntimeError):
    """The client refuses (fatal, not retried)."""


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


def _label(w: dict[str, Any]) -> str:
    return str(WorkerId.from_entry(w))


class _Client:
    def __init__(self, call: ClientCall, bugs: frozenset[str]) -> None:
        self.call = call
        self.bugs = bugs
        self.http = httpx.Client(
            timeout=min(call.timeout, 5.0), trust_env=False, follow_redirects=False
        )
        url = httpx.URL(call.discovery_url)
        if url.userinfo:
            raise Refused("CRED-1: the discovery URL carries user info; refused before any request")
        self.url = url
        self.deadline = time.monotonic() + call.timeout

    # -- polling -----------------------------------------------------------------------------

    def _get(self) -> dict[str, Any]:
        try:
            with self.http.stream("GET", self.url) as response:
                status = response.status_code
                if 300 <= status < 400:
                    where = response.headers.get("location", "?")
                    raise Refused(f"POLL-4: redirect to {where} not followed")
                if status == 429 or status >= 500:
                    if status == 429 and "429-fatal" in self.bugs:
                        raise Refused("HTTP 429: rate limited")
                    wait = _retry_after(response.headers.get("retry-after"))
                    raise _Retry(f"HTTP {status}", wait)
                if status != 200:
                    raise Refused(f"POLL-2: HTTP {status} from {self.url}")
                length = int(response.headers.get("content-length") or 0)
                if length > CAP:
                    raise Refused(f"POLL-3: body of {length} bytes exceeds the cap of {CAP}")
                data = bytearray()
                for chunk in response.iter_raw():
                    data += chunk
                    if len(data) > CAP:
                        raise Refused(f"POLL-3: body exceeds the cap of {CAP} bytes")
        except httpx.TransportError as exc:
            raise _Retry(f"transport error: {type(exc).__name__}") from None
        try:
            body = json.loads(bytes(data))
        except ValueError as exc:
            raise Refused(f"POLL-2: the body is not JSON: {exc}") from None
        return self._validated(body)

    def _validated(self, body: Any) -> dict[str, Any]:
        from prime_rl_dynamo.errors import ProtocolError
        from prime_rl_dynamo.validate import detect_dialect, validate_body

        if isinstance(body, dict) and body.get("protocol_version") not in (1, None):
            if "retries-version" in self.bugs:
                raise _Retry(f"protocol_version {body['protocol_version']!r}")
            raise Refused(f"VERSION-2: protocol_version {body['protocol_version']!r} is not 1")
        if "field-checks-smg" in self.bugs and isinstance(body, dict) and "namespace" not in body:
            raise Refused("POLL-2: field 'namespace' is missing")
        if detect_dialect(body) == "smg":
            raise Refused("DIALECT-1: the body is in another dialect (the SMG gateway's)")
        if "rejects-unknown-fields" in self.bugs and isinstance(body, dict):
            extra = set(body) - _TOP
            for w in body.get("workers", []):
                extra |= set(w) - _WORKER
            if extra:
                raise Refused(f"unknown field(s) {sorted(extra)}")
        try:
            validate_body(body)
        except ProtocolError as exc:
            raise Refused(f"POLL-2: {exc}") from None
        return dict(body)

    def _assess(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str], int]:
        model = self.call.model
        matching = [w for w in body["workers"] if model is None or w.get("model") in (None, model)]
        reasons = []
        for w in matching:
            if "error" in w:
                reasons.append(f"{_label(w)} has error {w['error']!r}")
            elif "admin_base_url" not in w or "world_size" not in w:
                reasons.append(f"{_label(w)} lacks admin_base_url or world_size")
        if not matching:
            reasons.append("no worker matches")
        total = sum(w.get("world_size", 0) for w in matching if "error" not in w)
        width = total if "derives-w" in self.bugs else self.call.inference_world_size
        if total != width:
            reasons.append(f"world sizes sum to {total}, expected inference_world_size {width}")
        return matching, reasons, width

    def wait_ready(self) -> tuple[list[dict[str, Any]], int]:
        previous: list[Any] | None = None
        backoff, polls, last = 0.05, 0, "no listing read"
        while True:
            if time.monotonic() >= self.deadline:
                raise Refused(
                    f"POLL-5: not ready after {self.call.timeout} s ({polls} polls): {last}"
                )
            polls += 1
            wait = POLL_INTERVAL
            try:
                body = self._get()
            except _Retry as exc:
                previous, last = None, str(exc)
                wait = exc.wait if exc.wait is not None else backoff * (1 + random.random())
                backoff = min(backoff * 2, 1.0)
            else:
                matching, reasons, width = self._assess(body)
                if reasons:
                    previous, last = None, "; ".join(reasons)
                else:
                    fingerprint = [
                        (_label(w), w.get("system_url"), w["admin_base_url"], w["world_size"])
                        for w in sorted(matching, key=self._order)
                    ]
                    if previous == fingerprint or "one-poll" in self.bugs:
                        return sorted(matching, key=self._order), width
                    previous, last = fingerprint, "waiting for a second identical poll"
            time.sleep(max(0.0, min(wait, self.deadline - time.monotonic())))

    def _order(self, w: dict[str, Any]) -> tuple[Any, ...]:
        if "component-order" in self.bugs:
            return (w["component"], w["instance_id"])
        return WorkerId.from_entry(w)

    # -- admin calls -------------------------------------------------------------------------

    def _headers(self, host: str) -> dict[str, str]:
        creds = self.call.credentials
        allowed = creds.allowed_hosts
        if "drops-credentials" in self.bugs:
            return {}
        if allowed is not None and host not in allowed and "ignores-allow-list" not in self.bugs:
            return {}
        out = dict(creds.headers)
        for header, var in creds.headers_from_env.items():
            out[header] = os.environ[var]
        if creds.api_key and creds.api_key != "EMPTY":
            out["Authorization"] = f"Bearer {creds.api_key}"
        return out

    def admin(
        self, worker: dict[str, Any], path: str, payload: Any = None, *, base: str | None = None
    ) -> None:
        base = (base or worker["admin_base_url"]).rstrip("/")
        follow = "follows-admin-redirects" in self.bugs
        response = self.http.post(
            base + path,
            json=payload,
            headers=self._headers(httpx.URL(base).host),
            follow_redirects=follow,
        )
        if "swallows-init-errors" in self.bugs:
            return
        failed = not response.is_success
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("status") == "error":
            failed = True
        if failed:
            raise Refused(
                f"ADMIN-3: {path} on {_label(worker)} failed: HTTP {response.status_code}"
            )

    def init(self, engines: list[dict[str, Any]], width: int) -> None:
        call = self.call
        session = uuid.uuid4().hex
        offset = 0
        for i, w in enumerate(engines):
            mine = i * (width // len(engines)) if "even-split" in self.bugs else offset
            offset += w["world_size"]
            if call.convention == "vllm-native-nccl":
                info = {
                    "master_address": call.master_address,
                    "master_port": call.master_port,
                    "rank_offset": mine + 1,
                    "world_size": width + 1,
                }
                if _ROUTE in w.get("routes", ()) and w.get("system_url"):
                    # The latest generation's form: Dynamo's engine route on the system server.
                    self.admin(w, "/engine/" + _ROUTE, {"init_info": info}, base=w["system_url"])
                    continue
                payload: dict[str, Any] = {
                    "method": "init_weight_transfer_engine",
                    "kwargs": {"init_info": info},
                }
            elif call.convention == "nixl":
                args = [call.master_address, call.master_port, mine, width, call.timeout, session]
                payload = {"method": "init_broadcaster", "timeout": call.timeout, "args": args}
            else:
                payload = {
                    "method": "init_broadcaster",
                    "kwargs": {
                        "host": call.master_address,
                        "port": call.master_port,
                        "rank_offset": mine,
                        "inference_world_size": width,
                        "engine_world_size": w["world_size"],
                        "timeout": call.timeout,
                        "quantize_in_weight_transfer": False,
                    },
                }
            self.admin(w, "/collective_rpc", payload)

    def update(self, engines: list[dict[str, Any]]) -> None:
        planned = {_label(w): w["world_size"] for w in engines}
        now = dict(planned)
        if "skips-reverify" not in self.bugs:
            body = self._get()
            now = {_label(w): w.get("world_size") for w in self._assess(body)[0]}
        if now != planned:
            changes = [
                f"resized {k}: {planned[k]} -> {now[k]}"
                for k in planned
                if k in now and now[k] != planned[k]
            ]
            changes += [f"removed {k}" for k in planned if k not in now]
            changes += [f"added {k}" for k in now if k not in planned]
            raise Refused("TOPO-1: the fleet changed since the plan: " + "; ".join(changes))
        for w in engines:
            self.admin(w, "/pause?mode=keep&clear_cache=false")
        try:
            for w in engines:
                self.admin(w, "/update_weights", {"weight_dir": None})
        finally:
            for w in engines:
                self.admin(w, "/resume")


def _drive(call: ClientCall, bugs: frozenset[str]) -> None:
    client = _Client(call, bugs)
    try:
        engines, width = client.wait_ready()
        client.init(engines, width)
        client.update(engines)
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
