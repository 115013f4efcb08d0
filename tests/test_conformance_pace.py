"""The client's pace, one root cause per failure, and what counts as a listing request.

* The pace comes from the client (``--client-poll-interval``): a conformant client judged at 0.1 s
  and at 1 s earns the same verdicts.
* A client that never completes the conformant baseline fails RANK-2 alone; every other check is
  "not judged" with that cause (a refusal elsewhere proves nothing). A client that does nothing
  passes nothing.
* Only ``GET /v1/rl/workers`` is a listing request: a client that health-checks the listener's
  port is judged on its polls alone.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest

import conformance
from conformance.client_call import POLL_INTERVAL_ENV
from conformance.client_scenarios import Pace, scenario
from conformance.results import Status

pytestmark = pytest.mark.integration

RUN: dict[str, Any] = {
    "profiles": ["client"],
    "topologies": 1,
    "seed": 6,
    "client_timeout": 20.0,
    "target": "reference",
}
SPEC = "conformance.examples.spec_client:run"


def _verdicts(report: conformance.Report) -> dict[str, str]:
    return {r.check: r.status.value for r in report.results}


def test_every_deadline_and_schedule_derives_from_the_pace() -> None:
    fast, real = Pace(0.1), Pace(1.0, whole_seconds=True)
    healing = scenario("sum-then-ready")
    assert healing.ready_after(fast) == pytest.approx(0.4)
    assert healing.ready_after(real) == pytest.approx(4.0)
    assert [e["at"] for e in healing.fleet(real)["schedule"]] == [4.0]
    assert healing.timeout(fast) == pytest.approx(1.9)
    assert healing.timeout(real) == 8.0  # 1.3 + 2 * 1 + 4 = 7.3, in whole seconds
    assert scenario("forbidden").timeout(real) == 1.0  # one request to refuse, whatever the pace
    assert scenario("backoff").timeout(Pace(1.0)) > 30  # SPEC §10's bound: 30 poll intervals


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_conformant_clients_verdicts_do_not_move_from_a_fast_pace_to_a_real_one() -> None:
    fast = conformance.run(client=SPEC, client_poll_interval=0.1, **RUN)
    real = conformance.run(client=SPEC, client_poll_interval=1.0, client_whole_seconds=True, **RUN)
    assert _verdicts(fast) == _verdicts(real)
    assert not fast.failed_requirements() and not real.failed_requirements()
    assert any("polls every 1 s, timeouts in whole seconds" in n for n in real.target["notes"])


def refuses_everything(discovery_url: str, *args: Any, **kwargs: Any) -> None:
    """A client that reads the listing once and refuses whatever it finds (as Prime-RL main's
    DynamoAdminPlane does with any fleet but one engine of world size 1)."""
    httpx.get(discovery_url, trust_env=False, timeout=5.0)
    raise ValueError("expected exactly one worker of world size 1")


def does_nothing(*args: Any, **kwargs: Any) -> None:
    """A client that returns at once, having sent nothing."""


@pytest.mark.parametrize("client", ["refuses_everything", "does_nothing"])
def test_a_client_without_a_completed_baseline_fails_one_check_and_nothing_passes(
    client: str,
) -> None:
    report = conformance.run(client=f"{__name__}:{client}", client_poll_interval=0.1, **RUN)
    failed = [r for r in report.results if r.status is Status.FAIL]
    assert [r.check for r in failed] == ["RANK-2::refuse-wrong-sum"]
    assert "refused-valid-fleet" in failed[0].details["reasons"]
    others = [r for r in report.results if r.check != "RANK-2::refuse-wrong-sum"]
    assert others and all(r.status is Status.SKIP for r in others)
    assert all("not judged: the client did not complete the conformant baseline" in r.message
               for r in others)  # fmt: skip


def health_checks_the_listener(discovery_url: str, *args: Any, **kwargs: Any) -> None:
    """The spec client, after a GET /health on the listener's origin."""
    from conformance.examples.spec_client import run

    origin = httpx.URL(discovery_url).copy_with(path="/health", query=None)
    httpx.get(origin, trust_env=False, timeout=5.0)
    run(discovery_url, *args, **kwargs)


def test_only_get_v1_rl_workers_is_a_listing_request() -> None:
    checks = ("POLL-2::fatal-not-retried", "VERSION-2::unknown-version", "DIALECT-1::other-dialect")
    report = conformance.run(
        client=f"{__name__}:health_checks_the_listener",
        checks=checks,
        client_poll_interval=0.1,
        **RUN,
    )
    assert {r.check: r.status for r in report.results} == dict.fromkeys(checks, Status.PASS)
    assert any("GET /health" in n for n in report.target["notes"])


def test_a_client_slower_than_its_pace_fails_poll_1_only() -> None:
    # The zoo's slow-pace client polls every three poll intervals; at 0.1 s it finishes every run.
    report = conformance.run(
        client="conformance.examples.zoo:polls_slower_than_declared",
        client_poll_interval=0.1,
        **RUN,
    )
    assert report.failed_requirements() == ["POLL-1"]
    poll = next(r for r in report.results if r.check == "POLL-1::retry-transient")
    assert "slower-than-declared" in poll.details["reasons"]
    assert os.environ.get(POLL_INTERVAL_ENV) is None  # the callable's environment was restored


def test_no_real_dynamo_run_is_made_for_a_client_without_a_baseline() -> None:
    # Every check a real Dynamo run feeds would be "not judged": the run is not made at all.
    from conformance.client.profile import why_not_made

    class WithoutBaseline:
        def baseline_cause(self) -> str:
            return "the client did not complete the conformant baseline"

    for kind in ("dynamo:plan", "dynamo:error-then-ready", "dynamo:resize-after-init"):
        assert why_not_made(WithoutBaseline(), kind) == WithoutBaseline().baseline_cause()  # type: ignore[arg-type]
