"""Prime-RL main's two admin planes (after August 2026), their call order and call forms as data,
behind the suite's calling contract: what the client profile judges them on.

Facts (no code) from Prime-RL's repository, read through the search tool's index (repo
PrimeIntellect-ai/prime-rl): ``src/prime_rl/orchestrator/clients.py`` (``AdminPlane``, index commit
009c030360dc, id 68664415418: ``initialize_nccl``, ``setup_admin_clients``), ``src/prime_rl/inference/dynamo.py`` (``DynamoAdminPlane``, PR #3491, squash
``dad79d1ce``), ``packages/prime-rl-configs/src/prime_rl/configs/shared.py``; the worker side is in
conformance/prime_rl_engines.py.

* ``static_admin_plane`` (``AdminPlane``): one HTTP client per configured ``admin_base_url`` (the
  operator's static list: here the model's listed engines, read once), credentials on every one
  (headers, headers from the environment, ``Bearer`` unless the key is ``EMPTY``), httpx's default
  ``trust_env`` (it follows the proxy environment); ``wait_for_ready`` is modelled with
  ``skip_model_check`` (the engines' ``/health`` answers 404 here, which it reads as "no health
  route"); ``initialize_nccl`` posts ``/init_broadcaster`` with the even split ``i * (W // n)`` and
  swallows every error status (a 404 with a warning; transport errors propagate); one update is
  pause -> ``/update_weights {"weight_dir", "version_uid"}`` -> resume.
* ``dynamo_admin_plane`` (``DynamoAdminPlane``): polls ``/v1/rl/workers`` (``trust_env=False``) at a
  fixed interval (4xx fatal, 5xx and transport retried) until two identical snapshots; exactly one
  matching worker of world size 1 with a bare-origin ``admin_base_url`` on the discovery host, else
  ``ValueError``; ``initialize_nccl`` refuses W != 1, then ``/collective_rpc``
  ``{"method": "init_broadcaster", "args": [host, port, 0, 1, timeout, "default"]}``.

Each polls at ``CONFORMANCE_POLL_INTERVAL`` in place of its fixed second, so the truth table runs at
the suite's fast pace (the pace changes no verdict: tests/test_conformance_pace.py).
"""

from __future__ import annotations

import contextlib
import importlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from conformance.examples._contract import ClientCall, contract_client
from prime_rl_dynamo.defaults import NO_API_KEY

__all__ = [
    "DYNAMO_ADMIN_PLANE",
    "STATIC_ADMIN_PLANE",
    "AdminPlaneForms",
    "dynamo_admin_plane",
    "static_admin_plane",
]


@dataclass(frozen=True)
class AdminPlaneForms:
    """One admin plane's call order and call forms."""

    discovery: str  # "static" (the operator's list, no readiness) or "two-identical-single-engine"
    offsets: str  # "even": i * (W // n)
    init: str  # "POST /init_broadcaster" or "collective_rpc positional"
    init_fields: tuple[str, ...]  # the body's fields, or the positional args in order
    swallows_init_errors: bool  # every non-404 error of the init is ignored
    trust_env: bool  # the admin clients follow the proxy environment
    update: tuple[str, ...]  # the update's calls, in order


STATIC_ADMIN_PLANE = AdminPlaneForms(
    discovery="static",
    offsets="even",
    init="POST /init_broadcaster",
    init_fields=("host", "port", "rank_offset", "inference_world_size", "timeout",
                 "quantize_in_weight_transfer"),
    swallows_init_errors=True,
    trust_env=True,
    update=("POST /pause", "POST /update_weights", "POST /resume"),
)  # fmt: skip
DYNAMO_ADMIN_PLANE = AdminPlaneForms(
    discovery="two-identical-single-engine",
    offsets="even",  # one engine: offset 0
    init="collective_rpc positional",
    init_fields=("host", "port", "0", "1", "timeout", '"default"'),
    swallows_init_errors=False,
    trust_env=False,
    update=("POST /pause?mode=keep&clear_cache=false", "collective_rpc update_weights_from_path",
            "POST /resume"),
)  # fmt: skip


