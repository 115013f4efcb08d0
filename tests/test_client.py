"""Discovery client, unit level: URL forms, readiness (READY-*), retry/fatal paths (POLL-*), deadline.

HTTP is swapped with httpx.MockTransport and time with a fake clock; the loopback tests are in
test_client_http.py.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import pytest
from _client_support import PD, SMG_BODY, VALIDATE, FakeClock, body, fake_time_client, worker
from hypothesis import given
from hypothesis import strategies as st

from prime_rl_dynamo.client import (
    DiscoveryClient,
    PollingPolicy,
    ReadinessPolicy,
    assess_snapshot,
    normalize_discovery_url,
)
from prime_rl_dynamo.errors import (
    ConfigError,
    DialectError,
    NotReadyError,
    PendingError,
    PolicyError,
    ProtocolError,
    TopologyError,
    TransportError,
)
from prime_rl_dynamo.requirements import Reason

URL = "http://frontend:8001"
FULL = "http://frontend:8001/v1/rl/workers"


# --- URL forms ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://frontend:8001", FULL),
        ("http://frontend:8001/", FULL),
        ("http://frontend:8001/v1", FULL),
        ("http://frontend:8001/v1/", FULL),
        ("http://frontend:8001/v1/rl/workers", FULL),
        ("http://frontend:8001/v1/rl/workers/", FULL),
        ("  https://Frontend:8001/v1 ", "https://frontend:8001/v1/rl/workers"),
        ("http://gw/prefix/v1", "http://gw/prefix/v1/rl/workers"),
        ("http://[::1]:8001", "http://[::1]:8001/v1/rl/workers"),
    ],
)
def test_url_forms_normalise(given: str, expected: str) -> None:
    assert normalize_discovery_url(given) == expected


@pytest.mark.parametrize(
    ("given", "needle", "requirement"),
    [
        ("http://alice:s3cret@frontend:8001", "CRED-1", "CRED-1"),
        ("http://frontend:8001/v1?x=1", "query", None),
        ("http://frontend:8001/v1#top", "fragment", None),
        ("ftp://frontend:8001", "http:// or https://", None),
        ("frontend:8001", "http:// or https://", None),
        ("", "non-empty", None),
        ("http:///v1", "host", None),
        # A token in a query or fragment, or a password in a URL that does not parse, is cut.
        ("http://frontend:8001/v1?api_key=s3cret", "'http://frontend:8001/v1...'", None),
        ("http://frontend:8001/v1#s3cret", "fragment", None),
        ("ftp://frontend/?token=s3cret", "http:// or https://", None),
        ("http://frontend:0/?token=s3cret", "port 0", None),
        ("http://alice:s3cret@[::1/", "http://***@", None),
    ],
)
def test_unusable_urls_are_refused(given: str, needle: str, requirement: str | None) -> None:
    with pytest.raises(ConfigError) as info:
        normalize_discovery_url(given)
    assert needle in str(info.value)
    assert info.value.requirement == requirement
    assert "s3cret" not in str(info.value)


# --- readiness (pure) ---------------------------------------------------------------------------


def assess(
    *workers: dict[str, Any], world: int | None = 8, **kw: Any
) -> tuple[Sequence[Any], list[str]]:
    matching, reasons = assess_snapshot(VALIDATE(body(*workers)), inference_world_size=world, **kw)
    assert all(isinstance(r, Reason) for r in reasons)
    return matching, [str(r) for r in reasons]


def test_ready_snapshot_has_no_reasons_and_canonical_order() -> None:
    matching, reasons = assess(*reversed(PD), model="m")
    assert reasons == []
    assert [w.label for w in matching] == [
        "dynamo.decode.rl#3",
        "dynamo.prefill.rl#1",
        "dynamo.prefill.rl#2",
    ]


def test_error_worker_is_pending_ready_1() -> None:
    _, reasons = assess(
        PD[0], PD[1], worker("decode", 3, error="Unavailable: TCP connection failed"), model="m"
    )
    assert any(
        r.startswith("READY-1: dynamo.decode.rl#3 reports error: Unavailable") for r in reasons
    )
    # The error worker has no model: it still holds readiness back.
    assert any(r.startswith("READY-3: world sizes sum to 4") for r in reasons)


def test_missing_admin_or_world_size_is_pending_ready_2() -> None:
    snapshot = VALIDATE(body(PD[0], PD[1], worker("decode", 3, 4, admin=None)))
    _, structured = assess_snapshot(snapshot, inference_world_size=8, model="m")
    # The worker is a field: code reads it, never the message.
    assert [(r.requirement, r.worker) for r in structured] == [("READY-2", "dynamo.decode.rl#3")]
    _, reasons = assess(PD[0], PD[1], worker("decode", 3, 4, admin=None), model="m")
    assert reasons == [
        "READY-2: dynamo.decode.rl#3 lacks admin_base_url, which the weight-transfer mode needs"
    ]
    _, reasons = assess(PD[0], PD[1], worker("decode", 3, None, admin=None), model="m")
    assert "lacks admin_base_url and world_size" in reasons[0]
    # A mode that needs neither (filesystem with external admin, W unknown) is ready.
    _, reasons = assess(worker("decode", 3, None, admin=None), world=None, require_admin=False)
    assert reasons == []


def test_sum_mismatch_is_pending_ready_3_both_directions() -> None:
    _, reasons = assess(*PD, world=9)
    assert reasons == [
        "READY-3: world sizes sum to 8, expected inference_world_size 9 "
        "(dynamo.decode.rl#3=4, dynamo.prefill.rl#1=2, dynamo.prefill.rl#2=2)"
    ]
    _, reasons = assess(*PD, world=7)
    assert "sum to 8, expected inference_world_size 7" in reasons[0]


def test_other_model_and_components_are_ignored_ready_5() -> None:
    other = worker("decode", 4, 4, model="other")
    matching, reasons = assess(*PD, other, model="m")
    assert reasons == []
    assert "dynamo.decode.rl#4" not in [w.label for w in matching]
    matching, reasons = assess(*PD, world=4, components={"prefill"})
    assert reasons == []
    assert {w.component for w in matching} == {"prefill"}


def test_worker_without_model_matches_a_configured_model_ready_5() -> None:
    # Real Dynamo omits `model` when it does not know it: such a worker must still count.
    unnamed = [worker("prefill", 1, 2, model=None), worker("decode", 3, 4, model=None)]
    matching, reasons = assess(*unnamed, world=6, model="m")
    assert reasons == []
    assert [w.label for w in matching] == ["dynamo.decode.rl#3", "dynamo.prefill.rl#1"]


def test_nothing_matching_is_pending_ready_6() -> None:
    _, reasons = assess(worker("decode", 4, 4, model="other"), model="m")
    assert len(reasons) == 1
    assert reasons[0].startswith("READY-6: no worker matches model 'm'")
    assert "dynamo.decode.rl#4 (model 'other')" in reasons[0]
    _, reasons = assess(model="m")
    assert reasons[0].startswith("READY-6") and "listed: none" in reasons[0]


def test_duplicate_admin_urls_are_fatal_poll_2() -> None:
    same = "http://127.0.0.1:9000/admin"
    snap = VALIDATE(body(worker("prefill", 1, 2), worker("decode", 3, 6)))
    # Duplicates are made after validation: the validator refuses LIST-6 itself, the client must too.
    workers = [_with(w, admin_base_url=same) for w in snap.workers]
    with pytest.raises(ProtocolError) as info:
        assess_snapshot(_Snap(workers), inference_world_size=8)
    assert info.value.requirement == "POLL-2"
    assert info.value.requirements == ["LIST-6"]
    assert "dynamo.decode.rl#3" in str(info.value) and "dynamo.prefill.rl#1" in str(info.value)
    # Trailing slash or case do not make two engines different.
    workers = [
        _with(snap.workers[0], admin_base_url=same),
        _with(snap.workers[1], admin_base_url="HTTP://127.0.0.1:9000/admin/"),
    ]
    with pytest.raises(ProtocolError, match="LIST-6"):
        assess_snapshot(_Snap(workers), inference_world_size=8)


def test_duplicate_identities_are_fatal_poll_2() -> None:
    snap = VALIDATE(body(worker("prefill", 1, 2)))
    twin = _with(snap.workers[0], admin_base_url="http://127.0.0.1:9999/other")
    with pytest.raises(ProtocolError) as info:
        assess_snapshot(_Snap([snap.workers[0], twin]), inference_world_size=4)
    assert info.value.requirements == ["LIST-2"]
    assert "dynamo.prefill.rl#1" in str(info.value)


class _Snap:
    def __init__(self, workers: Sequence[Any]) -> None:
        self.protocol_version = 1
        self.namespace = "dynamo"
        self.workers = tuple(workers)


class _Override:
    """A worker with some attributes replaced (validated workers are frozen)."""

    def __init__(self, base: Any, **changes: Any) -> None:
        self._base = base
        self._changes = changes

    def __getattr__(self, name: str) -> Any:
        if name in self._changes:
            return self._changes[name]
        return getattr(self._base, name)


def _with(w: Any, **changes: Any) -> Any:
    return _Override(w, **changes)


# --- the poll loop ------------------------------------------------------------------------------

Step = Callable[[httpx.Request], httpx.Response] | httpx.Response | Exception


def scripted(*steps: Step) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A transport replaying ``steps`` in order (the last repeats); returns it and the request log."""
    seen: list[httpx.Request] = []
    queue = list(steps)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        step = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(step, Exception):
            raise step
        if isinstance(step, httpx.Response):
            # A fresh streaming copy each time, so the client reads it as it reads a real socket.
            return httpx.Response(
                step.status_code, headers=step.headers, stream=_Stream(step.content)
            )
        return step(request)

    return httpx.MockTransport(handler), seen


