"""The client profile: the project's client passes; an even split fails, naming the
colliding and missing ranks, whether given as a Python callable or as a shell command."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import pytest
from _suite_support import not_passing

import conformance
from conformance.client.readiness import check_others, pending_verdict
from conformance.client_runs import ClientContext, ClientRun, during, real_listing_problem
from conformance.client_scenarios import PINNED_TOPOLOGY, heterogeneous
from conformance.registry import CheckError, Failed
from conformance.results import Report, Status
from conformance.runner import dynamo_available
from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.requirements import all_requirements

pytestmark = pytest.mark.integration

# The pinned [2, 4, 1] fleet plus two generated ones keeps each run to a few seconds.
# Reference fleets only (target "reference"): the real Dynamo runs are judged once, below.
RUN = {
    "profiles": ["client"],
    "topologies": 2,
    "seed": 3,
    "client_timeout": 20.0,
    "client_poll_interval": 0.1,  # the spec and project clients follow CONFORMANCE_POLL_INTERVAL
    "target": "reference",
}
CLIENT_REQUIREMENTS = {r.id for r in all_requirements().values() if r.party == "client"}


@pytest.mark.parametrize("form", ["callable", "command"])
def test_excluding_model_less_workers_fails_ready_5_not_rank_6(form: str) -> None:
    # Prime-RL's latest generation left a model-less entry out of its sum: a READY-5 bug, which
    # the single-variable scenario model-less shows; the rank checks judge plain fleets only.
    client = (
        {"client": "conformance.examples.zoo:excludes_model_less"}
        if form == "callable"
        else {"client_cmd": f"{sys.executable} -m conformance.examples.zoo excludes-model-less"}
    )
    checks = ("READY-5::others-left-alone", "RANK-6::ranks-cover-once", "RANK-1::canonical-order")
    report = conformance.run(**{**RUN, "topologies": 1}, checks=checks, **client)
    by_check = {r.check: r for r in report.results}
    assert by_check["READY-5::others-left-alone"].status is Status.FAIL
    assert "did-not-complete" in by_check["READY-5::others-left-alone"].details["reasons"]
    assert "scenario model-less" in by_check["READY-5::others-left-alone"].message
    assert by_check["RANK-6::ranks-cover-once"].status is Status.PASS
    assert by_check["RANK-1::canonical-order"].status is Status.PASS


def test_the_projects_client_passes() -> None:
    # With the dynamo extra (target "auto") this includes the runs against real Dynamo 1.6.1.
    report = conformance.run(
        client="conformance.examples.project_client:run", **{**RUN, "target": "auto"}
    )
    bad = not_passing(report)
    assert bad == []
    passed = {r.requirement for r in report.results if r.status is Status.PASS}
    skipped = {r.requirement: r.message for r in report.results if r.status is Status.SKIP}
    # Every client requirement of the catalog has a check, and none is skipped but RANK-7.
    assert passed | set(skipped) == CLIENT_REQUIREMENTS
    assert list(skipped) == ["RANK-7"] and "not observable from outside" in skipped["RANK-7"]
    assert any("project_client" in note for note in report.target["notes"])
    if dynamo_available():
        assert (
            "client profile: 4 runs against real Dynamo 1.6.1 through the harness"
            in (report.target["notes"])
        )
        # READY-5 and RANK-1 judged on a real listing with a model-less engine and another model's.
        by_check = {r.check: r.message for r in report.results}
        assert "(and 1 on real Dynamo)" in by_check["READY-5::others-left-alone"]
        assert "(and 1 on real Dynamo)" in by_check["RANK-1::canonical-order"]


@pytest.fixture(scope="module")
def even_split() -> Report:
    """One run of the even-split client as a callable, judged by the two tests below (their xdist
    group keeps them on one worker, so the whole profile runs once, not twice)."""
    return conformance.run(client="conformance.examples.even_split_client:run", **RUN)


@pytest.mark.xdist_group("even-split")
def test_even_split_fails_naming_colliding_and_missing_ranks(even_split: Report) -> None:
    report = even_split
    assert not report.ok
    coverage = next(r for r in report.results if r.check == "RANK-6::ranks-cover-once")
    assert coverage.status is Status.FAIL
    # [2, 4, 1] split evenly gives offsets [0, 2, 4]: rank 4 twice, rank 6 by nobody.
    pinned = coverage.message.split("pinned topology [2, 4, 1]", 1)[1].split(
        "generated topology", 1
    )[0]
    assert "rank 4 collides: claimed by dynamo.engine-b.rl#" in pinned
    assert "engine-c" in pinned.split("rank 4 collides", 1)[1].splitlines()[0]
    assert "missing ranks (owned by nobody): 6" in pinned
    offsets = next(r for r in report.results if r.check == "RANK-3::prime-nccl-offsets")
    assert offsets.status is Status.FAIL and "expected rank_offset 6, found 4" in offsets.message
    # Credentials are right in this implementation: only rank requirements fail.
    assert set(report.failed_requirements()) == {"RANK-3", "RANK-4", "RANK-5", "RANK-6"}


@pytest.mark.xdist_group("even-split")
def test_a_shell_command_client_gets_the_same_verdicts(even_split: Report) -> None:
    as_callable = even_split
    as_command = conformance.run(
        client_cmd=f"{sys.executable} -m conformance.examples.even_split_client", **RUN
    )
    assert as_command.outcomes() == as_callable.outcomes()
    assert "RANK-6" in as_command.failed_requirements()


def test_an_unloadable_client_is_an_error_not_a_failure() -> None:
    report = conformance.run(client="no_such_module:run", **RUN)
    assert {r.status for r in report.results} == {Status.ERROR}
    assert "no_such_module" in report.results[0].message


def test_a_command_that_cannot_start_is_an_error_of_the_run() -> None:
    report = conformance.run(client_cmd="pythn -m nothing", **RUN)
    assert {r.status for r in report.results} == {Status.ERROR}
    message = report.results[0].message
    assert "could not be started: exit 127" in message and "pythn" in message
    missing = conformance.run(client_cmd=f"{sys.executable} -m no_such_client_module", **RUN)
    assert {r.status for r in missing.results} == {Status.ERROR}
    assert "No module named" in missing.results[0].message


def test_zero_topologies_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from prime_rl_dynamo.cli import main

    with pytest.raises(ValueError, match="topologies must be at least 1"):
        conformance.run(profiles=["client"], topologies=0)
    assert main(["conformance", "--profile", "client", "--topologies", "0"]) == 2
    assert "topologies must be at least 1" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown client convention"):
        conformance.Options(client_conventions=("gloo",))


def test_undeclared_conventions_are_skipped_with_the_reason() -> None:
    report = conformance.run(
        client="conformance.examples.spec_client:run",
        client_conventions=("vllm-native-nccl",),
        **RUN,
    )
    by_req = {r.requirement: r for r in report.results}
    for req in ("RANK-3", "RANK-5"):
        assert by_req[req].status is Status.SKIP
        assert "does not implement" in by_req[req].message
    assert by_req["RANK-4"].status is Status.PASS
    # the native fleet lists the engine routes, so the init may come as collective_rpc or route
    assert "init_weight_transfer_engine" in by_req["RANK-4"].message
    assert not report.failed_requirements()


@pytest.mark.parametrize(
    "groups",
    [
        [{"component": "a", "tp": 1}],
        [{"component": "a", "count": 3, "tp": 2}],
        [{"component": "a", "world_size": 8}, {"component": "b", "world_size": 8}],
    ],
)
def test_generated_topologies_are_madeheterogeneous(groups: list[dict[str, object]]) -> None:
    data = heterogeneous({"model": "m", "engines": groups})
    sizes = {g.get("world_size") or g.get("tp") for g in data["engines"]}
    assert len(sizes) >= 2


def _guard_context(**options: object) -> ClientContext:
    from conformance.client import load_client
    from conformance.runner import Options, RunContext

    opts = Options(profiles=("client",), seed=1, **options)  # type: ignore[arg-type]
    return ClientContext(RunContext(options=opts, seed=1), load_client(None, None))


def _real_run(kind: str) -> ClientRun:
    from conformance.client import Credentials

    return ClientRun(
        name="real Dynamo 1.6.1 [2, 4, 1], engine-c killed",
        kind=kind,
        convention="prime-nccl",
        inference_world_size=3,
        credentials=Credentials(),
        master_address="127.0.0.1",
        master_port=29500,
    )


def _refuse() -> None:
    raise HarnessError("engine-c not listed in 64 s")


@pytest.mark.parametrize(
    ("change", "why"), [(_refuse, "could not change"), (lambda: time.sleep(1.0), "took")]
)
def test_a_harness_that_cannot_change_the_fleet_in_time_is_an_error_not_a_failure(
    change: Callable[[], object], why: str
) -> None:
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    ctx = _guard_context(client_timeout=2.5)  # a change past 0.5 s outlasts what the client has
    idle = _real_run("dynamo:error-then-ready")
    never = _real_run("error-then-ready")  # the reference run: nothing observed, so it fails
    never.name = "scenario error-then-ready"
    ctx.runs = [never, idle]
    topology = topology_from_dict(PINNED_TOPOLOGY)
    with start_reference_fleet(topology) as fleet:
        during(ctx, lambda *a, **k: None, fleet, topology.model, idle, change)
    assert why in idle.harness_problem
    with pytest.raises(CheckError, match="the client is not judged on it"):
        pending_verdict(ctx, ("error-then-ready",))  # the check of READY-1
    # The guard is what makes it an error: the same records without it are a failure.
    idle.harness_problem = ""
    with pytest.raises(Failed):
        pending_verdict(ctx, ("error-then-ready",))  # the check of READY-1


def test_a_real_listing_without_another_model_is_an_error_of_ready_5() -> None:
    run = _real_run("rank")
    ready = [{"world_size": 2}, {"world_size": 4}, {"world_size": 1}]
    real_listing_problem(run, ready, [], 7)
    assert "a reachable engine of another model" in run.harness_problem
    run.kind = "dynamo:plan"
    ctx = _guard_context()
    scenarios = [_real_run(s) for s in ("model-less", "other-model", "other-model-no-admin")]
    for each in scenarios:
        each.name = f"scenario {each.kind}"
    ctx.runs = [run, *scenarios]
    with pytest.raises(CheckError, match="did not present a reachable engine of another model"):
        check_others(ctx)
