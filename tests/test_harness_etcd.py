"""The real Dynamo 1.6.1 frontend and stub workers with the etcd discovery backend.

A throw-away etcd on loopback; ``ETCD_LEASE_TTL=5`` keeps a killed worker's lease short (its
default keeps a dead instance listed for 20-25 s) so that the scenario stays quick.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.topology import topology_from_dict
from tests._harness_support import (
    discover,
    etcd_available,
    expected_offsets,
    fetch_snapshot,
    listening_sockets,
    pending_until_restarted,
    plan_rows,
    require_dynamo,
)

require_dynamo()

from prime_rl_dynamo.suite.harness import DynamoFleet, start_dynamo_fleet  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.dynamo,
    pytest.mark.etcd,
    pytest.mark.skipif(not etcd_available(), reason="needs etcd (Debian package etcd-server)"),
]

TOPOLOGY = {
    "engines": [
        {"component": "prefill", "count": 2, "world_size": 2},
        {"component": "decode", "count": 1, "tp": 4},
    ],
}
W = 8


@pytest.fixture(scope="module")
def fleet() -> Iterator[DynamoFleet]:
    topology = topology_from_dict(TOPOLOGY)
    with start_dynamo_fleet(topology, discovery="etcd", env={"ETCD_LEASE_TTL": "5"}) as running:
        running.wait_ready(3, timeout=60)
        yield running


def test_etcd_store_is_real_and_private(fleet: DynamoFleet) -> None:
    assert fleet.etcd is not None
    health = httpx.get(f"{fleet.etcd.url}/health", timeout=5)
    assert health.json()["health"] == "true"
    assert fleet.etcd.url.startswith("http://127.0.0.1:")
    assert all(p.alive() for p in fleet.processes)


def test_every_socket_of_the_fleet_is_on_loopback(fleet: DynamoFleet) -> None:
    sockets = listening_sockets(p.pid for p in fleet.processes)
    listeners = {pid for _, _, pid in sockets}
    # etcd, the frontend (HTTP, RL listener, ...) and every stub (request plane, system, admin).
    assert listeners == {p.pid for p in fleet.processes}
    assert len(sockets) >= 2 + 3 + 3 * 3
    assert [s for s in sockets if s[0] != "127.0.0.1"] == []
    ports = {port for _, port, _ in sockets}
    assert fleet.rl_port in ports and fleet.http_port in ports
    assert fleet.etcd is not None and fleet.etcd.client_port in ports


def test_client_discovers_and_plans_over_etcd(fleet: DynamoFleet) -> None:
    _, snapshot = fetch_snapshot(fleet)
    assert sorted((w.component, w.world_size) for w in snapshot.workers) == [
        ("decode", 4),
        ("prefill", 2),
        ("prefill", 2),
    ]
    discovery = discover(fleet, W, timeout=30)
    assert plan_rows(discovery, Convention.PRIME_NCCL) == expected_offsets(
        fleet.engines, Convention.PRIME_NCCL
    )


def test_kill_pending_restart_ready_over_etcd(fleet: DynamoFleet) -> None:
    victim = fleet.engine("dynamo.decode#0")
    assert fleet.kill(victim.key) == [victim.key]
    pending_until_restarted(fleet, victim, W)


def test_add_resize_remove_over_etcd(fleet: DynamoFleet) -> None:
    fleet.wait_settled(timeout=45)
    (added,) = fleet.add("encode", world_size=3)
    assert added.key == "dynamo.encode#0"
    resized = fleet.resize("dynamo.prefill#0", 1)
    fleet.remove("dynamo.prefill#1")
    listing = fleet.wait_settled(timeout=45)
    assert sorted((w["component"], w.get("world_size")) for w in listing["workers"]) == [
        ("decode", 4),
        ("encode", 3),
        ("prefill", 1),
    ]
    world = 4 + 3 + 1
    discovery = discover(fleet, world, timeout=30)
    assert resized.label in [w.label for w in discovery.workers]
    assert plan_rows(discovery, Convention.PRIME_NCCL) == expected_offsets(
        fleet.engines, Convention.PRIME_NCCL
    )
