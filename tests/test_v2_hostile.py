"""Protocol 2 against hostile servers on 127.0.0.1 (issue 22, items 9, 16, 18, 19): the v2 client
never polls faster than its interval, refuses what v1 refuses and accepts what v1 accepts, and
the frontend-v2 profile takes -H/TLS/body-cap options as every profile does."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.errors import NotReadyError, ProtocolError
from prime_rl_dynamo.v2 import check_body_v2, fingerprint
from prime_rl_dynamo.validate import check_body
from tests._client_support import ScriptedServer, Seen, body, worker

pytestmark = pytest.mark.integration  # hostile servers on 127.0.0.1

PATH = "/v1/rl/workers"
V2 = {"content-type": "application/json", "Dynamo-RL-Protocol": "2"}


def v2_listing(world_size: int = 2) -> dict[str, Any]:
    doc = json.loads(body(worker("backend", 1, world_size=world_size)))
    for w in doc["workers"]:
        w["health"] = "ready"
        w["parallel"] = {"tensor": world_size, "pipeline": 1, "data": 1}
    doc["protocol_version"] = 2
    doc["fingerprint"] = fingerprint(doc["namespace"], doc["workers"])
    return doc


RAW = json.dumps(v2_listing()).encode()


def _fetch(url: str, **kw: Any) -> Any:
    async def go() -> Any:
        async with DiscoveryClient(url, ReadinessPolicy(2), **kw) as client:
            return await client.fetch()

    return asyncio.run(go())


# --- item 16: never faster than the interval ----------------------------------------------------


@pytest.mark.parametrize("answer", ["new-etag-each-time", "immediate-304"])
def test_wait_ready_under_v2_never_polls_faster_than_its_interval(answer: str) -> None:
    counter = itertools.count()

    def reply(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        n = next(counter)
        if answer == "immediate-304" and "if-none-match" in seen.headers:
            return 304, {"Dynamo-RL-Protocol": "2", "etag": '"e0"'}, b""
        etag = f'"e{n}"' if answer == "new-etag-each-time" else '"e0"'
        return 200, {**V2, "etag": etag}, RAW

    with ScriptedServer() as server:
        server.route("GET", PATH, reply)

        async def go() -> None:
            async with DiscoveryClient(
                server.url,
                ReadinessPolicy(99),
                PollingPolicy(poll_interval=0.25, timeout=1.5),
                progress=False,
            ) as client:
                await client.wait_ready()

        with pytest.raises(NotReadyError):
            asyncio.run(go())
        polls = len(server.seen("GET", PATH))
    # 1.5 s at one GET per 0.25 s is 7; a client that never sleeps sends hundreds.
    assert polls <= 10, polls


# --- item 19 and 9: one validator for both versions --------------------------------------------


def _as_v1(raw: bytes) -> bytes:
    # The same bytes claiming protocol 1 (v2's members are extensions v1 ignores, BODY-5).
    return raw.replace(b'"protocol_version": 2', b'"protocol_version": 1', 1)


def test_a_repeated_member_is_refused_by_both_versions() -> None:
    raw = RAW.replace(b'"model": "m"', b'"model": "m", "model": "n"')
    assert any(v.requirement == "BODY-6" for v in check_body(_as_v1(raw)))
    assert any(v.requirement == "BODY-6" for v in check_body_v2(raw))
    twice = RAW.replace(b'"health": "ready"', b'"health": "ready", "health": "unhealthy"')
    assert any(v.requirement == "BODY-6" for v in check_body_v2(twice))
    with ScriptedServer() as server:
        server.script("GET", PATH, (200, {**V2, "etag": '"a"'}, raw))
        with pytest.raises(ProtocolError, match="BODY-6"):
            _fetch(server.url)


def test_a_huge_number_in_an_extension_member_is_accepted_by_both_versions() -> None:
    raw = RAW.replace(b'"model": "m"', b'"model": "m", "x_extension": 1e999')
    assert check_body(_as_v1(raw)) == []
    assert check_body_v2(raw) == []
    with ScriptedServer() as server:
        server.script("GET", PATH, (200, {**V2, "etag": '"a"'}, raw))
        snapshot = _fetch(server.url)
    assert len(snapshot.workers) == 1


def test_a_deeply_nested_v2_body_is_refused_not_a_recursion_error() -> None:
    raw = RAW.replace(b'"model": "m"', b'"model": "m", "x": ' + b"[" * 50_000 + b"]" * 50_000)
    assert check_body_v2(raw)[0].requirement.startswith("BODY")
    with ScriptedServer() as server:
        server.script("GET", PATH, (200, {**V2, "etag": '"a"'}, raw))
        with pytest.raises(ProtocolError):
            _fetch(server.url)


def test_a_304_to_a_get_without_if_none_match_is_refused() -> None:
    # The first v2 listing has no ETag: the next GET carries no validator, and a 304 to it says
    # nothing about the fleet.
    with ScriptedServer() as server:
        server.script("GET", PATH, (200, V2, RAW), (304, {"Dynamo-RL-Protocol": "2"}, b""))

        async def go() -> Any:
            async with DiscoveryClient(server.url, ReadinessPolicy(2)) as client:
                await client.fetch()
                return await client.fetch()

        with pytest.raises(ProtocolError, match="304"):
            asyncio.run(go())
        assert "if-none-match" not in server.seen("GET", PATH)[1].headers


# --- item 18: the frontend-v2 profile's client options -----------------------------------------


def test_the_frontend_v2_profile_sends_the_headers_and_applies_the_body_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from prime_rl_dynamo.cli import main

    def gated(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        if seen.headers.get("x-gateway-token") != "tok3n-xyz":
            return 401, {"content-type": "application/json"}, b'{"error":"token"}'
        return 200, {**V2, "etag": f'"{json.loads(RAW)["fingerprint"]}"'}, RAW

    with ScriptedServer() as server:
        server.route("GET", PATH, gated)
        report = tmp_path / "r.json"
        args = ["conformance", server.url, "--profile", "frontend-v2", "--check", "V2-2::body"]
        args += ["-H", "X-Gateway-Token: tok3n-xyz", "-q", "--json-report", str(report)]
        main(args)
        (result,) = json.loads(report.read_text())["results"]
        assert result["status"] == "pass", result["message"]
        main([*args, "--max-body-bytes", "100"])
        (result,) = json.loads(report.read_text())["results"]
        assert result["status"] != "pass"
        assert "size cap" in result["message"]
    capsys.readouterr()
