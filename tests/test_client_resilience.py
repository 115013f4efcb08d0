"""Discovery client against hostile servers and hostile configuration.

Backoff that never overflows, a Retry-After the client cannot parse, an overall deadline against
a server that dribbles bytes, configuration that would turn into a tight loop or a hang, redirects
that must not carry credentials, and messages that name what SPEC asks for.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _client_support import (
    PD,
    Dribbler,
    FakeClock,
    ScriptedServer,
    body,
    fake_time_client,
    ok,
    worker,
)

from prime_rl_dynamo.client import (
    DiscoveryClient,
    PollingPolicy,
    ReadinessPolicy,
    discover_sync,
    normalize_discovery_url,
)
from prime_rl_dynamo.errors import ConfigError, NotReadyError, PolicyError, TransportError

URL = "http://frontend:8001"
PATH = "/v1/rl/workers"


def _client(transport: httpx.AsyncBaseTransport, clock: FakeClock, *args: Any, **kw: Any) -> Any:
    """``fake_time_client`` with this file's jitter seed."""
    return fake_time_client(transport, clock, *args, seed=3, **kw)


def _wait(client: DiscoveryClient) -> Any:
    async def go() -> Any:
        async with client:
            return await client.wait_ready()

    return asyncio.run(go())


# --- Backoff overflow ----------------------------------------------------------------------------


def test_backoff_never_overflows_after_thousands_of_failures() -> None:
    client = DiscoveryClient(
        URL, ReadinessPolicy(8), PollingPolicy(backoff_initial=0.1, backoff_max=5.0)
    )
    for failures in (1, 2, 64, 1025, 10_000, 10**9):
        delay = client.polling.backoff(failures, random.Random())
        assert 0 < delay <= 5.0


def test_a_frontend_down_for_hours_is_retried_until_the_deadline() -> None:
    # 4 hours of refused connections at the 5 s backoff cap: ~3,000 failed polls, no OverflowError.
    clock = FakeClock()
    refused = httpx.MockTransport(lambda request: (_ for _ in ()).throw(httpx.ConnectError("no")))
    with pytest.raises(NotReadyError) as info:
        _wait(_client(refused, clock, polling=PollingPolicy(timeout=4 * 3600.0)))
    assert info.value.requirement == "POLL-5"
    assert len(clock.sleeps) > 2000 and max(clock.sleeps) <= 5.0


# --- Retry-After '²' -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["\u00b2", "\u0661", "1\u00b2", "\uff11", "-1", "1.5", "  "])
def test_unparsable_retry_after_is_ignored_not_raised(value: str) -> None:
    clock = FakeClock()
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            # Header bytes as the server sent them: b"\xb2" decodes (latin-1) to '²'.
            return httpx.Response(429, headers=[(b"retry-after", value.encode("utf-8"))])
        return httpx.Response(200, content=body(*PD))

    ready = _wait(_client(httpx.MockTransport(handler), clock, polling=PollingPolicy(timeout=60.0)))
    assert ready.world_size_sum == 8
    assert clock.sleeps[0] <= 0.5  # the backoff (from half the poll interval), not the header


@pytest.mark.integration
def test_retry_after_byte_b2_over_loopback() -> None:
    with ScriptedServer() as server:
        server.script(
            "GET", PATH, (429, {"retry-after": "\u00b2"}, b"{}"), ok(body(*PD))
        )  # BaseHTTPRequestHandler writes header values as latin-1: the byte 0xB2
        ready = discover_sync(
            server.url,
            ReadinessPolicy(8),
            PollingPolicy(poll_interval=0.01, backoff_initial=0.01, timeout=10.0),
        )
        assert ready.world_size_sum == 8


# --- An overall deadline against a dribbling server ----------------------------------------------


@pytest.fixture
def dribbler() -> Iterator[Dribbler]:
    server = Dribbler()
    try:
        yield server
    finally:
        server.close()


def _timed(coro_factory: Any) -> tuple[BaseException | None, float]:
    start = time.monotonic()
    try:
        asyncio.run(coro_factory())
    except BaseException as exc:
        return exc, time.monotonic() - start
    return None, time.monotonic() - start


@pytest.mark.integration
@pytest.mark.parametrize("call", ["fetch", "snapshot", "poll_once"])
def test_one_byte_a_second_does_not_outlast_the_budget(dribbler: Dribbler, call: str) -> None:
    async def go() -> None:
        async with DiscoveryClient(
            dribbler.url, ReadinessPolicy(8), PollingPolicy(request_timeout=1.5)
        ) as client:
            if call == "poll_once":
                await client.poll_once()
            else:
                await getattr(client, call)(timeout=1.5)

    error, elapsed = _timed(go)
    assert isinstance(error, TransportError), error
    assert "1.5 s" in str(error) and error.requirement == "POLL-1"
    assert elapsed < 10.0  # did not hang (each read is fast; the whole exchange is not)


# --- Configuration that becomes a tight loop or a hang -------------------------------------------


@pytest.mark.parametrize(
    "name", ["backoff_initial", "backoff_max", "poll_interval", "request_timeout"]
)
@pytest.mark.parametrize("value", [0, 0.0, 1e-9])
def test_zero_intervals_are_refused(name: str, value: float) -> None:
    with pytest.raises(ConfigError, match=name):
        PollingPolicy(**{name: value})


# --- Redirects carry no credentials --------------------------------------------------------------


