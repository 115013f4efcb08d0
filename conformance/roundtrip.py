"""The ``roundtrip`` profile: generated topologies registered on the real Dynamo frontend.

Through the harness (real frontend, stub RL workers on the real runtime) the listing must equal
what was registered: nothing lost, duplicated or invented, each worker with the model it
registered (LIST-7). Then the fleet churns (kill, restart, resize) and the listing must follow
(LIST-8). Under ``--namespace-scope prefix`` / ``suffix`` the fleets spread over several
namespaces with one engine outside the scope, and the body's scope and every worker's namespace
must follow it (LIST-5). Needs the ``dynamo`` extra.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.registry import CheckError, Failed, Skipped, check
from conformance.runner import (
    ProfileContext,
    RunContext,
    dynamo_available,
    dynamo_release,
    profile_setup,
)
from prime_rl_dynamo.text import plural
from prime_rl_dynamo.wire import WorkerId

if TYPE_CHECKING:
    from prime_rl_dynamo.suite.fleet import Fleet, FleetEngine

__all__ = ["RoundtripContext", "compare_listing", "exercise", "reference_roundtrip"]

# Generated roundtrip topologies stay few and small: each is real processes on a 2-core machine.
MAX_ROUNDTRIP_TOPOLOGIES = 2

#: Always registered first (and churned): heterogeneous prefill/decode, an engine answering
#: routes with an error, one publishing neither admin nor system URL, another model, and one
#: registering two models (the frontend then lists no model for it: ambiguous).
PINNED_TOPOLOGY: dict[str, Any] = {
    "version": 1,
    "namespace": "dynamo",
    "model": "Qwen/Qwen3-0.6B",
    "seed": 11,
    "engines": [
        {"component": "prefill", "count": 2, "tp": 2},
        {"component": "decode", "count": 1, "tp": 2, "dp": 2},
        {"component": "broken", "faults": {"reply_error": "engine is dead"}},
        {"component": "bare", "admin": False, "system": False, "model": "other/Model-7B"},
        {"component": "multi", "admin": False, "system": False},
    ],
}
#: The pinned topology's engine that registers a second model besides the topology's.
_SECOND_MODEL = {"multi": "other/Model-7B"}

# Where the out-of-scope engine of a prefix / suffix run lives, relative to the scope.
_SUFFIX = "w"


def scoped_topology(data: dict[str, Any], scope: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The topology rewritten for a namespace scope, and the fleet arguments that set it.

    ``prefix``: the prefix is ``P = {namespace}-rl`` (never the bare ``dynamo``: 1.6.1 treats
    that prefix as "every namespace", docs/findings.md); the first group lives in ``P``, the
    others in ``P-g1``, ``P-g2``, ... (several namespaces under one prefix), plus one engine in
    ``other-P`` outside it. ``suffix``: every group goes to ``P-w`` (``DYN_NAMESPACE_WORKER_SUFFIX=w``)
    plus one engine left in ``P``, outside it. ``exact``: unchanged.
    """
    if scope == "exact":
        return data, {}
    ns = data.get("namespace", "dynamo")
    groups = [dict(g) for g in data.get("engines", [])]
    outside: dict[str, Any] = {"component": "outside", "admin": False, "system": False}
    if scope == "prefix":
        prefix = f"{ns}-rl"
        for index, group in enumerate(groups):
            group["namespace"] = f"{prefix}-g{index}" if index else prefix
        outside["namespace"] = f"other-{prefix}"
        kwargs: dict[str, Any] = {"namespace_prefix": prefix}
    elif scope == "suffix":
        for group in groups:
            group["namespace"] = f"{ns}-{_SUFFIX}"
        outside["namespace"] = ns
        kwargs = {"worker_suffix": _SUFFIX}
    else:
        raise CheckError(f"unknown namespace scope {scope!r}; expected exact, prefix or suffix")
    return {**data, "engines": [*groups, outside]}, kwargs


def _prefix_scope(fleet: Fleet) -> bool:
    """Whether the frontend scopes by prefix: the reference always does; real Dynamo when the
    harness set ``DYN_NAMESPACE_PREFIX``."""
    extra_env = getattr(fleet, "extra_env", None)
    return extra_env is None or "DYN_NAMESPACE_PREFIX" in extra_env


