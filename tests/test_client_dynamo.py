"""The client and admin pool against the real Dynamo 1.6.1 frontend with stub RL workers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from prime_rl_dynamo.admin import AdminPool, Credentials
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.errors import TopologyChangedError
from prime_rl_dynamo.topology import topology_from_dict

pytestmark = [pytest.mark.integration, pytest.mark.dynamo, pytest.mark.slow]

harness = pytest.importorskip("prime_rl_dynamo.suite.harness")

TOPOLOGY = {
    "version": 1,
    "namespace": "dynamo",
    "model": "m",
    "engines": [
        {"component": "prefill", "count": 2, "world_size": 2},
        {"component": "decode", "count": 1, "world_size": 4},
    ],
}


def test_discover_plan_drive_and_detect_a_kill_on_real_dynamo() -> None:
    env = {"VLLM_API_KEY": "sk-dyn"}
    creds = Credentials.from_env(environ=env)
    with harness.start_dynamo_fleet(topology_from_dict(TOPOLOGY)) as fleet:
        decode = next(e for e in fleet.engines if e.spec.component == "decode")

        async def go() -> tuple[Any, TopologyChangedError]:
            async with DiscoveryClient(
                # The stub workers register the topology's model through the runtime, so the
                # real listing carries it and the client can filter on it.
                fleet.frontend_url,
                ReadinessPolicy(8, model="m"),
                PollingPolicy(poll_interval=0.2, timeout=60),
            ) as client:
                plan = (await client.wait_ready()).plan("prime-nccl")
                async with AdminPool.from_plan(
                    plan, discovery=client, credentials=creds, environ=env
                ) as pool:
                    await pool.init_broadcast(host="127.0.0.1", port=29555, timeout=10)
                    await pool.update_weights("/tmp/w")
                    fleet.kill(decode.key)
                    with pytest.raises(TopologyChangedError) as info:
                        await pool.verify_topology()
                return plan, info.value

        plan, changed = asyncio.run(go())
        assert plan.rank_offsets == [0, 4, 6]  # decode (ws 4) sorts first, then the prefills
        assert plan.engines[0].label == decode.label
        assert [str(c.worker) for c in changed.diff.removed] == [decode.label]
        inits = fleet.recorder.requests(server="admin", path="/init_broadcaster")
        assert sorted(r.json["rank_offset"] for r in inits) == [0, 4, 6]
        calls = fleet.recorder.requests(server="admin")
        assert len(calls) == 3 * 4  # init, pause, update, resume on each engine
        assert {r.headers.get("authorization") for r in calls} == {"Bearer sk-dyn"}


def test_workers_of_another_model_are_ignored_on_real_dynamo() -> None:
    """READY-5 against real listings: the models come from the runtime's model cards."""
    from prime_rl_dynamo.client import discover_sync

    two_models = {
        "version": 1,
        "model": "Qwen/Qwen3-0.6B",
        "engines": [
            {"component": "prefill", "count": 2, "world_size": 2},
            {"component": "judge", "count": 1, "world_size": 4, "model": "other/Model-7B"},
        ],
    }
    with harness.start_dynamo_fleet(topology_from_dict(two_models), engines_per_process=3) as fleet:
        listed = {w["component"]: w.get("model") for w in fleet.listing()["workers"]}
        assert listed == {"prefill": "Qwen/Qwen3-0.6B", "judge": "other/Model-7B"}
        found, judge = (
            discover_sync(
                fleet.frontend_url,
                ReadinessPolicy(4, model=m),
                PollingPolicy(poll_interval=0.2, timeout=30),
            )
            for m in ("Qwen/Qwen3-0.6B", "other/Model-7B")
        )
        assert sorted(w.component for w in found.workers) == ["prefill", "prefill"]
        assert found.plan("prime-nccl").rank_offsets == [0, 2]
        assert [w.component for w in judge.workers] == ["judge"]


def _every_model(call: Any) -> None:
    # The spec client without its model filter, taking W from the listing so that it proceeds.
    from dataclasses import replace

    from conformance.examples.spec_client import _drive

    _drive(replace(call, model=None), frozenset({"derives-w"}))


def plans_every_model(*args: Any, **kwargs: Any) -> None:
    """A client under test that plans (and initialises) engines of every model."""
    from conformance.examples._contract import contract_client

    contract_client(_every_model)(*args, **kwargs)


def _reverifies_on_reference_fleets_only(call: Any) -> None:
    # The spec client, except that it skips re-verification on real Dynamo's fleet (the only one
    # with an engine-c): its reference runs pass TOPO-1, so only the real-Dynamo run can warn it
    # (a client that fails a check on the reference fleets is not run again on real Dynamo).
    from conformance.examples.spec_client import _drive

    def on_real_dynamo(engines: list[dict[str, Any]]) -> frozenset[str]:
        on_dynamo = any(w["component"] == "engine-c" for w in engines)
        return frozenset({"skips-reverify"}) if on_dynamo else frozenset()

    _drive(call, frozenset(), once_ready=on_real_dynamo)


def skips_reverify_on_real_dynamo(*args: Any, **kwargs: Any) -> None:
    """A client under test that skips re-verification on real Dynamo's fleet only."""
    from conformance.examples._contract import contract_client

    contract_client(_reverifies_on_reference_fleets_only)(*args, **kwargs)


def _client_run_on_dynamo(client: str, *, seed: int) -> Any:
    """The client profile's run of ``client`` against one real Dynamo topology."""
    import conformance

    return conformance.run(
        client=client,
        profiles=["client"],
        topologies=1,
        seed=seed,
        client_timeout=20.0,
        client_poll_interval=0.1,
        target="auto",
    )


def test_a_client_planning_other_models_fails_ready_5_on_real_dynamo() -> None:
    from conformance.results import Status

    report = _client_run_on_dynamo(f"{__name__}:plans_every_model", seed=3)
    others = next(r for r in report.results if r.requirement == "READY-5")
    assert others.status is Status.FAIL
    real = others.message.split("real Dynamo 1.6.1 [2, 4, 1]", 1)[1]
    assert ".judge.rl#" in real and "(another model) received" in real


def test_a_client_that_skips_re_verification_is_warned_on_topo_1_on_real_dynamo() -> None:
    from conformance.results import Status

    report = _client_run_on_dynamo(f"{__name__}:skips_reverify_on_real_dynamo", seed=4)
    reverify = next(r for r in report.results if r.requirement == "TOPO-1")
    assert reverify.status is Status.WARN  # TOPO-1 is a SHOULD
    real = reverify.message.split("real Dynamo 1.6.1 [2, 4, 1]", 1)[1]
    assert "update call(s) on a resized fleet" in real
    assert "returned success on a resized fleet" in real
