"""Run a trainer's own inference pool through the client profile (the recipe of docs/conformance.md).

A trainer such as Prime-RL does not follow the suite's calling contract; its orchestrator drives
an inference pool: ``wait_for_ready``, then ``init_nccl_broadcast`` or
``init_nixl_broadcast``, then ``update_weights``, then ``stop``. This adapter turns one call of the
contract into exactly that sequence on a pool the trainer's own code builds, so the suite judges
the trainer's discovery, rank math, credentials and admin calls, not a re-implementation.

The trainer team supplies one async factory, named by ``CONFORMANCE_POOL_FACTORY=module:function``
(or passed to :func:`adapter`)::

    async def make_pool(settings: PoolSettings) -> Pool: ...

where the pool has the §8 members used here. For a Prime-RL checkout the factory builds its client
config from ``settings`` (``client.dynamo.discovery_url`` = ``settings.frontend_url``,
``api_key_var`` = ``settings.api_key_var``, ``headers``, ``headers_from_env``, the size cap
``max_body_bytes`` when set) and returns
``await setup_inference_pool(config, model_name=settings.model, ...)``.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from conformance.examples._contract import (
    ClientCall,
    ClientFunction,
    broadcast_then_update,
    command_main,
    contract_client,
)
from prime_rl_dynamo.wire import DISCOVERY_PATH

__all__ = ["API_KEY_VAR", "Pool", "PoolSettings", "adapter", "main"]

#: The environment variable the adapter puts the API key in (trainers read keys from a variable).
API_KEY_VAR = "CONFORMANCE_POOL_API_KEY"


@dataclass(frozen=True)
class PoolSettings:
    """What a trainer's config needs, from one call of the calling contract."""

    frontend_url: str  # the Dynamo frontend URL (the discovery URL minus /v1/rl/workers)
    discovery_url: str
    model: str | None
    inference_world_size: int
    api_key_var: str | None  # None: no API key configured
    headers: dict[str, str] = field(default_factory=dict)
    headers_from_env: dict[str, str] = field(default_factory=dict)
    allowed_hosts: tuple[str, ...] | None = None
    timeout: float = 60.0
    #: The listing size cap the operator configured (POLL-3; None: the pool's own default).
    max_body_bytes: int | None = None


class Pool(Protocol):
    """The members of Prime-RL's inference pool the adapter drives."""

    async def wait_for_ready(self, model_name: str | None, timeout: float | None = None) -> Any:
        """Return when every engine is healthy and serves the model."""

    async def init_nccl_broadcast(
        self, host: str, port: int, timeout: float, inference_world_size: int
    ) -> Any:
        """One NCCL broadcaster init per engine, with its rank offset."""

    async def init_nixl_broadcast(
        self, host: str, port: int, timeout: float, inference_world_size: int, session_id: str
    ) -> Any:
        """One NIXL init per engine, with its rank offset."""

    async def update_weights(self, weight_dir: str, lora_name: str | None = None) -> Any:
        """Pause, update and resume every engine."""

    async def stop(self) -> Any:
        """Close everything."""


PoolFactory = Callable[[PoolSettings], Awaitable[Pool]]


def _settings(call: ClientCall) -> PoolSettings:
    creds = call.credentials
    key_var = None
    if creds.api_key is not None:
        os.environ[API_KEY_VAR] = creds.api_key
        key_var = API_KEY_VAR
    frontend = call.discovery_url
    if frontend.endswith(DISCOVERY_PATH):
        frontend = frontend[: -len(DISCOVERY_PATH)]
    return PoolSettings(
        frontend_url=frontend,
        discovery_url=call.discovery_url,
        model=call.model,
        inference_world_size=call.inference_world_size,
        api_key_var=key_var,
        headers=dict(creds.headers),
        headers_from_env=dict(creds.headers_from_env),
        allowed_hosts=creds.allowed_hosts,
        timeout=call.timeout,
        max_body_bytes=call.max_body_bytes,
    )


async def _drive(factory: PoolFactory, call: ClientCall) -> None:
    if call.convention == "vllm-native-nccl":
        raise RuntimeError(
            "the pool surface has no vLLM-native init; run with "
            "--client-conventions prime-nccl,nixl"
        )
    pool = await factory(_settings(call))
    try:
        await pool.wait_for_ready(call.model, timeout=call.timeout)
        await broadcast_then_update(pool, call)
    finally:
        await pool.stop()


def _load_factory(path: str) -> PoolFactory:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"expected MODULE:FUNCTION for the pool factory, got {path!r}")
    factory: PoolFactory = getattr(importlib.import_module(module_name), attr)
    return factory


def adapter(factory: PoolFactory | str) -> ClientFunction:
    """The contract's callable for a pool built by ``factory`` (or its ``module:function``)."""
    resolved = _load_factory(factory) if isinstance(factory, str) else factory

    def body(call: ClientCall) -> None:
        asyncio.run(_drive(resolved, call))

    body.__module__, body.__doc__ = __name__, "a trainer's inference pool behind the contract"
    return contract_client(body)


def main() -> int:
    """``CONFORMANCE_POOL_FACTORY=mod:fn python -m conformance.examples.pool_adapter``."""
    path = os.environ.get("CONFORMANCE_POOL_FACTORY")
    if not path:
        raise SystemExit("set CONFORMANCE_POOL_FACTORY=module:function (an async pool factory)")
    return command_main(adapter(path))


if __name__ == "__main__":
    raise SystemExit(main())
