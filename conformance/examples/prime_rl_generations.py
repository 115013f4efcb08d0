"""Prime-RL's older Dynamo pools, generation by generation, their call order and call forms as
data, behind the suite's calling contract: what the client profile judges their own code on.

Facts (no code) from Prime-RL's history (``git show COMMIT:PATH``, lines as cited in ``SOURCES``):

* ``828ddc7da`` (the original change): discovery with httpx's defaults (no credentials, proxy
  environment followed), one snapshot whose world sizes sum to W is ready; admin clients built
  from the listing with no headers at all; ``/health`` per engine (404 read as "no route");
  ``init_nccl_broadcast`` posts ``/init_broadcaster`` by field name at the even split
  ``i * (W // n)`` and ignores every error status; one update is pause -> ``/update_weights
  {"weight_dir"}`` -> resume.
* ``e9d3f8791`` (the fix branch): the same discovery; admin clients from ``setup_admin_clients``
  (headers, ``Bearer`` unless the key is ``EMPTY``); prefix-sum offsets with ``engine_world_size``
  through ``/collective_rpc {"method": "init_broadcaster", "kwargs": {...}}``, an error status
  raised; the same update.
* ``73164c322`` (PR #3296's head): discovery with the client's headers, ``Bearer`` whenever the key
  is truthy (so ``EMPTY`` goes to the listing as ``Bearer EMPTY``), two identical fingerprints, the
  sum checked against W; NIXL through ``/collective_rpc`` with positional args ``[host, port,
  offset, W, timeout, session_id]`` to each ``admin_base_url`` (``setup_admin_clients``'
  credentials: no ``Bearer EMPTY`` on an admin call);
  the update's ``update_weights_from_path`` the same way. Its ``/engine/control`` pause and version
  routes on ``system_url`` are left out: the reference workers of this convention list none.

Each polls at ``CONFORMANCE_POLL_INTERVAL`` (their own backoff is 0.1 s to 1 s, or a fixed second).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from conformance.examples._contract import ClientCall, contract_client
from prime_rl_dynamo.defaults import NO_API_KEY

__all__ = ["GENERATIONS", "SOURCES", "PoolForms", "g828ddc7da", "g73164c322", "ge9d3f8791"]

_CLIENT, _DYNAMO = "src/prime_rl/utils/client.py", "src/prime_rl/utils/dynamo.py"


@dataclass(frozen=True)
class PoolForms:
    """One generation's Dynamo pool: how it discovers, whom it credits, how it inits."""

    discovery_credentials: bool  # the client's headers (and key) go to the listing too
    discovery_trust_env: bool  # the discovery client follows the proxy environment
    stable_snapshots: int  # identical ready snapshots in a row before it binds
    admin_credentials: str  # "none", "unless-empty" (Bearer unless EMPTY), "if-truthy"
    offsets: str  # "even" (i * (W // n)) or "prefix" (exclusive prefix sums)
    init: str  # "fields" (/init_broadcaster), "rpc-kwargs" or "rpc-positional" (/collective_rpc)
    engine_world_size: bool  # the init carries engine_world_size
    swallows_init_errors: bool  # an error status of the init is ignored
    convention: str  # the one transport modelled


GENERATIONS: dict[str, PoolForms] = {
    "828ddc7da": PoolForms(False, True, 1, "none", "even", "fields", False, True, "prime-nccl"),
    "e9d3f8791": PoolForms(False, True, 1, "unless-empty", "prefix", "rpc-kwargs", True, False,
                           "prime-nccl"),
    "73164c322": PoolForms(True, True, 2, "unless-empty", "prefix", "rpc-positional", False, False,
                           "nixl"),
}  # fmt: skip

#: Where each form was read (commit: path lines).
SOURCES: dict[str, tuple[str, ...]] = {
    "828ddc7da": (
        f"{_DYNAMO} 66-76 (_setup_control_clients: no headers), 139-177 (from_config: one snapshot, "
        "sum == W)",
        f"{_CLIENT} 309-340 (check_health), 388-455 (pause, NCCL_READY, /update_weights, resume), "
        "526-576 (init_nccl_broadcast: gpus_per_server = W // n, errors swallowed)",
    ),
    "e9d3f8791": (
        f"{_DYNAMO} 70-74 (setup_dynamo_admin_clients), 77-110 (discover_dynamo_workers)",
        f"{_CLIENT} 209-235 (setup_admin_clients: Bearer unless EMPTY), 485-560 "
        "(init_nccl_broadcast: _rank_offsets, engine_world_size, collective_rpc kwargs, raised)",
    ),
    "73164c322": (
        f"{_DYNAMO} 125-135 (client_headers: Bearer if the key is truthy), 205-231 (clients), "
        "234-280 (from_config: two identical fingerprints), 313-345 (init_nixl_broadcast)",
        f"{_CLIENT} 196-220 (setup_admin_clients: Bearer unless EMPTY)",
    ),
}


