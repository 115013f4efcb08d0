"""The error tree says what to do; each error carries one payload; diffs and policies are values."""

from __future__ import annotations

import pytest

from prime_rl_dynamo import errors
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.errors import PendingError
from prime_rl_dynamo.readiness import Discovery
from prime_rl_dynamo.requirements import Reason
from prime_rl_dynamo.topology_diff import EngineChange, EngineState, TopologyDiff
from prime_rl_dynamo.wire import WorkerId

URL = "http://frontend:8001"


def test_each_branch_says_what_to_do() -> None:
    # Fatal refusals are never a errors.TransportError, so a retry loop cannot catch them.
    for cls in (
        errors.ConfigError,
        errors.ProtocolError,
        errors.DialectError,
        errors.PolicyError,
        errors.TopologyError,
    ):
        assert issubclass(cls, errors.Refusal) and not issubclass(cls, errors.TransportError), cls
        assert cls.retryable is False
    assert errors.TransportError.retryable is True and not issubclass(
        errors.TransportError, errors.Refusal
    )
    # The deadline is not "keep polling": except PendingError never swallows it.
    assert not issubclass(errors.NotReadyError, PendingError)
    assert not issubclass(errors.NotReadyError, errors.Refusal) and not issubclass(
        PendingError, errors.Refusal
    )
    assert issubclass(errors.TopologyChangedError, errors.TopologyError)


def test_pending_error_carries_reasons_and_the_discovery() -> None:
    discovery = Discovery(URL, snapshot=None, workers=(), inference_world_size=8)  # type: ignore[arg-type]
    reasons = [Reason("READY-3", "world sizes sum to 4, expected inference_world_size 8")]
    exc = PendingError(reasons, discovery=discovery)
    assert exc.requirement == "READY-3" and exc.reasons == tuple(reasons)
    assert exc.discovery is discovery
    assert (
        str(exc)
        == "snapshot not ready: READY-3: world sizes sum to 4, expected inference_world_size 8"
    )
    with pytest.raises(ValueError):
        PendingError([], discovery=discovery)


def test_topology_diff_entries_are_typed_and_render_the_same_words() -> None:
    a, b, c, d = (WorkerId("dynamo", "backend", "rl", i) for i in range(4))
    before = [
        EngineState(a, 2, "http://a"),
        EngineState(b, 4, "http://b"),
        EngineState(c, 1, "http://c"),
    ]
    after = [
        EngineState(a, 2, "http://a2"),  # moved
        EngineState(b, 8, "http://b"),  # resized
        EngineState(c, None, None, error="Unavailable"),  # reports an error: removed
        EngineState(d, 1, "http://d"),  # added
    ]
    diff = TopologyDiff.between(before, after)
    assert diff.added == (EngineChange(None, after[3]),)
    assert [x.worker for x in diff.removed] == [c] and diff.removed[0].after == after[2]
    assert [(x.before, x.after) for x in diff.resized] == [(before[1], after[1])]
    assert [x.worker for x in diff.moved] == [a]
    assert str(diff).splitlines() == [
        "added: dynamo.backend.rl#3 (world_size 1, admin http://d)",
        "removed: dynamo.backend.rl#2 (world_size 1, admin http://c) -- now reports error: Unavailable",
        "resized: dynamo.backend.rl#1: world_size 4 -> 8",
        "moved: dynamo.backend.rl#0: admin_base_url http://a -> http://a2",
    ]
    assert not TopologyDiff.between(before, before) and str(TopologyDiff()) == "no change"


def test_errors_module_exports_every_error() -> None:
    for name in errors.__all__:
        assert (getattr(errors, name).__doc__ or "").strip(), name


def test_the_client_takes_policies_not_their_fields() -> None:
    policy = ReadinessPolicy(8, model="m", stable_polls=3)
    polling = PollingPolicy(timeout=60, poll_interval=0.5)
    client = DiscoveryClient(URL, policy, polling)
    assert client.policy is policy and client.polling is polling
    assert DiscoveryClient(URL, policy=policy).polling == PollingPolicy()  # the default polling
    # Each setting has one spelling: a policy's field given to the client is refused, not merged.
    for field in ({"model": "other"}, {"timeout": 5}, {"inference_world_size": 8}):
        with pytest.raises(TypeError, match=next(iter(field))):
            DiscoveryClient(URL, policy, **field)  # type: ignore[arg-type]
    with pytest.raises(errors.ConfigError, match="policy must be a ReadinessPolicy"):
        DiscoveryClient(URL, None)  # type: ignore[arg-type]
    with pytest.raises(errors.ConfigError, match="polling must be a PollingPolicy"):
        DiscoveryClient(URL, policy, {"timeout": 5})  # type: ignore[arg-type]
    with pytest.raises(errors.ConfigError, match="READY-3"):
        ReadinessPolicy(None)  # no W: it comes from the operator
    with pytest.raises(errors.ConfigError, match="poll_interval"):
        PollingPolicy(poll_interval=0)
    with pytest.raises(errors.ConfigError, match="stable_polls"):
        ReadinessPolicy(8, stable_polls=0)


def test_a_streak_needs_stable_polls_identical_snapshots_and_a_failure_restarts_it() -> None:
    from _client_support import VALIDATE, body, worker

    from prime_rl_dynamo.readiness import Streak

    listing = VALIDATE(body(worker("decode", 1, 2)))
    streak = Streak(ReadinessPolicy(2, stable_polls=3), URL)
    for poll in (1, 2):
        ready = None
        try:
            ready = streak.judge(listing, polls=poll, elapsed=0.0)
        except PendingError as exc:  # the first complete snapshot: READY-4 pending
            assert [r.requirement for r in exc.reasons] == ["READY-4"] and poll == 1
        assert ready is None
    streak.broken()  # a failed poll: the next snapshot starts over
    with pytest.raises(PendingError):
        streak.judge(listing, polls=3, elapsed=0.0)
    assert streak.judge(listing, polls=4, elapsed=0.0) is None
    done = streak.judge(listing, polls=5, elapsed=0.0)
    assert (
        done is not None
        and done.polls == 5
        and [w.label for w in done.workers] == ["dynamo.decode.rl#1"]
    )
