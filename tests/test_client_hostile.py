"""The discovery client against hostile listings and hosts (issue 12): validation off the event loop,
bad punycode hosts refused in the right words, one LIST-6 comparison with the validator, and gzip
decoded per RFC 1952."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import msgspec
import pytest

from prime_rl_dynamo.admin import AdminPool
from prime_rl_dynamo.client import DiscoveryClient, assess_snapshot
from prime_rl_dynamo.errors import ConfigError, ProtocolError, TransportError
from prime_rl_dynamo.validate import Snapshot, check_body, validate_body

BODY = json.dumps(
    {
        "protocol_version": 1,
        "namespace": "dynamo",
        "workers": [
            {
                "namespace": "dynamo",
                "component": "decode",
                "endpoint": "rl",
                "instance_id": 7,
                "transport": {"tcp": "127.0.0.1:1/7/dynamo/decode/rl"},
                "request_plane_url": "dyn://dynamo.decode.rl",
                "admin_base_url": "http://127.0.0.1:9203",
                "routes": [],
                "world_size": 1,
            }
        ],
    }
).encode()


def client(handler: Any, **kw: Any) -> DiscoveryClient:
    return DiscoveryClient(
        "http://127.0.0.1:8001",
        inference_world_size=None,
        transport=httpx.MockTransport(handler),
        **kw,
    )


# --- item 7: validation never blocks the event loop ---------------------------------------------


def test_validation_runs_off_the_event_loop() -> None:
    started, release = threading.Event(), threading.Event()

    def slow_validator(body: bytes) -> Any:
        started.set()
        # On the event loop this would wait for a task that cannot run: the test fails in 5 s.
        assert release.wait(5), "the event loop was blocked while the body was validated"
        return validate_body(body)

    async def go() -> Any:
        c = client(lambda r: httpx.Response(200, content=BODY), validator=slow_validator)

        async def unblock() -> None:
            while not started.is_set():
                await asyncio.sleep(0.001)
            release.set()

        async with c:
            snapshot, _ = await asyncio.gather(c.fetch(), unblock())
        return snapshot

    assert len(asyncio.run(go()).workers) == 1


# --- item 2: a malformed punycode host is refused in the words of where it came from -------------

BAD_PUNYCODE = ["xn--", "xn--a", "xn--zz-", "ok.xn--"]


@pytest.mark.parametrize("host", BAD_PUNYCODE)
def test_a_configured_discovery_url_with_bad_punycode_is_a_config_error(host: str) -> None:
    with pytest.raises(ConfigError, match="punycode"):
        DiscoveryClient(f"http://{host}:8001", inference_world_size=None)


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

    with pytest.raises(TransportError) as caught:
        asyncio.run(go())
    assert caught.value.requirement == "POLL-4"
    assert not caught.value.retryable


# --- item 20: the client's LIST-6 comparison is the validator's ----------------------------------


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
            assess_snapshot(snapshot, inference_world_size=None)
    else:
        assess_snapshot(snapshot, inference_world_size=None)
