"""The discovery client against hostile listings and hosts (issue 12): validation off the event loop,
bad punycode hosts refused in the right words, one LIST-6 comparison with the validator, and gzip
decoded per RFC 1952."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx

from prime_rl_dynamo.client import DiscoveryClient
from prime_rl_dynamo.validate import validate_body

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