def scope_problems(body: dict[str, Any], fleet: Fleet, *, when: str) -> list[str]:
    """LIST-5 on a listing: the body's namespace is the configured scope and every entry's
    namespace is in it (equal to it, or under the prefix)."""
    problems: list[str] = []
    if body.get("namespace") != fleet.scope:
        problems.append(
            f"{when}: expected the body's namespace to be the scope {fleet.scope!r}, "
            f"found {body.get('namespace')!r}"
        )
    prefix = _prefix_scope(fleet)
    scope = body.get("namespace")
    for w in body.get("workers", []):
        ns = w.get("namespace") if isinstance(w, dict) else None
        # LIST-5 as written: equal to the body's namespace, or under a prefix starting with it.
        ok = (
            isinstance(ns, str)
            and isinstance(scope, str)
            and (ns.startswith(scope) if prefix else ns == scope)
        )
        if not ok:
            try:
                label = str(WorkerId.from_entry(w))
            except (KeyError, TypeError, ValueError):
                label = repr(w)[:120]
            problems.append(
                f"{when}: {label}: namespace {ns!r} is outside the scope {fleet.scope!r} "
                f"({'prefix' if prefix else 'exact'} scope)"
            )
    return problems


#: The transport kind (WORKER-3) a worker on each request plane is listed with.
PLANE_TRANSPORT = {"tcp": "tcp", "nats": "nats_tcp", "http": "http"}


def transport_kinds(body: dict[str, Any]) -> list[str]:
    """The transport kinds the listing's workers carry (sorted, once each)."""
    workers = body.get("workers") if isinstance(body, dict) else None
    kinds = {
        str(kind)
        for w in workers or []
        if isinstance(w, dict) and isinstance(w.get("transport"), dict)
        for kind in w["transport"]
    }
    return sorted(kinds)


def plane_problem(body: dict[str, Any], request_plane: str) -> str | None:
    """Why the listing shows that the fleet is not on ``request_plane`` (None: it is)."""
    want = PLANE_TRANSPORT.get(request_plane)
    kinds = transport_kinds(body)
    if want is None or not kinds or kinds == [want]:
        return None
    return (
        f"the fleet was asked for the {request_plane} request plane, but its workers are listed "
        f"with transport {', '.join(kinds)} (expected {want} only): the run would not exercise "
        f"the {request_plane} plane"
    )


def expected_entry(engine: Any) -> dict[str, Any]:
    """What the listing must say about one live engine of the harness (identity aside)."""
    spec = engine.spec
    if spec.faults.reply_error is not None:
        return {"error": True}
    out: dict[str, Any] = {"routes": sorted(set(spec.routes)), "error": False}
    out["admin_base_url"] = engine.admin_base_url if spec.admin else None
    out["system_url"] = engine.system_url if spec.system else None
    out["world_size"] = engine.world_size if spec.admin else None
    # The frontend reports the registered model, and none when the instance registered none or
    # several distinct ones (ambiguous). A reference engine registers its spec's model.
    registered = getattr(engine, "models", None)
    models = set(registered) if registered is not None else {spec.model} - {None}
    out["model"] = next(iter(models)) if len(models) == 1 else None
    return out


def compare_listing(
    body: dict[str, Any], live: list[Any], dead: set[WorkerId], *, when: str
) -> list[str]:
    """Differences between a listing and the live engines (dead instances may linger with error)."""
    problems: list[str] = []
    workers = body.get("workers") if isinstance(body, dict) else None
    if not isinstance(workers, list):
        return [f"{when}: the listing has no workers array"]
    seen: dict[WorkerId, dict[str, Any]] = {}
    for w in workers:
        try:
            ident = WorkerId.from_entry(w)
        except (KeyError, TypeError, ValueError):
            problems.append(f"{when}: an entry without a complete identity: {w!r:.200}")
            continue
        if ident in seen:
            problems.append(f"{when}: {ident} listed twice")
        seen[ident] = w
    wanted = {WorkerId._make(e.identity): e for e in live}
    for ident, engine in wanted.items():
        w = seen.get(ident)
        if w is None:
            problems.append(f"{when}: {ident} ({engine.key}) is registered but not listed")
            continue
        want = expected_entry(engine)
        if want["error"]:
            if "error" not in w:
                problems.append(f"{when}: {ident} answers routes with an error, listed without one")
            continue
        if "error" in w:
            problems.append(
                f"{when}: {ident} is live and healthy, listed with error {w['error']!r}"
            )
            continue
        # model comes from model-card registration, not from the routes reply: exactly the one
        # model the worker registered, omitted when it registered none or several.
        for key in ("model", "routes", "admin_base_url", "system_url", "world_size"):
            if w.get(key) != want[key]:
                problems.append(
                    f"{when}: {ident} ({engine.key}): expected {key} {want[key]!r}, "
                    f"listed {w.get(key)!r}"
                )
    for ident, w in seen.items():
        if ident in wanted:
            continue
        if ident in dead and "error" in w:
            continue  # a dead instance the store has not forgotten yet: allowed, with its error
        what = "a dead instance listed without error" if ident in dead else "never registered"
        problems.append(f"{when}: {ident} is listed but {what}")
    return problems


