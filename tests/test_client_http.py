"""Discovery client over real HTTP on loopback: size cap, gzip bomb, redirects, proxies, sync facade."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from _client_support import PD, ScriptedServer, body, jreply, ok, worker

from prime_rl_dynamo.client import (
    DiscoveryClient,
    PollingPolicy,
    ReadinessPolicy,
    discover,
    discover_sync,
)
from prime_rl_dynamo.errors import NotReadyError, PolicyError, ProtocolError

pytestmark = pytest.mark.integration  # every test talks to a server on loopback

PATH = "/v1/rl/workers"
FAST = PollingPolicy(poll_interval=0.01, backoff_initial=0.01, backoff_max=0.05, timeout=10.0)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def wait(
    url: str,
    policy: ReadinessPolicy | None = None,
    polling: PollingPolicy = FAST,
    **kw: Any,
) -> Any:
    """Wait on ``url`` with W = 8 and brisk polling unless told otherwise."""

    async def go() -> Any:
        async with DiscoveryClient(url, policy or ReadinessPolicy(8), polling, **kw) as client:
            return await client.wait_ready()

    return asyncio.run(go())


def test_ready_over_loopback_after_retries(server: ScriptedServer) -> None:
    server.script(
        "GET",
        PATH,
        jreply(500, {"error": "discovery_failed", "message": "store unavailable"}),
        jreply(429, {"error": "slow down"}, **{"retry-after": "0"}),
        ok(body(PD[0], PD[1])),  # pending: sum 4 of 8
        ok(body(*PD)),
    )
    ready = wait(server.url + "/v1/", ReadinessPolicy(8, model="m"))
    assert [w.label for w in ready.workers] == [
        "dynamo.decode.rl#3",
        "dynamo.prefill.rl#1",
        "dynamo.prefill.rl#2",
    ]
    gets = server.seen("GET", PATH)
    assert len(gets) == 5  # 500, 429, pending, ready, identical
    assert all(g.headers["accept-encoding"] == "identity" for g in gets)
    assert all("authorization" not in g.headers for g in gets)


def test_sync_facade_over_loopback(server: ScriptedServer) -> None:
    server.script("GET", PATH, ok(body(*PD)))
    ready = discover_sync(server.url, ReadinessPolicy(8), FAST)
    assert ready.plan().rank_offsets == [0, 4, 6]
    assert asyncio.run(discover(server.url, ReadinessPolicy(8), FAST)).world_size_sum == 8


def test_404_is_fatal_over_loopback(server: ScriptedServer) -> None:
    with pytest.raises(ProtocolError) as info:
        wait(server.url + "/wrong/prefix")
    assert "answered 404" in str(info.value)
    assert len(server.requests) == 1


def big_body(min_bytes: int) -> bytes:
    n = min_bytes // 350 + 1
    return body(*(worker(f"c{i:06d}", i, 1) for i in range(n)))


def test_oversized_body_with_length_is_refused(server: ScriptedServer) -> None:
    payload = big_body(300_000)
    server.script("GET", PATH, ok(payload))
    with pytest.raises(PolicyError) as info:
        wait(server.url, max_body_bytes=100_000)
    assert info.value.requirement == "POLL-3" and not info.value.retryable
    assert f"Content-Length {len(payload)}" in str(info.value)
    assert len(server.requests) == 1


def streamed(payload: bytes) -> tuple[int, dict[str, str], bytes]:
    """A 200 JSON reply sent without a Content-Length (the cap must count what arrives)."""
    return 200, {"content-type": "application/json", "x-stream-no-length": "1"}, payload


def test_oversized_streamed_body_is_refused_not_truncated(server: ScriptedServer) -> None:
    payload = big_body(300_000)
    server.script("GET", PATH, streamed(payload))
    with pytest.raises(PolicyError) as info:
        wait(server.url, max_body_bytes=100_000)
    assert info.value.requirement == "POLL-3"
    assert "refused, not truncated" in str(info.value)


def test_body_just_under_cap_is_accepted(server: ScriptedServer) -> None:
    payload = body(*PD)
    server.script("GET", PATH, streamed(payload))
    ready = wait(server.url, max_body_bytes=len(payload))
    assert ready.world_size_sum == 8


def test_gzip_bomb_hits_the_cap(server: ScriptedServer) -> None:
    # 16 MB of spaces compresses to ~16 KB: a server ignoring Accept-Encoding: identity.
    bomb = gzip.compress(b"{" + b" " * (16 * 1024 * 1024) + b"}", compresslevel=1)
    assert len(bomb) < 200_000
    server.script(
        "GET", PATH, (200, {"content-type": "application/json", "content-encoding": "gzip"}, bomb)
    )
    with pytest.raises(PolicyError) as info:
        wait(server.url, max_body_bytes=1_000_000)
    assert info.value.requirement == "POLL-3"
    assert "decoded" in str(info.value)


def test_gzip_body_within_cap_is_decoded(server: ScriptedServer) -> None:
    server.script(
        "GET",
        PATH,
        (
            200,
            {"content-type": "application/json", "content-encoding": "gzip"},
            gzip.compress(body(*PD)),
        ),
    )
    assert wait(server.url).world_size_sum == 8


def test_unknown_content_encoding_is_refused(server: ScriptedServer) -> None:
    server.script(
        "GET", PATH, (200, {"content-type": "application/json", "content-encoding": "br"}, b"xx")
    )
    with pytest.raises(PolicyError, match="Content-Encoding 'br'"):
        wait(server.url)


def test_same_origin_redirect_is_followed(server: ScriptedServer) -> None:
    server.script("GET", PATH, (308, {"location": "/gw/v1/rl/workers"}, b""))
    server.script("GET", "/gw" + PATH, ok(body(*PD)))
    assert wait(server.url).world_size_sum == 8
    assert len(server.seen("GET", "/gw" + PATH)) == 2


def test_cross_origin_redirect_is_refused(server: ScriptedServer) -> None:
    with ScriptedServer() as other:
        other.script("GET", PATH, ok(body(*PD)))
        server.script("GET", PATH, (302, {"location": other.url + PATH}, b""))
        with pytest.raises(PolicyError) as info:
            wait(server.url, headers={"Authorization": "Bearer secret"})
        assert info.value.requirement == "POLL-4"
        assert other.requests == []  # nothing, credentials included, reached the other origin


def test_proxy_environment_is_ignored_unless_asked(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedServer() as proxy:
        # A proxy that answers every request itself with a listing of a different fleet.
        proxy.route("GET", "http://127.0.0.1:1" + PATH, lambda _: ok(body(worker("proxy", 9, 8))))
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("http_proxy", proxy.url)
        server.script("GET", PATH, ok(body(*PD)))
        url = "http://127.0.0.1:1"
        # trust_env=False (default): the proxy is not used, so the closed port refuses. The wire
        # decides: the proxy saw nothing (the last poll's wording depends on how much of the
        # deadline a loaded machine left it: a refused connect, or a budget spent).
        with pytest.raises(NotReadyError):
            wait(url, polling=replace(FAST, timeout=3.0))
        assert proxy.requests == []
        ready = wait(url, trust_env=True)
        assert [w.component for w in ready.workers] == ["proxy"]
        assert proxy.requests and proxy.requests[0].path == "http://127.0.0.1:1" + PATH


def test_deadline_over_loopback_names_what_lacked(server: ScriptedServer) -> None:
    server.script("GET", PATH, ok(body(PD[0], worker("decode", 3, error="engine is dead"))))
    with pytest.raises(NotReadyError) as info:
        wait(server.url, ReadinessPolicy(8, model="m"), replace(FAST, timeout=0.3))
    text = str(info.value)
    assert "READY-1: dynamo.decode.rl#3 reports error: engine is dead" in text
    assert "READY-3: world sizes sum to 2, expected inference_world_size 8" in text
    reasons = info.value.reasons
    assert [(r.requirement, r.worker) for r in reasons] == [
        ("READY-1", "dynamo.decode.rl#3"),
        ("READY-3", None),
    ]
    assert json.loads(json.dumps([str(r) for r in reasons]))  # each renders as one plain line