class _Stream(httpx.AsyncByteStream):
    def __init__(self, data: bytes) -> None:
        self._data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i in range(0, len(self._data), 1000):
            yield self._data[i : i + 1000]


def good(*workers: dict[str, Any]) -> httpx.Response:
    return httpx.Response(
        200, content=body(*(workers or PD)), headers={"content-type": "application/json"}
    )


def make(
    transport: httpx.MockTransport,
    clock: FakeClock,
    policy: ReadinessPolicy | None = None,
    polling: PollingPolicy | None = None,
    **kw: Any,
) -> DiscoveryClient:
    """W = 8 and a 60 s deadline unless ``policy`` and ``polling`` say otherwise."""
    polling = PollingPolicy(timeout=60.0) if polling is None else polling
    client: DiscoveryClient = fake_time_client(transport, clock, policy, polling, **kw)
    return client


def run(client: DiscoveryClient, **kw: Any) -> Any:
    async def go() -> Any:
        async with client:
            return await client.wait_ready(**kw)

    return asyncio.run(go())


def test_ready_needs_two_identical_polls_ready_4() -> None:
    clock = FakeClock()
    transport, seen = scripted(good())
    ready = run(make(transport, clock, ReadinessPolicy(8, model="m")))
    assert len(seen) == 2
    assert clock.sleeps == [1.0]
    assert ready.polls == 2
    assert ready.world_size_sum == 8
    assert ready.workers[0].label == "dynamo.decode.rl#3"
    assert seen[0].url == FULL
    assert seen[0].headers["accept-encoding"] == "identity"


