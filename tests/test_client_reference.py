"""The client and admin pool against the reference fleet (real HTTP on loopback, recorded requests).

What Prime-RL does end to end: discover -> plan -> AdminPool(init_broadcast, update_weights) ->
verify_topology, with credentials, faults on the RL listener, and a fleet that changes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from prime_rl_dynamo.admin import AdminPool, Credentials
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.errors import (
    ConfigError,
    DialectError,
    PolicyError,
    ProtocolError,
    TopologyChangedError,
)
from prime_rl_dynamo.suite.reference import start_reference_fleet
from prime_rl_dynamo.suite.reference.fleet import ReferenceFleet
from prime_rl_dynamo.topology import default_topology, topology_from_dict
from prime_rl_dynamo.wire import WorkerId

pytestmark = pytest.mark.integration

MODEL = default_topology().model
SECRET = "sk-ref-42"
ENV = {"VLLM_API_KEY": SECRET, "TEAM_TOKEN": "team-ref"}
FAST = PollingPolicy(poll_interval=0.02, backoff_initial=0.01, backoff_max=0.05, timeout=20.0)


@pytest.fixture
def fleet() -> Iterator[ReferenceFleet]:
    with start_reference_fleet() as f:
        yield f


def label_of(engine: Any) -> str:
    return str(WorkerId.of(engine.spec))


def client_for(
    fleet: ReferenceFleet, policy: ReadinessPolicy | None = None, **kw: Any
) -> DiscoveryClient:
    """A client of the reference fleet: W = 16 and its model unless ``policy`` says otherwise."""
    return DiscoveryClient(
        fleet.frontend_url, policy or ReadinessPolicy(16, model=MODEL), FAST, **kw
    )


def test_prime_rl_flow_end_to_end(fleet: ReferenceFleet) -> None:
    creds = Credentials.from_env(
        headers={"X-Static": "s"}, headers_from_env={"X-Team": "TEAM_TOKEN"}, environ=ENV
    )

    async def go() -> Any:
        async with client_for(fleet) as client:
            ready = await client.wait_ready()
            plan = ready.plan("prime-nccl")
            async with AdminPool.from_plan(
                plan, discovery=client, credentials=creds, environ=ENV
            ) as pool:
                await pool.health()
                await pool.init_broadcast(host="10.1.1.1", port=29501, timeout=30)
                await pool.update_weights("/ckpt/step-1")
            return plan

    plan = asyncio.run(go())
    assert plan.inference_world_size == 16 and plan.group_world_size == 17
    by_label = {label_of(e): e for e in fleet.engines}
    assert sorted(by_label) == sorted(e.label for e in plan.engines)
    for engine in plan.engines:
        key = by_label[engine.label].spec.key
        inits = fleet.recorder.requests(engine=key, server="admin", path="/init_broadcaster")
        assert len(inits) == 1
        assert inits[0].json["rank_offset"] == engine.rank_offset
        assert inits[0].json["engine_world_size"] == engine.world_size
        assert inits[0].json["inference_world_size"] == 16
        # Every admin call carries the configured credentials (CRED-2).
        admin_calls = fleet.recorder.requests(engine=key, server="admin")
        assert [r.path for r in admin_calls] == [
            "/health",
            "/init_broadcaster",
            "/pause",
            "/update_weights",
            "/resume",
        ]
        for call in admin_calls:
            assert call.headers["authorization"] == f"Bearer {SECRET}"
            assert call.headers["x-team"] == "team-ref" and call.headers["x-static"] == "s"
    assert sorted(e.rank_offset for e in plan.engines) == [0, 4, 8, 10, 12, 14]
    assert all(not e.paused for e in fleet.engines)


def test_native_nccl_init_reaches_collective_rpc(fleet: ReferenceFleet) -> None:
    async def go() -> Any:
        async with client_for(fleet) as client:
            plan = (await client.wait_ready()).plan("vllm-native-nccl")
            async with AdminPool.from_plan(plan, environ={}) as pool:
                await pool.init_broadcast(host="h", port=1, timeout=5)
            return plan

    plan = asyncio.run(go())
    by_label = {label_of(e): e for e in fleet.engines}
    for engine in plan.engines:
        ref = by_label[engine.label]
        assert ref.broadcaster["init_info"]["rank_offset"] == engine.rank_offset
        assert ref.broadcaster["init_info"]["world_size"] == 17
    assert sorted(e.rank_offset for e in plan.engines) == [1, 5, 9, 11, 13, 15]


def test_verify_topology_sees_resize_and_kill(fleet: ReferenceFleet) -> None:
    decode = next(e for e in fleet.engines if e.spec.component == "decode")
    prefill = next(e for e in fleet.engines if e.spec.component == "prefill")

    async def go() -> tuple[TopologyChangedError, TopologyChangedError]:
        async with client_for(fleet) as client:
            plan = (await client.wait_ready()).plan()
            async with AdminPool.from_plan(plan, discovery=client, environ={}) as pool:
                await pool.verify_topology()
                fleet.resize(decode.spec.key, 2)
                with pytest.raises(TopologyChangedError) as resized:
                    await pool.verify_topology()
                fleet.resize(decode.spec.key, 4)
                fleet.kill(prefill.spec.key)
                with pytest.raises(TopologyChangedError) as killed:
                    await pool.update_weights("/w")
                return resized.value, killed.value

    resized, killed = asyncio.run(go())
    assert resized.diff.lines() == [f"resized: {label_of(decode)}: world_size 4 -> 2"]
    assert not resized.diff.added and not resized.diff.removed
    assert [str(c.worker) for c in killed.diff.removed] == [label_of(prefill)]
    gone = killed.diff.removed[0].after
    assert gone is not None and gone.error is not None  # it now reports an error
    assert "now reports error" in str(killed.diff)
    assert fleet.recorder.requests(server="admin", path="/pause") == []


def _frontend_requests(fleet: ReferenceFleet, expected: int, within: float = 2.0) -> int:
    """How many listing requests the fleet recorded, waiting (bounded) until ``expected``."""
    deadline = time.monotonic() + within
    while True:
        count = len(fleet.recorder.requests(server="frontend"))
        if count >= expected or time.monotonic() > deadline:
            return count
        time.sleep(0.01)


@pytest.mark.parametrize(
    ("fault", "failures"),
    [
        ("discovery-failed:2", 2),
        ("rate-limit=0:1", 1),
        ("unavailable:1", 1),
        ("reset:1", 1),
        ("truncate:1", 1),
        ("latency=50:1", 0),
        ("error-workers=1:2", 2),
    ],
)
def test_recovers_from_listener_faults(fault: str, failures: int) -> None:
    """Each retryable fault (or pending snapshot) costs exactly one poll; then two identical polls."""
    with start_reference_fleet(faults=[fault, "gzip"], seed=3) as fleet:

        async def go() -> Any:
            async with client_for(fleet) as client:
                return await client.wait_ready()

        ready = asyncio.run(go())
        assert ready.world_size_sum == 16
        assert ready.polls == failures + 2
        # A request is recorded once its answer is sent, which may be after the client has it.
        assert _frontend_requests(fleet, failures + 2) == failures + 2


@pytest.mark.parametrize(
    ("fault", "error", "needle"),
    [
        ("malformed-json", ProtocolError, "BODY-1"),
        ("break=LIST-2", ProtocolError, "LIST-2"),
        ("break=BODY-2", ProtocolError, "BODY-2"),
        ("break=DIALECT-1", DialectError, "DIALECT-1"),
    ],
)
def test_fatal_listener_faults_are_not_retried(
    fault: str, error: type[Exception], needle: str
) -> None:
    with start_reference_fleet(faults=[fault]) as fleet:

        async def go() -> None:
            async with client_for(fleet) as client:
                await client.wait_ready()

        with pytest.raises(error) as info:
            asyncio.run(go())
        assert needle in str(info.value) or needle in getattr(info.value, "requirements", [])
        assert len(fleet.recorder.requests(server="frontend")) == 1


def test_oversized_listing_is_refused() -> None:
    with start_reference_fleet(faults=["oversized=200000"]) as fleet:

        async def go() -> None:
            async with client_for(fleet, max_body_bytes=100_000) as client:
                await client.wait_ready()

        with pytest.raises(PolicyError) as info:
            asyncio.run(go())
        assert info.value.requirement == "POLL-3"


def test_allow_list_keeps_credentials_from_other_hosts() -> None:
    # The decode engine's URLs name localhost, which the allow-list (an address range) never matches.
    engines = [
        {"component": "prefill", "count": 2, "world_size": 2},
        {"component": "decode", "count": 1, "world_size": 4, "admin_host": "localhost"},
    ]
    topo = topology_from_dict({"model": "m", "engines": engines})
    creds = Credentials.from_env(allowed_hosts=["127.0.0.1/32"], environ=ENV)
    with start_reference_fleet(topo) as fleet:

        async def go() -> None:
            async with client_for(fleet, ReadinessPolicy(8, model="m")) as client:
                plan = (await client.wait_ready()).plan()
            with pytest.raises(ConfigError) as info:
                AdminPool.from_plan(plan, credentials=creds, environ=ENV)
            assert info.value.requirement == "CRED-3"
            assert "decode" in str(info.value) and "prefill" not in str(info.value)
            async with AdminPool.from_plan(
                plan, credentials=creds, disallowed="anonymous", environ=ENV
            ) as pool:
                await pool.init_broadcast(host="h", port=1, timeout=5)

        asyncio.run(go())
        calls = fleet.recorder.requests(server="admin", path="/init_broadcaster")
        assert len(calls) == 3
        for call in calls:
            if "decode" in call.engine:
                assert call.host == "localhost"
                assert "authorization" not in call.headers
                assert all(SECRET not in v for v in call.headers.values())
            else:
                assert call.headers["authorization"] == f"Bearer {SECRET}"
