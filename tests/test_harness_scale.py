"""Scale: 64 engines on the real Dynamo 1.6.1 frontend, listed completely; then a clean stop.

Stub processes host 8 engines each (each engine with its own runtime, instance_id and system
server), so identities stay unique while the machine's 2 cores and memory hold out.
"""

from __future__ import annotations

import socket
import time
from collections import Counter

import pytest

from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.topology import topology_from_dict
from tests._harness_support import discover, fetch_snapshot, pids_alive, require_dynamo

require_dynamo()

from prime_rl_dynamo.suite.harness import start_dynamo_fleet  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.dynamo]

SIZES = {"prefill": 2, "decode": 4, "encode": 1, "draft": 3}  # 16 engines of each


def test_64_engine_fleet_is_listed_completely_and_stops_cleanly() -> None:
    topology = topology_from_dict(
        {"engines": [{"component": c, "count": 16, "world_size": ws} for c, ws in SIZES.items()]}
    )
    began = time.monotonic()
    with start_dynamo_fleet(topology, engines_per_process=8) as fleet:
        fleet.wait_ready(64, timeout=90)
        startup = time.monotonic() - began
        memory = fleet.memory_bytes()
        _, snapshot = fetch_snapshot(fleet)
        identities = Counter(w.identity for w in snapshot.workers)
        assert len(snapshot.workers) == 64
        assert all(n == 1 for n in identities.values())
        assert set(identities) == {e.identity for e in fleet.engines}
        for worker in snapshot.workers:
            assert worker.error is None, worker.label
            assert worker.world_size == SIZES[worker.component]
        assert len({w.admin_base_url for w in snapshot.workers}) == 64
        assert len({w.system_url for w in snapshot.workers}) == 64
        world = 16 * sum(SIZES.values())
        discovery = discover(fleet, world, timeout=60)
        plan = discovery.plan(Convention.PRIME_NCCL)
        assert len(plan.engines) == 64 and plan.inference_world_size == world
        pids = [p.pid for p in fleet.processes]
        rl_port = fleet.rl_port
        workdir = fleet.workdir
    print(
        f"\n64 engines: ready in {startup:.1f} s, {memory / 2**20:.0f} MiB in {len(pids)} processes"
    )
    assert pids_alive(pids) == []
    assert not workdir.exists()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", rl_port)) != 0  # the RL listener is gone
