"""Proof of the drop-in pool: the example that drives it in Prime-RL's start-up order passes the
suite's client profile (callable and --client-cmd), and becomes ready and plans right on the real
Dynamo 1.6.1 frontend (offsets judged from what the harness's stub admin servers recorded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _suite_support import not_passing

import conformance
from conformance.client import SECRET_ENV, Credentials
from conformance.examples.prime_rl_pool_client import run
from conformance.registry import all_checks
from conformance.results import Status
from conformance.runner import dynamo_available
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.plan import Convention
from tests._harness_support import HETERO_W, admin_calls, expected_offsets, hetero_fleet

EXAMPLE = "conformance.examples.prime_rl_pool_client"
CLI = str(Path(sys.executable).with_name("prime-rl-dynamo"))
# The pinned [2, 4, 1] fleet plus two generated ones: seed 1 draws every convention and an
# engine of another model, so no check is skipped for want of a topology.
# Judged at Prime-RL's real settings: the pool's own 1 s poll interval, whole-second timeouts.
RUN: dict[str, Any] = {
    "profiles": ["client"],
    "topologies": 2,
    "seed": 1,
    "client_timeout": 20.0,
    "client_poll_interval": 1.0,
    "client_whole_seconds": True,
}
MUST_PASS = {
    "RANK-2",
    "RANK-3",
    "RANK-4",
    "RANK-5",
    "RANK-6",
    "RANK-8",
    "CRED-2",
    "CRED-3",
    "NATIVE-1",
    "NATIVE-2",
}


def _verdicts(report: Any) -> tuple[list[str], set[str]]:
    return not_passing(report), {r.requirement for r in report.results if r.status is Status.PASS}


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_example_passes_the_client_profile_as_a_callable_and_as_a_command(
    tmp_path: Path,
) -> None:
    # The two forms run at once: each waits on its runs' deadlines far longer than it computes.
    # The command form runs in a CLI child started first, so it holds its own environment (the
    # callable's runs set proxy variables in this process's).
    command_report = tmp_path / "command.json"
    as_command = subprocess.Popen(
        [
            CLI,
            "conformance",
            "-q",
            *("--profile", "client", "--topologies", str(RUN["topologies"])),
            *("--seed", str(RUN["seed"]), "--client-timeout", str(RUN["client_timeout"])),
            *("--client-poll-interval", "1", "--client-whole-seconds"),
            *("--client-cmd", f"{sys.executable} -m {EXAMPLE}"),
            *("--json-report", str(command_report)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        as_callable = conformance.run(client=f"{EXAMPLE}:run", **RUN)
    finally:
        out, _ = as_command.communicate(timeout=600)
    bad, passed = _verdicts(as_callable)
    assert bad == []
    assert passed >= MUST_PASS, sorted(MUST_PASS - passed)
    # Every check of the profile ran and passed; only what no client can show may be skipped.
    checked = {c.requirement for c in all_checks(["client"])}
    assert checked - passed <= {"RANK-7"}, sorted(checked - passed)
    assert any("prime_rl_pool_client" in n for n in as_callable.target["notes"])
    assert as_command.returncode == 0, out[-3000:]
    results = json.loads(command_report.read_text())["results"]
    assert {r["check"]: r["status"] for r in results} == as_callable.outcomes()


# --- real Dynamo 1.6.1 ---------------------------------------------------------------------------

W = HETERO_W


@pytest.fixture(scope="module")
def dynamo_fleet() -> Iterator[Any]:
    if not dynamo_available():
        pytest.skip("the dynamo extra (ai-dynamo-runtime) is not installed")
    with hetero_fleet() as running:
        yield running


@pytest.mark.integration
@pytest.mark.dynamo
@pytest.mark.parametrize("convention", ["prime-nccl", "vllm-native-nccl", "nixl"])
def test_the_example_becomes_ready_and_plans_right_on_real_dynamo(
    dynamo_fleet: Any, convention: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = dynamo_fleet
    monkeypatch.setenv(SECRET_ENV, "env-secret")
    creds = Credentials(
        api_key="key-123", headers={"X-Static": "static-v"}, headers_from_env={"X-Env": SECRET_ENV}
    )
    fleet.recorder.clear()
    arguments = (fleet.discovery_url, W, convention, creds)
    options = {"model": None, "master_address": "127.0.0.1", "master_port": 29600, "timeout": 30.0}
    if convention == "vllm-native-nccl":
        # Dynamo 1.6.1's workers list pause_generation-style names, not the control/ and update/
        # routes the trainer-owned native transfer calls: refused before any engine is touched,
        # as Prime-RL's latest generation never becomes ready on a 1.6.1 listing.
        with pytest.raises(ConfigError, match=r"routes .*init_weight_transfer_engine"):
            run(*arguments, **options)
        assert [r for r in fleet.recorder.requests() if "init" in r.path] == []
        return
    run(*arguments, **options)
    conv = Convention.parse(convention)
    # Expected offsets from the fleet's own records: canonical order, exclusive prefix sums.
    expected = {
        label: (offset, size) for label, offset, size in expected_offsets(fleet.engines, conv)
    }
    by_key = {e.key: e.label for e in fleet.engines}
    init_path = "/collective_rpc" if conv is Convention.VLLM_NATIVE_NCCL else "/init_broadcaster"
    seen = {}
    made = admin_calls(fleet, "/health", init_path, "/pause", "/update_weights", "/resume")
    for engine in fleet.engines:
        calls = made[engine.key]
        assert all(c.status == 200 for c in calls), [(c.path, c.status) for c in calls]
        for call in calls:
            assert call.headers.get("authorization") == "Bearer key-123"
            assert call.headers.get("x-static") == "static-v"
            assert call.headers.get("x-env") == os.environ[SECRET_ENV]
        body = calls[1].json
        if conv is Convention.VLLM_NATIVE_NCCL:
            info = body["kwargs"]["init_info"]
            assert info["world_size"] == W + 1
            seen[by_key[engine.key]] = (info["rank_offset"], engine.spec.world_size)
        else:
            assert body["inference_world_size"] == W
            assert ("session_id" in body) is (conv is Convention.NIXL)
            seen[by_key[engine.key]] = (body["rank_offset"], body["engine_world_size"])
    assert seen == expected


@pytest.mark.integration
@pytest.mark.dynamo
def test_the_pool_drives_real_dynamos_engines_through_collective_rpc(dynamo_fleet: Any) -> None:
    import asyncio
    from types import SimpleNamespace

    from prime_rl_dynamo.prime_rl import DynamoInferencePool

    fleet = dynamo_fleet
    fleet.recorder.clear()
    client = SimpleNamespace(dynamo_discovery_url=fleet.frontend_url, wait_for_ready_timeout=30)

    async def main() -> None:
        pool = await DynamoInferencePool.from_config(
            client, None, inference_world_size=W, admin_api="vllm", environ={}, poll_interval=0.1
        )
        try:
            await pool.wait_for_ready(None)
            await pool.init_nixl_broadcast("127.0.0.1", 5557, 30.0, W, "s-1")
            await pool.update_weights(None, step=1)
        finally:
            await pool.stop()

    asyncio.run(main())
    expected = {
        label: offset for label, offset, _ in expected_offsets(fleet.engines, Convention.NIXL)
    }
    seen = {}
    made = admin_calls(fleet, "/health", "/collective_rpc", "/pause", "/collective_rpc", "/resume")
    for engine in fleet.engines:
        calls = made[engine.key]
        assert all(c.status == 200 for c in calls)
        init, update = calls[1].json, calls[3].json
        assert init["method"] == "init_broadcaster" and init["kwargs"]["session_id"] == "s-1"
        assert update == {"method": "update_weights_from_path", "args": [None], "kwargs": {}}
        assert "authorization" not in calls[0].headers  # no key configured: none sent
        seen[engine.label] = init["kwargs"]["rank_offset"]
    assert seen == expected


# --- the package's drop-in for Prime-RL main ------------------------------------------------------

MAIN_PLANE = "conformance.examples.prime_rl_main_plane"
#: Main's orchestrator has Prime's NCCL broadcaster and NIXL; vLLM's native NCCL is not its.
MAIN_CONVENTIONS = ("prime-nccl", "nixl")
NOT_MAINS = {"RANK-4", "NATIVE-1", "NATIVE-2"}


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_main_plane_in_mains_call_order_is_conformant_at_prime_rls_real_settings() -> None:
    report = conformance.run(client=f"{MAIN_PLANE}:run", client_conventions=MAIN_CONVENTIONS, **RUN)
    bad, passed = _verdicts(report)
    assert bad == []
    assert report.ok
    assert passed >= MUST_PASS - NOT_MAINS, sorted(MUST_PASS - NOT_MAINS - passed)
    checked = {c.requirement for c in all_checks(["client"])}
    assert checked - passed <= {"RANK-7", *NOT_MAINS}, sorted(checked - passed)
    # Judged at the pace it really has: the plane's own second, whole-second timeouts.
    assert any("polls every 1 s, timeouts in whole seconds" in n for n in report.target["notes"])