def test_stable_polls_one_returns_first_ready() -> None:
    clock = FakeClock()
    transport, seen = scripted(good())
    run(make(transport, clock, ReadinessPolicy(8, stable_polls=1)))
    assert len(seen) == 1 and clock.sleeps == []


def test_changing_polls_keep_pending_until_identical() -> None:
    clock = FakeClock()
    moved = worker("decode", 3, 4, admin="http://127.0.0.1:9555/decode")
    transport, seen = scripted(good(), good(PD[0], PD[1], moved), good(PD[0], PD[1], moved))
    ready = run(make(transport, clock))
    assert len(seen) == 3
    assert ready.workers[0].admin_base_url == "http://127.0.0.1:9555/decode"


def test_retries_transport_5xx_429_then_ready_poll_1() -> None:
    clock = FakeClock()
    transport, seen = scripted(
        httpx.ConnectError("connection refused"),
        httpx.Response(503, json={"error": "discovery_failed", "message": "etcd down"}),
        httpx.Response(500, json={"error": "discovery_failed", "message": "boom"}),
        httpx.Response(429, headers={"retry-after": "7"}),
        httpx.ReadTimeout("slow"),
        good(),
    )
    ready = run(make(transport, clock))
    assert len(seen) == 7
    assert ready.polls == 7
    # Backoff doubles from half the poll interval (1 s) with equal jitter: each sleep in
    # [ceiling/2, ceiling], the ceiling capped at backoff_max (5 s).
    for sleep, ceiling in zip(clock.sleeps[:3], [0.5, 1.0, 2.0], strict=True):
        assert ceiling / 2 <= sleep <= ceiling
    assert clock.sleeps[3] == 7.0  # Retry-After honoured over a smaller backoff
    assert 2.5 <= clock.sleeps[4] <= 5.0
    assert clock.sleeps[5] == 1.0  # first ready poll -> poll interval, then the identical one


