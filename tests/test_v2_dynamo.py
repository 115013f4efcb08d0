"""Protocol 2 against the real Dynamo 1.6.1 frontend: the client falls back to v1 (and says so
once), the frontend-v2 profile skips saying why, and the listing there is untouched by the ask."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

import conformance
from conformance.results import Status
from prime_rl_dynamo.admin import AdminPool
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.errors import TopologyChangedError
from prime_rl_dynamo.topology import topology_from_dict
from prime_rl_dynamo.v2 import PROTOCOL_HEADER
from tests._harness_support import require_dynamo

require_dynamo()

from prime_rl_dynamo.suite.harness import start_dynamo_fleet  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.dynamo, pytest.mark.slow]

TOPOLOGY = {
    "version": 1,
    "namespace": "dynamo",
    "model": "m",
    "engines": [{"component": "prefill", "count": 2, "world_size": 2}],
}


def test_real_dynamo_keeps_v1_and_the_client_falls_back_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with start_dynamo_fleet(topology_from_dict(TOPOLOGY)) as fleet:
        asked = httpx.get(fleet.discovery_url, headers={PROTOCOL_HEADER: "2, 1"}, timeout=10)
        plain = httpx.get(fleet.discovery_url, timeout=10)
        assert asked.status_code == 200 and PROTOCOL_HEADER.lower() not in asked.headers
        assert asked.json()["protocol_version"] == 1 == plain.json()["protocol_version"]

        async def go() -> int | None:
            async with DiscoveryClient(
                fleet.frontend_url, ReadinessPolicy(4), PollingPolicy(poll_interval=0.2, timeout=60)
            ) as client:
                ready = await client.wait_ready()
                async with AdminPool.from_plan(ready.plan("prime-nccl"), discovery=client) as pool:
                    await pool.verify_topology(wait=5)  # v1: no feed, an immediate check
                    fleet.kill(fleet.engines[0].key)
                    with pytest.raises(TopologyChangedError):
                        for _ in range(50):
                            await pool.verify_topology(wait=5)
                            await asyncio.sleep(0.2)
                return client.protocol_version

        with caplog.at_level(logging.INFO, logger="prime_rl_dynamo.client"):
            assert asyncio.run(go()) == 1
        said = [r for r in caplog.records if "falling back to protocol 1" in r.getMessage()]
        assert len(said) == 1
        report = conformance.run(url=fleet.frontend_url, profiles=["frontend-v2"])
    assert report.results and all(r.status is Status.SKIP for r in report.results)
    assert "does not claim protocol 2" in report.results[0].message