def _headers(call: ClientCall) -> dict[str, str]:
    import os

    creds = call.credentials
    headers = dict(creds.headers)
    headers.update({h: os.environ.get(var, "") for h, var in creds.headers_from_env.items()})
    if creds.api_key and creds.api_key != NO_API_KEY:
        headers["Authorization"] = f"Bearer {creds.api_key}"
    return headers


def _static(call: ClientCall) -> None:
    # The operator's static list: the model's engines as listed (read once, outside Prime-RL).
    listing = httpx.get(call.discovery_url, trust_env=False, timeout=5.0)
    listing.raise_for_status()
    urls = [
        w["admin_base_url"]
        for w in listing.json()["workers"]
        if w.get("admin_base_url") and w.get("model") in (None, call.model)
    ]
    forms, width = STATIC_ADMIN_PLANE, call.inference_world_size
    clients = [
        httpx.Client(
            base_url=u, headers=_headers(call), timeout=call.timeout, trust_env=forms.trust_env
        )
        for u in urls
    ]
    try:
        share = width // max(1, len(clients))
        for i, client in enumerate(clients):
            body = {
                "host": call.master_address,
                "port": call.master_port,
                "rank_offset": i * share,
                "inference_world_size": width,
                "timeout": call.timeout,
                "quantize_in_weight_transfer": False,
            }
            # Every error status swallowed (a 404 with a warning), as initialize_nccl does.
            with contextlib.suppress(httpx.HTTPStatusError):
                client.post("/init_broadcaster", json=body).raise_for_status()
        for client in clients:
            client.post("/pause").raise_for_status()
        version = uuid.uuid4().hex
        for client in clients:
            client.post("/update_weights", json={"weight_dir": None, "version_uid": version})
        for client in clients:
            client.post("/resume").raise_for_status()
    finally:
        for client in clients:
            client.close()


def _single_engine(call: ClientCall) -> list[dict[str, Any]]:
    interval = call.poll_interval or 1.0
    deadline = time.monotonic() + call.timeout
    previous: Any = None
    with httpx.Client(trust_env=False, timeout=min(call.timeout, 10.0)) as http:
        while time.monotonic() < deadline:
            try:
                response = http.get(call.discovery_url)
            except httpx.TransportError:
                response = None
            if response is not None and 400 <= response.status_code < 500:
                raise ValueError(f"discovery answered {response.status_code}")
            if response is not None and response.status_code == 200:
                workers = [w for w in response.json()["workers"] if w.get("model") == call.model]
                if len(workers) != 1 or workers[0].get("world_size") != 1:
                    raise ValueError("Dynamo discovery needs exactly one worker of world size 1")
                ready = "error" not in workers[0] and workers[0].get("admin_base_url")
                snapshot = (workers[0].get("instance_id"), workers[0].get("admin_base_url"))
                if ready and snapshot == previous:
                    return workers
                previous = snapshot if ready else None
            time.sleep(interval)
    raise TimeoutError("Dynamo discovery did not become ready")


def _dynamo(call: ClientCall) -> None:
    workers = _single_engine(call)
    if call.inference_world_size != 1:
        raise ValueError("DynamoAdminPlane supports inference_world_size == 1 only")
    admin = workers[0]["admin_base_url"]
    args = [call.master_address, call.master_port, 0, 1, call.timeout, "default"]
    with httpx.Client(base_url=admin, timeout=call.timeout, trust_env=False) as http:
        rpc = {"method": "init_broadcaster", "args": args, "kwargs": {}}
        reply = http.post("/collective_rpc", json=rpc)
        reply.raise_for_status()
        http.post("/pause", params={"mode": "keep", "clear_cache": "false"}).raise_for_status()
        update = {"method": "update_weights_from_path", "args": [None], "kwargs": {}}
        http.post("/collective_rpc", json=update).raise_for_status()
        http.post("/resume").raise_for_status()


