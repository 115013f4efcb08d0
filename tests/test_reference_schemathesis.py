"""schemathesis against the reference fleet: every OpenAPI document of schema/openapi/.

Runs the same command the docs show (`schemathesis run DOC --url URL --checks all`) as a
subprocess, with a fixed seed; the worker-system and admin runs are capped in examples.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _schemathesis_support import assert_passed, run_schemathesis

from prime_rl_dynamo.suite.reference import ReferenceFleet, start_reference_fleet

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def fleet() -> Iterator[ReferenceFleet]:
    with start_reference_fleet() as running:
        yield running


def test_rl_frontend_document(fleet: ReferenceFleet) -> None:
    assert_passed(run_schemathesis("rl-frontend.openapi.json", fleet.frontend_url))


def test_worker_system_document(fleet: ReferenceFleet) -> None:
    assert_passed(
        run_schemathesis(
            "worker-system.openapi.json", fleet.engines[0].system_url, "--max-examples", "30"
        )
    )


def test_admin_document(fleet: ReferenceFleet) -> None:
    assert_passed(
        run_schemathesis(
            "admin.openapi.json", fleet.engines[0].admin_base_url, "--max-examples", "30"
        )
    )


def test_rl_frontend_v2_document(fleet: ReferenceFleet) -> None:
    # The reference frontend speaks protocol 2 as well: the draft's document holds for it too.
    assert_passed(run_schemathesis("rl-frontend.v2.openapi.json", fleet.frontend_url))
