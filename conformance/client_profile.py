"""The ``client`` profile (black box): a client under test against generated reference fleets.

For each generated topology the suite stands up a reference fleet, runs the client, and checks
what the fleet's admin servers recorded: offsets per convention, ranks covering [0, W) exactly
once, the same W/host/port everywhere, credentials where allowed and nowhere else.

The calling contract and the runs the checks judge are in conformance/client_runs.py.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from conformance.client_runs import (
    _BASE,
    _REAL,
    CONVENTIONS,
    PINNED_NATIVE_TOPOLOGY,
    PINNED_TOPOLOGY,
    SCENARIOS,
    SECRET_ENV,
    ClientContext,
    ClientRun,
    ClientUnderTest,
    Credentials,
    _call_client,
    _credentials,
    _dynamo_runs,
    _heterogeneous,
    _listed_engines,
    _new_run,
    _run_scenario,
    _start_failure,
    _with_disallowed_host,
    arguments_from_env,
    load_client,
)
from conformance.client_wire import describe_call
from conformance.registry import CheckError, CheckFunction, Failed, Skipped, check
from conformance.runner import RunContext, profile_setup
from prime_rl_dynamo.http import scrub
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.text import cut

if TYPE_CHECKING:
    from prime_rl_dynamo.fleet import Fleet

__all__ = [
    "CONVENTIONS",
    "SCENARIOS",
    "ClientRun",
    "ClientUnderTest",
    "Credentials",
    "arguments_from_env",
    "load_client",
]


def _check(
    requirement_id: str, slug: str, title: str | None = None
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check of the client profile; its title is its docstring (without the period)
    unless given, and its slug where docstrings are stripped (``python -OO``)."""

    def register(func: CheckFunction) -> CheckFunction:
        named = title or (func.__doc__ or slug).strip().rstrip(".")
        return check("client", requirement_id, slug, named)(func)

    return register