static_admin_plane = contract_client(_static)
dynamo_admin_plane = contract_client(_dynamo)


# --- the real code, from a Prime-RL checkout (PRIME_RL_CHECKOUT) ---------------------------------

#: The environment variable naming a Prime-RL checkout whose own admin planes are judged.
CHECKOUT_ENV = "PRIME_RL_CHECKOUT"
_KEY_VAR = "PRIME_RL_MAIN_EXAMPLE_API_KEY"
_REAL_MODULES = (
    "prime_rl.configs.shared",
    "prime_rl.orchestrator.clients",
    "prime_rl.inference.dynamo",
)


def _real(module: str, name: str) -> Any:
    """``name`` of the checkout's ``module``."""
    return getattr(importlib.import_module(module), name)


#: Where a checkout keeps the packages the real planes import (the caller puts them on the path).
CHECKOUT_PATHS = ("src", "packages/prime-rl-configs/src")


def real_code_unavailable() -> str | None:
    """Why the real planes cannot run here (None: they can): no checkout, or its modules do not
    import (its ``CHECKOUT_PATHS`` not on the path, or its dependencies not installed)."""
    import os

    root = os.environ.get(CHECKOUT_ENV)
    if not root:
        return f"{CHECKOUT_ENV} is not set"
    try:
        for module in _REAL_MODULES:
            importlib.import_module(module)
    except Exception as exc:  # a checkout without its dependencies installed
        return f"Prime-RL at {root} does not import: {type(exc).__name__}: {exc}"
    return None


def _real_config(call: ClientCall, **fields: Any) -> Any:
    import os

    client_config = _real("prime_rl.configs.shared", "ClientConfig")
    creds = call.credentials
    if creds.api_key is not None:
        os.environ[_KEY_VAR] = creds.api_key
    return client_config(
        api_key_var=_KEY_VAR,
        headers=dict(creds.headers),
        headers_from_env=dict(creds.headers_from_env),
        skip_model_check=True,
        wait_for_ready_timeout=max(1, int(call.timeout)),
        **fields,
    )


async def _drive(plane: Any, call: ClientCall) -> None:
    try:
        await plane.wait_for_ready(call.model)
        await plane.initialize_nccl(
            host=call.master_address,
            port=call.master_port,
            timeout=max(1, int(call.timeout)),
            inference_world_size=call.inference_world_size,
        )
        await plane.update_weights(None, transport="nccl", version_uid=uuid.uuid4().hex)
    finally:
        await plane.aclose()


def _real_static(call: ClientCall) -> None:
    import asyncio

    admin_plane = _real("prime_rl.orchestrator.clients", "AdminPlane")
    listing = httpx.get(call.discovery_url, trust_env=False, timeout=5.0).json()
    urls = [
        w["admin_base_url"]
        for w in listing["workers"]
        if w.get("admin_base_url") and w.get("model") in (None, call.model)
    ]
    config = _real_config(call, base_url=urls[0], admin_base_url=urls)
    asyncio.run(_drive(admin_plane(config), call))


def _real_dynamo(call: ClientCall) -> None:
    import asyncio

    dynamo_config = _real("prime_rl.configs.shared", "DynamoConfig")
    dynamo_admin_plane = _real("prime_rl.inference.dynamo", "DynamoAdminPlane")

    base = str(httpx.URL(call.discovery_url).copy_with(path="/v1", query=None))
    config = _real_config(
        call, base_url=base, dynamo=dynamo_config(discovery_url=call.discovery_url)
    )
    asyncio.run(_drive(dynamo_admin_plane(config, call.model), call))


real_static_admin_plane = contract_client(_real_static)
real_dynamo_admin_plane = contract_client(_real_dynamo)