def test_backoff_is_capped_and_seedable() -> None:
    def delays(seed: int) -> list[float]:
        clock = FakeClock()
        transport, _ = scripted(httpx.ConnectError("down"))
        with pytest.raises(NotReadyError):
            run(_seeded(transport, clock, seed))
        return clock.sleeps

    a, b = delays(1), delays(1)
    assert a == b
    assert max(a) <= 2.0
    assert delays(2) != a


def _seeded(transport: httpx.MockTransport, clock: FakeClock, seed: int) -> DiscoveryClient:
    return DiscoveryClient(
        URL,
        ReadinessPolicy(8),
        PollingPolicy(timeout=30.0, backoff_max=2.0),
        transport=transport,
        clock=clock.monotonic,
        wall_clock=clock.time,
        sleep=clock.sleep,
        rng=random.Random(seed),
    )


def test_retry_after_http_date() -> None:
    clock = FakeClock()
    when = email.utils.formatdate(clock.time() + 12, usegmt=True)
    transport, seen = scripted(httpx.Response(429, headers={"retry-after": when}), good())
    run(make(transport, clock))
    assert 11.0 <= clock.sleeps[0] <= 12.0
    assert len(seen) == 3


def test_retry_after_past_deadline_gives_up_at_once() -> None:
    clock = FakeClock()
    transport, seen = scripted(httpx.Response(503, headers={"retry-after": "3600"}))
    with pytest.raises(NotReadyError) as info:
        run(make(transport, clock, polling=PollingPolicy(timeout=60.0)))
    assert len(seen) == 1
    assert "retry after 3600.0 s, past the deadline" in str(info.value)
    assert info.value.requirement == "POLL-5"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 418])
def test_other_4xx_is_fatal_without_retry(status: int) -> None:
    clock = FakeClock()
    transport, seen = scripted(httpx.Response(status, text="nope"))
    with pytest.raises(ProtocolError) as info:
        run(make(transport, clock))
    assert len(seen) == 1
    assert info.value.requirement == "POLL-2"
    assert f"answered {status}" in str(info.value)


def test_wrong_protocol_version_is_fatal() -> None:
    clock = FakeClock()
    transport, seen = scripted(httpx.Response(200, content=body(*PD, version=2)))
    with pytest.raises(ProtocolError) as info:
        run(make(transport, clock))
    assert len(seen) == 1
    assert not isinstance(info.value, DialectError)
    assert any(v.pointer == "/protocol_version" for v in info.value.violations)


def test_smg_dialect_is_fatal() -> None:
    clock = FakeClock()
    transport, seen = scripted(httpx.Response(200, content=SMG_BODY))
    with pytest.raises(DialectError) as info:
        run(make(transport, clock))
    assert len(seen) == 1
    assert info.value.requirement == "DIALECT-1"


