"""The contract end to end on real engines: vLLM on the CPU behind Dynamo 1.6.1's vLLM sidecar.

One heterogeneous fleet (tensor parallel 1 and 2, so W = 3) serves a tiny random Llama. The
package discovers it, plans the broadcast, pauses, reloads weights from a path, resumes, and the
greedy tokens each engine generates change, then come back with the first checkpoint. A gloo
broadcast set up by the package's own plan delivers the same weights a reload from disk does;
a plan whose ranks collide fails within its timeout. The ``workers`` and ``roundtrip``
conformance profiles run against the same fleet, and both Prime-RL drop-ins (main's
``DynamoAdminPlane``, 73164c322's ``DynamoInferencePool``) reload it in Prime-RL's call order.
The ``client`` profile does not: it builds and scripts its own fleets (docs/harness.md).

Needs the real-engine virtualenv (scripts/install-real-engines.sh); ``pytest -m real_engines``
runs these tests and the Python worker's descriptor reproduction
(tests/test_python_worker_descriptor.py); ``make test`` runs them in their own lane.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _prime_rl_support import ClientConfig, DynamoConfig

from prime_rl_dynamo.admin import AdminPool
from prime_rl_dynamo.client import discover_sync
from prime_rl_dynamo.errors import AdminError
from prime_rl_dynamo.plan import Rendezvous
from prime_rl_dynamo.readiness import PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.suite.harness import free_port
from prime_rl_dynamo.suite.harness.real import RealEngine, RealEngineFleet, tiny_llama

pytestmark = [pytest.mark.real_engines, pytest.mark.timeout(1800)]

W = 3


@pytest.fixture(scope="module")
def fleet() -> Iterator[RealEngineFleet]:
    with RealEngineFleet((1, 2), progress=lambda line: print(line, flush=True)) as started:
        started.start()
        yield started


def _tokens(fleet: RealEngineFleet) -> dict[str, list[str]]:
    return {e.key: e.generate(tiny_llama.PROMPT) for e in fleet.engines}


def _reload(pool: AdminPool, checkpoint: Path) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with pool:
            return await pool.update_weights(str(checkpoint), api="vllm", verify=False)

    return asyncio.run(go())


def _pool(fleet: RealEngineFleet) -> tuple[AdminPool, Any]:
    discovery = discover_sync(
        fleet.frontend_url, ReadinessPolicy(inference_world_size=W), PollingPolicy(timeout=120.0)
    )
    return AdminPool.from_discovery(discovery), discovery


def test_discovery_lists_both_engines_with_their_world_sizes(fleet: RealEngineFleet) -> None:
    began = time.monotonic()
    discovery = discover_sync(
        fleet.frontend_url, ReadinessPolicy(inference_world_size=W), PollingPolicy(timeout=120.0)
    )
    ready_in = time.monotonic() - began
    listed = {w.component: w for w in discovery.workers}
    assert {c: w.world_size for c, w in listed.items()} == {"tp1": 1, "tp2": 2}
    for engine in fleet.engines:
        worker = listed[engine.spec.component]
        # The sidecar presents vLLM's HTTP URL with a trailing slash (finding 3).
        assert worker.admin_base_url == engine.http_url + "/"
        assert worker.system_url == engine.system_url
    plan = discovery.plan()
    assert [(e.identity.component, e.rank_offset, e.world_size) for e in plan.engines] == [
        ("tp1", 0, 1),
        ("tp2", 1, 2),
    ]
    print(f"discovery ready in {ready_in:.2f} s")


def test_health_answers_on_stock_vllm(fleet: RealEngineFleet) -> None:
    # vLLM's /health is 200 with an empty body; ADMIN-1 asks for nothing more (finding 1).
    pool, _ = _pool(fleet)

    async def go() -> dict[str, Any]:
        async with pool:
            return await pool.health()

    results = asyncio.run(go())
    assert sorted(r.status_code for r in results.values()) == [200, 200]


def test_the_admin_update_weights_route_is_refused_by_stock_vllm(fleet: RealEngineFleet) -> None:
    # Finding 2: on vLLM 0.31 /update_weights is its native weight-transfer route.
    pool, _ = _pool(fleet)

    async def go() -> None:
        async with pool:
            await pool.update_weights(str(fleet.checkpoint(1)), verify=False)

    with pytest.raises(AdminError) as info:
        asyncio.run(go())
    failed = info.value.results["update_weights"]
    assert sorted(r.status_code for r in failed.values()) == [400, 400]
    # Resumed whatever happened: the engines still generate.
    assert all(_tokens(fleet).values())


def test_pause_reload_resume_changes_tokens_and_brings_them_back(
    fleet: RealEngineFleet,
) -> None:
    before = _tokens(fleet)
    assert before["dynamo.tp1#0"] == before["dynamo.tp2#0"]  # same weights, same greedy tokens
    pool, _ = _pool(fleet)
    began = time.monotonic()
    results = _reload(pool, fleet.checkpoint(1))
    took = time.monotonic() - began
    assert sorted(r.status_code for r in results.values()) == [200, 200]
    changed = _tokens(fleet)
    assert changed["dynamo.tp1#0"] == changed["dynamo.tp2#0"]
    assert changed != before
    pool, _ = _pool(fleet)
    _reload(pool, fleet.checkpoint(0))
    assert _tokens(fleet) == before
    print(f"weight update (pause, reload, resume) in {took:.2f} s")


def _trainer(port: int, checkpoint: Path, timeout: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            str(_engines_python()),
            "-m",
            "prime_rl_dynamo.suite.harness.real.gloo",
            str(port),
            str(W),
            str(checkpoint),
            "--timeout",
            str(timeout),
        ],
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _engines_python() -> Path:
    from prime_rl_dynamo.suite.harness.real import engines_python

    return engines_python()


def _manifest(checkpoint: Path) -> list[Any]:
    out = subprocess.run(
        [
            str(_engines_python()),
            "-m",
            "prime_rl_dynamo.suite.harness.real.gloo",
            "0",
            "0",
            str(checkpoint),
            "--manifest",
        ],
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _rpc_all(
    fleet: RealEngineFleet, bodies: dict[str, dict[str, Any]], timeout: float
) -> dict[str, httpx.Response | str]:
    """POST /collective_rpc on every engine at once (the admin URL as listed, joined right)."""
    replies: dict[str, httpx.Response | str] = {}

    def one(engine: RealEngine) -> None:
        assert engine.admin_base_url is not None
        try:
            replies[engine.key] = httpx.post(
                engine.admin_base_url.rstrip("/") + "/collective_rpc",
                json=bodies[engine.key],
                timeout=timeout,
            )
        except httpx.HTTPError as exc:
            replies[engine.key] = f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=one, args=(e,)) for e in fleet.engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return replies


def test_a_gloo_broadcast_with_the_packages_plan_delivers_the_weights(
    fleet: RealEngineFleet,
) -> None:
    before = _tokens(fleet)
    pool, discovery = _pool(fleet)
    plan = discovery.plan()
    port = free_port()
    trainer = _trainer(port, fleet.checkpoint(1), timeout=120.0)
    try:

        async def init() -> dict[str, Any]:
            async with pool:
                return await pool.init_broadcast(
                    plan, host="127.0.0.1", port=port, timeout=120.0, via_rpc=True
                )

        results = asyncio.run(init())
        ranks = {label: r.body["results"] for label, r in results.items()}
        # Every rank of the group of W + 1 claimed once: 1 (TP 1), then 2 and 3 (TP 2).
        assert sorted(rank for got in ranks.values() for rank in got) == [1, 2, 3]
        manifest = _manifest(fleet.checkpoint(1))
        body = {"method": "receive_weights", "args": [], "kwargs": {"manifest": manifest}}
        replies = _rpc_all(fleet, {e.key: body for e in fleet.engines}, timeout=120.0)
        assert trainer.wait(timeout=120.0) == 0, trainer.stdout.read() if trainer.stdout else ""
    finally:
        if trainer.poll() is None:
            trainer.kill()
    texts = {
        k: r if isinstance(r, str) else f"{r.status_code} {r.text[:500]}"
        for k, r in replies.items()
    }
    assert all(t.startswith("200 ") for t in texts.values()), texts
    broadcast = _tokens(fleet)
    assert broadcast != before
    pool, _ = _pool(fleet)
    _reload(pool, fleet.checkpoint(1))
    assert _tokens(fleet) == broadcast  # the broadcast delivered what a reload from disk does
    pool, _ = _pool(fleet)
    _reload(pool, fleet.checkpoint(0))
    assert _tokens(fleet) == before


def test_a_plan_whose_ranks_collide_fails_within_its_timeout(fleet: RealEngineFleet) -> None:
    _, discovery = _pool(fleet)
    plan = discovery.plan()
    port = free_port()
    timeout = 20.0
    trainer = _trainer(port, fleet.checkpoint(1), timeout=timeout)
    rendezvous = Rendezvous("127.0.0.1", port, timeout, None, False, True)
    bodies = {}
    for engine, planned in zip(fleet.engines, plan.engines, strict=True):
        _, body = plan.init_request(planned, rendezvous)
        body["kwargs"]["rank_offset"] = 0  # every engine at the first offset: rank 1 twice
        bodies[engine.key] = body
    began = time.monotonic()
    try:
        replies = _rpc_all(fleet, bodies, timeout=timeout + 30.0)
        code = trainer.wait(timeout=timeout + 30.0)
    finally:
        if trainer.poll() is None:
            trainer.kill()
    elapsed = time.monotonic() - began
    out = trainer.stdout.read() if trainer.stdout else ""
    assert code != 0
    assert "RANK-1" in out and "[1]" in out, out
    failed = [
        r for r in replies.values() if not (isinstance(r, httpx.Response) and r.status_code == 200)
    ]
    assert failed, replies
    assert elapsed < timeout + 30.0
    assert all(_tokens(fleet).values())  # the engines still serve


def _conformance(fleet: RealEngineFleet, profile: str, tmp_path: Path) -> dict[str, Any]:
    report = tmp_path / f"{profile}.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "prime_rl_dynamo.cli",
            "conformance",
            fleet.frontend_url,
            "--profile",
            profile,
            "-q",
            "--json-report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert report.exists(), done.stdout + done.stderr
    data: dict[str, Any] = json.loads(report.read_text())
    data["exit"] = done.returncode
    data["output"] = done.stdout + done.stderr
    return data


def test_the_roundtrip_profile_holds_on_real_engines(fleet: RealEngineFleet) -> None:
    # LIST-7 and LIST-5 judged on the real fleet: the listing equals what the sidecars registered.
    from conformance.roundtrip import RoundtripContext, check_membership, check_scope, exercise

    ctx = RoundtripContext()
    exercise(fleet, ctx, "real engines", churn=False, wait=30.0)
    assert ctx.membership == [] and ctx.scope == []
    assert "real engines: 2 engines registered" in str(check_membership(ctx))
    check_scope(ctx)


def test_the_workers_profile_on_real_engines(fleet: RealEngineFleet, tmp_path: Path) -> None:
    # Health holds (ENGINE-3, ADMIN-1: vLLM's empty 200 is healthy); ENGINE-1 fails on Dynamo's
    # sidecar: a route that needs a body answers POST {} with 500 text/plain (docs/findings.md).
    try:
        report = _conformance(fleet, "workers", tmp_path)
    finally:
        # ENGINE-1 posts {} to every advertised route, control/pause_generation included.
        pool, _ = _pool(fleet)

        async def resume() -> None:
            async with pool:
                await pool.resume()

        asyncio.run(resume())
    status = {r["requirement"]: r["status"] for r in report["results"]}
    assert status["ENGINE-3"] == "pass" and status["ADMIN-1"] == "pass", report["output"]
    assert status["ENGINE-1"] == "fail" and report["exit"] == 1, report["output"]
    for engine in fleet.engines:
        reply = httpx.post(f"{engine.system_url}/engine/update/update_weight_version", json={})
        assert reply.status_code == 500
        assert reply.headers["content-type"].startswith("text/plain")
        assert reply.json()["error"] == "Handler error"
    assert all(_tokens(fleet).values())


def test_a_machine_short_of_memory_is_refused_before_anything_starts() -> None:
    from prime_rl_dynamo.errors import HarnessError

    fleet = RealEngineFleet((64, 64))
    with pytest.raises(HarnessError):
        fleet.start()
    assert not fleet.workdir.exists()  # refused before any process or file
    assert fleet.frontend is None and fleet.engines == []


def test_a_sidecar_without_rl_still_serves_the_mutating_engine_routes(
    fleet: RealEngineFleet,
) -> None:
    # Dynamo issue #14430, on the real sidecar: a second sidecar for the TP 1 engine, started
    # without --enable-rl, is not listed, yet its system server pauses the engine and takes a
    # weight version (docs/findings.md RE7). The workers profile cannot judge it: it probes
    # listed workers only.
    from prime_rl_dynamo.suite.harness import ManagedProcess, free_system_port, stop_all

    engine = fleet.engine("dynamo.tp1#0")
    assert engine.sidecar is not None
    port = free_system_port()
    env = {**engine.sidecar.env, "DYN_COMPONENT": "norl", "DYN_SYSTEM_PORT": str(port)}
    argv = [a for a in engine.sidecar.argv if a != "--enable-rl"]
    sidecar = ManagedProcess("sidecar-norl", argv, env, fleet.workdir / "norl-sidecar.log")
    sidecar.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120.0
        ready = False
        while not ready:
            assert time.monotonic() < deadline and sidecar.alive(), sidecar.tail()
            try:
                ready = httpx.get(f"{url}/health", timeout=2).json().get("status") == "ready"
            except (httpx.HTTPError, ValueError):
                time.sleep(0.5)
        paused = httpx.post(f"{url}/engine/control/pause_generation", json={}, timeout=30)
        resumed = httpx.post(f"{url}/engine/control/resume_generation", json={}, timeout=30)
        version = httpx.post(
            f"{url}/engine/update/update_weight_version", json={"new_version": "norl"}, timeout=30
        )
        listed = sorted(w["component"] for w in fleet.listing()["workers"])
    finally:
        stop_all([sidecar])
    assert (paused.status_code, paused.json()) == (200, {"status": "paused"})
    assert resumed.status_code == 200
    assert version.status_code == 200
    assert listed == ["tp1", "tp2"]  # the non-RL sidecar is not listed
    assert all(_tokens(fleet).values())


def _pool_update(fleet: RealEngineFleet, checkpoint: Path, admin_api: str) -> AdminError | None:
    """The 73164c322 drop-in in Prime-RL's call order: ``from_config`` (its ``client`` config
    with ``dynamo.discovery_url``, a filesystem broadcast of W), ``wait_for_ready``, one
    ``update_weights``, ``stop``. Returns the update's AdminError (None when it succeeded)."""
    from types import SimpleNamespace

    from prime_rl_dynamo.prime_rl import DynamoInferencePool

    _, discovery = _pool(fleet)
    model = discovery.workers[0].model
    client = SimpleNamespace(
        dynamo=SimpleNamespace(discovery_url=fleet.frontend_url),
        api_key_var="VLLM_API_KEY",
        headers={},
        headers_from_env={},
        wait_for_ready_timeout=120.0,
    )

    async def orchestrator() -> AdminError | None:
        pool = await DynamoInferencePool.from_config(
            client,
            model,
            weight_broadcast=SimpleNamespace(type="filesystem", inference_world_size=W),
            admin_api=admin_api,
            environ={},
        )
        try:
            await pool.wait_for_ready(model)
            await pool.update_weights(checkpoint, step=1)
        except AdminError as exc:
            return exc
        finally:
            await pool.stop()
        return None

    return asyncio.run(orchestrator())