@pytest.mark.integration
def test_same_origin_redirect_drops_the_callers_headers() -> None:
    with ScriptedServer() as server:
        server.script("GET", PATH, (307, {"location": "/gw" + PATH}, b""))
        server.script("GET", "/gw" + PATH, ok(body(*PD)))
        ready = discover_sync(
            server.url,
            ReadinessPolicy(8),
            PollingPolicy(poll_interval=0.01, timeout=10.0),
            headers={"Authorization": "Bearer sk-redirect", "X-Api-Key": "k-redirect"},
        )
        assert ready.world_size_sum == 8
        first = server.seen("GET", PATH)
        followed = server.seen("GET", "/gw" + PATH)
        assert first and followed
        assert all(r.headers.get("authorization") == "Bearer sk-redirect" for r in first)
        for r in followed:
            assert "authorization" not in r.headers and "x-api-key" not in r.headers
            assert r.headers["accept"] == "application/json"  # the client's own headers stay


# --- W is never derived from the listing ---------------------------------------------------------


def test_discovery_without_inference_world_size_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        ReadinessPolicy(None)
    assert info.value.requirement == "READY-3"
    assert "never derived" in str(info.value)


@pytest.mark.integration
def test_discover_sync_without_a_policy_is_refused_before_any_request() -> None:
    with ScriptedServer() as server:
        server.script("GET", PATH, ok(body(worker("prefill", 1, 2))))
        with pytest.raises(ConfigError, match="policy must be a ReadinessPolicy"):
            discover_sync(server.url, None)  # type: ignore[arg-type]
        assert server.requests == []


def test_discovery_without_world_sizes_may_omit_w() -> None:
    # A weight transfer that needs no rank plan (filesystem) has no W to check.
    client = DiscoveryClient(URL, ReadinessPolicy(None, require_world_size=False))
    assert client.policy.inference_world_size is None


def test_plan_without_w_is_refused_not_derived() -> None:
    clock = FakeClock()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body(*PD)))
    ready = _wait(_client(transport, clock, ReadinessPolicy(None, require_world_size=False)))
    with pytest.raises(ConfigError) as info:
        ready.plan()
    assert info.value.requirement == "READY-3"
    assert ready.plan(inference_world_size=8).inference_world_size == 8


# --- POLL-4 names the Location, IPv6 in brackets, port 0 kept ------------------------------------


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("http://[::1]:35557/v1/rl/workers", "http://[::1]:35557"),
        ("http://evil:0/v1/rl/workers", "http://evil:0"),
        ("https://frontend:8001/v1/rl/workers", "https://frontend:8001"),
    ],
)
def test_poll_4_refusal_names_the_location(location: str, shown: str) -> None:
    clock = FakeClock()
    transport = httpx.MockTransport(
        lambda request: httpx.Response(302, headers={"location": location})
    )
    with pytest.raises(PolicyError) as info:
        _wait(_client(transport, clock))
    message = str(info.value)
    assert info.value.requirement == "POLL-4"
    assert f"Location {location!r}" in message
    assert f"origin {shown}" in message


def test_poll_4_refusal_redacts_user_info_in_the_location() -> None:
    clock = FakeClock()
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            302, headers={"location": "http://bob:hunter2@frontend:8001/v1/rl/workers"}
        )
    )
    with pytest.raises(PolicyError) as info:
        _wait(_client(transport, clock))
    assert "hunter2" not in str(info.value) and "***@frontend:8001" in str(info.value)


# --- Ports that can never be reached -------------------------------------------------------------


@pytest.mark.parametrize("port", ["0", "65536", "99999", "-1"])
def test_discovery_url_with_an_impossible_port_is_refused(port: str) -> None:
    with pytest.raises(ConfigError, match="port"):
        normalize_discovery_url(f"http://frontend:{port}")


def test_discovery_url_with_the_highest_port_is_kept() -> None:
    assert normalize_discovery_url("http://frontend:65535") == "http://frontend:65535" + PATH


# --- the same rules reach the configuration ------------------------------------------------------


@pytest.mark.parametrize("port", ["0", "65536", "99999"])
def test_config_refuses_an_impossible_discovery_port(port: str) -> None:
    from prime_rl_dynamo.config import DynamoClientConfig

    with pytest.raises(ConfigError, match="1 to 65535"):
        DynamoClientConfig(dynamo_discovery_url=f"http://f:{port}", inference_world_size=8)


def test_config_refuses_an_allow_list_entry_with_a_port() -> None:
    from prime_rl_dynamo.config import DynamoClientConfig

    with pytest.raises(ConfigError, match=r"10\.0\.0\.5:8000") as info:
        DynamoClientConfig(
            dynamo_discovery_url="http://f:8001",
            inference_world_size=8,
            admin_allowed_hosts=("10.0.0.5:8000",),
        )
    assert info.value.requirement == "CRED-3"


@pytest.mark.parametrize("name", ["request_timeout", "poll_interval", "discovery_timeout"])
def test_config_refuses_sub_millisecond_intervals(name: str) -> None:
    from prime_rl_dynamo.config import DynamoClientConfig

    with pytest.raises(ConfigError, match=name):
        DynamoClientConfig(
            dynamo_discovery_url="http://f:8001", inference_world_size=8, **{name: 1e-9}
        )


def test_poll_4_refusal_never_echoes_a_credential_in_the_location() -> None:
    clock = FakeClock()
    transport = httpx.MockTransport(
        lambda request: httpx.Response(302, headers={"location": "http://evil:1/?t=sk-live-4242"})
    )
    client = _client(transport, clock, headers={"Authorization": "Bearer sk-live-4242"})
    with pytest.raises(PolicyError) as info:
        _wait(client)
    assert "sk-live-4242" not in str(info.value) and "<redacted>" in str(info.value)