def test_schema_violation_is_fatal() -> None:
    clock = FakeClock()
    bad = json.loads(body(*PD))
    bad["workers"][0]["world_size"] = 0
    transport, seen = scripted(httpx.Response(200, json=bad))
    with pytest.raises(ProtocolError) as info:
        run(make(transport, clock))
    assert len(seen) == 1
    assert "WORKER-9" in info.value.requirements


def test_invalid_json_is_fatal() -> None:
    clock = FakeClock()
    transport, seen = scripted(httpx.Response(200, content=b"{not json"))
    with pytest.raises(ProtocolError):
        run(make(transport, clock))
    assert len(seen) == 1


def test_deadline_message_names_engines_sum_and_poll() -> None:
    clock = FakeClock()
    dead = worker("decode", 3, error="Unavailable: TCP connection to 127.0.0.1:4 failed")
    transport, seen = scripted(good(PD[0], PD[1], dead))
    with pytest.raises(NotReadyError) as info:
        run(make(transport, clock, ReadinessPolicy(8, model="m"), PollingPolicy(timeout=5.0)))
    message = str(info.value)
    assert "POLL-5" in message and "after 5.0 s" in message
    assert "READY-1: dynamo.decode.rl#3 reports error: Unavailable" in message
    assert "READY-3: world sizes sum to 4, expected inference_world_size 8" in message
    assert "dynamo.decode.rl#3=error" in message
    assert len(seen) == 5  # t = 0, 1, 2, 3, 4; at t = 5 the deadline has come, no further poll
    assert info.value.last is not None and len(info.value.last.workers) == 3
    assert [r.requirement for r in info.value.reasons] == ["READY-1", "READY-3"]
    assert not isinstance(info.value, PendingError)  # "keep polling" never catches the deadline


def test_deadline_message_names_differing_poll() -> None:
    clock = FakeClock()
    a = good()
    b = good(PD[0], PD[1], worker("decode", 3, 4, admin="http://127.0.0.1:9555/decode"))
    transport, _ = scripted(a, b, a, b, a, b, a, b)
    with pytest.raises(NotReadyError) as info:
        run(make(transport, clock, polling=PollingPolicy(timeout=3.5)))
    assert "READY-4: poll 4 differs from poll 3: moved: dynamo.decode.rl#3: admin_base_url" in str(
        info.value
    )


def test_deadline_after_transport_failures_says_so() -> None:
    clock = FakeClock()
    transport, _ = scripted(httpx.ConnectError("connection refused"))
    with pytest.raises(NotReadyError) as info:
        run(make(transport, clock, polling=PollingPolicy(timeout=2.0)))
    assert (
        "last poll failed: POLL-1: GET http://frontend:8001/v1/rl/workers failed: ConnectError"
        in str(info.value)
    )


def test_pending_then_transport_error_resets_stability() -> None:
    clock = FakeClock()
    transport, seen = scripted(good(), httpx.ConnectError("blip"), good(), good())
    run(make(transport, clock))
    assert len(seen) == 4  # the failure in between forces two fresh identical polls


def test_poll_once_raises_pending_with_reasons() -> None:
    transport, _ = scripted(good(PD[0]))

    async def go() -> None:
        async with make(transport, FakeClock()) as client:
            with pytest.raises(PendingError) as info:
                await client.poll_once()
            assert info.value.requirement == "READY-3"
            assert [r.requirement for r in info.value.reasons] == ["READY-3"]
            assert info.value.discovery.workers[0].label == "dynamo.prefill.rl#1"
            assert not isinstance(info.value, NotReadyError)

    asyncio.run(go())


def test_discovery_plans_heterogeneous_fleet() -> None:
    clock = FakeClock()
    transport, _ = scripted(good())
    ready = run(make(transport, clock))
    plan = ready.plan("prime-nccl")
    assert plan.rank_offsets == [0, 4, 6]
    assert plan.group_world_size == 9
    native = ready.plan("vllm-native-nccl")
    assert native.rank_offsets == [1, 5, 7]
    with pytest.raises(TopologyError):
        ready.plan("prime-nccl", inference_world_size=9)