def test_the_73164c322_drop_in_reloads_stock_vllm_and_the_tokens_change(
    fleet: RealEngineFleet,
) -> None:
    # admin_api "prime" is Prime's /update_weights {"weight_dir"}: stock vLLM refuses it (400,
    # finding 2) and both engines are resumed unchanged; "vllm" reloads through reload_weights.
    before = _tokens(fleet)
    refused = _pool_update(fleet, fleet.checkpoint(1), "prime")
    assert refused is not None
    assert sorted(r.status_code for r in refused.results["update_weights"].values()) == [400, 400]
    assert _tokens(fleet) == before
    assert _pool_update(fleet, fleet.checkpoint(1), "vllm") is None
    changed = _tokens(fleet)
    assert changed != before and changed["dynamo.tp1#0"] == changed["dynamo.tp2#0"]
    assert _pool_update(fleet, fleet.checkpoint(0), "vllm") is None
    assert _tokens(fleet) == before


def _main_plane_update(
    fleet: RealEngineFleet, checkpoint: Path, admin_api: str
) -> tuple[list[str], BaseException | None]:
    """Prime-RL main's call order through the package's drop-in, built from main's config
    objects (``client.dynamo`` on, its discovery URL the fleet's RL listener): the plane, then
    ``wait_for_ready``, one filesystem update of ``checkpoint``, ``aclose``. Returns the calls
    made and the update's error (None when it succeeded)."""
    from prime_rl_dynamo.prime_rl_main import MAIN_STARTUP, DynamoAdminPlane

    _, discovery = _pool(fleet)
    model = discovery.workers[0].model
    client = ClientConfig(dynamo=DynamoConfig(discovery_url=fleet.frontend_url))
    calls: list[str] = []

    async def orchestrator() -> BaseException | None:
        plane = None
        for call in MAIN_STARTUP:
            calls.append(call)
            if call == "setup_admin_plane":
                plane = DynamoAdminPlane(
                    client, model, admin_api=admin_api, environ={}, poll_interval=0.05
                )
            else:
                assert plane is not None
                await getattr(plane, call)(model)
        assert plane is not None
        try:
            await plane.update_weights(checkpoint, transport="filesystem", step=1)
        except AdminError as exc:
            return exc
        finally:
            await plane.aclose()
        return None

    return calls, asyncio.run(orchestrator())