def _headers(call: ClientCall, bearer: str) -> dict[str, str]:
    creds = call.credentials
    headers = dict(creds.headers)
    headers.update(
        {
            h: v
            for h, var in creds.headers_from_env.items()
            if (v := os.environ.get(var)) is not None
        }
    )
    key = creds.api_key
    if (bearer == "if-truthy" and key) or (bearer == "unless-empty" and key and key != NO_API_KEY):
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _discover(call: ClientCall, forms: PoolForms) -> list[dict[str, Any]]:
    interval = call.poll_interval or 1.0
    deadline = time.monotonic() + call.timeout
    headers = _headers(call, "if-truthy") if forms.discovery_credentials else {}
    previous: Any = None
    streak = 0
    with httpx.Client(headers=headers, trust_env=forms.discovery_trust_env, timeout=5.0) as http:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                response = http.get(call.discovery_url)
                if 400 <= response.status_code < 500 and response.status_code != 429:
                    raise ValueError(f"discovery answered {response.status_code}")
                workers = _ready(response, call) if response.status_code == 200 else None
                snapshot = None if workers is None else [
                    (w["component"], w["instance_id"], w["world_size"], w["admin_base_url"])
                    for w in workers
                ]  # fmt: skip
                streak = streak + 1 if snapshot is not None and snapshot == previous else 1
                previous = snapshot
                if snapshot is not None and streak >= forms.stable_snapshots:
                    return workers or []
            time.sleep(interval)
    raise TimeoutError("Dynamo workers did not become ready before the discovery timeout")


def _ready(response: httpx.Response, call: ClientCall) -> list[dict[str, Any]] | None:
    """The model's workers sorted by (component, instance_id) when ready (no error, every one with
    an admin URL and a world size, summing to W), else None."""
    workers = [w for w in response.json()["workers"] if w.get("model") in (None, call.model)]
    if not workers or any(w.get("error") or not w.get("admin_base_url") for w in workers):
        return None
    if any(not isinstance(w.get("world_size"), int) for w in workers):
        return None
    if sum(w["world_size"] for w in workers) != call.inference_world_size:
        return None
    return sorted(workers, key=lambda w: (w["component"], w["instance_id"]))


def _init_requests(
    call: ClientCall, forms: PoolForms, workers: list[dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    width, sizes = call.inference_world_size, [w["world_size"] for w in workers]
    if forms.offsets == "even":
        offsets = [i * (width // len(workers)) for i in range(len(workers))]
    else:
        offsets = [sum(sizes[:i]) for i in range(len(workers))]
    session = uuid.uuid4().hex
    out = []
    for offset, size in zip(offsets, sizes, strict=True):
        if forms.init == "rpc-positional":
            args = [call.master_address, call.master_port, offset, width, call.timeout, session]
            out.append(
                ("/collective_rpc", {"method": "init_broadcaster", "args": args, "kwargs": {}})
            )
            continue
        fields: dict[str, Any] = {
            "host": call.master_address,
            "port": call.master_port,
            "rank_offset": offset,
            "inference_world_size": width,
            "timeout": call.timeout,
            "quantize_in_weight_transfer": False,
        }
        if forms.engine_world_size:
            fields["engine_world_size"] = size
        if forms.init == "rpc-kwargs":
            out.append(("/collective_rpc", {"method": "init_broadcaster", "kwargs": fields}))
        else:
            out.append(("/init_broadcaster", fields))
    return out


def _pool(call: ClientCall, forms: PoolForms) -> None:
    workers = _discover(call, forms)
    headers = {} if forms.admin_credentials == "none" else _headers(call, forms.admin_credentials)
    clients = [
        httpx.Client(base_url=w["admin_base_url"], headers=headers, timeout=call.timeout)
        for w in workers
    ]
    try:
        if forms.init != "rpc-positional":  # check_health: a 404 reads as "no health route"
            for client in clients:
                answer = client.get("/health")
                if answer.status_code != 404:
                    answer.raise_for_status()
        for client, (path, body) in zip(clients, _init_requests(call, forms, workers), strict=True):
            if forms.swallows_init_errors:
                with contextlib.suppress(httpx.HTTPStatusError):
                    client.post(path, json=body).raise_for_status()
            else:
                client.post(path, json=body).raise_for_status()
        if forms.init == "rpc-positional":  # NIXL: the path update through collective_rpc
            update = {"method": "update_weights_from_path", "args": [None], "kwargs": {}}
            for client in clients:
                client.post("/collective_rpc", json=update).raise_for_status()
            return
        for client in clients:
            client.post(
                "/pause", params={"mode": "keep", "clear_cache": "false"}
            ).raise_for_status()
        try:
            for client in clients:
                client.post("/update_weights", json={"weight_dir": None}).raise_for_status()
        finally:
            for client in clients:
                client.post("/resume").raise_for_status()
    finally:
        for client in clients:
            client.close()


g828ddc7da = contract_client(lambda call: _pool(call, GENERATIONS["828ddc7da"]))
ge9d3f8791 = contract_client(lambda call: _pool(call, GENERATIONS["e9d3f8791"]))
g73164c322 = contract_client(lambda call: _pool(call, GENERATIONS["73164c322"]))
