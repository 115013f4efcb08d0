"""The discovery client against hostile listings and hosts: validation off the event loop,
bad punycode hosts refused in the right words, one LIST-6 comparison with the validator, and gzip
decoded per RFC 1952."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from typing import Any

import httpx
import msgspec
import pytest
from _client_support import body, worker

from prime_rl_dynamo.admin import AdminPool
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy, assess_snapshot
from prime_rl_dynamo.errors import ConfigError, PolicyError, ProtocolError, TransportError
from prime_rl_dynamo.validate import Snapshot, check_body, validate_body

BODY = body(worker("decode", 7, admin="http://127.0.0.1:9203", model=None))


#: No rank plan: the listing alone is judged.
NO_W = ReadinessPolicy(None, require_world_size=False)


def client(handler: Any, polling: PollingPolicy | None = None) -> DiscoveryClient:
    return DiscoveryClient(
        "http://127.0.0.1:8001", NO_W, polling, transport=httpx.MockTransport(handler)
    )


# --- Validation never blocks the event loop ------------------------------------------------------


def test_validation_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_validator(body: bytes) -> Any:
        started.set()
        # On the event loop this would wait for a task that cannot run: the test fails in 5 s.
        assert release.wait(5), "the event loop was blocked while the body was validated"
        return validate_body(body)

    monkeypatch.setattr("prime_rl_dynamo.validate.validate_body", slow_validator)

    async def go() -> Any:
        c = client(lambda r: httpx.Response(200, content=BODY))

        async def unblock() -> None:
            while not started.is_set():
                await asyncio.sleep(0.001)
            release.set()

        async with c:
            snapshot, _ = await asyncio.gather(c.fetch(), unblock())
        return snapshot

    assert len(asyncio.run(go()).workers) == 1


# --- A malformed punycode host is refused in the words of where it came from ---------------------

BAD_PUNYCODE = ["xn--", "xn--a", "xn--zz-", "ok.xn--"]


@pytest.mark.parametrize("host", BAD_PUNYCODE)
def test_a_configured_discovery_url_with_bad_punycode_is_a_config_error(host: str) -> None:
    with pytest.raises(ConfigError, match="punycode"):
        DiscoveryClient(f"http://{host}:8001", NO_W)


@pytest.mark.parametrize("host", BAD_PUNYCODE)
def test_an_admin_url_with_bad_punycode_is_a_config_error(host: str) -> None:
    with pytest.raises(ConfigError, match="WORKER-8"):
        AdminPool.check_url(f"http://{host}:8000/")


@pytest.mark.parametrize("host", BAD_PUNYCODE)
def test_a_redirect_to_bad_punycode_is_a_poll_4_refusal(host: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"location": f"http://{host}:8001/v1/rl/workers"})

    async def go() -> None:
        async with client(handler) as c:
            await c.fetch()

    with pytest.raises(PolicyError) as caught:
        asyncio.run(go())
    assert caught.value.requirement == "POLL-4"
    assert not caught.value.retryable


# --- The client's LIST-6 comparison is the validator's -------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("http://h:8000/a", "http://H:8000/a/", True),
        ("http://h/a", "http://h:80/a", True),
        ("http://h:8000/a", "http://h:8000/%61", True),
        ("http://[::1]:1/", "http://[0:0::1]:1", True),
        ("http://h:8000/a", "http://h:8000/A", False),
        ("http://h:8000/a", "https://h:8000/a", False),
    ],
)
def test_client_and_validator_agree_on_list_6(first: str, second: str, same: bool) -> None:
    doc = json.loads(BODY)
    w = doc["workers"][0]
    doc["workers"] = [
        {**w, "admin_base_url": first},
        {**w, "instance_id": 8, "admin_base_url": second},
    ]
    validator_says = "LIST-6" in {v.requirement for v in check_body(doc)}
    assert validator_says == same
    snapshot = msgspec.convert(doc, Snapshot)  # the same workers, past the validator
    if same:
        with pytest.raises(ProtocolError, match="LIST-6"):
            assess_snapshot(snapshot, inference_world_size=None, require_world_size=False)
    else:
        assess_snapshot(snapshot, inference_world_size=None, require_world_size=False)


# --- Gzip per RFC 1952: every member whole, nothing after the last -------------------------------


def _fetch_gzip(payload: bytes) -> Any:
    from _client_support import ScriptedServer

    with ScriptedServer() as server:
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        server.script("GET", "/v1/rl/workers", (200, headers, payload))

        async def go() -> Any:
            async with DiscoveryClient(server.url, NO_W) as c:
                return await c.fetch()

        return asyncio.run(go())


GZ = gzip.compress(BODY, mtime=0)


@pytest.mark.integration
def test_multi_member_gzip_is_one_body() -> None:
    half = len(BODY) // 2
    members = gzip.compress(BODY[:half], mtime=0) + gzip.compress(BODY[half:], mtime=0)
    assert len(_fetch_gzip(members).workers) == 1


@pytest.mark.integration
def test_a_whole_gzip_body_is_decoded() -> None:
    assert len(_fetch_gzip(GZ).workers) == 1


def _corrupt_crc(data: bytes) -> bytes:
    crc = int.from_bytes(data[-8:-4], "little") ^ 1
    return data[:-8] + crc.to_bytes(4, "little") + data[-4:]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        (GZ[:-8], "cut short"),  # no CRC-32 and ISIZE trailer
        (GZ[:-4], "cut short"),  # no ISIZE
        (GZ[: len(GZ) // 2], "cut short"),  # a stream cut in half
        (_corrupt_crc(GZ), "CRC"),
        (GZ[:-4] + (len(BODY) + 1).to_bytes(4, "little"), "length"),
        (GZ + b"junk", "after"),
        (GZ + b"\x00\x00", "after"),
        (GZ + GZ[:10], "cut short"),  # a second member cut in its header
    ],
    ids=["no-trailer", "no-isize", "half", "crc", "isize", "junk", "zeros", "second-cut"],
)
def test_every_broken_gzip_body_is_one_retried_poll_1_error(payload: bytes, needle: str) -> None:
    with pytest.raises(TransportError) as caught:
        _fetch_gzip(payload)
    error = caught.value
    assert (error.requirement, error.retryable) == ("POLL-1", True)
    assert needle in str(error) and "gzip" in str(error)


@pytest.mark.parametrize("host", BAD_PUNYCODE)
def test_a_listed_admin_url_with_bad_punycode_is_worker_8_from_wait_ready(host: str) -> None:
    listing = BODY.replace(b"http://127.0.0.1:9203", f"http://{host}:9203".encode())

    async def go() -> None:
        async with client(
            lambda r: httpx.Response(200, content=listing), PollingPolicy(timeout=5)
        ) as c:
            await c.wait_ready()

    with pytest.raises(ProtocolError) as caught:
        asyncio.run(go())
    assert [v.requirement for v in caught.value.violations] == ["WORKER-8"]