@profile_setup("client")
@contextlib.contextmanager
def _setup(run: RunContext) -> Iterator[ClientContext]:
    try:
        from prime_rl_dynamo.reference import start_reference_fleet
        from prime_rl_dynamo.strategies import sample, topologies
        from prime_rl_dynamo.topology import topology_from_dict
    except ImportError as exc:
        raise Skipped(f"the client profile needs the conformance extra: {exc}") from exc
    opts = run.options
    client = load_client(opts.client, opts.client_cmd)
    declared = tuple(getattr(opts, "client_conventions", ()) or CONVENTIONS)
    main = declared[0]
    ctx = ClientContext(run, client, declared)
    n_generated = max(1, opts.topologies)
    run.notes.append(
        f"client profile: {client.description} ({', '.join(declared)}) against reference fleets "
        f"(the pinned [2, 4, 1] fleet per convention, {len(SCENARIOS)} pinned scenarios and "
        f"{n_generated} generated topologies, seed {run.seed})"
    )
    rng = run.rng("client")
    secret = f"env-{rng.getrandbits(48):012x}"
    saved = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = secret

    def one(
        fleet: Fleet,
        client_run: ClientRun,
        *,
        model: str | None,
        timeout: float,
        url: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        fleet.recorder.clear()
        started = time.monotonic()
        _call_client(
            client, client_run, url or fleet.discovery_url, model, timeout, extra_env=extra_env
        )
        client_run.elapsed = time.monotonic() - started
        client_run.outcome += f" in {client_run.elapsed:.1f} s"
        creds = client_run.credentials  # a client may log what it was given: never kept
        secrets = tuple(v for v in (secret, creds.api_key, *creds.headers.values()) if v)
        run.client_log.extend(scrub({"run": client_run.name, **r}, secrets) for r in client_run.log)
        calls = fleet.recorder.requests()
        client_run.admin_calls = [r for r in calls if r.server in ("admin", "system")]
        client_run.listing_calls = [r for r in calls if r.server == "frontend"]
        failure = _start_failure(client_run)
        if failure is not None:
            raise CheckError(f"the client {client.description} could not be started: {failure}")
        ctx.runs.append(client_run)

    try:
        # Rank runs: the pinned [2, 4, 1] fleet once per declared convention (and once told the
        # wrong W), then generated heterogeneous topologies rotating the declared conventions.
        native = Convention.VLLM_NATIVE_NCCL.value
        fleets = [
            (PINNED_TOPOLOGY, [c for c in declared if c != native], True),
            (PINNED_NATIVE_TOPOLOGY, [c for c in declared if c == native], main == native),
        ]
        for data, conventions, with_refusal in fleets:
            if not conventions and not with_refusal:
                continue
            pinned = topology_from_dict(data, source="pinned topology [2, 4, 1]")
            with start_reference_fleet(pinned) as fleet:
                ready, others = _listed_engines(fleet, pinned.model)
                width = sum(e["world_size"] for e in ready)
                plans = [
                    (f"pinned topology [2, 4, 1] ({c})", c, width, "rank") for c in conventions
                ]
                if with_refusal:
                    plans.append(
                        ("pinned topology [2, 4, 1], told the wrong W", main, width + 1, "refusal")
                    )
                for name, conv, told, kind in plans:
                    client_run = _new_run(rng, name, kind, conv, told, engines=ready, others=others)
                    timeout = (
                        min(opts.client_timeout, 2.0) if kind == "refusal" else opts.client_timeout
                    )
                    one(fleet, client_run, model=pinned.model, timeout=timeout)
        # The first drawn example is the strategy's minimal one: draw one more and drop it.
        drawn = sample(topologies(), n_generated + 1, run.seed)[1:]
        for index, data in enumerate(drawn, start=1):
            convention = declared[(index - 1 + run.seed) % len(declared)]
            restricted = index % 2 == 0
            data = _heterogeneous(data)
            if restricted:
                data = _with_disallowed_host(data)
            source = f"generated topology {index}"
            topology = topology_from_dict(data, source=source)
            with start_reference_fleet(topology) as fleet:
                ready, others = _listed_engines(fleet, topology.model)
                name = f"{source} ({convention}{', allow-list 127.0.0.1' if restricted else ''})"
                client_run = _new_run(
                    rng,
                    name,
                    "rank",
                    convention,
                    sum(e["world_size"] for e in ready),
                    credentials=_credentials(rng, allowed=("127.0.0.1",) if restricted else None),
                    engines=ready,
                    others=others,
                )
                one(fleet, client_run, model=topology.model, timeout=opts.client_timeout)
        # Pinned scenarios: one per client requirement, whatever the seed.
        with start_reference_fleet(topology_from_dict(_BASE, source="proxy target")) as other:
            for scenario in SCENARIOS:
                _run_scenario(scenario, ctx, one, other, main, rng, start_reference_fleet)
        _dynamo_runs(ctx, one, main, rng)
        yield ctx
    finally:
        if saved is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = saved


# --- checks -----------------------------------------------------------------------------------

Problems = list[tuple[ClientRun, str]]


def _describe(run: ClientRun) -> str:
    return f"{run.name}, W={run.inference_world_size}"


def _failure(problems: Problems, header: str = "") -> Failed:
    """One Failed listing the problems run by run, each run headed by what the client did."""
    lines: list[str] = [header] if header else []
    current: ClientRun | None = None
    for run, text in problems:
        if run is not current:
            current = run
            lines.append(f"{_describe(run)} (client {run.outcome}):")
        lines.append(f"  {text}")
    if len(lines) > 40:
        lines = [*lines[:40], f"  ... {len(lines) - 40} more lines"]
    return Failed("\n".join(lines))


def _verdict(problems: Problems, note: str | Callable[[], str], header: str = "") -> str:
    """``note`` (what passed; a callable when only a pass can compute it) when there are no
    problems, else the Failed naming each."""
    if problems:
        raise _failure(problems, header)
    return note() if callable(note) else note


def _family(convention: str) -> str:
    return "vllm-native" if convention == Convention.VLLM_NATIVE_NCCL.value else "prime"


def _completed(run: ClientRun, gave_up: str) -> Problems:
    """What is wrong with a run that must complete: its plan (offsets aside) and, when the client
    did not return, ``gave_up``."""
    problems = _plan_problems(run, offsets=False)
    if not run.returned:
        problems.append((run, gave_up))
    return problems


def _plan_problems(run: ClientRun, *, sizes: bool = True, offsets: bool = True) -> Problems:
    """Every planned engine got an accepted init; with ``offsets`` (and ``sizes``) its values.

    Scenario checks pass ``offsets=False``: the rank checks judge offsets, so one bug in the
    rank math fails those requirements only.
    """
    problems: Problems = []
    records = run.init_records()
    family = _family(run.convention)
    offset = 1 if family == "vllm-native" else 0
    for engine in run.engines:
        got = records.get(engine["key"], [])
        label = f"{engine['label']} (world_size {engine['world_size']})"
        if not got:
            problems.append((run, f"{label} received no broadcast init"))
        elif not any(r.accepted for r in got):
            statuses = ", ".join(f"{r.form} -> HTTP {r.status}" for r in got)
            problems.append((run, f"{label}: every init was rejected by the engine: {statuses}"))
        for rec in got:
            if rec.family != family:
                problems.append(
                    (run, f"{label}: a {rec.family} init ({rec.form}) under {run.convention}")
                )
                continue
            if not offsets:
                continue
            if rec.rank_offset != offset:
                problems.append(
                    (run, f"{label}: expected rank_offset {offset}, found {rec.rank_offset!r}")
                )
            if not sizes:
                continue
            if family == "vllm-native":
                if rec.group_world_size != run.inference_world_size + 1:
                    problems.append(
                        (
                            run,
                            f"{label}: expected world_size {run.inference_world_size + 1} "
                            f"(1 + W), found {rec.group_world_size!r}",
                        )
                    )
                continue
            if rec.inference_world_size != run.inference_world_size:
                problems.append(
                    (
                        run,
                        f"{label}: expected inference_world_size {run.inference_world_size}, "
                        f"found {rec.inference_world_size!r}",
                    )
                )
            if rec.engine_world_size is not None and rec.engine_world_size != engine["world_size"]:
                problems.append(
                    (
                        run,
                        f"{label}: expected engine_world_size {engine['world_size']}, "
                        f"found {rec.engine_world_size!r}",
                    )
                )
        offset += engine["world_size"]
    return problems


def _offset_check(ctx: ClientContext, convention: str) -> str | None:
    ctx.declared(convention)
    runs = ctx.normal_runs(convention)
    if not runs:
        raise CheckError(f"no rank run used the {convention} convention")
    problems: Problems = []
    forms: Counter[str] = Counter()
    for run in runs:
        problems += _plan_problems(run)
        if not run.returned:
            problems.append((run, "the client did not complete on a conformant fleet"))
        for records in run.init_records().values():
            forms.update(r.form for r in records)
    return _verdict(
        problems, f"{len(runs)} run(s): offsets right on every engine (forms: {dict(forms)})"
    )


#: The offset check of each convention: check slug and title (the requirement is the convention's).
_OFFSET_RULES = {
    Convention.PRIME_NCCL: (
        "prime-nccl-offsets",
        "Prime NCCL: offsets are the exclusive prefix sum from 0",
    ),
    Convention.VLLM_NATIVE_NCCL: (
        "vllm-native-offsets",
        "vLLM native NCCL: offsets start at 1, group 1+W",
    ),
    Convention.NIXL: ("nixl-offsets", "NIXL: offsets are the exclusive prefix sum from 0"),
}


def _offset_checker(convention: str) -> Callable[[ClientContext], str | None]:
    def offset_check(ctx: ClientContext) -> str | None:
        return _offset_check(ctx, convention)

    offset_check.__name__ = f"check_{convention.replace('-', '_')}_offsets"
    return offset_check


for _convention, (_slug, _title) in _OFFSET_RULES.items():
    _check(_convention.requirement, _slug, _title)(_offset_checker(_convention.value))


def _ranges(ranks: list[int]) -> str:
    """Compact rank list: [4, 5, 6, 9] -> '4-6, 9'."""
    out: list[list[int]] = []
    for r in sorted(set(ranks)):
        if out and out[-1][1] == r - 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


@_check("RANK-6", "ranks-cover-once")
def check_coverage(ctx: ClientContext) -> str | None:
    """The inference ranks cover [0, W) exactly once."""
    runs = [*ctx.normal_runs(), ctx.scenario("mixed-fleet")]
    problems: Problems = []
    judged = 0
    for run in runs:
        first = Convention(run.convention).first_offset
        owners: dict[int, list[str]] = {}
        sizes = {e["key"]: e for e in run.engines}
        for key, records in run.init_records().items():
            engine = sizes.get(key)
            if engine is None:
                continue  # READY-5 reports inits sent to engines outside the plan
            offset = records[-1].rank_offset
            if not isinstance(offset, int):
                continue
            for rank in range(offset - first, offset - first + engine["world_size"]):
                owners.setdefault(rank, []).append(engine["label"])
        if not owners:
            problems.append((run, "no engine was sent a usable rank_offset: no rank is owned"))
            continue
        judged += 1
        width = run.inference_world_size
        twice = {r: who for r, who in owners.items() if len(who) > 1}
        missing = [r for r in range(width) if r not in owners]
        outside = [r for r in owners if not 0 <= r < width]
        if twice or missing or outside:
            problems.append((run, f"inference ranks [0, {width}) are not covered exactly once"))
            for rank in sorted(twice):
                problems.append((run, f"rank {rank} collides: claimed by {', '.join(twice[rank])}"))
            if missing:
                problems.append((run, f"missing ranks (owned by nobody): {_ranges(missing)}"))
            if outside:
                problems.append((run, f"ranks outside [0, {width}): {_ranges(outside)}"))
    return _verdict(problems, f"{judged} run(s): every rank owned exactly once")


@_check("RANK-8", "same-coordinates")
def check_coordinates(ctx: ClientContext) -> str | None:
    """Every engine is sent the same W, host and port."""
    problems: Problems = []
    judged = 0
    for run in ctx.normal_runs():
        records = [r for rs in run.init_records().values() for r in rs]
        if not records:
            continue
        judged += 1
        seen: dict[str, Counter[str]] = {}
        for rec in records:
            for key in ("host", "port", "inference_world_size", "group_world_size", "timeout"):
                value = getattr(rec, key)
                if value is not None or key in ("host", "port"):
                    seen.setdefault(key, Counter())[repr(value)] += 1
            if rec.session_id is not None:
                seen.setdefault("session_id", Counter())[repr(rec.session_id)] += 1
        for key, counter in seen.items():
            if len(counter) > 1:
                problems.append((run, f"engines were sent different {key}: {dict(counter)}"))
        hosts, ports = seen.get("host", Counter()), seen.get("port", Counter())
        if set(hosts) != {repr(run.master_address)}:
            problems.append((run, f"expected host {run.master_address!r}, found {dict(hosts)}"))
        if set(ports) != {repr(run.master_port)}:
            problems.append((run, f"expected port {run.master_port}, found {dict(ports)}"))
        if run.convention == "nixl" and "session_id" not in seen:
            problems.append((run, "NIXL init carried no session_id"))
    if problems:
        raise _failure(problems)
    if not judged:
        raise Skipped("no run initialised any engine: there are no coordinates to compare")
    return f"{judged} run(s): one set of group coordinates per run"


@_check("RANK-2", "refuse-wrong-sum")
def check_refusal(ctx: ClientContext) -> str | None:
    """A fleet whose world sizes do not sum to W is refused before any request."""
    refusals = [r for r in ctx.runs if r.expect_refusal]
    if not refusals:
        raise CheckError("no refusal run was made")
    problems: Problems = []
    for run in refusals:
        inits = run.init_calls()
        total = sum(e["world_size"] for e in run.engines)
        if inits:
            problems.append(
                (
                    run,
                    f"the engines sum to {total}, yet {len(inits)} engine(s) were initialised: "
                    f"{', '.join(sorted(inits))}",
                )
            )
        elif run.returned:
            problems.append((run, "the client returned success instead of refusing"))
    return _verdict(problems, lambda: f"refused: {cut(refusals[0].outcome.splitlines()[0], 200)}")


@_check("RANK-1", "canonical-order")
def check_canonical_order(ctx: ClientContext) -> str | None:
    """Offsets follow (namespace, component, endpoint, instance_id), not arrival or component order."""
    run = ctx.scenario("mixed-fleet")
    # The real Dynamo plan run: real instance_ids, a model-less engine and another model's.
    runs = [run, *(r for r in ctx.normal_runs() if r.name.startswith(_REAL))]
    real = _real_dynamo(runs)
    problems: Problems = []
    for each in runs:
        problems += _order_problems(each)
    if problems:
        canonical = [e["label"] for e in run.engines]
        raise _failure(problems, f"canonical order: {', '.join(canonical)}")
    canonical = [e["label"] for e in run.engines]
    return f"{run.name}{real}: offsets follow the canonical order {', '.join(canonical)}"


def _order_problems(run: ClientRun) -> Problems:
    problems = _completed(run, "the client did not complete on a conformant fleet")
    records = run.init_records()
    placed = [
        (records[e["key"]][-1].rank_offset, e["label"])
        for e in run.engines
        if records.get(e["key"]) and isinstance(records[e["key"]][-1].rank_offset, int)
    ]
    canonical = [e["label"] for e in run.engines]
    by_offset = [label for _, label in sorted(placed)]
    if len(placed) == len(canonical) and by_offset != canonical:
        problems.append(
            (run, f"engines placed in the order {', '.join(by_offset)} (by their offsets)")
        )
    return problems


@_check("RANK-7", "ranks-inside-engine")
def check_ranks_inside(ctx: ClientContext) -> str | None:
    """Inside an engine, a worker's rank is rank_offset + dp_index*mp + local_rank mod mp."""
    raise Skipped(
        "not observable from outside: the ranks inside an engine are computed by its worker "
        "processes, which a client never calls (the project's worker_rank has a unit test)"
    )


@_check("READY-5", "others-left-alone")
def check_others(ctx: ClientContext) -> str | None:
    """Engines of another model get no admin call."""
    problems: Problems = []
    judged = 0
    runs = [*ctx.normal_runs(), ctx.scenario("mixed-fleet")]
    real = _real_dynamo(runs)
    for run in runs:
        planned = {e["key"] for e in run.engines}
        for other in run.others:
            if other["key"] is None or not other["reachable"]:
                continue  # listed without any URL: no client could have called it
            judged += 1
            calls = [r for r in run.admin_calls if r.engine == other["key"]]
            if calls:
                paths = ", ".join(sorted({r.method + " " + r.path for r in calls}))
                problems.append((run, f"{other['label']} ({other['why']}) received {paths}"))
        known = planned | {o["key"] for o in run.others}
        stray = sorted({r.engine for r in run.admin_calls} - known)
        if stray:
            problems.append((run, f"admin calls to unlisted engines {stray}"))
    if problems:
        raise _failure(problems)
    if not judged:
        raise CheckError("no run listed a reachable engine outside the plan")
    return f"{judged} reachable engine(s) outside the plan left alone{real}"


def _real_dynamo(runs: list[ClientRun]) -> str:
    """' (and N on real Dynamo)' for the runs against real Dynamo among ``runs``; CheckError when
    the harness could not present one of them (an error of the run, not of the client)."""
    real = [r for r in runs if r.name.startswith(_REAL)]
    for run in real:
        if run.harness_problem:
            raise CheckError(f"{run.name}: {run.harness_problem}; the client is not judged on it")
    return f" (and {len(real)} on real Dynamo)" if real else ""


def _credential_problems(run: ClientRun, *, allowed: bool) -> tuple[int, Problems]:
    want = run.credentials.expected_headers()
    absent = run.credentials.absent_headers()
    problems: Problems = []
    judged = 0
    for call in run.admin_calls:
        if run.credentials.allows(call.host) != allowed:
            continue
        judged += 1
        where = f"{call.method} {call.path} to {call.engine} (host {call.host})"
        if allowed:
            wrong = sorted(h for h, v in want.items() if call.headers.get(h) != v)
            if wrong:
                problems.append((run, f"{where}: missing or wrong {', '.join(wrong)}"))
            extra = sorted(h for h in absent if h in call.headers)
            if extra:
                problems.append(
                    (run, f"{where}: API key EMPTY means no key, yet it carried {extra}")
                )
        else:
            leaked = sorted(h for h, v in want.items() if call.headers.get(h) == v)
            if leaked:
                allow = list(run.credentials.allowed_hosts or ())
                problems.append(
                    (run, f"{where}, outside the allow-list {allow}: carried {', '.join(leaked)}")
                )
    return judged, problems


@_check("CRED-2", "credentials-sent")
def check_credentials_sent(ctx: ClientContext) -> str | None:
    """API key, static headers and headers from env go with every admin call."""
    judged, problems = 0, Problems()
    for run in [*ctx.normal_runs(), ctx.scenario("mixed-fleet")]:
        n, found = _credential_problems(run, allowed=True)
        judged, problems = judged + n, problems + found
    if not judged:
        raise Failed("no admin call reached an allowed host, so no credential was seen")
    return _verdict(
        problems,
        f"{judged} admin calls carried every credential (and none with API key EMPTY)",
        f"{len(problems)} of {judged} admin calls to allowed hosts:",
    )


@_check("CRED-3", "credentials-allow-list")
def check_credentials_withheld(ctx: ClientContext) -> str | None:
    """With an allow-list, credentials go only to allowed hosts."""
    judged, problems = 0, Problems()
    for run in [*ctx.normal_runs(), ctx.scenario("allow-list")]:
        if run.credentials.allowed_hosts is None:
            continue
        n, found = _credential_problems(run, allowed=False)
        judged, problems = judged + n, problems + found
    if problems:
        raise _failure(problems, f"{len(problems)} of {judged} admin calls outside the allow-list:")
    if not judged:
        raise Failed("no admin call reached the host outside the allow-list: engine-b was skipped")
    return f"{judged} admin calls outside the allow-list carried no credential"


# --- readiness: held back while pending, then proceeds --------------------------------------


def _ready_time(run: ClientRun) -> float | None:
    if run.ready_at is not None:
        return run.ready_at
    if run.ready_from_listing is not None:
        if len(run.listing_calls) >= run.ready_from_listing:
            return run.listing_calls[run.ready_from_listing - 1].time
        return float("inf")
    return None


def _held_then_proceeded(run: ClientRun) -> Problems:
    problems: Problems = []
    ready = _ready_time(run)
    first = run.first_init_time()
    if ready is not None and first is not None and first < ready:
        early = sorted({r.engine for cs in run.init_calls().values() for r in cs if r.time < ready})
        problems.append(
            (
                run,
                f"initialised {', '.join(early)} {ready - first:.2f} s before the fleet was "
                "ready (the snapshot was still pending)",
            )
        )
    problems += _completed(run, "the client did not proceed once the fleet was ready")
    return problems


def _readiness(ctx: ClientContext, scenario_id: str) -> str:
    runs = [ctx.scenario(scenario_id)]
    runs += [r for r in ctx.runs if r.kind == f"dynamo:{scenario_id}"]
    problems: Problems = []
    for run in runs:
        if run.harness_problem:
            raise CheckError(f"{run.name}: {run.harness_problem}; the client is not judged on it")
        problems += _held_then_proceeded(run)
    if problems:
        raise _failure(problems)
    real = f" (and {len(runs) - 1} on real Dynamo)" if len(runs) > 1 else ""
    return f"{runs[0].name}{real}: held back while pending, then initialised every engine"


#: Each rule that keeps a client pending: requirement, check slug, title and the scenario whose
#: listing breaks the rule until it heals.
_PENDING_RULES = (
    (
        "READY-1",
        "error-is-pending",
        "A matching worker with error keeps it pending",
        "error-then-ready",
    ),
    (
        "READY-2",
        "no-admin-is-pending",
        "A matching worker without admin URL keeps it pending",
        "no-admin-then-ready",
    ),
    ("READY-3", "wrong-sum-is-pending", "A sum other than W keeps it pending", "sum-then-ready"),
    ("READY-6", "no-match-is-pending", "No matching worker keeps it pending", "none-then-ready"),
)


def _pending_checker(scenario_id: str) -> Callable[[ClientContext], str | None]:
    def readiness_check(ctx: ClientContext) -> str | None:
        return _readiness(ctx, scenario_id)

    readiness_check.__name__ = f"check_pending_{scenario_id.replace('-', '_')}"
    return readiness_check


for _requirement, _slug, _title, _scenario in _PENDING_RULES:
    _check(_requirement, _slug, _title)(_pending_checker(_scenario))


@_check("READY-4", "two-identical-polls")
def check_two_polls(ctx: ClientContext) -> str | None:
    """Ready only after two consecutive identical complete polls."""
    run = ctx.scenario("error-then-ready")
    first = run.first_init_time()
    if first is None:
        raise Skipped(f"{run.name}: the client initialised nothing, so its readiness rule is moot")
    before = [r for r in run.listing_calls if r.time < first]
    complete = len(before) - 3  # the first 3 listings carried an error worker
    if complete < 2:
        raise _failure(
            [
                (
                    run,
                    f"planned after {max(complete, 0)} complete poll(s): expected two "
                    f"consecutive identical complete polls ({len(before)} polls in all)",
                )
            ]
        )
    return f"{run.name}: planned after {complete} complete polls"


# --- polling -------------------------------------------------------------------------------------


def _fatal_problems(run: ClientRun, *, once: bool) -> Problems:
    problems: Problems = []
    inits = run.init_calls()
    if inits:
        problems.append((run, f"initialised {', '.join(sorted(inits))} on a listing to refuse"))
    if run.returned:
        problems.append((run, "the client returned success instead of refusing"))
    if once and len(run.listing_calls) != 1:
        problems.append(
            (
                run,
                f"expected exactly one listing request (fatal, not retried), found "
                f"{len(run.listing_calls)}",
            )
        )
    return problems


@_check("POLL-1", "retry-transient")
def check_retry(ctx: ClientContext) -> str | None:
    """Resets, 5xx and 429 are retried, honouring Retry-After."""
    run = ctx.scenario("retryable")
    problems = _completed(run, "the client gave up on a reset, a 429 or a 503")
    limited = [i for i, r in enumerate(run.listing_calls) if r.status == 429]
    gap = None
    if limited and limited[0] + 1 < len(run.listing_calls):
        i = limited[0]
        gap = run.listing_calls[i + 1].time - run.listing_calls[i].time
        if gap < 0.95:
            problems.append(
                (run, f"the next poll came {gap:.2f} s after 429 with Retry-After: 1 (>= 1 s)")
            )
    elif not problems:
        problems.append((run, "no poll followed the 429"))
    return _verdict(problems, lambda: f"{run.name}: recovered; next poll {gap:.2f} s after the 429")


@_check("POLL-2", "fatal-not-retried")
def check_fatal(ctx: ClientContext) -> str | None:
    """Other 4xx, schema violations and duplicates are fatal, with exactly one request."""
    problems: Problems = []
    runs = [ctx.scenario("forbidden"), ctx.scenario("schema-violation"), ctx.scenario("duplicates")]
    for run in runs:
        problems += _fatal_problems(run, once=True)
    return _verdict(problems, f"{len(runs)} listing(s) refused after one request each")


@_check("POLL-3", "size-capped")
def check_size_cap(ctx: ClientContext) -> str | None:
    """An oversized listing is refused, never parsed."""
    run = ctx.scenario("oversized")
    problems = _fatal_problems(run, once=False)
    return _verdict(
        problems,
        lambda: f"{run.name}: refused ({run.outcome.splitlines()[0][:160]})",
        "a 16 MiB listing must exceed the client's cap",
    )


@_check("POLL-4", "same-origin-only")
def check_origin(ctx: ClientContext) -> str | None:
    """No cross-origin redirect is followed; proxy variables are ignored."""
    redirect, proxy = ctx.scenario("cross-origin-redirect"), ctx.scenario("proxy-environment")
    problems = _fatal_problems(redirect, once=False)
    for run in (redirect, proxy):
        if run.foreign:
            paths = ", ".join(sorted({f"{r.method} {r.host}{r.path}" for r in run.foreign}))
            problems.append(
                (run, f"another origin received {len(run.foreign)} request(s): {paths}")
            )
    problems += _plan_problems(proxy, offsets=False)
    if not proxy.returned:
        problems.append((proxy, "the client did not complete with proxy variables set"))
    return _verdict(problems, "the redirect was not followed and the proxy variables were ignored")


_NUMBER = r"(?<![0-9]){}(?![0-9])"


@_check("POLL-5", "deadline-message")
def check_deadline_message(ctx: ClientContext) -> str | None:
    """The deadline error says what the snapshot lacked."""
    import re

    run = next(r for r in ctx.runs if r.expect_refusal)
    total = sum(e["world_size"] for e in run.engines)
    if run.returned or run.init_calls():
        raise Skipped(f"{run.name}: the client never waited for its deadline (see RANK-2)")
    if run.returned or not run.message:
        raise _failure([(run, "the client gave no error message at its deadline")])
    missing = [
        str(n)
        for n in (total, run.inference_world_size)
        if not re.search(_NUMBER.format(n), run.message)
    ]
    if missing:
        raise _failure(
            [
                (
                    run,
                    f"the error names neither the sum found ({total}) nor W "
                    f"({run.inference_world_size}) — missing {', '.join(missing)}: "
                    f"{run.message.strip()[-300:]!r}",
                )
            ],
            "a message check: it looks for the numbers, not the wording",
        )
    return (
        f"the deadline error names the sum {total} and W {run.inference_world_size} (message check)"
    )


@_check("CRED-1", "no-userinfo")
def check_userinfo(ctx: ClientContext) -> str | None:
    """URLs carrying user info are refused."""
    configured, listed = ctx.scenario("userinfo-url"), ctx.scenario("userinfo-listed")
    problems: Problems = []
    if configured.listing_calls:
        problems.append(
            (configured, f"{len(configured.listing_calls)} request(s) to a URL with user info")
        )
    problems += _fatal_problems(configured, once=False)
    problems += _fatal_problems(listed, once=True)
    for run in (configured, listed):
        for r in run.listing_calls + run.admin_calls:
            if r.headers.get("authorization", "").lower().startswith("basic"):
                problems.append((run, f"{describe_call(r)} carried the user info as Basic auth"))
        if run.admin_calls:
            problems.append((run, f"{len(run.admin_calls)} admin call(s) were made"))
    for any_run in ctx.runs:  # no credential ever travels in a path or a query
        values = any_run.credentials.expected_headers().values()
        secrets = [v.removeprefix("Bearer ") for v in values if len(v) >= 8]
        for r in any_run.listing_calls + any_run.admin_calls:
            if any(v in r.path or v in r.query for v in secrets):
                problems.append((any_run, f"{describe_call(r)} carried a credential in its URL"))
    return _verdict(problems, "both URLs with user info were refused before any admin call")


@_check("CRED-4", "no-credentials-across-redirect")
def check_admin_redirect(ctx: ClientContext) -> str | None:
    """No credential across a redirect."""
    run = ctx.scenario("admin-redirect")
    want = run.credentials.expected_headers()
    problems: Problems = []
    for r in run.foreign:
        leaked = sorted(h for h, v in want.items() if r.headers.get(h) == v)
        if leaked:
            problems.append(
                (run, f"{describe_call(r)} after a redirect carried {', '.join(leaked)}")
            )
    if not any(300 <= r.status < 400 for r in run.admin_calls):
        raise CheckError(f"{run.name}: no admin call met the redirect")
    if problems:
        raise _failure(problems)
    followed = (
        f"; it followed to {len(run.foreign)} call(s) without credentials" if run.foreign else ""
    )
    return f"no credential crossed the redirect{followed}"


@_check("TOPO-1", "reverify-before-update")
def check_reverify(ctx: ClientContext) -> str | None:
    """A resized fleet is reported, not updated."""
    if not any(r.updates() for r in ctx.normal_runs()):
        raise Skipped("the client made no update in any run, so re-verification cannot be seen")
    run = ctx.scenario("resize-after-init")
    runs = [run, *(r for r in ctx.runs if r.kind == "dynamo:resize-after-init")]
    real = _real_dynamo(runs)
    problems: Problems = []
    for each in runs:
        if each is not run and "dynamo.engine-a#0" not in each.init_calls():
            problems.append((each, "engine-a received no init, so it never reported its resize"))
        if each.updates():
            problems.append((each, f"{len(each.updates())} update call(s) on a resized fleet"))
        if each.returned:
            problems.append((each, "the client returned success on a resized fleet"))
        elif "resiz" not in each.message.lower():
            problems.append((each, "the error does not report the resize (message check)"))
    return _verdict(
        problems,
        lambda: (
            f"scenario {run.kind}{real}: stopped before updating "
            f"({run.outcome.splitlines()[0][:160]})"
        ),
    )


@_check("VERSION-2", "unknown-version")
def check_version(ctx: ClientContext) -> str | None:
    """protocol_version 2 is refused without retrying."""
    run = ctx.scenario("version-2")
    problems = _fatal_problems(run, once=True)
    return _verdict(problems, f"{run.name}: refused after one request")


@_check("BODY-5", "unknown-fields-ignored")
def check_unknown_fields(ctx: ClientContext) -> str | None:
    """Unknown fields at any level are ignored."""
    run = ctx.scenario("unknown-fields")
    problems = _completed(run, "the client did not complete on a listing with unknown fields")
    return _verdict(problems, f"{run.name}: every engine initialised")


@_check("DIALECT-1", "other-dialect")
def check_dialect(ctx: ClientContext) -> str | None:
    """An SMG body is refused as a whole, as a dialect."""
    run = ctx.scenario("smg-dialect")
    problems = _fatal_problems(run, once=True)
    text = run.message.lower()
    if not problems and "dialect" not in text and "smg" not in text:
        problems.append(
            (
                run,
                f"refused, but the error does not name the dialect: {run.message.strip()[-200:]!r}",
            )
        )
    return _verdict(
        problems,
        f"{run.name}: refused as another dialect after one request",
        "the message check looks for 'dialect' or 'SMG'",
    )


@_check("ADMIN-3", "failed-admin-call")
def check_admin_failure(ctx: ClientContext) -> str | None:
    """A failed admin call is a failure, never success."""
    problems: Problems = []
    runs = [ctx.scenario("init-fails"), ctx.scenario("init-error-in-200")]
    for run in runs:
        if not run.init_calls():
            raise CheckError(f"{run.name}: the client initialised nothing, so no init failed")
        if run.returned:
            problems.append((run, "the client returned success although engine-b's init failed"))
    for run in ctx.normal_runs():
        rejected = [
            describe_call(r) + f" -> HTTP {r.status}"
            for calls in run.init_calls().values()
            for r in calls
            if not 200 <= r.status < 300
        ]
        if rejected and run.returned:
            problems.append((run, f"returned success after {'; '.join(rejected[:3])}"))
    return _verdict(
        problems, f"{len(runs)} failed init(s) (500; 200 with status error) reported as failures"
    )