@dataclass
class RoundtripContext(ProfileContext):
    """What the roundtrip saw: membership problems (LIST-7) and churn problems (LIST-8)."""

    membership: list[str] = field(default_factory=list)
    churn: list[str] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)  # LIST-5 problems
    scopes_seen: list[str] = field(default_factory=list)  # "exact 'dynamo'" and so on
    steps: list[str] = field(default_factory=list)  # what was done, for the pass message

    def __post_init__(self) -> None:
        super().__init__()


def _live(fleet: Fleet) -> list[FleetEngine]:
    return [e for e in fleet.engines if e.alive and fleet.in_scope(e)]


#: How long a listing must show the same differences, with exactly the live engines listed
#: (each once, in the error state it answers), before the roundtrip stops waiting for it to
#: converge: then only listed values differ (a member an old release never lists, say), no
#: registration or expiry is pending, and waiting out the deadline would not change the verdict.
SETTLED_S = 5.0
_SETTLED_POLLS = 5


def _only_values_differ(body: dict[str, Any], live: list[Any], dead: set[WorkerId]) -> bool:
    """Whether the listing holds exactly the live engines, each once and with an ``error`` when
    it answers routes with one (dead instances only with their error): what may still differ is
    the listed values (model, routes, URLs, world size)."""
    workers = body.get("workers") if isinstance(body, dict) else None
    if not isinstance(workers, list):
        return False
    wanted = {WorkerId._make(e.identity): bool(expected_entry(e)["error"]) for e in live}
    listed: dict[WorkerId, bool] = {}
    for w in workers:
        try:
            ident = WorkerId.from_entry(w)
        except (KeyError, TypeError, ValueError):
            return False
        if ident in listed:
            return False
        if ident in dead and ident not in wanted and "error" in w:
            continue  # a dead instance the store has not forgotten yet, with its error
        listed[ident] = "error" in w
    return listed == wanted


@dataclass
class _Settling:
    """Tracks how long a listing has shown the same value-only differences (``_converge``)."""

    problems: tuple[str, ...] = ()
    since: float | None = None
    polls: int = 0

    def decided(
        self, body: dict[str, Any], live: list[Any], dead: set[WorkerId], problems: list[str]
    ) -> bool:
        """Whether ``problems`` are only listed values, unchanged for ``SETTLED_S``."""
        if not problems or not _only_values_differ(body, live, dead):
            self.since = None
            return False
        now = time.monotonic()
        if self.since is None or tuple(problems) != self.problems:
            self.problems, self.since, self.polls = tuple(problems), now, 0
        self.polls += 1
        return self.polls >= _SETTLED_POLLS and now - self.since >= SETTLED_S

    def note(self) -> str:
        """Why the wait ended before the deadline (appended to each difference)."""
        return (
            f"unchanged for {SETTLED_S:g} s over {self.polls} polls with every engine listed: "
            "only listed values differ"
        )


def _poll_until(fleet: Fleet, condition: Any, timeout: float) -> tuple[bool, list[dict[str, Any]]]:
    """Poll the listing until ``condition(body)`` or the deadline; returns every body seen."""
    deadline = time.monotonic() + timeout
    bodies: list[dict[str, Any]] = []
    while True:
        body = fleet.listing()
        bodies.append(body)
        if condition(body):
            return True, bodies
        if time.monotonic() >= deadline:
            return False, bodies
        time.sleep(0.2)


#: How long the listing may take to follow a change of real Dynamo's fleet (a reference fleet
#: follows at once: its roundtrip waits ``REFERENCE_WAIT_S``).
DYNAMO_WAIT_S, REFERENCE_WAIT_S = 30.0, 1.0


def _converge(fleet: Fleet, dead: set[WorkerId], when: str, timeout: float) -> list[str]:
    """Poll until the listing equals the live fleet; the last differences if it never does."""
    problems: list[str] = []
    settling = _Settling()

    def equal(body: dict[str, Any]) -> bool:
        live = _live(fleet)
        problems[:] = compare_listing(body, live, dead, when=when)
        return not problems or settling.decided(body, live, dead, problems)

    ok, bodies = _poll_until(fleet, equal, timeout)
    if problems:  # the deadline passed, or only listed values differ and stopped changing
        why = settling.note() if ok else f"still after {timeout:g} s, {len(bodies)} polls"
        return [f"{p} ({why})" for p in problems]
    return []