def test_prime_rl_mains_drop_in_reloads_stock_vllm_and_the_tokens_change(
    fleet: RealEngineFleet,
) -> None:
    # The "stock_vllm" form reloads through vLLM's own reload_weights, and the tokens change and
    # come back. Main's "vllm" form calls update_weights_from_path, Prime's worker-extension
    # method: stock vLLM has none, so the update fails (500 on both engines, retried as main
    # retries a 5xx). Last in the module: after that failure an engine was left unusable (a
    # pause answered 500, a completion timed out; docs/findings.md RE2).
    before = _tokens(fleet)
    calls, error = _main_plane_update(fleet, fleet.checkpoint(1), "stock_vllm")
    assert calls == ["setup_admin_plane", "wait_for_ready"] and error is None, error
    changed = _tokens(fleet)
    assert changed != before and changed["dynamo.tp1#0"] == changed["dynamo.tp2#0"]
    _, error = _main_plane_update(fleet, fleet.checkpoint(0), "stock_vllm")
    assert error is None, error
    assert _tokens(fleet) == before
    _, error = _main_plane_update(fleet, fleet.checkpoint(1), "vllm")
    print(f"main's vllm form on stock vLLM: {error}")
    assert isinstance(error, AdminError), error
    assert error.engine, error  # names the engine that failed first
