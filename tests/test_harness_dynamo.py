"""The real Dynamo 1.6.1 frontend and stub workers (file discovery) against the project's client.

One heterogeneous fleet for the module (world sizes 2, 2, 4, 1; W = 9) and one fleet with
per-engine faults; the kill/restart scenario runs last because it changes the fleet.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest

from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.topology import topology_from_dict
from prime_rl_dynamo.wire import WorkerId
from tests._harness_support import (
    HETERO,
    HETERO_W,
    admin_calls,
    discover,
    expected_offsets,
    fetch_snapshot,
    hetero_fleet,
    listening_sockets,
    pending_message,
    pending_until_restarted,
    plan_rows,
    require_dynamo,
)

require_dynamo()

from prime_rl_dynamo.suite.harness import DynamoFleet, start_dynamo_fleet  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.dynamo]

# The encode engine serves only three engine routes.
ROUTES = ["resume_generation", "pause_generation", "flush_cache"]
HETERO_ROUTES = {
    **HETERO,
    "engines": [*HETERO["engines"][:-1], {**HETERO["engines"][-1], "routes": ROUTES}],
}
W = HETERO_W


@pytest.fixture(scope="module")
def fleet() -> Iterator[DynamoFleet]:
    with hetero_fleet(HETERO_ROUTES) as running:
        yield running


def test_listing_from_real_frontend_passes_the_validator(fleet: DynamoFleet) -> None:
    raw, snapshot = fetch_snapshot(fleet)
    assert snapshot.protocol_version == 1
    assert snapshot.namespace == "dynamo"
    by_identity = {w.identity: w for w in snapshot.workers}
    assert len(by_identity) == len(snapshot.workers) == 4
    for engine in fleet.engines:
        worker = by_identity[engine.identity]
        assert worker.error is None, worker.error
        assert worker.world_size == engine.spec.world_size
        assert worker.admin_base_url == engine.admin_base_url
        assert worker.system_url == engine.system_url
        assert worker.routes == tuple(sorted(engine.spec.routes))  # the frontend sorts them
        assert worker.request_plane_url == f"dyn://dynamo.{engine.spec.component}.rl"
        assert worker.transport.tcp is not None and worker.transport.tcp.startswith("127.0.0.1:")
        assert worker.model is None  # stubs register no model card
    assert b"null" not in raw  # optional fields are omitted, never null


def test_every_socket_of_the_fleet_is_on_loopback(fleet: DynamoFleet) -> None:
    sockets = listening_sockets(p.pid for p in fleet.processes)
    assert {pid for _, _, pid in sockets} == {p.pid for p in fleet.processes}
    assert [s for s in sockets if s[0] != "127.0.0.1"] == []
    ports = {port for _, port, _ in sockets}
    for engine in fleet.engines:
        for url in (engine.admin_base_url, engine.system_url):
            assert url is not None and int(url.split(":")[2].split("/")[0]) in ports


def test_client_discovers_heterogeneous_fleet_and_plans(fleet: DynamoFleet) -> None:
    discovery = discover(fleet, W, timeout=30)
    assert discovery.world_size_sum == W
    assert [w.label for w in discovery.workers] == [
        e.label for e in sorted(fleet.engines, key=lambda e: e.identity)
    ]
    for convention in (Convention.PRIME_NCCL, Convention.VLLM_NATIVE_NCCL):
        assert plan_rows(discovery, convention) == expected_offsets(fleet.engines, convention)


def test_real_listener_http_surface(fleet: DynamoFleet) -> None:
    post = httpx.post(fleet.discovery_url, timeout=5)
    assert post.status_code == 405
    assert {m.strip() for m in post.headers["allow"].split(",")} == {"GET", "HEAD"}
    assert httpx.get(f"{fleet.frontend_url}/v1/rl/engine", timeout=5).status_code == 404
    head = httpx.head(fleet.discovery_url, timeout=5)
    assert head.status_code == 200
    assert head.headers["content-type"].startswith("application/json")
    main_port = httpx.get(f"{fleet.http_url}/v1/rl/workers", timeout=5)
    assert main_port.status_code == 404  # the RL route lives on its own listener only


def test_admin_and_engine_routes_are_served_and_recorded(fleet: DynamoFleet) -> None:
    fleet.recorder.clear()
    discovery = discover(fleet, W, timeout=30)
    plan = discovery.plan(Convention.PRIME_NCCL)
    with httpx.Client(timeout=10) as http:
        for engine in plan.engines:
            assert engine.admin_base_url is not None
            base = engine.admin_base_url.rstrip("/")  # listed with a trailing "/"
            r = http.post(f"{base}/pause", params={"mode": "keep", "clear_cache": "false"})
            assert r.status_code == 200 and r.json() == {"status": "ok"}
            body = {
                "host": "127.0.0.1",
                "port": 29500,
                "rank_offset": engine.rank_offset,
                "inference_world_size": W,
                "engine_world_size": engine.world_size,
                "timeout": 60,
                "quantize_in_weight_transfer": False,
            }
            assert http.post(f"{base}/init_broadcaster", json=body).status_code == 200
            assert http.post(f"{base}/update_weights", json={"weight_dir": None}).status_code == 200
            assert http.post(f"{base}/resume").status_code == 200
        encode = fleet.engine("dynamo.encode#0")
        assert encode.system_url is not None
        reply = http.post(f"{encode.system_url}/engine/flush_cache", json={"reason": "test"})
        assert reply.status_code == 200 and reply.json()["engine"] == "dynamo.encode#0"
    by_label = {e.label: e.key for e in fleet.engines}
    for engine in plan.engines:
        calls = fleet.recorder.requests(engine=by_label[engine.label], server="admin")
        assert [c.path for c in calls] == [
            "/pause",
            "/init_broadcaster",
            "/update_weights",
            "/resume",
        ]
        assert calls[0].query == "mode=keep&clear_cache=false"
        assert calls[1].json["rank_offset"] == engine.rank_offset
        assert all(c.status == 200 for c in calls)
    system = fleet.recorder.requests(server="system", path="/engine/flush_cache")
    assert [(c.engine, c.json) for c in system] == [("dynamo.encode#0", {"reason": "test"})]


def test_admin_pool_drives_the_real_fleet_with_credentials(fleet: DynamoFleet) -> None:
    from prime_rl_dynamo.admin import AdminPool, Credentials
    from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy

    fleet.recorder.clear()

    async def drive() -> None:
        async with DiscoveryClient(
            fleet.frontend_url, ReadinessPolicy(W), PollingPolicy(timeout=30, poll_interval=0.2)
        ) as client:
            discovery = await client.wait_ready()
            plan = discovery.plan(Convention.PRIME_NCCL)
            credentials = Credentials(api_key="s3cret", headers={"X-Team": "rl"})
            async with AdminPool.from_plan(plan, credentials=credentials, discovery=client) as pool:
                await pool.health()
                await pool.init_broadcast(host="127.0.0.1", port=29500, timeout=30)
                await pool.update_weights("/weights/step-1")

    asyncio.run(drive())
    offsets = {
        label: first for label, first, _ in expected_offsets(fleet.engines, Convention.PRIME_NCCL)
    }
    made = admin_calls(
        fleet, "/health", "/init_broadcaster", "/pause", "/update_weights", "/resume"
    )
    for engine in fleet.engines:
        calls = made[engine.key]
        # Engines found through discovery are sent the pool's credentials too (CRED-2).
        assert all(c.headers.get("authorization") == "Bearer s3cret" for c in calls)
        assert all(c.headers.get("x-team") == "rl" for c in calls)
        init = calls[1].json
        assert init["rank_offset"] == offsets[engine.label]
        assert init["engine_world_size"] == engine.spec.world_size
        assert init["inference_world_size"] == W
        assert calls[3].json == {"weight_dir": "/weights/step-1"}


def test_killed_worker_turns_snapshot_pending_then_restart_makes_it_ready(
    fleet: DynamoFleet,
) -> None:
    victim = fleet.engine("dynamo.prefill#1")
    old_label = victim.label
    assert fleet.kill(victim.key) == [victim.key]
    # The frontend keeps listing the dead instance, with an error, until the store forgets it.
    _, snapshot = fetch_snapshot(fleet)
    dead = [w for w in snapshot.workers if w.label == old_label]
    assert len(dead) == 1 and dead[0].error is not None
    assert dead[0].error.startswith("Unavailable: TCP connection to")
    assert dead[0].routes == () and dead[0].admin_base_url is None and dead[0].world_size is None
    discovery = pending_until_restarted(fleet, victim, W)
    assert plan_rows(discovery, Convention.PRIME_NCCL) == expected_offsets(
        fleet.engines, Convention.PRIME_NCCL
    )


def test_resize_mid_run_is_caught_by_verify_topology(fleet: DynamoFleet) -> None:
    from prime_rl_dynamo.admin import AdminPool
    from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
    from prime_rl_dynamo.errors import TopologyChangedError

    async def drive() -> str:
        async with DiscoveryClient(
            fleet.frontend_url, ReadinessPolicy(W), PollingPolicy(timeout=45, poll_interval=0.2)
        ) as client:
            plan = (await client.wait_ready()).plan(Convention.PRIME_NCCL)
            fleet.resize("dynamo.encode#0", 3)  # a real restart: new instance, new world size
            async with AdminPool.from_plan(plan, discovery=client) as pool:
                with pytest.raises(TopologyChangedError) as info:
                    await pool.update_weights(None)
                return str(info.value)

    old_label = fleet.engine("dynamo.encode#0").label
    fleet.recorder.clear()
    message = asyncio.run(drive())
    assert "TOPO-1" in message and old_label in message
    assert fleet.engine("dynamo.encode#0").label in message  # the newcomer is named too
    assert fleet.recorder.requests(server="admin") == []  # refused before any admin call


FAULTY = {
    "namespace": "dynamo",
    "engines": [
        {"component": "healthy", "world_size": 2},
        {"component": "erring", "faults": {"reply_error": "engine is warming up"}},
        {"component": "noadmin", "admin": False},
        {"component": "nosystem", "system": False, "world_size": 3},
        {"component": "ghost", "faults": {"dead": True}},
        {"component": "flaky", "faults": {"admin_fail": ["pause"]}},
    ],
}


def test_per_engine_faults_on_the_real_frontend() -> None:
    with start_dynamo_fleet(topology_from_dict(FAULTY)) as faulty:
        _, snapshot = fetch_snapshot(faulty)
        workers = {w.component: w for w in snapshot.workers}
        assert set(workers) == {"healthy", "erring", "noadmin", "nosystem", "ghost", "flaky"}
        assert workers["erring"].error == "engine is warming up"
        assert workers["erring"].routes == () and workers["erring"].system_url is None
        ghost = workers["ghost"]
        assert ghost.error is not None and ghost.error.startswith("Unavailable: TCP connection")
        assert not faulty.engine("dynamo.ghost#0").alive
        noadmin = workers["noadmin"]
        assert noadmin.error is None and noadmin.admin_base_url is None
        assert noadmin.world_size is None and noadmin.system_url is not None
        nosystem = workers["nosystem"]
        assert nosystem.system_url is None and nosystem.world_size == 3
        assert nosystem.admin_base_url == faulty.engine("dynamo.nosystem#0").admin_base_url

        flaky = faulty.engine("dynamo.flaky#0")
        assert flaky.admin_base_url is not None
        answer = httpx.post(
            f"{flaky.admin_base_url.rstrip('/')}/pause", params={"mode": "keep"}, timeout=5
        )
        assert answer.status_code == 500 and answer.json()["status"] == "error"
        assert (
            httpx.post(f"{flaky.admin_base_url.rstrip('/')}/resume", timeout=5).status_code == 200
        )
        calls = faulty.recorder.requests(engine=flaky.key, server="admin")
        assert [(c.path, c.status) for c in calls] == [("/pause", 500), ("/resume", 200)]
        # Only the healthy engines count: the client waits on the erring and dead ones.
        message = pending_message(faulty, 2 + 3 + 1, timeout=1.5)
        assert workers["erring"].label in message and ghost.label in message


def test_namespace_prefix_scope_and_late_joiners() -> None:
    topology = topology_from_dict(
        {
            "namespace": "team",
            "engines": [
                {"component": "a", "world_size": 2},
                {"component": "b", "namespace": "team-x"},
                {"component": "c", "namespace": "other"},
                {"component": "d", "present": False},
            ],
        }
    )
    with DynamoFleet(topology, env={"DYN_NAMESPACE_PREFIX": "team"}) as scoped:
        scoped.start()
        assert [e.key for e in scoped.engines if not scoped.in_scope(e)] == ["other.c#0"]
        assert scoped.engine("other.c#0").alive  # running, but outside the frontend's scope
        assert not scoped.engine("team.d#0").alive
        _, snapshot = fetch_snapshot(scoped)
        assert snapshot.namespace == "team"  # under a prefix scope the body names the prefix
        assert sorted((w.namespace, w.component) for w in snapshot.workers) == [
            ("team", "a"),
            ("team-x", "b"),
        ]
        joined = scoped.join("team.d#0")
        listing = scoped.wait_settled(timeout=30)
        assert joined.label in [str(WorkerId.from_entry(w)) for w in listing["workers"]]
        assert len(listing["workers"]) == 3


ADMIN = "{admin_base_url}"  # replaced by the engine's own admin URL
RAW_REPLIES: dict[str, tuple[dict[str, object], str | None]] = {
    # component: (raw routes reply, the error the real frontend lists; None: accepted)
    "nows": (
        {"status": "ok", "routes": ["r"], "admin_base_url": ADMIN},
        "worker routes response has 'admin_base_url' without valid 'world_size'",
    ),
    "ws0": (
        {"status": "ok", "routes": ["r"], "admin_base_url": ADMIN, "world_size": 0},
        "worker routes response has invalid 'world_size'",
    ),
    "wsbig": (
        {"status": "ok", "routes": ["r"], "admin_base_url": ADMIN, "world_size": 2**32},
        "worker routes response has invalid 'world_size'",
    ),
    "wsfloat": (
        {"status": "ok", "routes": ["r"], "admin_base_url": ADMIN, "world_size": 2.0},
        "worker routes response has invalid 'world_size'",
    ),
    "emptyroute": (
        {"status": "ok", "routes": ["", "r"]},
        "worker routes response contains an empty route entry",
    ),
    "introute": (
        {"status": "ok", "routes": [1, "r"]},
        "worker routes response contains a non-string route entry",
    ),
    "userinfo": (
        {
            "status": "ok",
            "routes": ["r"],
            "admin_base_url": "http://u:p@127.0.0.1:1/a",
            "world_size": 1,
        },
        "worker routes response has invalid 'admin_base_url': RL admin base URL must not include user information",
    ),
    "query": (
        {
            "status": "ok",
            "routes": ["r"],
            "admin_base_url": "http://127.0.0.1:1/a?x=1",
            "world_size": 1,
        },
        "worker routes response has invalid 'admin_base_url': RL admin base URL must not include a query string",
    ),
    "noroutes": ({"status": "ok"}, "worker routes response missing 'routes' array"),
    "errnomsg": ({"status": "error"}, "worker routes request failed"),
    "dupes": ({"status": "ok", "routes": ["b", "a", "b"]}, None),
    "trimmed": (
        {
            "status": "ok",
            "routes": ["r"],
            "admin_base_url": "  http://127.0.0.1:1/a  ",
            "world_size": 1,
        },
        None,
    ),
    "badsystem": ({"status": "ok", "routes": ["r"], "system_url": "not a url"}, None),
}


def test_real_frontend_judges_raw_worker_replies() -> None:
    from prime_rl_dynamo.validate import check_body

    topology = topology_from_dict({"engines": [{"component": c} for c in RAW_REPLIES]})
    replies = {f"dynamo.{c}#0": reply for c, (reply, _) in RAW_REPLIES.items()}
    with start_dynamo_fleet(topology, replies=replies, engines_per_process=len(replies)) as raw:
        body = httpx.get(raw.discovery_url, timeout=10).content
    workers = {w["component"]: w for w in json.loads(body)["workers"]}
    assert set(workers) == set(RAW_REPLIES)
    for component, (_, error) in RAW_REPLIES.items():
        worker = workers[component]
        assert worker.get("error") == error, component
        if error is not None:  # a refused reply leaves nothing but the error
            assert worker["routes"] == [] and "admin_base_url" not in worker
            assert "world_size" not in worker and "system_url" not in worker
    assert workers["dupes"]["routes"] == ["a", "b"]  # sorted and de-duplicated
    assert workers["trimmed"]["admin_base_url"] == "http://127.0.0.1:1/a"
    # Finding: system_url is passed through unchecked, so one worker's bad value makes the
    # frontend's body break WORKER-7 (docs/harness.md, Findings).
    assert workers["badsystem"]["system_url"] == "not a url"
    violations = check_body(body)
    assert [(v.requirement, v.pointer.rsplit("/", 1)[-1]) for v in violations] == [
        ("WORKER-7", "system_url")
    ]
    assert violations[0].worker is not None and ".badsystem.rl#" in violations[0].worker
