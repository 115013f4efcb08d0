"""The client half of the kill matrix: every client check has a zoo client that fails it, for the
reason it gives, and no other requirement on the same runs; the faithful clients pass everything.

Each counterpart runs narrowed (``checks=``) to its check and the checks judging the same runs
(``conformance.client.related_checks``), so the whole matrix stays a few minutes of CI.
"""

from __future__ import annotations

from typing import Any

import pytest

import conformance
from conformance.client import CLIENT_CHECKS, related_checks
from conformance.client_scenarios import SCENARIOS
from conformance.examples import lifecycle_zoo
from conformance.examples.spec_client import ZOO
from conformance.examples.zoo import BY_NAME, COUNTERPARTS, REASONS
from conformance.kill_matrix import NOT_OBSERVABLE
from conformance.registry import all_checks
from conformance.results import Status

pytestmark = pytest.mark.integration

RUN: dict[str, Any] = {
    "profiles": ["client"],
    "topologies": 1,
    "client_timeout": 20.0,
    "client_poll_interval": 0.1,  # the zoo follows CONFORMANCE_POLL_INTERVAL
    "target": "reference",  # the real Dynamo runs are judged in test_conformance_client.py
}
#: Client checks that can never fail: a documented skip (not observable from outside).
NEVER_JUDGED = set(NOT_OBSERVABLE)


def _not_passing(report: conformance.Report) -> set[str]:
    return {r.requirement for r in report.results if r.status in (Status.FAIL, Status.WARN)}


def _no_errors(report: conformance.Report) -> None:
    errors = [f"{r.check}: {r.message}" for r in report.results if r.status is Status.ERROR]
    assert errors == []


def test_every_client_check_has_a_counterpart_and_every_bug_is_one() -> None:
    checks = {c.id for c in all_checks(["client"])}
    killed = {cp.check for cp in COUNTERPARTS}
    assert checks - NEVER_JUDGED - killed == set(), "client checks without a counterpart"
    assert killed <= checks, "counterparts of checks that do not exist"
    assert set(CLIENT_CHECKS) == checks  # every check says which runs it judges
    runs = {"rank", "refusal", "baseline", "dynamo"} | {s.id for s in SCENARIOS}
    for c in CLIENT_CHECKS.values():  # ... and names only runs the set-up can make
        assert set(c.needs) <= runs, c
        assert c.needs or c.id in NEVER_JUDGED, c
    # every zoo bug (and each lifecycle deviation of Prime-RL's start-up) is in the matrix
    assert {cp.name for cp in COUNTERPARTS} == set(BY_NAME) | set(lifecycle_zoo.BY_NAME)
    for cp in COUNTERPARTS:
        assert cp.check.split("::")[0] in cp.fails, cp
        broken = (
            lifecycle_zoo.BY_NAME[cp.name][1]
            if cp.name in lifecycle_zoo.BY_NAME
            else ZOO[BY_NAME[cp.name]][0]
        )
        assert broken in cp.fails, cp


@pytest.mark.parametrize("counterpart", COUNTERPARTS, ids=[cp.name for cp in COUNTERPARTS])
def test_each_counterpart_fails_its_check_for_its_reason_and_nothing_else(
    counterpart: Any,
) -> None:
    checks = related_checks(counterpart.check)
    report = conformance.run(
        client=f"conformance.examples.zoo:{counterpart.name}", checks=tuple(checks), seed=3, **RUN
    )
    _no_errors(report)
    judged = {c.split("::")[0] for c in checks}
    assert _not_passing(report) == set(counterpart.fails) & judged
    result = next(r for r in report.results if r.check == counterpart.check)
    assert result.status in (Status.FAIL, Status.WARN)
    assert REASONS[counterpart.name] in result.details["reasons"], result.message


@pytest.mark.parametrize("seed", [101, 202])
@pytest.mark.parametrize("name", ["even_split", "drops_credentials"])
def test_the_even_split_and_dropped_credentials_fail_on_every_seed(name: str, seed: int) -> None:
    want = {"even_split": "RANK-6", "drops_credentials": "CRED-2"}[name]
    checks = ("RANK-6::ranks-cover-once", "CRED-2::credentials-sent")
    report = conformance.run(
        client=f"conformance.examples.zoo:{name}", seed=seed, checks=checks, **RUN
    )
    assert want in report.failed_requirements()


@pytest.mark.parametrize(
    "client", ["conformance.examples.spec_client:run", "conformance.examples.project_client:run"]
)
def test_the_faithful_clients_pass_everything(client: str) -> None:
    report = conformance.run(client=client, seed=5, **RUN)
    _no_errors(report)
    assert _not_passing(report) == set()
    assert {r.requirement for r in report.results if r.status is Status.SKIP} == {"RANK-7"}
