"""The admin pool against what stock vLLM answers (docs/findings.md, "Real engines").

Scripted servers on loopback reply as vLLM 0.31 does, measured behind Dynamo 1.6.1's sidecar:
``/health`` is 200 with an empty body; ``/update_weights`` is vLLM's native weight-transfer route
(400 for a ``weight_dir``), and a reload from a path is ``/collective_rpc`` ``reload_weights``.
tests/test_real_engines.py shows the same on real engines.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from _client_support import ScriptedServer, jreply

from prime_rl_dynamo.admin import AdminEngine, AdminPool
from prime_rl_dynamo.errors import AdminError, ConfigError

EMPTY_200 = (200, {}, b"")  # vLLM's /health: no content-type, no body
PAUSED = jreply(200, {"status": "paused"})
RESUMED = jreply(200, {"status": "resumed"})
RELOADED = jreply(200, {"results": [None]})
REFUSED = jreply(
    400,
    {
        "error": {
            "message": "'update_info' must be a JSON object or a list of per-worker JSON objects",
            "type": "invalid_request_error",
        }
    },
)


def _vllm(server: ScriptedServer, prefix: str) -> None:
    server.script("GET", f"{prefix}/health", EMPTY_200)
    server.script("POST", f"{prefix}/pause", PAUSED)
    server.script("POST", f"{prefix}/resume", RESUMED)
    server.script("POST", f"{prefix}/update_weights", REFUSED)
    server.script("POST", f"{prefix}/collective_rpc", RELOADED)


def _pool(server: ScriptedServer) -> AdminPool:
    # The sidecar lists admin_base_url with a trailing slash.
    return AdminPool(
        [
            AdminEngine("dynamo.tp1.rl#1", f"{server.url}/e1/", 1),
            AdminEngine("dynamo.tp2.rl#2", f"{server.url}/e2/", 2),
        ],
        environ={},
    )


def _run(pool: AdminPool, operation: str, *args: Any, **kwargs: Any) -> Any:
    async def go() -> Any:
        async with pool:
            return await getattr(pool, operation)(*args, **kwargs)

    return asyncio.run(go())


@pytest.mark.integration
def test_health_accepts_vllms_empty_200() -> None:
    with ScriptedServer() as server:
        _vllm(server, "/e1")
        _vllm(server, "/e2")
        results = _run(_pool(server), "health")
        assert sorted(r.status_code for r in results.values()) == [200, 200]
        assert all(r.ok for r in results.values())
        assert len(server.seen("GET")) == 2


@pytest.mark.integration
def test_health_still_fails_on_a_200_that_says_error() -> None:
    with ScriptedServer() as server:
        _vllm(server, "/e1")
        _vllm(server, "/e2")
        server.script("GET", "/e2/health", jreply(200, {"status": "error", "message": "down"}))
        with pytest.raises(AdminError) as info:
            _run(_pool(server), "health")
        assert info.value.engine == "dynamo.tp2.rl#2"


@pytest.mark.integration
def test_a_reload_on_stock_vllm_goes_through_collective_rpc() -> None:
    with ScriptedServer() as server:
        _vllm(server, "/e1")
        _vllm(server, "/e2")
        _run(_pool(server), "update_weights", "/ckpt/step-3", api="vllm")
        order = [(s.method, s.path.split("?")[0]) for s in server.seen("POST")]
        for prefix in ("/e1", "/e2"):
            mine = [path for _, path in order if path.startswith(prefix + "/")]
            assert mine == [f"{prefix}/pause", f"{prefix}/collective_rpc", f"{prefix}/resume"]
        rpc = [
            json.loads(s.body) for s in server.seen("POST") if s.path.endswith("/collective_rpc")
        ]
        assert (
            rpc
            == [
                {"method": "reload_weights", "args": [], "kwargs": {"weights_path": "/ckpt/step-3"}}
            ]
            * 2
        )


@pytest.mark.integration
def test_the_admin_apis_update_weights_is_refused_by_stock_vllm_and_every_engine_resumed() -> None:
    # The counterpart: the admin API's own form gets vLLM's 400, and the pool says so.
    with ScriptedServer() as server:
        _vllm(server, "/e1")
        _vllm(server, "/e2")
        with pytest.raises(AdminError) as info:
            _run(_pool(server), "update_weights", "/ckpt/step-3")
        assert sorted(r.status_code for r in info.value.results["update_weights"].values()) == [
            400,
            400,
        ]
        assert len(server.seen("POST", "/e1/resume")) == len(server.seen("POST", "/e2/resume")) == 1


def test_a_vllm_reload_without_a_path_is_refused_before_any_request() -> None:
    pool = AdminPool([AdminEngine("dynamo.tp1.rl#1", "http://127.0.0.1:9/", 1)], environ={})
    with pytest.raises(ConfigError):
        _run(pool, "update_weights", None, api="vllm")


@pytest.mark.integration
def test_the_reference_fleet_lists_admin_urls_with_a_trailing_slash() -> None:
    # As Dynamo's sidecar does (RE3). The counterpart: a client that appends "/pause" to the URL
    # as listed sends //pause and gets a 404; the package's pool joins it right.
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    topology = topology_from_dict(
        {"version": 1, "engines": [{"component": "backend", "world_size": 1}]}, source="test"
    )
    with start_reference_fleet(topology) as fleet:
        url = fleet.listing()["workers"][0]["admin_base_url"]
        assert url.endswith("/admin/")
        naive = httpx.post(f"{url}/pause", params={"mode": "keep"}, timeout=10)
        assert naive.status_code == 404
        pool = AdminPool([AdminEngine("dynamo.backend.rl#1", url, 1)], environ={})
        paused = _run(pool, "pause")
        assert [r.status_code for r in paused.values()] == [200]
        pauses = [r.path.split("?")[0] for r in fleet.recorder.requests() if "pause" in r.path]
        assert pauses == ["//pause", "/pause"]  # the naive client's, then the pool's
