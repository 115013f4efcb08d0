"""READY-5 judged by the client profile's own check on a real Dynamo 1.6.1 fleet serving two
models (issue 14: "READY-5 is exercised against real Dynamo by the client profile").

The profile's setup stands up reference fleets only; its checks judge records (the listed
engines, what the fleet's admin servers saw). Here the records come from the harness: the real
frontend lists workers whose models the runtime registered, the Prime-RL pool example is run
against it exactly as the profile runs a client, and ``check_others`` (READY-5) judges the
outcome: it passes for the example and fails for a client that ignores the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.client_profile import (
    ClientContext,
    ClientRun,
    Credentials,
    _call_client,
    _listed_engines,
    check_coverage,
    check_credentials_sent,
    check_others,
    check_prime_offsets,
    load_client,
)
from conformance.registry import Failed
from conformance.runner import Options, RunContext, dynamo_available

pytestmark = [pytest.mark.integration, pytest.mark.dynamo]

EXAMPLE = "conformance.examples.prime_rl_pool_client:run"
MODEL, OTHER = "Qwen/Qwen3-0.6B", "other/Model-7B"
TWO_MODELS: dict[str, Any] = {
    "version": 1,
    "namespace": "dynamo",
    "model": MODEL,
    "engines": [
        {"component": "prefill", "count": 2, "world_size": 2},
        {"component": "judge", "count": 1, "world_size": 4, "model": OTHER},
    ],
}


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    if not dynamo_available():
        pytest.skip("the dynamo extra (ai-dynamo-runtime) is not installed")
    from prime_rl_dynamo.harness import start_dynamo_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    with start_dynamo_fleet(topology_from_dict(TWO_MODELS), engines_per_process=3) as running:
        running.wait_ready(3, timeout=60)
        yield running


def _judge(fleet: Any, *, model: str | None, told: int) -> ClientContext:
    """Run the example once as the client profile does, and return the records to judge."""
    ctx = ClientContext(RunContext(options=Options(seed=1), seed=1), load_client(EXAMPLE, None))
    ready, others = _listed_engines(fleet, MODEL)
    run = ClientRun(
        name="real Dynamo, two models (prime-nccl)",
        convention="prime-nccl",
        inference_world_size=told,
        expect_refusal=False,
        credentials=Credentials(api_key="key-r5", headers={"X-Static-Token": "s"}),
        master_address="127.0.0.1",
        master_port=29650,
        engines=ready,
        others=others,
    )
    fleet.recorder.clear()
    _call_client(ctx.client, run, fleet.discovery_url, model, 30.0)
    run.admin_calls = fleet.recorder.requests(server="admin")
    ctx.runs.append(run)
    return ctx


def test_the_listing_carries_both_models_and_the_profile_sees_the_other_one(fleet: Any) -> None:
    listed = {w["component"]: w.get("model") for w in fleet.listing()["workers"]}
    assert listed == {"prefill": MODEL, "judge": OTHER}
    ready, others = _listed_engines(fleet, MODEL)
    assert [e["world_size"] for e in ready] == [2, 2]
    assert [(o["why"], o["world_size"]) for o in others] == [("another model", 4)]
    assert all(e["key"] for e in [*ready, *others])  # every listed worker maps to its engine


def test_ready5_passes_for_the_pool_example_on_real_dynamo(fleet: Any) -> None:
    ctx = _judge(fleet, model=MODEL, told=4)
    assert ctx.runs[0].returned, ctx.runs[0].outcome
    assert check_others(ctx) == "1 engine(s) outside the plan left alone"
    # The same records satisfy the rest of what the profile judges for this run.
    assert check_prime_offsets(ctx) is not None
    assert check_coverage(ctx) is not None
    assert check_credentials_sent(ctx) is not None


def test_ready5_fails_a_client_that_ignores_the_model_on_real_dynamo(fleet: Any) -> None:
    """The check can fail on real records: told the whole fleet's W and no model, the client
    initialises the other model's engine too."""
    ctx = _judge(fleet, model=None, told=8)
    assert ctx.runs[0].returned, ctx.runs[0].outcome
    with pytest.raises(Failed) as info:
        check_others(ctx)
    assert "dynamo.judge.rl#" in str(info.value) and "(another model) received" in str(info.value)
