"""Admin pool: credential policy (CRED-1..4), fan-out, failure handling, init offsets, verify_topology.

Engines are ScriptedServer instances on loopback (one server can host several engines under
different base paths); the host name decides the allow-list outcome (127.0.0.1 vs localhost).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _client_support import ScriptedServer, Seen, body, jreply, ok, worker

from prime_rl_dynamo.admin import AdminEngine, AdminPool, Credentials, host_allowed
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.errors import AdminError, ConfigError, TopologyChangedError, TopologyError
from prime_rl_dynamo.plan import plan_broadcast
from prime_rl_dynamo.wire import WorkerId

OK = jreply(200, {"status": "ok"})
SECRET = "sk-test-123"
ENV = {"VLLM_API_KEY": SECRET, "TEAM_TOKEN": "team-abc"}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        for i in range(8):
            for op in ("pause", "resume", "update_weights", "init_broadcaster", "collective_rpc"):
                s.script("POST", f"/e{i}/{op}", OK)
            s.script("GET", f"/e{i}/health", OK)
        yield s


def creds(**kw: Any) -> Credentials:
    kw.setdefault("headers", {"X-Static": "static-v"})
    kw.setdefault("headers_from_env", {"X-Team": "TEAM_TOKEN"})
    return Credentials.from_env(environ=ENV, **kw)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def using(pool: AdminPool, op: str, *args: Any, **kw: Any) -> Any:
    async with pool:
        return await getattr(pool, op)(*args, **kw)


# --- host_allowed -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "patterns", "allowed"),
    [
        ("engine-1.internal", ["engine-1.internal"], True),
        ("Engine-1.Internal.", ["engine-1.internal"], True),
        ("engine-2.internal", ["engine-1.internal"], False),
        ("a.example.com", ["*.example.com"], True),
        ("a.b.example.com", ["*.example.com"], True),
        ("example.com", ["*.example.com"], False),
        ("evilexample.com", ["*.example.com"], False),
        ("a.example.com.evil.org", ["*.example.com"], False),
        ("10.1.2.3", ["10.0.0.0/8"], True),
        ("11.0.0.1", ["10.0.0.0/8"], False),
        ("10.evil.com", ["10.0.0.0/8"], False),
        ("127.0.0.1", ["127.0.0.1/32"], True),
        ("127.0.0.2", ["127.0.0.1/32"], False),
        ("localhost", ["127.0.0.1/32"], False),  # names are never resolved
        ("::1", ["::1/128"], True),
        ("[::1]", ["::1"], True),
        ("::1", ["127.0.0.0/8"], False),
        ("anything", ["*"], True),
        ("anything", [], False),
        # Exactly one trailing dot is the same DNS name; two are not.
        ("engine.internal.", ["engine.internal"], True),
        ("engine.internal", ["engine.internal."], True),
        ("engine.internal..", ["engine.internal"], False),
        ("engine.internal", ["engine.internal.."], False),
        ("a.pool.internal.", ["*.pool.internal"], True),
    ],
)
def test_host_allowed(host: str, patterns: list[str], allowed: bool) -> None:
    assert host_allowed(host, patterns) is allowed


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "a*.example.com", "*.*.com", "", "ex*mple.com"])
def test_bad_allow_list_entries_are_refused(entry: str) -> None:
    with pytest.raises(ConfigError) as info:
        Credentials(allowed_hosts=(entry,))
    assert info.value.requirement == "CRED-3"


# --- Credentials --------------------------------------------------------------------------------


def test_credentials_resolve_all_three_sources() -> None:
    c = creds(headers={"X-Static": "s", "X-Team": "static-loses"})
    assert c.resolve(ENV) == {
        "X-Static": "s",
        "X-Team": "team-abc",
        "Authorization": f"Bearer {SECRET}",
    }
    assert SECRET not in repr(c) and "static-loses" not in repr(c)


@pytest.mark.parametrize("env", [{"TEAM_TOKEN": "t"}, {"TEAM_TOKEN": "t", "VLLM_API_KEY": "EMPTY"}])
def test_empty_or_unset_key_sends_no_authorization(env: dict[str, str]) -> None:
    c = Credentials.from_env(headers_from_env={"X-Team": "TEAM_TOKEN"}, environ=env)
    assert c.resolve(env) == {"X-Team": "t"}


def test_missing_env_header_is_refused_cred_2() -> None:
    c = Credentials(headers_from_env={"X-Team": "NOT_SET_ANYWHERE"})
    with pytest.raises(ConfigError) as info:
        c.resolve({})
    assert info.value.requirement == "CRED-2"
    assert "X-Team <- $NOT_SET_ANYWHERE" in str(info.value)


# --- the credential policy end to end -----------------------------------------------------------


def engines_on(server: ScriptedServer, hosts: list[str]) -> list[AdminEngine]:
    return [
        AdminEngine(
            f"dynamo.e{i}.rl#{i}", f"http://{h}:{server.port}/e{i}", 1, ("dynamo", f"e{i}", "rl", i)
        )
        for i, h in enumerate(hosts)
    ]


@pytest.mark.integration
def test_credentials_reach_every_engine_without_allow_list_cred_2(server: ScriptedServer) -> None:
    pool = AdminPool(
        engines_on(server, ["127.0.0.1", "localhost"]), credentials=creds(), environ=ENV
    )
    run(using(pool, "resume"))
    seen = server.seen("POST")
    assert len(seen) == 2
    for s in seen:
        assert s.headers["authorization"] == f"Bearer {SECRET}"
        assert s.headers["x-static"] == "static-v"
        assert s.headers["x-team"] == "team-abc"


@pytest.mark.integration
def test_engine_outside_allow_list_is_refused_before_any_request_cred_3(
    server: ScriptedServer,
) -> None:
    with pytest.raises(ConfigError) as info:
        AdminPool(
            engines_on(server, ["127.0.0.1", "localhost"]),
            credentials=creds(allowed_hosts=["127.0.0.1/32"]),
            environ=ENV,
        )
    assert info.value.requirement == "CRED-3"
    assert "dynamo.e1.rl#1 (localhost)" in str(info.value)
    assert "dynamo.e0.rl#0" not in str(info.value)
    assert server.requests == []


@pytest.mark.integration
def test_anonymous_mode_keeps_credentials_from_outside_hosts_cred_3(server: ScriptedServer) -> None:
    pool = AdminPool(
        engines_on(server, ["127.0.0.1", "localhost", "127.0.0.1"]),
        credentials=creds(allowed_hosts=["127.0.0.1/32"]),
        disallowed="anonymous",
        environ=ENV,
    )
    assert pool.anonymous == ["dynamo.e1.rl#1"]
    run(using(pool, "pause"))
    by_path = {s.path.split("?")[0]: s for s in server.seen("POST")}
    assert set(by_path) == {"/e0/pause", "/e1/pause", "/e2/pause"}
    for allowed in ("/e0/pause", "/e2/pause"):
        assert by_path[allowed].headers["authorization"] == f"Bearer {SECRET}"
        assert by_path[allowed].headers["x-team"] == "team-abc"
    leaked = {
        k: v
        for k, v in by_path["/e1/pause"].headers.items()
        if SECRET in v or "team-abc" in v or "static-v" in v
    }
    assert leaked == {}
    assert "authorization" not in by_path["/e1/pause"].headers


@pytest.mark.integration
def test_allow_list_without_credentials_refuses_nothing(server: ScriptedServer) -> None:
    pool = AdminPool(
        engines_on(server, ["localhost"]),
        credentials=Credentials(allowed_hosts=("127.0.0.1/32",)),
        environ={},
    )
    assert run(using(pool, "health"))["dynamo.e0.rl#0"].ok


def test_user_info_admin_url_is_refused_cred_1() -> None:
    with pytest.raises(ConfigError) as info:
        AdminPool([AdminEngine("x", "http://u:p@127.0.0.1:9/admin")])
    assert info.value.requirement == "CRED-1"


@pytest.mark.integration
def test_no_redirect_is_followed_cred_4(server: ScriptedServer) -> None:
    with ScriptedServer() as elsewhere:
        elsewhere.script("POST", "/pause", OK)
        server.script("POST", "/e0/pause", (307, {"location": elsewhere.url + "/pause"}, b""))
        pool = AdminPool(engines_on(server, ["127.0.0.1"]), credentials=creds(), environ=ENV)
        with pytest.raises(AdminError) as info:
            run(using(pool, "pause"))
        assert "CRED-4" in str(info.value) and "dynamo.e0.rl#0" in str(info.value)
        assert elsewhere.requests == []


# --- operations -----------------------------------------------------------------------------------


@pytest.mark.integration
def test_update_weights_failure_names_engine_and_resumes_all(server: ScriptedServer) -> None:
    server.script(
        "POST", "/e1/update_weights", jreply(500, {"status": "error", "message": "disk full"})
    )
    pool = AdminPool(engines_on(server, ["127.0.0.1"] * 3), credentials=creds(), environ=ENV)
    with pytest.raises(AdminError) as info:
        run(using(pool, "update_weights", "/ckpt/step-7"))
    err = info.value
    assert err.engine == "dynamo.e1.rl#1"
    assert "dynamo.e1.rl#1: HTTP 500: disk full" in str(err)
    assert set(err.results) == {"pause", "update_weights", "resume"}
    assert [r.ok for r in err.results["update_weights"].values()] == [True, False, True]
    resumed = sorted(s.path for s in server.seen("POST") if s.path.endswith("/resume"))
    assert resumed == ["/e0/resume", "/e1/resume", "/e2/resume"]
    bodies = [s.json() for s in server.seen("POST") if s.path.endswith("/update_weights")]
    assert bodies == [{"weight_dir": "/ckpt/step-7"}] * 3


@pytest.mark.integration
def test_pause_failure_resumes_only_paused_and_skips_update(server: ScriptedServer) -> None:
    server.script("POST", "/e2/pause", jreply(503, {"status": "error", "message": "busy"}))
    pool = AdminPool(engines_on(server, ["127.0.0.1"] * 3), environ={})
    with pytest.raises(AdminError) as info:
        run(using(pool, "update_weights", None))
    assert info.value.engine == "dynamo.e2.rl#2"
    assert "failed at pause" in str(info.value)
    assert not [s for s in server.seen("POST") if s.path.endswith("/update_weights")]
    assert sorted(s.path for s in server.seen("POST") if s.path.endswith("/resume")) == [
        "/e0/resume",
        "/e1/resume",
    ]


@pytest.mark.integration
def test_update_weights_success_returns_per_engine_results(server: ScriptedServer) -> None:
    pool = AdminPool(engines_on(server, ["127.0.0.1"] * 2), environ={})
    results = run(using(pool, "update_weights", "/w"))
    assert list(results) == ["dynamo.e0.rl#0", "dynamo.e1.rl#1"]
    assert all(r.ok and r.status_code == 200 for r in results.values())
    paths = [s.path for s in server.seen("POST") if s.path.startswith("/e0/")]
    assert paths == ["/e0/pause?mode=keep&clear_cache=false", "/e0/update_weights", "/e0/resume"]


@pytest.mark.integration
def test_error_status_in_2xx_reply_is_a_failure(server: ScriptedServer) -> None:
    server.script("GET", "/e0/health", jreply(200, {"status": "error", "message": "warming up"}))
    pool = AdminPool(engines_on(server, ["127.0.0.1"]), environ={})
    with pytest.raises(AdminError, match="warming up"):
        run(using(pool, "health"))


@pytest.mark.integration
def test_oversized_admin_reply_is_refused_not_truncated(server: ScriptedServer) -> None:
    from prime_rl_dynamo.admin import ADMIN_MAX_BODY_BYTES

    huge = {"status": "ok", "pad": "x" * (ADMIN_MAX_BODY_BYTES + 10)}
    server.script("GET", "/e0/health", jreply(200, huge))
    pool = AdminPool(engines_on(server, ["127.0.0.1"]), environ={})
    with pytest.raises(AdminError, match="refused, not truncated") as info:
        run(using(pool, "health"))
    assert "dynamo.e0.rl#0" in str(info.value)


@pytest.mark.integration
def test_admin_replies_go_through_the_bounded_decoder(server: ScriptedServer) -> None:
    from prime_rl_dynamo.admin import ADMIN_MAX_BODY_BYTES

    # A small gzip reply is decoded; a gzip bomb is refused at the cap on the decoded size, as
    # discovery refuses one, and the result keeps the one typed shape (phase -> label -> result).
    small = gzip.compress(json.dumps({"status": "ok"}).encode())
    bomb = gzip.compress(b'{"pad": "' + b"x" * (ADMIN_MAX_BODY_BYTES * 4) + b'"}')
    assert len(bomb) < ADMIN_MAX_BODY_BYTES // 8
    server.script("GET", "/e0/health", ok(small, **{"content-encoding": "gzip"}))
    pool = AdminPool(engines_on(server, ["127.0.0.1"]), environ={})
    assert run(using(pool, "health"))["dynamo.e0.rl#0"].body == {"status": "ok"}
    server.script("GET", "/e0/health", ok(bomb, **{"content-encoding": "gzip"}))
    pool = AdminPool(engines_on(server, ["127.0.0.1"]), environ={})
    with pytest.raises(AdminError, match="refused, not truncated") as info:
        run(using(pool, "health"))
    assert list(info.value.results) == ["health"]
    assert not info.value.results["health"]["dynamo.e0.rl#0"].ok
    assert server.seen("GET")[-1].headers["accept-encoding"] == "identity"


@pytest.mark.integration
def test_unreachable_engine_is_named(server: ScriptedServer) -> None:
    pool = AdminPool([AdminEngine("dynamo.gone.rl#9", "http://127.0.0.1:1/admin")], environ={})
    with pytest.raises(AdminError) as info:
        run(using(pool, "health"))
    assert info.value.engine == "dynamo.gone.rl#9" and "ConnectError" in str(info.value)


@pytest.mark.integration
def test_concurrency_is_bounded(server: ScriptedServer) -> None:
    state = {"now": 0, "max": 0}
    lock = threading.Lock()

    def slow(_: Seen) -> tuple[int, dict[str, str], bytes]:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.05)  # simulated work inside the engine, not synchronisation
        with lock:
            state["now"] -= 1
        return OK

    for i in range(8):
        server.route("GET", f"/e{i}/health", slow)
    pool = AdminPool(engines_on(server, ["127.0.0.1"] * 8), max_concurrency=2, environ={})
    run(using(pool, "health"))
    assert len(server.seen("GET")) == 8
    assert state["max"] <= 2


# --- init_broadcast -------------------------------------------------------------------------------


class _W:
    def __init__(self, comp: str, iid: int, ws: int, url: str) -> None:
        self.namespace, self.component, self.endpoint, self.instance_id = "dynamo", comp, "rl", iid
        self.world_size, self.admin_base_url = ws, url


def fleet_on(server: ScriptedServer, sizes: list[int]) -> list[_W]:
    return [_W(f"e{i}", i, s, f"http://127.0.0.1:{server.port}/e{i}") for i, s in enumerate(sizes)]


@pytest.mark.integration
@pytest.mark.parametrize("convention", ["prime-nccl", "nixl"])
def test_init_broadcast_sends_each_engine_its_offsets(
    server: ScriptedServer, convention: str
) -> None:
    plan = plan_broadcast(fleet_on(server, [2, 4, 1]), 7, convention)
    pool = AdminPool.from_plan(plan, environ={})
    run(
        using(pool, "init_broadcast", host="10.0.0.5", port=29500, timeout=120, session_id="sess-1")
    )
    sent = {s.path: s.json() for s in server.seen("POST")}
    assert {p: b["rank_offset"] for p, b in sent.items()} == {
        "/e0/init_broadcaster": 0,
        "/e1/init_broadcaster": 2,
        "/e2/init_broadcaster": 6,
    }
    assert {b["engine_world_size"] for b in sent.values()} == {1, 2, 4}
    assert {(b["host"], b["port"], b["inference_world_size"]) for b in sent.values()} == {
        ("10.0.0.5", 29500, 7)
    }
    if convention == "nixl":
        assert {b["session_id"] for b in sent.values()} == {"sess-1"}


@pytest.mark.integration
def test_init_broadcast_native_uses_collective_rpc(server: ScriptedServer) -> None:
    plan = plan_broadcast(fleet_on(server, [2, 4, 1]), 7, "vllm-native-nccl")
    pool = AdminPool.from_plan(plan, environ={})
    run(using(pool, "init_broadcast", host="h", port=1234, timeout=60))
    sent = {s.path: s.json() for s in server.seen("POST")}
    assert set(sent) == {"/e0/collective_rpc", "/e1/collective_rpc", "/e2/collective_rpc"}
    infos = {p: b["kwargs"]["init_info"] for p, b in sent.items()}
    assert [infos[f"/e{i}/collective_rpc"]["rank_offset"] for i in range(3)] == [1, 3, 7]
    assert {i["world_size"] for i in infos.values()} == {8}
    assert {b["method"] for b in sent.values()} == {"init_weight_transfer_engine"}


@pytest.mark.integration
def test_init_broadcast_refuses_plan_for_other_engines(server: ScriptedServer) -> None:
    plan = plan_broadcast(fleet_on(server, [2, 4, 1]), 7)
    pool = AdminPool(engines_on(server, ["127.0.0.1"] * 2), environ={})
    with pytest.raises(TopologyError, match="RANK-6"):
        run(using(pool, "init_broadcast", plan, host="h", port=1, timeout=1))
    assert server.requests == []


# --- verify_topology ------------------------------------------------------------------------------

D = "/v1/rl/workers"


def discovery_fleet(server: ScriptedServer, sizes: list[int]) -> list[dict[str, Any]]:
    return [
        worker(f"e{i}", i, s, admin=f"http://127.0.0.1:{server.port}/e{i}")
        for i, s in enumerate(sizes)
    ]


async def ready_pool(server: ScriptedServer, sizes: list[int]) -> AdminPool:
    """Discover the scripted fleet and build a pool from its plan (inside the caller's loop)."""
    server.script("GET", D, ok(body(*discovery_fleet(server, sizes))))
    client = DiscoveryClient(
        server.url,
        ReadinessPolicy(sum(sizes), model="m"),
        PollingPolicy(poll_interval=0.01),
    )
    ready = await client.wait_ready()
    return AdminPool.from_plan(ready.plan(), discovery=client, environ={})


@pytest.mark.integration
def test_verify_topology_unchanged_passes(server: ScriptedServer) -> None:
    async def go() -> None:
        async with await ready_pool(server, [2, 4, 1]) as pool:
            assert await pool.verify_topology() is None

    run(go())


@pytest.mark.integration
def test_verify_topology_reports_every_kind_of_change(server: ScriptedServer) -> None:
    w = discovery_fleet(server, [2, 4, 1])
    changed = [
        worker("e0", 0, 2, admin=f"http://127.0.0.1:{server.port}/moved"),  # moved
        worker("e1", 1, 8, admin=w[1]["admin_base_url"]),  # resized
        worker("e2", 2, error="Unavailable: TCP connection failed"),  # now an error: removed
        worker("e9", 9, 1, admin=f"http://127.0.0.1:{server.port}/e9"),  # added
    ]

    async def go() -> TopologyChangedError:
        async with await ready_pool(server, [2, 4, 1]) as pool:
            server.script("GET", D, ok(body(*changed)))
            with pytest.raises(TopologyChangedError) as info:
                await pool.verify_topology()
            return info.value

    err = run(go())
    diff = err.diff
    # Code reads the typed entries: identity, world sizes, admin URLs, the error.
    assert [c.worker for c in diff.added] == [WorkerId("dynamo", "e9", "rl", 9)]
    assert [str(c.worker) for c in diff.removed] == ["dynamo.e2.rl#2"]
    assert diff.removed[0].after is not None and diff.removed[0].after.error is not None
    assert [
        (c.before.world_size, c.after.world_size) for c in diff.resized if c.before and c.after
    ] == [(4, 8)]
    assert [str(c.worker) for c in diff.moved] == ["dynamo.e0.rl#0"]
    # And people read the same words as ever, rendered from them.
    assert diff.lines() == [
        f"added: dynamo.e9.rl#9 (world_size 1, admin http://127.0.0.1:{server.port}/e9)",
        f"removed: dynamo.e2.rl#2 (world_size 1, admin http://127.0.0.1:{server.port}/e2) -- now "
        "reports error: Unavailable: TCP connection failed",
        "resized: dynamo.e1.rl#1: world_size 4 -> 8",
        f"moved: dynamo.e0.rl#0: admin_base_url http://127.0.0.1:{server.port}/e0 -> "
        f"http://127.0.0.1:{server.port}/moved",
    ]
    assert err.requirement == "TOPO-1"
    assert "added: dynamo.e9.rl#9" in str(err)


@pytest.mark.integration
def test_update_weights_verifies_topology_first(server: ScriptedServer) -> None:
    async def go() -> None:
        async with await ready_pool(server, [2, 4, 1]) as pool:
            server.script("GET", D, ok(body(*discovery_fleet(server, [2, 4]))))
            with pytest.raises(TopologyChangedError, match=r"removed: dynamo\.e2\.rl#2"):
                await pool.update_weights("/w")

    run(go())
    assert server.seen("POST") == []  # nothing paused on a changed fleet


@pytest.mark.integration
def test_resume_failure_after_update_is_reported(server: ScriptedServer) -> None:
    server.script("POST", "/e0/resume", jreply(500, {"status": "error", "message": "stuck"}))
    pool = AdminPool(engines_on(server, ["127.0.0.1"] * 2), environ={})
    with pytest.raises(AdminError) as info:
        run(using(pool, "update_weights", "/w"))
    assert "failed at resume" in str(info.value) and info.value.engine == "dynamo.e0.rl#0"
    assert all(r.ok for r in info.value.results["update_weights"].values())


@pytest.mark.integration
def test_static_urls_pool_redacts_and_drives(server: ScriptedServer) -> None:
    pool = AdminPool.from_urls([f"http://127.0.0.1:{server.port}/e3/"], environ={})
    assert run(using(pool, "resume"))[f"http://127.0.0.1:{server.port}/e3/"].ok
    assert [s.path for s in server.seen("POST")] == ["/e3/resume"]
    with pytest.raises(ConfigError) as info:
        AdminPool.from_urls(["http://bob:hunter2@127.0.0.1:1/x"])
    assert "hunter2" not in str(info.value) and info.value.requirement == "CRED-1"


@pytest.mark.parametrize(
    "url",
    ["http://e:8000/admin?token=hunter2", "http://e:8000/admin#hunter2", "ftp://e/?t=hunter2"],
)
def test_a_refused_static_url_is_quoted_without_its_query_or_fragment(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        AdminPool.from_urls([url])
    assert info.value.requirement == "WORKER-8"
    assert "hunter2" not in str(info.value) and "..." in str(info.value)


def test_one_tls_context_serves_every_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    # Loading the CA bundle costs ~50 ms: a pool of many engines must not load it per engine.
    import ssl

    from prime_rl_dynamo.http import tls_context

    built = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    tls_context.cache_clear()
    engines = [
        AdminEngine(
            f"dynamo.e{i}.rl#{i}",
            f"https://e{i}.example:9000/admin",
            1,
            ("dynamo", f"e{i}", "rl", i),
        )
        for i in range(50)
    ]
    pool = AdminPool(engines, environ={})
    client = DiscoveryClient("https://frontend.example:8001", ReadinessPolicy(50))
    asyncio.run(pool.aclose())
    asyncio.run(client.aclose())
    assert len(built) == 1, (
        f"{len(built)} TLS contexts built for 50 engines and one discovery client"
    )
