"""One scenario written against the ``Fleet`` interface runs unchanged on both fleets.

The reference fleet runs it in a thread; the real Dynamo fleet (stub workers on the real runtime)
runs it when the ``dynamo`` extra is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from prime_rl_dynamo.suite.fleet import Fleet
from prime_rl_dynamo.topology import Topology, topology_from_dict
from prime_rl_dynamo.wire import WorkerId

pytestmark = pytest.mark.integration  # every test talks to a server on loopback

pytest.importorskip("starlette", reason="needs the reference extra")

TOPOLOGY = {
    "namespace": "dynamo",
    "model": None,
    "engines": [{"component": "prefill", "world_size": 2}, {"component": "decode"}],
}


def _by_identity(body: dict[str, Any]) -> dict[WorkerId, dict[str, Any]]:
    return {WorkerId.from_entry(w): w for w in body["workers"]}


def _reference(topology: Topology) -> Fleet:
    from prime_rl_dynamo.suite.reference import ReferenceFleet

    return ReferenceFleet(topology)


def _dynamo(topology: Topology) -> Fleet:
    from tests._harness_support import require_dynamo

    require_dynamo()
    from prime_rl_dynamo.suite.harness import DynamoFleet

    return DynamoFleet(topology)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(_reference, id="reference"),
        pytest.param(_dynamo, id="dynamo", marks=[pytest.mark.integration, pytest.mark.dynamo]),
    ],
)
def test_a_fleet_scenario_runs_on_both_fleets(make: Callable[[Topology], Fleet]) -> None:
    with make(topology_from_dict(TOPOLOGY)).start() as fleet:
        body = fleet.wait_ready()
        assert body["namespace"] == fleet.scope
        live = [e for e in fleet.engines if fleet.in_scope(e)]
        listed = _by_identity(body)
        assert set(listed) == {e.identity for e in live}
        assert all(listed[e.identity]["admin_base_url"] == e.admin_base_url for e in live)
        assert [e.label for e in live] == [str(WorkerId(*e.identity)) for e in live]
        assert fleet.inference_world_size == sum(w["world_size"] for w in body["workers"]) == 3
        assert fleet.describe()["inference_world_size"] == 3

        victim = fleet.engine("dynamo.decode#0")
        assert fleet.kill(victim.key) == [victim.key]
        assert not fleet.engine(victim.key).alive and fleet.expected_ready() == 1
        after_kill = fleet.wait_ready()
        assert "error" in _by_identity(after_kill).get(victim.identity, {"error": "forgotten"})

        (back,) = fleet.restart(victim.key)
        assert back.alive and len(fleet.wait_ready(2)["workers"]) >= 2

        resized = fleet.resize(back.key, 3)
        body = fleet.wait_ready(2)
        assert resized.world_size == 3
        assert _by_identity(body)[resized.identity]["world_size"] == 3
        assert fleet.inference_world_size == 5
    assert not fleet.running