def _churn(fleet: Fleet, ctx: RoundtripContext, wait: float) -> None:
    dead: set[WorkerId] = set()
    candidates = [e for e in _live(fleet) if e.spec.publishes_admin]
    if not candidates:
        ctx.steps.append("no healthy engine to churn")
        return
    victim = candidates[0]
    before = {e.key: WorkerId._make(e.identity) for e in _live(fleet)}
    killed = fleet.kill(victim.key)
    gone = {before[k] for k in killed if k in before}
    dead |= gone
    started = time.monotonic()

    def dead_reported(body: dict[str, Any]) -> bool:
        listed = {WorkerId.from_entry(w): w for w in body.get("workers", [])}
        return all(i not in listed or "error" in listed[i] for i in gone)

    ok, bodies = _poll_until(fleet, dead_reported, wait)
    ctx.steps.append(
        f"killed {victim.key} (its process hosted {', '.join(killed)}; "
        f"reported dead after {time.monotonic() - started:.1f} s)"
    )
    if not ok:
        listed = {WorkerId.from_entry(w): w for w in bodies[-1].get("workers", [])}
        healthy = [str(i) for i in gone if i in listed and "error" not in listed[i]]
        ctx.churn.append(
            f"after kill -9 of {victim.key}: still listed without error after {wait:g} s: "
            f"{', '.join(healthy)}"
        )
    ctx.membership += _converge(fleet, dead, f"after killing {victim.key}", wait)
    restarted = fleet.restart(victim.key)
    ctx.steps.append(f"restarted {victim.key} as {', '.join(e.label for e in restarted)}")
    listed = {WorkerId.from_entry(w): w for w in fleet.listing().get("workers", [])}
    for engine in restarted:
        w = listed.get(engine.identity)
        if w is None or ("error" in w) != (engine.spec.faults.reply_error is not None):
            ctx.churn.append(
                f"after restart: {engine.label} ({engine.key}) not listed as it answers: {w!r:.200}"
            )
    ctx.membership += _converge(fleet, dead, f"after restarting {victim.key}", wait)
    target = next((e for e in _live(fleet) if e.spec.publishes_admin), None)
    if target is None:
        return
    old = {e.key: WorkerId._make(e.identity) for e in _live(fleet)}
    new_size = target.spec.world_size * 2 if target.spec.world_size < 8 else 1
    resized = fleet.resize(target.key, new_size)
    dead |= {i for k, i in old.items() if fleet.engine(k).identity != i}
    ctx.steps.append(f"resized {target.key} to world_size {new_size} ({resized.label})")
    w = {WorkerId.from_entry(x): x for x in fleet.listing().get("workers", [])}.get(
        resized.identity
    )
    if w is None or w.get("world_size") != new_size:
        ctx.churn.append(
            f"after resize: {resized.label} expected world_size {new_size}, listed {w!r:.200}"
        )
    ctx.membership += _converge(fleet, dead, f"after resizing {target.key}", wait)


def exercise(fleet: Fleet, ctx: RoundtripContext, source: str, *, churn: bool, wait: float) -> None:
    """The roundtrip on one running fleet (real Dynamo's, or a reference fleet's): the listing
    equals the fleet, follows its scope and, with ``churn``, follows a kill, a restart and a
    resize; what differs goes into ``ctx``."""
    engines = len(fleet.engines)
    ctx.membership += _converge(fleet, set(), f"{source} after start", wait)
    body = fleet.listing()
    kinds = ", ".join(transport_kinds(body)) or "none listed"
    ctx.steps.append(f"{source}: {plural(engines, 'engine')} registered (transport {kinds})")
    ctx.scope += scope_problems(body, fleet, when=f"{source} after start")
    namespaces = sorted({w.get("namespace") for w in body.get("workers", [])})
    ctx.scopes_seen.append(
        f"{source}: scope {fleet.scope!r}, workers in {', '.join(map(str, namespaces))}"
    )
    if churn:
        _churn(fleet, ctx, wait)


#: The pinned topology as a reference fleet presents it: every engine publishes an admin URL (a
#: reference engine lists its world size whatever it publishes) and registers one model.
REFERENCE_TOPOLOGY: dict[str, Any] = {
    **PINNED_TOPOLOGY,
    "engines": [
        *PINNED_TOPOLOGY["engines"][:3],
        {"component": "judge", "model": "other/Model-7B"},
        {"component": "modelless", "model": None},
    ],
}


