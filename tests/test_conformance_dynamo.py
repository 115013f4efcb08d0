"""The suite on real Dynamo 1.6.1 (through the harness): every MUST passes; the listing follows
generated topologies and churn. Skipped when the dynamo extra is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import conformance
from conformance.results import Status
from conformance.runner import dynamo_available

pytestmark = [
    pytest.mark.integration,
    pytest.mark.dynamo,
    pytest.mark.skipif(not dynamo_available(), reason="the dynamo extra is not installed"),
]


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet

    with start_dynamo_fleet() as running:
        running.wait_ready()
        yield running


def test_real_dynamo_listener_and_workers_pass_every_must(fleet: Any) -> None:
    report = conformance.run(
        url=fleet.frontend_url,
        profiles=["frontend", "workers"],
        load_clients=8,
        load_requests=5,
        seed=2,
    )
    broken = [f"{r.check}: {r.message}" for r in report.by_status(Status.FAIL, Status.ERROR)]
    assert broken == []
    by_check = {r.check: r for r in report.results}
    for check in (
        "HTTP-1::schemathesis",
        "HTTP-3::method-not-allowed",
        "LIST-1::body",
        "ENGINE-1::engine-routes",
        "ADMIN-1::admin-health",
    ):
        assert by_check[check].status is Status.PASS, by_check[check].message
    # A SHOULD that Dynamo 1.6.1 misses is a warning, never a failure (finding: text/plain).
    assert by_check["ENGINE-2::engine-content-type"].status in (Status.PASS, Status.WARN)


def test_strict_turns_dynamos_should_misses_into_failures(fleet: Any) -> None:
    report = conformance.run(
        url=fleet.frontend_url, profiles=["workers"], requirements=["ENGINE-2"], strict=True
    )
    result = report.results[0]
    if result.status is Status.PASS:
        pytest.skip("Dynamo now answers engine routes with application/json")
    assert result.status is Status.FAIL and "text/plain" in result.message


@pytest.mark.parametrize("port", ["openai", "system"])
def test_dynamos_other_ports_are_inconclusive_not_a_dynamo_bug(fleet: Any, port: str) -> None:
    # SPEC §14.4: the OpenAI frontend port and a worker's system port serve no /v1/rl/workers.
    url = fleet.http_url if port == "openai" else fleet.engines[0].system_url
    report = conformance.run(url=url, profiles=["frontend"], load_clients=1, load_requests=1)
    assert report.verdict.value == "inconclusive" and report.exit_code == 3
    assert report.inconclusive == (
        f"nothing serves /v1/rl/workers at {url} (HTTP 404): "
        "is this Dynamo's RL listener (`DYN_RL_PORT`)?"
    )
    assert not report.by_status(Status.FAIL)
    named = "OpenAI-compatible" if port == "openai" else "system server"
    assert any(named in note for note in report.target["notes"]), report.target["notes"]


def test_roundtrip_listing_equals_generated_fleets_and_follows_churn() -> None:
    report = conformance.run(profiles=["roundtrip"], topologies=1, seed=2)
    by_check = {r.check: r for r in report.results}
    assert by_check["LIST-7::listing-equals-fleet"].status is Status.PASS, by_check[
        "LIST-7::listing-equals-fleet"
    ].message
    churn = by_check["LIST-8::listing-follows-churn"]
    assert churn.status is Status.PASS, churn.message
    assert "killed" in churn.message and "restarted" in churn.message and "resized" in churn.message
