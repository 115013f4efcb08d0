"""The client profile's scenarios as data: each changes one thing against a conformant baseline.

The baseline is the fleet ``BASE``: engines A (world size 2) and B (1) of one model, W = 3, every
worker listed complete and in canonical order, random credentials, no allow-list. A scenario
changes one thing (a fault of the listing, one engine's behaviour, one unusual entry, one setting
of the call), so whatever a client does wrong in it has one cause: the scenario's requirement. A
composite (``parts``) combines single-variable scenarios and is run only after each part passed
alone; its report names the parts.

Every deadline and every schedule comes from the client's pace (``Pace``: the poll interval the
client really has, ``--client-poll-interval``, and whether it takes its timeouts in whole
seconds). Each scenario's deadline (``Scenario.timeout``) is derived from what it needs: a plan
(``Pace.plan``) after the fleet heals (four poll intervals, a few pending polls, or a
Retry-After), or one request to refuse (``REFUSE_S``). A fleet that heals does so after four of
the client's poll intervals, so a client that plans on the first ready snapshot is caught at any
pace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from prime_rl_dynamo.defaults import NO_API_KEY
from prime_rl_dynamo.topology import ENGINE_ROUTE_VOCABULARY

__all__ = [
    "BACKOFF_FAILURES",
    "BASE",
    "DEFAULT_POLL_INTERVAL_S",
    "DYNAMO_TOPOLOGY",
    "FAST_POLL_INTERVAL_S",
    "MAX_BODY_BYTES",
    "MOVED_PATH",
    "OTHER_MODEL",
    "PINNED_NATIVE_TOPOLOGY",
    "PINNED_TOPOLOGY",
    "REFUSE_S",
    "RETRY_AFTER_S",
    "SCENARIOS",
    "Pace",
    "Scenario",
    "heterogeneous",
    "plain",
    "scenario",
    "with_disallowed_host",
]

OTHER_MODEL = "other/model"
#: The listing size cap the calling contract passes (``CONFORMANCE_MAX_BODY_BYTES``, POLL-3).
MAX_BODY_BYTES = 2 * 1024 * 1024
#: Where the scenario admin-redirect-same-origin redirects engine-b's admin calls (same origin).
MOVED_PATH = "/moved"

#: The pace a trainer team's first run is judged at unless it declares another: what this
#: package's pool and Prime-RL poll at (``defaults.POLL_INTERVAL``; Prime-RL has no poll interval).
DEFAULT_POLL_INTERVAL_S = 1.0
#: The fast pace, for clients that honour ``CONFORMANCE_POLL_INTERVAL`` (the suite's own tests).
FAST_POLL_INTERVAL_S = 0.1
#: What a plan needs beside its two polls: the inits and one weight update, and room for a loaded
#: machine (the spec client takes 0.2 to 0.4 s at a load of 1.3 on two cores).
_PLAN_ROOM_S = 1.3
#: What it needs to refuse a listing after one request (the spec client: under 0.1 s).
REFUSE_S = 1.0
#: The Retry-After of the scenario "retryable" (the fleet's, whatever the pace).
RETRY_AFTER_S = 2.0
#: The scenario "retryable": what the backoff after its reset and its 503 may add, in poll
#: intervals (a base interval of at most one poll interval with jitter, a few times).
_BACKOFF_POLLS = 5
#: The scenario "backoff": this many consecutive 503s without Retry-After before the listing is
#: ready. SPEC §10 bounds the base interval to [poll interval / 4, poll interval] and the cap to at
#: least 8 times the base, with jitter of at most the backoff itself: the four waits then grow at
#: least fourfold, the last at least the poll interval, and sum to at most 2 * 15 poll intervals.
BACKOFF_FAILURES = 4
_BACKOFF_WAITS_POLLS = 2 * 15
#: When a fleet that is not ready becomes ready, in the client's poll intervals from its first
#: listing request: a client that plans on its first two polls plans before it.
HEAL_POLLS = 4


@dataclass(frozen=True)
class Pace:
    """The pace the client under test really has: every deadline and schedule derives from it.

    ``poll_interval``: seconds between its polls of a pending listing (``--client-poll-interval``,
    passed as ``CONFORMANCE_POLL_INTERVAL`` for a client that can follow it); ``whole_seconds``:
    it takes its timeouts in whole seconds (Prime-RL's ``wait_for_ready_timeout``), so every
    deadline it is given is rounded up to one.
    """

    poll_interval: float = DEFAULT_POLL_INTERVAL_S
    whole_seconds: bool = False

    def polls(self, count: float) -> float:
        """``count`` poll intervals, in seconds."""
        return round(count * self.poll_interval, 3)

    @property
    def plan(self) -> float:
        """What a conformant client needs to plan a fleet that is ready: two polls a poll interval
        apart, the inits and one weight update."""
        return round(_PLAN_ROOM_S + 2 * self.poll_interval, 2)

    def deadline(self, seconds: float) -> float:
        """The deadline the client is given for ``seconds`` of need (whole seconds: rounded up)."""
        return float(math.ceil(seconds - 1e-9)) if self.whole_seconds else round(seconds, 2)

    def describe(self) -> str:
        """The pace as the report states it."""
        whole = ", timeouts in whole seconds" if self.whole_seconds else ""
        return f"polls every {self.poll_interval:g} s{whole}"


@dataclass(frozen=True)
class Scenario:
    """A pinned fleet that changes one thing, run whatever the seed.

    ``expect`` is ``"complete"`` (the client must initialise the final fleet and return),
    ``"fatal"`` (refuse after one request: no init, no success) or ``"fail"`` (no success).
    """

    id: str
    requirement: str
    what: str
    topology: dict[str, Any]
    inference_world_size: int
    expect: str = "complete"
    faults: tuple[str, ...] = ()
    waits: float = 0.0  # what the fleet makes a conformant client wait (a Retry-After, say)
    wait_polls: float = 0.0  # and what its backoff may add, in poll intervals
    heals: bool = False  # the topology's schedule makes it ready after HEAL_POLLS poll intervals
    ready_from_listing: int | None = None  # listing request number (a fault's :COUNT)
    pending_listings: tuple[int, ...] = ()  # listing request numbers that present it pending
    api_key: str | None = None  # None: a random key
    allowed_hosts: tuple[str, ...] | None = None
    userinfo_url: bool = False  # give the client a discovery URL carrying user info
    proxy: bool = False  # point the proxy variables at another origin
    engine_setup: tuple[tuple[str, str, Any], ...] = ()  # (engine key, attribute, value)
    parts: tuple[str, ...] = ()  # a composite: the single-variable scenarios it combines

    def ready_after(self, pace: Pace) -> float | None:
        """When the fleet becomes ready, seconds after the client's first listing request."""
        return pace.polls(HEAL_POLLS) if self.heals else None

    def fleet(self, pace: Pace) -> dict[str, Any]:
        """The topology at ``pace``: its schedule's events happen once the fleet heals."""
        at = self.ready_after(pace)
        if at is None:
            return self.topology
        schedule = [{**event, "at": at} for event in self.topology["schedule"]]
        return {**self.topology, "schedule": schedule}

    def timeout(self, pace: Pace) -> float:
        """The client's deadline in this scenario at ``pace``, derived from what a conformant
        client needs: one request to refuse (``REFUSE_S``) or a plan (``Pace.plan``), after
        whatever the fleet makes it wait (its schedule, its pending polls, a Retry-After, a
        backoff)."""
        base = REFUSE_S if self.expect == "fatal" else pace.plan
        pending = max(len(self.pending_listings), (self.ready_from_listing or 1) - 1)
        waits = self.waits + pace.polls(self.wait_polls + pending)
        return pace.deadline(base + waits + (self.ready_after(pace) or 0.0))


def _fleet(*engines: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "namespace": "dynamo",
        "model": "Qwen/Qwen3-0.6B",
        "seed": 11,
        "engines": list(engines),
        **extra,
    }


_A = {"component": "engine-a", "world_size": 2}
_B = {"component": "engine-b", "world_size": 1}
#: The conformant baseline (W = 3, heterogeneous).
BASE = _fleet(_A, _B)
_DEAD = {"reply_error": "engine is dead"}


def _join(leave: str | None, join: str | None) -> list[dict[str, Any]]:
    # "at" is set by Scenario.fleet, from the pace.
    events = []
    if leave:
        events.append({"at": 0.0, "action": "leave", "engine": leave})
    if join:
        events.append({"at": 0.0, "action": "join", "engine": join})
    return events


def _pending_until_join(
    id: str,
    requirement: str,
    what: str,
    w: int,
    listed: list[dict[str, Any]],
    joining: dict[str, Any],
    *,
    replaces: str | None = None,
) -> Scenario:
    """A fleet that is not ready for W while only ``listed`` is, until ``joining`` joins (and
    ``replaces`` leaves) once the fleet heals."""
    schedule = _join(replaces, f"dynamo.{joining['component']}#0")
    fleet = _fleet(*listed, {**joining, "present": False}, schedule=schedule)
    return Scenario(id, requirement, what, fleet, w, heals=True)


def _pending_until_leave(id: str, requirement: str, what: str, leaving: dict[str, Any]) -> Scenario:
    """The baseline plus ``leaving`` (which keeps it pending), until it leaves once the fleet
    heals. The rest sums to W all along, so a client that silently drops ``leaving`` plans early."""
    schedule = _join(f"dynamo.{leaving['component']}#0", None)
    return Scenario(
        id, requirement, what, _fleet(_A, _B, leaving, schedule=schedule), 3, heals=True
    )


#: Faults of the baseline's listing: id, requirement, what the listing does, the fault, what the
#: client must do and its deadline.
_LISTING_FAULTS: tuple[tuple[str, str, str, str, str], ...] = (
    ("schema-violation", "POLL-2", "a listing that breaks WORKER-9 (world_size out of range)",
     "break=WORKER-9", "fatal"),
    ("duplicates", "POLL-2", "a listing with a duplicate identity (LIST-2)", "break=LIST-2", "fatal"),
    ("duplicate-admin-urls", "POLL-2", "two workers list the same admin_base_url (LIST-6)",
     "break=LIST-6", "fatal"),
    ("forbidden", "POLL-2", "the listing answers 403", "status=403", "fatal"),
    ("oversized", "POLL-3", f"a valid listing padded (whitespace) past the configured cap ({MAX_BODY_BYTES} B)",
     f"padded={MAX_BODY_BYTES}", "fatal"),
    ("under-cap", "POLL-3", f"a valid listing padded (whitespace) to half the configured cap ({MAX_BODY_BYTES} B)",
     f"padded={MAX_BODY_BYTES // 2}", "complete"),
    ("cross-origin-redirect", "POLL-4", "the listing answers 307 to the same URL under host localhost",
     "redirect-host=localhost", "fail"),
    ("userinfo-listed", "CRED-1", "a listed admin_base_url carries user info (WORKER-8)",
     "break=WORKER-8", "fatal"),
    ("version-2", "VERSION-2", "a listing with protocol_version 2", "version=2", "fatal"),
    ("unknown-fields", "BODY-5", "unknown fields at the top, in every worker and in every transport",
     "unknown-fields", "complete"),
    ("smg-dialect", "DIALECT-1", "the SMG gateway's body at the same path", "break=DIALECT-1",
     "fatal"),
    ("unsorted-listing", "RANK-1", "the listing arrives out of canonical order (breaks LIST-1)",
     "break=LIST-1", "fail-or-complete"),
)  # fmt: skip

#: One engine of the baseline misbehaving: id, requirement, what the engine does, and the
#: engine's reference setting (key, attribute, value).
_ENGINE_FAULTS: tuple[tuple[str, str, str, tuple[str, str, Any]], ...] = (
    ("admin-redirect", "CRED-4",
     "engine-b's admin API answers 307 to the same URL under host localhost",
     ("dynamo.engine-b#0", "admin_redirect_host", "localhost")),
    ("admin-redirect-same-origin", "CRED-4",
     f"engine-b's admin API answers 307 to the same origin under {MOVED_PATH}",
     ("dynamo.engine-b#0", "admin_redirect_path", MOVED_PATH)),
    ("resize-after-init", "TOPO-1", "engine-a reports world size 4 once it answered its init",
     ("dynamo.engine-a#0", "resize_after_init", 4)),
    ("init-error-in-200", "ADMIN-3",
     'engine-b answers its init with 200 {"status": "error"} (as Dynamo\'s engine routes do)',
     ("dynamo.engine-b#0", "admin_error_in_200", True)),
)  # fmt: skip


def _allow_list(id: str, what: str, *hosts: str) -> Scenario:
    """The baseline with engine-b advertising ``localhost``, under the allow-list ``hosts``."""
    fleet = _fleet(_A, {**_B, "admin_host": "localhost"})
    what = f"allow-list {what}; engine-b advertises localhost"
    return Scenario(id, "CRED-3", what, fleet, 3, allowed_hosts=hosts)


def _listing_fault(id: str, requirement: str, what: str, fault: str, expect: str) -> Scenario:
    return Scenario(id, requirement, what, BASE, 3, expect, (fault,))


def _engine_fault(id: str, requirement: str, what: str, setup: tuple[str, str, Any]) -> Scenario:
    return Scenario(id, requirement, what, BASE, 3, "fail", engine_setup=(setup,))


_SINGLE: tuple[Scenario, ...] = (
    Scenario("error-then-ready", "READY-1", "a matching worker carries error for the first 3 polls",
             BASE, 3, faults=("error-workers=1:3",), ready_from_listing=4),
    _pending_until_leave("error-then-gone", "READY-1",
                         "a third matching worker carries error until it leaves once the fleet heals",
                         {"component": "engine-c", "world_size": 1, "faults": _DEAD}),
    _pending_until_join("no-admin-then-ready", "READY-2",
                        "a matching worker has no admin URL until it is replaced once the fleet heals", 4,
                        [_A, _B, {"component": "engine-c", "world_size": 1, "admin": False}],
                        {"component": "engine-d", "world_size": 1}, replaces="dynamo.engine-c#0"),
    _pending_until_leave("no-admin-then-gone", "READY-2",
                         "a third matching worker has no admin URL until it leaves once the fleet heals",
                         {"component": "engine-c", "world_size": 1, "admin": False}),
    _pending_until_join("sum-then-ready", "READY-3",
                        "world sizes sum to 3 of W = 5 until an engine joins once the fleet heals", 5,
                        [_A, _B], {"component": "engine-d", "world_size": 2}),
    _pending_until_leave("sum-above-then-ready", "READY-3",
                         "world sizes sum to 4 of W = 3 until a third engine leaves once the fleet heals",
                         {"component": "engine-c", "world_size": 1}),
    Scenario("streak-broken", "READY-4", "the 2nd listing request answers 503; the others are "
             "complete and identical", BASE, 3, faults=("unavailable:2-2",)),
    Scenario("renumbered", "READY-4", "the 1st listing request lists every worker under another "
             "instance_id (restarted); the others are complete and identical", BASE, 3,
             faults=("renumber:1",), ready_from_listing=2),
    Scenario("streak-pending", "READY-4", "the 2nd listing request carries an error worker (pending); "
             "the others are complete and identical", BASE, 3, faults=("error-workers=1:2-2",),
             pending_listings=(2,)),
    Scenario("model-less", "READY-5", "engine-b's entry carries no model (it matches, SPEC §9.1)",
             _fleet(_A, {**_B, "model": None}), 3),
    Scenario("other-model", "READY-5", "a worker of another model, with an admin URL, is listed",
             _fleet(_A, _B, {"component": "judge", "world_size": 4, "model": OTHER_MODEL}), 3),
    Scenario("other-model-no-admin", "READY-5",
             "a worker of another model without an admin URL is listed",
             _fleet(_A, _B, {"component": "embed", "world_size": 1, "model": OTHER_MODEL,
                             "admin": False}), 3),
    _pending_until_join("none-then-ready", "READY-6",
                        "only another model's worker (its world size W) is listed until the "
                        "model's engine joins once the fleet heals", 2,
                        [{"component": "judge", "world_size": 2, "model": OTHER_MODEL}],
                        {"component": "engine-d", "world_size": 2}),
    Scenario("retryable", "POLL-1", "a connection reset, then 429 with Retry-After: 2, then 503",
             BASE, 3, faults=("reset:1", f"rate-limit={RETRY_AFTER_S:g}:2", "unavailable:3"),
             ready_from_listing=4, waits=RETRY_AFTER_S, wait_polls=_BACKOFF_POLLS),
    Scenario("backoff", "POLL-1", f"{BACKOFF_FAILURES} consecutive 503s without Retry-After, "
             "then ready", BASE, 3, faults=(f"unavailable:1-{BACKOFF_FAILURES}",),
             ready_from_listing=BACKOFF_FAILURES + 1, wait_polls=_BACKOFF_WAITS_POLLS),
    Scenario("proxy-environment", "POLL-4", "HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name another "
             "origin", BASE, 3, proxy=True),
    Scenario("userinfo-url", "CRED-1", "the configured discovery URL carries user:password@",
             BASE, 3, expect="fatal", userinfo_url=True),
    Scenario("api-key-empty", "CRED-2", "the API key is EMPTY (Prime-RL's: no key)", BASE, 3,
             api_key=NO_API_KEY),
    _allow_list("allow-list", "127.0.0.1", "127.0.0.1"),
    _allow_list("allow-list-wildcard", "127.0.0.1 and *.localhost (no label before the suffix)",
                "127.0.0.1", "*.localhost"),
    _allow_list("allow-list-cidr", "127.0.0.0/8 (a name is never resolved to match a block)",
                "127.0.0.0/8"),
    _allow_list("allow-list-case", "LOCALHOST and 127.0.0.1 (names compare without case)",
                "127.0.0.1", "LOCALHOST"),
    Scenario("prefix-scope", "RANK-1", "two namespaces under the scope dynamo; canonical order "
             "(namespace first) differs from (component, instance_id) and from the labels' order "
             "('dynamo-a.alpha...' < 'dynamo.zeta...')",
             _fleet({"component": "alpha", "namespace": "dynamo-a", "world_size": 1},
                    {"component": "zeta", "namespace": "dynamo", "world_size": 2}), 3),
    Scenario("init-fails", "ADMIN-3", "engine-b answers its init with 500",
             _fleet(_A, {**_B, "faults": {"admin_fail": ["init_broadcaster", "collective_rpc"]}}),
             3, expect="fail"),
    *(_listing_fault(*row) for row in _LISTING_FAULTS),
    *(_engine_fault(*row) for row in _ENGINE_FAULTS),
)  # fmt: skip

#: Composites: single-variable scenarios combined, each run only after its parts passed alone.
_COMPOSITE: tuple[Scenario, ...] = (
    Scenario(
        "mixed-fleet",
        "READY-5",
        "prefix scope, a model-less worker, other models (with and without admin), API key EMPTY",
        _fleet(
            {"component": "alpha", "namespace": "dynamo-b", "world_size": 1},
            {"component": "zeta", "namespace": "dynamo-a", "world_size": 2, "model": None},
            {"component": "judge", "namespace": "dynamo-a", "world_size": 4, "model": OTHER_MODEL},
            {"component": "embed", "world_size": 1, "model": OTHER_MODEL, "admin": False},
        ),
        3,
        api_key=NO_API_KEY,
        parts=(
            "prefix-scope",
            "model-less",
            "other-model",
            "other-model-no-admin",
            "api-key-empty",
        ),
    ),
)

#: Every pinned scenario of the profile: the single-variable ones, then the composites.
SCENARIOS: tuple[Scenario, ...] = (*_SINGLE, *_COMPOSITE)


def scenario(scenario_id: str) -> Scenario:
    """The scenario with this id (KeyError names the known ones)."""
    for s in SCENARIOS:
        if s.id == scenario_id:
            return s
    raise KeyError(
        f"no scenario {scenario_id!r}; expected one of {', '.join(s.id for s in SCENARIOS)}"
    )


#: The engine-route vocabulary of the latest Prime-RL generation, presented by the
#: pinned vllm-native-nccl fleet so that a trainer needing it can be judged on its rank math.
_VOCABULARY: dict[str, Any] = {
    "routes": ["pause_generation", "resume_generation", *ENGINE_ROUTE_VOCABULARY],
    "weight_transfer_backend": "nccl",
}

#: A heterogeneous fleet, run once per declared convention: world sizes [2, 4, 1], W = 7.
#: An even split sends offsets [0, 2, 4] here: rank 4 taken twice, rank 6 by nobody.
PINNED_TOPOLOGY: dict[str, Any] = {
    "version": 1,
    "namespace": "dynamo",
    "model": "Qwen/Qwen3-0.6B",
    "seed": 7,
    "engines": [
        {"component": "engine-a", "world_size": 2},
        {"component": "engine-b", "world_size": 4},
        {"component": "engine-c", "world_size": 1},
    ],
}

#: The same fleet for the vllm-native-nccl run, presenting the engine-route vocabulary.
PINNED_NATIVE_TOPOLOGY: dict[str, Any] = {
    **PINNED_TOPOLOGY,
    "engines": [{**g, **_VOCABULARY} for g in PINNED_TOPOLOGY["engines"]],
}

#: The fleet of the real Dynamo runs: the pinned [2, 4, 1] fleet, engine-b registering no model (a
#: model-less worker, which matches, SPEC §9.1) and a judge of another model with an admin URL (a
#: worker a client could call and must leave alone, READY-5); models come from the runtime's cards.
DYNAMO_TOPOLOGY: dict[str, Any] = {
    **PINNED_TOPOLOGY,
    "engines": [
        {"component": "engine-a", "world_size": 2},
        {"component": "engine-b", "world_size": 4, "model": None},
        {"component": "engine-c", "world_size": 1},
        {"component": "judge", "world_size": 2, "model": OTHER_MODEL},
    ],
}


def _group_world_size(group: dict[str, Any]) -> int:
    if group.get("world_size"):
        return int(group["world_size"])
    return int(group.get("tp", 1) * group.get("pp", 1) * group.get("pcp", 1) * group.get("dp", 1))


def plain(data: dict[str, Any]) -> dict[str, Any]:
    """A generated topology with nothing unusual but its sizes and hosts: every engine serves the
    topology's model, lists an admin URL and behaves (the rank checks judge only such fleets; the
    unusual entries have scenarios of their own)."""
    drop = ("model", "admin", "faults")
    return {
        **data,
        "engines": [{k: v for k, v in g.items() if k not in drop} for g in data["engines"]],
    }


def heterogeneous(data: dict[str, Any]) -> dict[str, Any]:
    """At least two distinct world sizes among the model's engines (the even split needs them)."""
    model = data.get("model")
    mine = [
        g
        for g in data["engines"]
        if g.get("model", model) in (None, model) and g.get("admin", True) and "faults" not in g
    ]
    sizes = {_group_world_size(g) for g in mine}
    count = sum(g.get("count", 1) for g in mine)
    if len(sizes) >= 2 and count >= 2:
        return data
    size = next(iter(sizes), 1)
    extra = {"component": "hetero", "count": 1, "world_size": size + 1 if size < 8 else size - 1}
    return {**data, "engines": [*data["engines"], extra]}


def with_disallowed_host(data: dict[str, Any]) -> dict[str, Any]:
    """Make sure some planned engine advertises "localhost", outside the allow-list 127.0.0.1."""
    groups = [dict(g) for g in data["engines"]]
    ready = [
        g for g in groups[1:] if "model" not in g and g.get("admin", True) and "faults" not in g
    ]
    if any(g.get("admin_host") for g in ready) or groups[0].get("admin_host"):
        return data
    if ready:
        ready[-1]["admin_host"] = "localhost"
    else:
        groups.append({"component": "decodex", "count": 1, "tp": 2, "admin_host": "localhost"})
    return {**data, "engines": groups}
