"""The frontend profile's load (HTTP-7): its pollers' async client caps every reply as the
suite's other HTTP does. A hostile server on 127.0.0.1, bounded by pytest-timeout."""

from __future__ import annotations

import asyncio

import pytest
from _raw_server_support import RawServer, endless_chunks

from conformance.frontend import _load

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_the_load_is_bounded_too() -> None:
    # HTTP-7's pollers use their own async client: the same cap applies to every reply.
    server = RawServer(endless_chunks)
    try:
        outcome = asyncio.run(_load(server.url + "/v1/rl/workers", 2, 1, 30.0, 10.0, 1 << 20))
    finally:
        server.close()
    assert len(outcome["errors"]) == 2
    assert all("size cap of 1048576 bytes" in e for e in outcome["errors"])
