"""The client profile: the project's client passes; the original even split fails, naming the
colliding and missing ranks, whether given as a Python callable or as a shell command."""

from __future__ import annotations

import sys

import pytest

import conformance
from conformance.results import Status

pytestmark = pytest.mark.integration

# The pinned [2, 4, 1] fleet plus two generated ones keeps each run to a few seconds.
RUN = {"profiles": ["client"], "topologies": 2, "seed": 3, "client_timeout": 20.0}


def test_the_projects_client_passes() -> None:
    report = conformance.run(client="conformance.examples.project_client:run", **RUN)
    bad = [
        f"{r.check}: {r.message}"
        for r in report.results
        if r.status not in (Status.PASS, Status.SKIP)
    ]
    assert bad == []
    passed = {r.requirement for r in report.results if r.status is Status.PASS}
    assert {"RANK-2", "RANK-3", "RANK-6", "RANK-8", "CRED-2", "CRED-3"} <= passed
    assert any("project_client" in note for note in report.target["notes"])


def test_even_split_fails_naming_colliding_and_missing_ranks() -> None:
    report = conformance.run(client="conformance.examples.even_split_client:run", **RUN)
    assert not report.ok
    coverage = next(r for r in report.results if r.check == "RANK-6::ranks-cover-once")
    assert coverage.status is Status.FAIL
    # FACTS.md §3: [2, 4, 1] split evenly gives offsets [0, 2, 4]: rank 4 twice, rank 6 by nobody.
    pinned = coverage.message.split("pinned topology [2, 4, 1]", 1)[1].split(
        "generated topology", 1
    )[0]
    assert "rank 4 collides: claimed by dynamo.engine-b.rl#" in pinned
    assert "engine-c" in pinned.split("rank 4 collides", 1)[1].splitlines()[0]
    assert "missing ranks (owned by nobody): 6" in pinned
    offsets = next(r for r in report.results if r.check == "RANK-3::prime-nccl-offsets")
    assert offsets.status is Status.FAIL and "expected rank_offset 6, found 4" in offsets.message
    # Credentials are right in this implementation: only rank requirements fail.
    assert set(report.failed_requirements()) <= {"RANK-2", "RANK-3", "RANK-4", "RANK-5", "RANK-6"}


def test_a_shell_command_client_gets_the_same_verdicts() -> None:
    as_callable = conformance.run(client="conformance.examples.even_split_client:run", **RUN)
    as_command = conformance.run(
        client_cmd=f"{sys.executable} -m conformance.examples.even_split_client", **RUN
    )
    assert as_command.outcomes() == as_callable.outcomes()
    assert "RANK-6" in as_command.failed_requirements()


def test_an_unloadable_client_is_an_error_not_a_failure() -> None:
    report = conformance.run(client="no_such_module:run", **RUN)
    assert {r.status for r in report.results} == {Status.ERROR}
    assert "no_such_module" in report.results[0].message