def test_cross_origin_redirect_is_refused_mock() -> None:
    clock = FakeClock()
    transport, seen = scripted(
        httpx.Response(302, headers={"location": "http://evil:8001/v1/rl/workers"})
    )
    with pytest.raises(PolicyError) as info:
        run(make(transport, clock))
    assert info.value.requirement == "POLL-4" and not info.value.retryable
    assert [str(r.url) for r in seen] == [FULL]


def test_redirect_loop_is_refused() -> None:
    clock = FakeClock()
    transport, seen = scripted(httpx.Response(307, headers={"location": "/v1/rl/workers"}))
    with pytest.raises(PolicyError, match="more than 5 redirects"):
        run(make(transport, clock))
    assert len(seen) == 6


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: ReadinessPolicy(0), "inference_world_size"),
        (lambda: ReadinessPolicy(True), "inference_world_size"),
        (lambda: PollingPolicy(timeout=-1), "timeout"),
        (lambda: PollingPolicy(poll_interval=float("nan")), "poll_interval"),
        (lambda: ReadinessPolicy(8, stable_polls=0), "stable_polls"),
        (lambda: DiscoveryClient(URL, ReadinessPolicy(8), max_body_bytes=0), "max_body_bytes"),
    ],
)
def test_bad_client_arguments_are_config_errors(build: Any, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        build()


# --- properties -----------------------------------------------------------------------------------


@given(
    st.lists(st.integers(1, 8), min_size=1, max_size=12),
    st.integers(-2, 2),
    st.randoms(use_true_random=False),
)
def test_assess_is_order_independent_and_ready_iff_sum_matches(
    sizes: list[int], delta: int, rnd: random.Random
) -> None:
    snap = VALIDATE(body(*(worker(f"c{i % 3}", 1000 + i, s) for i, s in enumerate(sizes))))
    world = sum(sizes) + delta
    if world < 1:
        return
    shuffled = list(snap.workers)
    rnd.shuffle(shuffled)
    a = assess_snapshot(snap, inference_world_size=world)
    b = assess_snapshot(_Snap(shuffled), inference_world_size=world)
    assert [w.label for w in a[0]] == [w.label for w in b[0]]
    assert a[1] == b[1]
    assert (a[1] == []) == (delta == 0)


def test_snapshot_retries_then_returns_without_readiness_rules() -> None:
    clock = FakeClock()
    # Pending by readiness rules (sum 2 of 8), but snapshot() applies none of them.
    transport, seen = scripted(httpx.Response(503), httpx.ConnectError("blip"), good(PD[0]))

    async def go() -> Any:
        async with make(transport, clock) as client:
            return await client.snapshot(timeout=10)

    snap = asyncio.run(go())
    assert len(seen) == 3
    assert [w.label for w in snap.workers] == ["dynamo.prefill.rl#1"]


def test_snapshot_gives_up_at_its_deadline_and_on_fatal() -> None:
    clock = FakeClock()
    transport, seen = scripted(httpx.ConnectError("down"))

    async def go(t: httpx.MockTransport) -> Any:
        async with make(t, clock) as client:
            return await client.snapshot(timeout=1.0)

    with pytest.raises(TransportError, match="ConnectError"):
        asyncio.run(go(transport))
    assert 1 < len(seen) < 20
    transport, seen = scripted(httpx.Response(302, headers={"location": "http://other:1/"}))
    with pytest.raises(PolicyError, match="POLL-4"):
        asyncio.run(go(transport))
    assert len(seen) == 1


def test_redirect_carrying_user_info_is_refused() -> None:
    clock = FakeClock()
    transport, seen = scripted(
        httpx.Response(302, headers={"location": "http://u:p@frontend:8001/v1/rl/workers"})
    )
    with pytest.raises(PolicyError, match="POLL-4"):
        run(make(transport, clock))
    assert len(seen) == 1


def test_caller_cannot_override_accept_encoding() -> None:
    clock = FakeClock()
    transport, seen = scripted(good())
    run(make(transport, clock, headers={"accept-encoding": "gzip", "X-Trace": "1"}))
    assert seen[0].headers.get_list("accept-encoding") == ["identity"]
    assert seen[0].headers["x-trace"] == "1"
