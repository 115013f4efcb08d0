"""Dynamo's Python worker publishes no ``admin_base_url`` (docs/findings.md RE4), reproduced.

A worker process in the real-engine virtualenv runs ai-dynamo 1.6.1's own descriptor code
(``RLRouteRegistry``, ``register_rl_routes``, ``dispatch_stream`` on the ``rl`` endpoint, as
``python -m dynamo.vllm --enable-rl`` does) on the real runtime, and the real frontend lists it:
unprefixed routes, ``system_url`` and ``world_size``, but no ``admin_base_url``, so the package's
discovery never becomes ready against it (READY-2). No vLLM engine runs: this takes seconds.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from prime_rl_dynamo.client import discover_sync
from prime_rl_dynamo.errors import HarnessError, NotReadyError
from prime_rl_dynamo.readiness import PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.suite.harness import DynamoFleet
from prime_rl_dynamo.suite.harness.real import engines_python
from prime_rl_dynamo.suite.harness.real.python_worker import (
    PYTHON_WORKER_ROUTES,
    PythonWorker,
    start_python_worker,
)
from prime_rl_dynamo.topology import Topology

pytestmark = [
    pytest.mark.integration,
    pytest.mark.dynamo,
    pytest.mark.real_engines,
    pytest.mark.timeout(300),
]

WORLD_SIZE = 1


@pytest.fixture(scope="module")
def worker() -> Iterator[tuple[DynamoFleet, PythonWorker]]:
    try:
        python = engines_python()
    except HarnessError as exc:
        pytest.skip(f"needs ai-dynamo 1.6.1's Python worker code: {exc}")
    # The real frontend and nothing else: the only worker it can list is Dynamo's descriptor.
    with DynamoFleet(Topology(groups=(), namespace="pyworker")) as fleet:
        fleet.start()
        started = start_python_worker(fleet, python, component="backend", world_size=WORLD_SIZE)
        try:
            yield fleet, started
        finally:
            started.stop()


def test_the_python_worker_is_listed_without_an_admin_base_url(
    worker: tuple[DynamoFleet, PythonWorker],
) -> None:
    fleet, started = worker
    [listed] = [w for w in fleet.listing()["workers"] if w.get("component") == "backend"]
    assert listed["namespace"] == "pyworker" and listed["endpoint"] == "rl"
    assert "error" not in listed, listed
    assert listed["world_size"] == WORLD_SIZE
    assert listed["system_url"].startswith("http://127.0.0.1:")
    # The routes as the Python worker registers them: no control/ or update/ prefix.
    assert sorted(listed["routes"]) == sorted(PYTHON_WORKER_ROUTES)
    assert not any("/" in route for route in listed["routes"])
    assert "admin_base_url" not in listed, listed
    assert started.listed["instance_id"] == listed["instance_id"]


def test_discovery_never_becomes_ready_against_it(
    worker: tuple[DynamoFleet, PythonWorker],
) -> None:
    fleet, _started = worker
    with pytest.raises(NotReadyError) as caught:
        discover_sync(
            fleet.frontend_url,
            ReadinessPolicy(inference_world_size=WORLD_SIZE),
            PollingPolicy(timeout=3.0, poll_interval=0.2),
        )
    # The last snapshot lacked exactly one thing: the worker's admin URL (its world size is
    # listed and sums to W).
    assert caught.value.requirement == "POLL-5"
    assert [r.requirement for r in caught.value.reasons] == ["READY-2"]
    assert caught.value.last is not None
    assert [w.admin_base_url for w in caught.value.last.workers] == [None]
    assert [w.world_size for w in caught.value.last.workers] == [WORLD_SIZE]
    # The counterpart: a transfer that needs no admin URL is ready against the same listing.
    ready = discover_sync(
        fleet.frontend_url,
        ReadinessPolicy(inference_world_size=WORLD_SIZE, require_admin=False),
        PollingPolicy(timeout=30.0, poll_interval=0.2),
    )
    assert [w.component for w in ready.workers] == ["backend"]
