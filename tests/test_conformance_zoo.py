"""The zoo: the spec client with exactly one bug each fails exactly that requirement.

The faithful spec client (written from SPEC.md, speaking only the collective_rpc wire forms
trainers use) and the project's own client pass everything; the even split and the dropped
credentials fail RANK-6 and CRED-2 on every seed tried.
"""

from __future__ import annotations

from typing import Any

import pytest

import conformance
from conformance.examples.spec_client import ZOO
from conformance.examples.zoo import BY_NAME
from conformance.results import Status

pytestmark = pytest.mark.integration

RUN: dict[str, Any] = {
    "profiles": ["client"],
    "topologies": 1,
    "client_timeout": 20.0,
    "target": "reference",  # the real Dynamo runs are judged in test_conformance_client.py
}

#: What each bug fails beyond its own requirement: the same bug seen at the plan level, or (for
#: unknown fields) the pinned vllm-native fleet, whose workers list weight_transfer_backend, an
#: extension field the latest Prime-RL generation needs, which that client refuses.
ALSO = {
    "even-split": {"RANK-3", "RANK-4", "RANK-5"},
    "derives-w": {"RANK-2"},
    "rejects-unknown-fields": {"RANK-4", "RANK-6"},
}


def _not_passing(report: conformance.Report) -> set[str]:
    return {r.requirement for r in report.results if r.status in (Status.FAIL, Status.WARN)}


def _no_errors(report: conformance.Report) -> None:
    errors = [f"{r.check}: {r.message}" for r in report.results if r.status is Status.ERROR]
    assert errors == []


@pytest.mark.parametrize("name", list(BY_NAME), ids=list(BY_NAME))
def test_each_zoo_client_fails_exactly_its_requirement(name: str) -> None:
    bug = BY_NAME[name]
    seed = list(BY_NAME).index(name) + 1
    report = conformance.run(client=f"conformance.examples.zoo:{name}", seed=seed, **RUN)
    _no_errors(report)
    assert _not_passing(report) == {ZOO[bug][0], *ALSO.get(bug, set())}


@pytest.mark.parametrize("seed", [101, 202])
@pytest.mark.parametrize("name", ["even_split", "drops_credentials"])
def test_the_even_split_and_dropped_credentials_fail_on_every_seed(name: str, seed: int) -> None:
    report = conformance.run(client=f"conformance.examples.zoo:{name}", seed=seed, **RUN)
    want = {"even_split": "RANK-6", "drops_credentials": "CRED-2"}[name]
    assert want in report.failed_requirements()


@pytest.mark.parametrize(
    "client", ["conformance.examples.spec_client:run", "conformance.examples.project_client:run"]
)
def test_the_faithful_clients_pass_everything(client: str) -> None:
    report = conformance.run(client=client, seed=5, **RUN)
    _no_errors(report)
    assert _not_passing(report) == set()
    assert {r.requirement for r in report.results if r.status is Status.SKIP} == {"RANK-7"}