def reference_roundtrip(faults: tuple[str, ...] = (), seed: int = 1) -> RoundtripContext:
    """The roundtrip (churn included) on a reference fleet with ``faults``: how the kill matrix
    shows that each roundtrip check fails when a listing loses, invents or mis-scopes workers."""
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    ctx = RoundtripContext()
    topology = topology_from_dict(REFERENCE_TOPOLOGY, source="reference roundtrip")
    with start_reference_fleet(topology, faults=faults, seed=seed) as fleet:
        exercise(fleet, ctx, "reference topology", churn=True, wait=REFERENCE_WAIT_S)
    return ctx


@profile_setup("roundtrip")
@contextlib.contextmanager
def _setup(run: RunContext) -> Iterator[RoundtripContext]:
    if run.options.target == "reference":
        raise Skipped(
            "--target reference: the roundtrip profile checks real Dynamo end to end, so it "
            "does not run against the reference"
        )
    if not dynamo_available():
        from conformance.runner import dynamo_hint, dynamo_unavailable

        reason = dynamo_unavailable() or "real Dynamo is not available"
        raise Skipped(f"{dynamo_hint(reason)}; the roundtrip checks real Dynamo end to end")
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet
    from prime_rl_dynamo.suite.strategies import sample, topologies
    from prime_rl_dynamo.topology import topology_from_dict

    ctx = RoundtripContext()
    count = max(1, min(run.options.topologies, MAX_ROUNDTRIP_TOPOLOGIES))
    opts = run.options
    run.notes.append(
        f"roundtrip profile: real Dynamo {dynamo_release()} fleets from the harness ({opts.discovery} "
        f"discovery, {opts.request_plane} request plane, {opts.namespace_scope} namespace scope; "
        f"the pinned topology, churned, and {count} generated, seed {run.seed})"
    )
    drawn = sample(
        topologies(max_groups=3, max_count=2, error_workers=True, admin_hosts=("127.0.0.1",)),
        count,
        run.seed,
    )
    for index, raw in enumerate([PINNED_TOPOLOGY, *drawn]):
        source = "pinned topology" if index == 0 else f"generated topology {index}"
        data, scope_args = scoped_topology(raw, opts.namespace_scope)
        topology = topology_from_dict(data, source=source)
        extra = (
            {
                s.key: [_SECOND_MODEL[s.component]]
                for s in topology.engines()
                if s.component in _SECOND_MODEL
            }
            if index == 0
            else {}
        )
        try:
            with start_dynamo_fleet(
                topology,
                discovery=opts.discovery,
                request_plane=opts.request_plane,
                extra_models=extra,
                **scope_args,
            ) as fleet:
                fleet.wait_ready()
                body = fleet.listing()
                wrong_plane = plane_problem(body, opts.request_plane)
                if wrong_plane is not None:
                    raise CheckError(wrong_plane)
                exercise(fleet, ctx, source, churn=index == 0, wait=DYNAMO_WAIT_S)
        except Exception as exc:
            raise CheckError(f"the harness failed on {source}: {exc}") from exc
    yield ctx


def _verdict(problems: list[str], passed: str) -> str:
    """``passed`` when there are no problems, else Failed naming the first 30."""
    if problems:
        raise Failed("\n".join(problems[:30]))
    return passed


_TITLES = {
    "LIST-7": "The listing equals the registered fleet: nothing lost, duplicated or invented",
    "LIST-8": "After kill, restart and resize the listing follows",
    "LIST-5": "The body's namespace is the configured scope and every worker's namespace is in it",
}


@check("roundtrip", "LIST-7", "listing-equals-fleet", _TITLES["LIST-7"])
def check_membership(ctx: RoundtripContext) -> str | None:
    return _verdict(ctx.membership, "; ".join(ctx.steps))


@check("roundtrip", "LIST-8", "listing-follows-churn", _TITLES["LIST-8"])
def check_churn(ctx: RoundtripContext) -> str | None:
    if not any(s.startswith("killed") for s in ctx.steps):
        raise Skipped("no churn was possible on the generated topology")
    return _verdict(ctx.churn, "; ".join(s for s in ctx.steps if "topology" not in s))


@check("roundtrip", "LIST-5", "listing-follows-namespace-scope", _TITLES["LIST-5"])
def check_scope(ctx: RoundtripContext) -> str | None:
    if not ctx.scope and not ctx.scopes_seen:
        raise Skipped("no fleet was listed")
    return _verdict(ctx.scope, "; ".join(ctx.scopes_seen))
