"""The recipe of docs/conformance.md: a trainer's inference pool through the client profile.

The pool here stands in for Prime-RL's (its pool surface) and is built on this package's
discovery client and admin pool, the way a trainer's factory would build its own; the adapter
(conformance/examples/pool_adapter.py) turns the calling contract into wait_for_ready -> init ->
update_weights -> stop on it, and the profile judges what reached the fleet.
"""

from __future__ import annotations

from typing import Any

import pytest
from _suite_support import not_passing

import conformance
from conformance.examples.pool_adapter import PoolSettings, adapter
from conformance.results import Status
from prime_rl_dynamo.admin import AdminPool, Credentials
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy

pytestmark = pytest.mark.integration


class StandInPool:
    """An inference pool with the members Prime-RL's orchestrator calls."""

    def __init__(self, settings: PoolSettings) -> None:
        self.settings = settings
        self.discovery = DiscoveryClient(
            settings.frontend_url,
            ReadinessPolicy(settings.inference_world_size, model=settings.model),
            PollingPolicy(timeout=settings.timeout, poll_interval=0.1),
            **({"max_body_bytes": settings.max_body_bytes} if settings.max_body_bytes else {}),
        )
        self.admin: AdminPool | None = None

    async def wait_for_ready(self, model_name: str | None, timeout: float | None = None) -> None:
        self._discovery = await self.discovery.wait_ready(timeout=timeout)

    async def _init(self, convention: str, **kwargs: Any) -> None:
        s = self.settings
        creds = Credentials.from_env(
            api_key_var=s.api_key_var,
            headers=s.headers,
            headers_from_env=s.headers_from_env,
            allowed_hosts=s.allowed_hosts,
        )
        self.admin = AdminPool.from_plan(
            self._discovery.plan(convention),
            credentials=creds,
            disallowed="anonymous",
            discovery=self.discovery,
            timeout=s.timeout,
        )
        await self.admin.init_broadcast(**kwargs)

    async def init_nccl_broadcast(
        self, host: str, port: int, timeout: float, inference_world_size: int
    ) -> None:
        await self._init("prime-nccl", host=host, port=port, timeout=timeout)

    async def init_nixl_broadcast(
        self, host: str, port: int, timeout: float, inference_world_size: int, session_id: str
    ) -> None:
        await self._init("nixl", host=host, port=port, timeout=timeout, session_id=session_id)

    async def update_weights(self, weight_dir: str, lora_name: str | None = None) -> None:
        assert self.admin is not None
        await self.admin.update_weights(weight_dir)

    async def stop(self) -> None:
        if self.admin is not None:
            await self.admin.aclose()
        await self.discovery.aclose()


async def make_pool(settings: PoolSettings) -> StandInPool:
    return StandInPool(settings)


run = adapter(make_pool)


def test_a_pool_behind_the_adapter_is_judged_on_every_requirement() -> None:
    report = conformance.run(
        profiles=["client"],
        client=f"{__name__}:run",
        client_conventions=("prime-nccl", "nixl"),
        topologies=1,
        seed=4,
        client_timeout=20.0,
        client_poll_interval=0.1,
        target="reference",
    )
    bad = not_passing(report)
    assert bad == []
    skipped = {r.requirement for r in report.results if r.status is Status.SKIP}
    # RANK-4 and the native lifecycle (NATIVE-1, NATIVE-2) need vllm-native-nccl, not declared here;
    # RANK-7 is not observable from outside.
    assert skipped == {"RANK-4", "RANK-7", "NATIVE-1", "NATIVE-2"}
