"""A check's verdict does not depend on which other checks ran: each body check judges the first
GET, the repeated polls and the load whether or not HTTP-6 and HTTP-7 ran, so ``--requirement X``
alone gives X the status it has in a full run, also when only a later poll breaks X."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import conformance
from conformance.frontend import BODY_REQUIREMENTS
from conformance.results import Report
from prime_rl_dynamo.suite.reference import BREAKS, start_reference_fleet
from prime_rl_dynamo.suite.reference.faults import Fault

pytestmark = pytest.mark.integration

SMALL = {"profiles": ["frontend"], "load_clients": 2, "load_requests": 2, "polls": 2, "seed": 3}
#: Every requirement whose checks judge listing bodies (the known-variant checks are VERSION-1).
JUDGING = (*BODY_REQUIREMENTS, "VERSION-1", "HTTP-6", "HTTP-7")


class AfterTheFirstRequest(Fault):
    """A fault the first listing request does not see: only a later poll exposes it."""

    def active(self, request_number: int) -> bool:
        return request_number > 1


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet() as running:
        yield running


def _statuses(report: Report, requirement: str) -> dict[str, str]:
    return {r.check: r.status.value for r in report.results if r.requirement == requirement}


def _run(fleet: Any, faults: list[Fault], **options: Any) -> Report:
    fleet.set_faults(faults)  # restarts the request count: the first GET is request 1
    return conformance.run(url=fleet.frontend_url, **SMALL, **options)


def test_each_requirement_alone_has_its_full_run_status_on_a_clean_fleet(fleet: Any) -> None:
    full = _run(fleet, [])
    for requirement in JUDGING:
        alone = _run(fleet, [], requirements=(requirement,))
        assert _statuses(alone, requirement) == _statuses(full, requirement), requirement
        assert set(_statuses(alone, requirement).values()) == {"pass"}, requirement


@pytest.mark.parametrize("requirement", sorted(set(BODY_REQUIREMENTS) & set(BREAKS)))
def test_a_break_only_a_later_poll_shows_fails_the_requirement_alone_too(
    fleet: Any, requirement: str
) -> None:
    later = [AfterTheFirstRequest("break", requirement)]
    full = _run(fleet, later)
    alone = _run(fleet, later, requirements=(requirement,))
    (body,) = (r for r in full.results if r.check == f"{requirement}::body")
    assert body.status.value == "fail", body.message
    sources = {v["source"] for v in body.violations}
    assert sources and "first GET" not in sources, sources  # a later poll showed it
    assert _statuses(alone, requirement) == _statuses(full, requirement)
    # The first GET itself is clean: what the first GET alone decides passes.
    first_get = _run(fleet, later, requirements=("HTTP-1", "DIALECT-1"), checks=())
    assert {r.status.value for r in first_get.results if "schemathesis" not in r.check} == {"pass"}
