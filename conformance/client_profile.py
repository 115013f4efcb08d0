"""The ``client`` profile (black box): a client under test against reference fleets, and the checks.

The setup runs what the selected checks need (each check names its runs: the rank runs, the
refusal run, real Dynamo, or scenarios of conformance/client_scenarios.py) through
conformance/client_runs.py; each check then judges what the fleets recorded: requests, their
order and timing, headers and bodies, plus the client's exit status and its structured result
(conformance/client_call.py). The wording of a client's error never decides a verdict: it is
quoted in a report only as detail.

Every problem a check finds carries a reason code (``details["reasons"]`` of the result), so a
test can tell why a check failed, not only that it did.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from conformance import native_lifecycle
from conformance.client_call import (
    SECRET_ENV,
    ClientCall,
    ClientUnderTest,
    Credentials,
    arguments_from_env,
    load_client,
)
from conformance.client_runs import (
    CONVENTIONS,
    REAL_DYNAMO,
    ClientContext,
    ClientRun,
    Runner,
)
from conformance.client_scenarios import (
    BACKOFF_FAILURES,
    MOVED_PATH,
    RETRY_AFTER_S,
    SCENARIOS,
    Scenario,
)
from conformance.client_wire import describe_call
from conformance.registry import CheckError, CheckFunction, Failed, Skipped, check
from conformance.runner import RunContext, profile_setup, select_checks
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.suite.recording import RecordedRequest
from prime_rl_dynamo.text import cut

__all__ = [
    "NEEDS",
    "SECRET_ENV",
    "ClientCall",
    "ClientRun",
    "ClientUnderTest",
    "Credentials",
    "Problem",
    "arguments_from_env",
    "checks_of_scenario",
    "load_client",
    "readiness",
    "related_checks",
]


@dataclass(frozen=True)
class Problem:
    """One thing a check found wrong in one run: a reason code (stable, for tests) and a line."""

    run: ClientRun
    reason: str
    text: str


Problems = list[Problem]

#: Check ID -> the runs it judges: "rank" (the pinned and generated fleets), "refusal" (told the
#: wrong W), "dynamo" (real Dynamo, when available) and scenario ids.
NEEDS: dict[str, tuple[str, ...]] = {}


def _check(
    requirement_id: str, slug: str, title: str | None = None, *, needs: tuple[str, ...] = ()
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check of the client profile that judges the runs ``needs`` names; its title is
    its docstring (without the period) unless given, and its slug where docstrings are stripped."""

    def register(func: CheckFunction) -> CheckFunction:
        named = title or (func.__doc__ or slug).strip().rstrip(".")
        check_id = f"{requirement_id}::{slug}"
        NEEDS[check_id] = needs

        def judged(ctx: ClientContext) -> str | None:
            return _one_cause(ctx, check_id, func)

        judged.__name__, judged.__doc__ = func.__name__, func.__doc__
        check("client", requirement_id, slug, named)(judged)
        return func

    return register


#: The checks that name a root cause themselves: the others report "not judged" with it.
_BASELINE_CHECK = "RANK-2::refuse-wrong-sum"
_PACE_CHECK = "POLL-1::retry-transient"


def _one_cause(ctx: ClientContext, check_id: str, func: CheckFunction) -> str | None:
    """One root cause, one failure. A client that never completed the conformant baseline fails
    RANK-2 alone (a valid heterogeneous fleet must be accepted): without it a refusal elsewhere
    proves nothing, so every other check is not judged. A client slower than its declared pace
    fails POLL-1: another check's failure that rests only on runs it did not finish is not
    judged (their deadlines were derived from the pace it declared)."""
    cause = ctx.baseline_cause()
    if cause is not None and check_id != _BASELINE_CHECK:
        raise Skipped(f"not judged: {cause}")
    try:
        return func(ctx)
    except Failed as failed:
        cause = ctx.pace_cause() if check_id != _PACE_CHECK else None
        kinds = set((failed.details or {}).get("runs", ()))
        unfinished = {r.kind for r in ctx.runs if not r.returned}
        if cause is not None and kinds and kinds <= unfinished:
            raise Skipped(f"not judged: {cause}") from None
        raise


def checks_of_scenario(scenario_id: str) -> list[str]:
    """The check IDs that judge a scenario's run."""
    return [check_id for check_id, needs in NEEDS.items() if scenario_id in needs]


def _wanted(run: RunContext) -> set[str]:
    """What the selected checks need, with every part of a needed composite."""
    chosen = {c.id for c in select_checks(run.options) if c.profile == "client"}
    # The baseline always runs: every verdict rests on it (_one_cause).
    wanted = {"baseline"} | {need for check_id in chosen for need in NEEDS.get(check_id, ())}
    for s in SCENARIOS:
        if s.id in wanted:
            wanted.update(s.parts)
    return wanted


@profile_setup("client")
@contextlib.contextmanager
def _setup(run: RunContext) -> Iterator[ClientContext]:
    try:
        import prime_rl_dynamo.suite.reference
        import prime_rl_dynamo.suite.strategies  # noqa: F401
    except ImportError as exc:
        raise Skipped(f"the client profile needs the conformance extra: {exc}") from exc
    opts = run.options
    client = load_client(opts.client, opts.client_cmd)
    declared = tuple(getattr(opts, "client_conventions", ()) or CONVENTIONS)
    ctx = ClientContext(run, client, declared)
    wanted = _wanted(run)
    n_generated = max(1, opts.topologies) if "rank" in wanted else 0
    n_scenarios = sum(1 for s in SCENARIOS if s.id in wanted)
    run.notes.append(
        f"client profile: {client.description} ({', '.join(declared)}), judged at its pace "
        f"({ctx.pace.describe()}), against reference fleets "
        f"(the pinned [2, 4, 1] fleet per convention, {n_scenarios} pinned scenarios and "
        f"{n_generated} generated topologies, seed {run.seed})"
    )
    rng = run.rng("client")
    secret = f"env-{rng.getrandbits(48):012x}"
    saved = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = secret
    runner = Runner(ctx, rng)
    try:
        runner.rank_runs(refusal="refusal" in wanted, with_plans="rank" in wanted)
        if "rank" in wanted:
            runner.generated_runs(n_generated, shape=native_lifecycle.shape_for)
        runner.scenarios(wanted, lambda s: _parts_failed(ctx, s))
        if "dynamo" in wanted:
            runner.dynamo_runs(lambda kind: _decided(ctx, kind))
        runner.close()
        yield ctx
    finally:
        runner.close()
        if saved is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = saved


# --- verdicts ------------------------------------------------------------------------------------


def _describe(run: ClientRun) -> str:
    return f"{run.name}, W={run.inference_world_size}"


def _failure(problems: Problems, header: str = "") -> Failed:
    """One Failed listing the problems run by run, each run headed by what the client did; its
    details carry every problem's reason code and run."""
    lines: list[str] = [header] if header else []
    current: ClientRun | None = None
    for p in problems:
        if p.run is not current:
            current = p.run
            lines.append(f"{_describe(p.run)} (client {p.run.outcome}):")
        lines.append(f"  {p.text}")
    if len(lines) > 40:
        lines = [*lines[:40], f"  ... {len(lines) - 40} more lines"]
    details = {
        "reasons": sorted({p.reason for p in problems}),
        "runs": sorted({p.run.kind for p in problems}),
    }
    return Failed("\n".join(lines), details=details)


def _verdict(problems: Problems, note: str | Callable[[], str], header: str = "") -> str:
    """``note`` (what passed; a callable when only a pass can compute it) when there are no
    problems, else the Failed naming each."""
    if problems:
        raise _failure(problems, header)
    return note() if callable(note) else note


def _family(convention: str) -> str:
    return "vllm-native" if convention == Convention.VLLM_NATIVE_NCCL.value else "prime"


def _ended(run: ClientRun, gave_up: str) -> Problems:
    """A hang, or ``gave_up`` when the client did not return."""
    if run.hung:
        return [Problem(run, "hung", "the client was still running past its deadline (stopped)")]
    if not run.returned:
        return [Problem(run, "did-not-complete", gave_up)]
    return []


def _completed(run: ClientRun, gave_up: str) -> Problems:
    """What is wrong with a run that must complete: its plan (offsets aside) and its end."""
    return _plan_problems(run, offsets=False) + _ended(run, gave_up)


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
            problems.append(Problem(run, "no-init", f"{label} received no broadcast init"))
        elif not any(r.accepted for r in got):
            statuses = ", ".join(f"{r.form} -> HTTP {r.status}" for r in got)
            problems.append(
                Problem(run, "init-rejected", f"{label}: every init was rejected: {statuses}")
            )
        for rec in got:
            if rec.family != family:
                problems.append(
                    Problem(
                        run,
                        "wrong-family",
                        f"{label}: a {rec.family} init ({rec.form}) under {run.convention}",
                    )
                )
                continue
            if not offsets:
                continue
            if rec.rank_offset != offset:
                problems.append(
                    Problem(
                        run,
                        "wrong-offset",
                        f"{label}: expected rank_offset {offset}, found {rec.rank_offset!r}",
                    )
                )
            if not sizes:
                continue
            problems += _size_problems(run, engine, rec, label)
        offset += engine["world_size"]
    return problems


def _size_problems(run: ClientRun, engine: dict[str, object], rec: object, label: str) -> Problems:
    from conformance.client_wire import InitRecord

    assert isinstance(rec, InitRecord)
    if rec.family == "vllm-native":
        if rec.group_world_size != run.inference_world_size + 1:
            return [
                Problem(
                    run,
                    "wrong-group-size",
                    f"{label}: expected world_size {run.inference_world_size + 1} (1 + W), "
                    f"found {rec.group_world_size!r}",
                )
            ]
        return []
    problems: Problems = []
    if rec.binding_problem is not None:
        # A keyword the worker lacks is a TypeError in the engine; a positional argument binds to
        # the parameter at its position (main's sixth, "default", sets quantisation).
        problems.append(
            Problem(run, "unbound-argument", f"{label}: {rec.form} {rec.binding_problem}")
        )
    if rec.inference_world_size != run.inference_world_size:
        problems.append(
            Problem(
                run,
                "wrong-inference-world-size",
                f"{label}: expected inference_world_size {run.inference_world_size}, "
                f"found {rec.inference_world_size!r}",
            )
        )
    # RANK-3: engine_world_size only where the target worker takes it; when sent, it is the
    # engine's own (the rank math needs the offsets and W, which every form carries).
    if rec.engine_world_size is not None and rec.engine_world_size != engine["world_size"]:
        problems.append(
            Problem(
                run,
                "wrong-engine-world-size",
                f"{label}: expected engine_world_size {engine['world_size']}, "
                f"found {rec.engine_world_size!r}",
            )
        )
    return problems


# --- rank checks: plain fleets only --------------------------------------------------------------


def _offset_check(ctx: ClientContext, convention: str) -> str | None:
    ctx.declared(convention)
    runs = ctx.normal_runs(convention)
    if not runs:
        raise CheckError(f"no rank run used the {convention} convention")
    problems: Problems = []
    forms: Counter[str] = Counter()
    for run in runs:
        problems += _plan_problems(run)
        problems += _ended(run, "the client did not complete on a conformant fleet")
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
    _check(_convention.requirement, _slug, _title, needs=("rank",))(
        _offset_checker(_convention.value)
    )


def _ranges(ranks: list[int]) -> str:
    """Compact rank list: [4, 5, 6, 9] -> '4-6, 9'."""
    out: list[list[int]] = []
    for r in sorted(set(ranks)):
        if out and out[-1][1] == r - 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


@_check("RANK-6", "ranks-cover-once", needs=("rank",))
def check_coverage(ctx: ClientContext) -> str | None:
    """The inference ranks cover [0, W) exactly once."""
    problems: Problems = []
    judged = 0
    for run in ctx.normal_runs():
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
            problems.append(
                Problem(run, "no-rank-owned", "no engine was sent a usable rank_offset")
            )
            continue
        judged += 1
        width = run.inference_world_size
        twice = {r: who for r, who in owners.items() if len(who) > 1}
        missing = [r for r in range(width) if r not in owners]
        outside = [r for r in owners if not 0 <= r < width]
        if twice or missing or outside:
            problems.append(
                Problem(
                    run, "not-covered-once", f"inference ranks [0, {width}) are not covered once"
                )
            )
            for rank in sorted(twice):
                problems.append(
                    Problem(
                        run,
                        "rank-collides",
                        f"rank {rank} collides: claimed by {', '.join(twice[rank])}",
                    )
                )
            if missing:
                problems.append(
                    Problem(
                        run,
                        "rank-missing",
                        f"missing ranks (owned by nobody): {_ranges(missing)}",
                    )
                )
            if outside:
                problems.append(
                    Problem(run, "rank-outside", f"ranks outside [0, {width}): {_ranges(outside)}")
                )
    return _verdict(problems, f"{judged} run(s): every rank owned exactly once")


_COORDINATES = (
    "host",
    "port",
    "inference_world_size",
    "group_world_size",
    "timeout",
    "session_id",
)


@_check("RANK-8", "same-coordinates", needs=("rank",))
def check_coordinates(ctx: ClientContext) -> str | None:
    """Every engine is sent the same W, host, port, timeout and session; an absent value counts."""
    problems: Problems = []
    judged = 0
    for run in ctx.normal_runs():
        records = [r for rs in run.init_records().values() for r in rs]
        if not records:
            continue
        judged += 1
        seen: dict[str, Counter[str]] = {}
        for rec in records:
            # Absent values count: an engine sent no timeout differs from one sent 30 s.
            for key in _COORDINATES:
                seen.setdefault(key, Counter())[repr(getattr(rec, key))] += 1
        for key, counter in seen.items():
            if len(counter) > 1:
                problems.append(
                    Problem(
                        run,
                        "differing-" + key,
                        f"engines were sent different {key}: {dict(counter)}",
                    )
                )
        hosts, ports = seen.get("host", Counter()), seen.get("port", Counter())
        if set(hosts) != {repr(run.master_address)}:
            problems.append(
                Problem(
                    run, "wrong-host", f"expected host {run.master_address!r}, found {dict(hosts)}"
                )
            )
        if set(ports) != {repr(run.master_port)}:
            problems.append(
                Problem(run, "wrong-port", f"expected port {run.master_port}, found {dict(ports)}")
            )
        if run.convention == "nixl" and set(seen["session_id"]) == {repr(None)}:
            problems.append(Problem(run, "no-session-id", "NIXL init carried no session_id"))
    if problems:
        raise _failure(problems)
    if not judged:
        raise Skipped("no run initialised any engine: there are no coordinates to compare")
    return f"{judged} run(s): one set of group coordinates per run"


@_check("RANK-2", "refuse-wrong-sum", needs=("refusal", "baseline"))
def check_refusal(ctx: ClientContext) -> str | None:
    """A fleet whose world sizes sum to W is accepted; one that does not is refused before any
    request."""
    refusals = [r for r in ctx.runs if r.expect_refusal]
    if not refusals:
        raise CheckError("no refusal run was made")
    problems: Problems = []
    cause = ctx.baseline_cause()
    if cause is not None:
        # The refusal proves nothing when the right W is refused as well: no vacuous pass.
        baseline = next(r for r in ctx.runs if r.kind == "rank")
        problems.append(Problem(baseline, "refused-valid-fleet", cause))
    for run in refusals:
        total = sum(e["world_size"] for e in run.engines)
        if run.admin_calls:  # "before any request": any call to an engine, not only an init
            calls = sorted({describe_call(r) for r in run.admin_calls})
            problems.append(
                Problem(
                    run,
                    "request-sent",
                    f"the engines sum to {total}, not {run.inference_world_size}, yet "
                    f"{len(run.admin_calls)} admin request(s) were sent: {'; '.join(calls[:4])}",
                )
            )
        elif run.returned:
            problems.append(
                Problem(run, "returned", "the client returned success instead of refusing")
            )
    return _verdict(problems, lambda: f"refused: {cut(refusals[0].outcome, 200)}")


def _order_problems(run: ClientRun) -> Problems:
    records = run.init_records()
    placed = [
        (records[e["key"]][-1].rank_offset, e["label"])
        for e in run.engines
        if records.get(e["key"]) and isinstance(records[e["key"]][-1].rank_offset, int)
    ]
    canonical = [e["label"] for e in run.engines]
    by_offset = [label for _, label in sorted(placed)]
    if len(placed) == len(canonical) and by_offset != canonical:
        return [
            Problem(
                run,
                "not-canonical",
                f"engines placed in the order {', '.join(by_offset)} (by their offsets); "
                f"canonical: {', '.join(canonical)}",
            )
        ]
    return []


def _real_dynamo(runs: list[ClientRun]) -> str:
    """' (and N on real Dynamo)' for the runs against real Dynamo among ``runs``; CheckError when
    the harness could not present one of them (an error of the run, not of the client)."""
    real = [r for r in runs if r.name.startswith(REAL_DYNAMO)]
    for run in real:
        if run.harness_problem:
            raise CheckError(f"{run.name}: {run.harness_problem}; the client is not judged on it")
    return f" (and {len(real)} on real Dynamo)" if real else ""


def _dynamo_plan(ctx: ClientContext) -> list[ClientRun]:
    return [r for r in ctx.runs if r.kind == "dynamo:plan"]


@_check(
    "RANK-1",
    "canonical-order",
    "Offsets follow (namespace, component, endpoint, instance_id), not arrival or component order",
    needs=("prefix-scope", "unsorted-listing", "dynamo"),
)
def check_canonical_order(ctx: ClientContext) -> str | None:
    scoped, unsorted = ctx.scenario("prefix-scope"), ctx.scenario("unsorted-listing")
    runs = [scoped, *_dynamo_plan(ctx)]
    real = _real_dynamo(runs)
    problems: Problems = []
    for each in runs:
        problems += _order_problems(each)
        problems += _completed(each, "the client did not complete on a conformant fleet")
    # Out of canonical order (LIST-1 broken): refusing the listing is fine, planning in the
    # order it arrived is not.
    problems += _order_problems(unsorted)
    canonical = [e["label"] for e in scoped.engines]
    return _verdict(
        problems,
        f"{scoped.name}{real}: offsets follow the canonical order {', '.join(canonical)}; "
        f"the unsorted listing was {'refused' if not unsorted.init_calls() else 'sorted'}",
    )


@_check("RANK-7", "ranks-inside-engine")
def check_ranks_inside(ctx: ClientContext) -> str | None:
    """Inside an engine, a worker's rank is rank_offset + dp_index*mp + local_rank mod mp."""
    raise Skipped(
        "not observable from outside: the ranks inside an engine are computed by its worker "
        "processes, which a client never calls (the project's worker_rank has a unit test)"
    )


# --- matching (READY-5) --------------------------------------------------------------------------


def _others_problems(run: ClientRun) -> tuple[int, Problems]:
    """(reachable entries outside the plan, calls they or unlisted engines received)."""
    problems: Problems = []
    judged = 0
    planned = {e["key"] for e in run.engines}
    for other in run.others:
        if other["key"] is None or not other["reachable"]:
            continue  # listed without any URL: no client could have called it
        judged += 1
        calls = [r for r in run.admin_calls if r.engine == other["key"]]
        if calls:
            paths = ", ".join(sorted({r.method + " " + r.path for r in calls}))
            problems.append(
                Problem(run, "called-other", f"{other['label']} ({other['why']}) received {paths}")
            )
    known = planned | {o["key"] for o in run.others}
    stray = sorted({r.engine for r in run.admin_calls} - known)
    if stray:
        problems.append(Problem(run, "called-unlisted", f"admin calls to unlisted engines {stray}"))
    return judged, problems


_MATCHING = ("model-less", "other-model", "other-model-no-admin")


def _matching_problems(run: ClientRun) -> Problems:
    """A single-variable matching scenario: others left alone, the plan complete."""
    problems = _others_problems(run)[1]
    problems += _completed(run, "the client did not complete (the unusual entry stopped it)")
    return problems


@_check("READY-5", "others-left-alone", needs=(*_MATCHING, "dynamo"))
def check_others(ctx: ClientContext) -> str | None:
    """A model-less entry matches; entries of another model take no part, whatever they carry."""
    runs = [ctx.scenario(s) for s in _MATCHING]
    real = _real_dynamo([*runs, *_dynamo_plan(ctx)])
    problems: Problems = []
    judged = 0
    for run in [*runs, *_dynamo_plan(ctx)]:
        n, found = _others_problems(run)
        judged, problems = judged + n, problems + found
        problems += _completed(run, "the client did not complete (the unusual entry stopped it)")
    return _verdict(
        problems,
        f"{len(runs)} scenarios ({', '.join(_MATCHING)}): the model-less engine planned, "
        f"{judged} reachable engine(s) of another model left alone{real}",
    )


@_check(
    "READY-5",
    "mixed-fleet",
    "A composite fleet is handled as each of its parts alone",
    needs=("mixed-fleet",),
)
def check_mixed_fleet(ctx: ClientContext) -> str | None:
    if "mixed-fleet" in ctx.not_run:
        raise Skipped(f"the composite mixed-fleet was not run: {ctx.not_run['mixed-fleet']}")
    run = ctx.scenario("mixed-fleet")
    problems = _matching_problems(run)
    problems += _order_problems(run)
    problems += _credential_problems(run, allowed=True)[1]
    return _verdict(
        problems,
        f"{run.name}: combines {', '.join(run.parts)} (each passed alone); planned and left the "
        "others alone",
        f"composite of {', '.join(run.parts)}, each of which passed alone:",
    )


# --- credentials ---------------------------------------------------------------------------------


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
                problems.append(
                    Problem(
                        run, "credential-missing", f"{where}: missing or wrong {', '.join(wrong)}"
                    )
                )
            extra = sorted(h for h in absent if h in call.headers)
            if extra:
                problems.append(
                    Problem(
                        run, "empty-key-sent", f"{where}: API key EMPTY means no key, yet {extra}"
                    )
                )
        else:
            leaked = sorted(h for h, v in want.items() if call.headers.get(h) == v)
            if leaked:
                allow = list(run.credentials.allowed_hosts or ())
                problems.append(
                    Problem(
                        run,
                        "credential-leaked",
                        f"{where}, outside the allow-list {allow}: carried {', '.join(leaked)}",
                    )
                )
    return judged, problems


_ALLOW_LISTS = ("allow-list", "allow-list-wildcard", "allow-list-cidr", "allow-list-case")


@_check("CRED-2", "credentials-sent", needs=("rank", "api-key-empty", *_ALLOW_LISTS))
def check_credentials_sent(ctx: ClientContext) -> str | None:
    """API key, static headers and headers from env go with every admin call to an allowed host."""
    judged, problems = 0, Problems()
    runs = [*ctx.normal_runs(), ctx.scenario("api-key-empty"), *map(ctx.scenario, _ALLOW_LISTS)]
    for run in runs:
        n, found = _credential_problems(run, allowed=True)
        judged, problems = judged + n, problems + found
    empty = ctx.scenario("api-key-empty")
    problems += _completed(empty, "the client did not complete with API key EMPTY")
    if not judged:
        raise Failed("no admin call reached an allowed host, so no credential was seen")
    return _verdict(
        problems,
        f"{judged} admin calls carried every credential (and none with API key EMPTY)",
        f"{len(problems)} problem(s) in {judged} admin calls to allowed hosts:",
    )


@_check("CRED-3", "credentials-allow-list", needs=("rank", *_ALLOW_LISTS))
def check_credentials_withheld(ctx: ClientContext) -> str | None:
    """With an allow-list (exact names, wildcards, CIDRs), credentials go only to allowed hosts."""
    judged, problems = 0, Problems()
    for run in [*ctx.normal_runs(), *map(ctx.scenario, _ALLOW_LISTS)]:
        if run.credentials.allowed_hosts is None:
            continue
        n, found = _credential_problems(run, allowed=False)
        judged, problems = judged + n, problems + found
    if problems:
        raise _failure(problems, f"{len(problems)} of {judged} admin calls outside the allow-list:")
    if not judged:
        raise Failed("no admin call reached a host outside the allow-list: engine-b was skipped")
    return f"{judged} admin calls outside the allow-list carried no credential"


# --- readiness: held back while pending, then proceeds -------------------------------------------


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
            Problem(
                run,
                "planned-while-pending",
                f"initialised {', '.join(early)} {ready - first:.2f} s before the fleet was "
                "ready (the snapshot was still pending)",
            )
        )
    problems += _completed(run, "the client did not proceed once the fleet was ready")
    return problems


def readiness(ctx: ClientContext, scenario_ids: tuple[str, ...]) -> str:
    """The verdict of a pending rule: held back until ready, then every engine initialised."""
    runs = [ctx.scenario(s) for s in scenario_ids]
    runs += [r for r in ctx.runs if r.kind in {f"dynamo:{s}" for s in scenario_ids}]
    problems: Problems = []
    for run in runs:
        if run.harness_problem:
            raise CheckError(f"{run.name}: {run.harness_problem}; the client is not judged on it")
        problems += _held_then_proceeded(run)
    if problems:
        raise _failure(problems)
    real = sum(1 for r in runs if r.name.startswith(REAL_DYNAMO))
    more = f" (and {real} on real Dynamo)" if real else ""
    return (
        f"{', '.join(scenario_ids)}{more}: held back while pending, then initialised every engine"
    )


#: Each rule that keeps a client pending: requirement, check slug, title and the scenarios whose
#: listing breaks the rule until it heals.
_PENDING_RULES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("READY-1", "error-is-pending", "A matching worker with error keeps it pending",
     ("error-then-ready", "error-then-gone")),
    ("READY-2", "no-admin-is-pending", "A matching worker without admin URL keeps it pending",
     ("no-admin-then-ready", "no-admin-then-gone")),
    ("READY-3", "wrong-sum-is-pending", "A sum other than W (below or above) keeps it pending",
     ("sum-then-ready", "sum-above-then-ready")),
    ("READY-6", "no-match-is-pending", "No matching worker keeps it pending", ("none-then-ready",)),
)  # fmt: skip
_REAL_PENDING = {"error-then-ready", "sum-then-ready"}


def _pending_checker(scenario_ids: tuple[str, ...]) -> Callable[[ClientContext], str | None]:
    def readiness_check(ctx: ClientContext) -> str | None:
        return readiness(ctx, scenario_ids)

    readiness_check.__name__ = f"check_pending_{scenario_ids[0].replace('-', '_')}"
    return readiness_check


for _requirement, _slug, _title, _scenarios in _PENDING_RULES:
    _real = ("dynamo",) if _REAL_PENDING & set(_scenarios) else ()
    _check(_requirement, _slug, _title, needs=(*_scenarios, *_real))(_pending_checker(_scenarios))


def _streak_problems(run: ClientRun) -> Problems:
    """READY-4 on the wire: before the first init, at least two complete polls (200 or 304, and
    at or past ``ready_from_listing``) since the last poll that was not."""
    first = run.first_init_time()
    if first is None:
        return _ended(run, "the client initialised nothing")
    before = [r for r in run.listing_calls if r.time < first]
    healthy_from = (run.ready_from_listing or 1) - 1
    streak = 0
    for index, r in enumerate(before):
        # 304 (protocol 2: not modified since the ETag the client sent) is a complete poll too.
        complete = r.status in (200, 304) and index + 1 not in run.pending_listings
        streak = streak + 1 if complete and index >= healthy_from else 0
    if streak < 2:
        return [
            Problem(
                run,
                "planned-without-two-polls",
                f"planned after {streak} complete poll(s) in a row: expected two consecutive "
                f"identical complete polls ({len(before)} polls in all, statuses "
                f"{[r.status for r in before]})",
            )
        ]
    return []


_STREAKS = ("error-then-ready", "streak-broken", "streak-pending", "renumbered")


@_check(
    "READY-4",
    "two-identical-polls",
    needs=_STREAKS,
)
def check_two_polls(ctx: ClientContext) -> str | None:
    """Ready after two consecutive identical complete polls; a failed or pending poll restarts."""
    runs = [ctx.scenario(s) for s in _STREAKS]
    problems: Problems = []
    for run in runs:
        problems += _streak_problems(run)
        problems += _completed(run, "the client did not complete")
    return _verdict(problems, f"{len(runs)} scenarios: planned after two complete polls in a row")


# --- polling -------------------------------------------------------------------------------------


def _fatal_problems(run: ClientRun, *, once: bool) -> Problems:
    problems: Problems = []
    inits = run.init_calls()
    if inits:
        problems.append(
            Problem(
                run, "initialised", f"initialised {', '.join(sorted(inits))} on a listing to refuse"
            )
        )
    if run.returned:
        problems.append(Problem(run, "returned", "the client returned success instead of refusing"))
    if run.hung:
        problems.append(Problem(run, "hung", "the client was still running past its deadline"))
    if once and len(run.listing_calls) != 1:
        problems.append(
            Problem(
                run,
                "retried",
                f"expected exactly one listing request (fatal, not retried), found "
                f"{len(run.listing_calls)}",
            )
        )
    return problems


@_check("POLL-1", "retry-transient", needs=("retryable", "backoff"))
def check_retry(ctx: ClientContext) -> str | None:
    """Resets, 5xx and 429 are retried, honouring Retry-After, with a backoff that grows."""
    run = ctx.scenario("retryable")
    problems = _completed(run, "the client gave up on a reset, a 429 or a 503")
    limited = [i for i, r in enumerate(run.listing_calls) if r.status == 429]
    gap = None
    if limited and limited[0] + 1 < len(run.listing_calls):
        i = limited[0]
        gap = run.listing_calls[i + 1].time - run.listing_calls[i].time
        if gap < RETRY_AFTER_S - 0.05:
            problems.append(
                Problem(
                    run,
                    "retry-after-ignored",
                    f"the next poll came {gap:.2f} s after 429 with Retry-After: "
                    f"{RETRY_AFTER_S:g} (expected >= {RETRY_AFTER_S:g} s)",
                )
            )
    elif not problems:
        problems.append(Problem(run, "no-retry", "no poll followed the 429"))
    backoff = ctx.scenario("backoff")
    problems += _completed(backoff, "the client gave up on consecutive 503s")
    calls = backoff.listing_calls
    gaps = [b.time - a.time for a, b in itertools.pairwise(calls) if a.status == 503]
    shown = ", ".join(f"{g:.3f}" for g in gaps)
    if len(gaps) < BACKOFF_FAILURES:
        if not problems:
            problems.append(
                Problem(backoff, "no-retry", f"only {len(gaps)} poll(s) followed a 503")
            )
    elif gaps[-1] < max(2 * gaps[0], ctx.pace.poll_interval):
        # SPEC §10's bounds: the waits grow at least fourfold over four failures, jitter of up to
        # the backoff itself included, and the last is at least the poll interval.
        problems.append(
            Problem(
                backoff,
                "backoff-not-growing",
                f"waits after {len(gaps)} consecutive 503s without Retry-After: {shown} s "
                f"(expected the last >= twice the first and >= {ctx.pace.poll_interval:g} s)",
            )
        )
    slow = ctx.pace_problem()
    if slow is not None:
        problems.append(Problem(backoff, "slower-than-declared", slow))
    return _verdict(
        problems,
        lambda: (
            f"{run.name}: recovered; next poll {gap:.2f} s after the 429; "
            f"{backoff.name}: waits {shown} s after consecutive 503s"
        ),
    )


_FATAL = ("forbidden", "schema-violation", "duplicates", "duplicate-admin-urls")


@_check("POLL-2", "fatal-not-retried", needs=_FATAL)
def check_fatal(ctx: ClientContext) -> str | None:
    """Other 4xx, schema violations and duplicates (identities, admin URLs) are fatal, once."""
    problems: Problems = []
    runs = [ctx.scenario(s) for s in _FATAL]
    for run in runs:
        problems += _fatal_problems(run, once=True)
    return _verdict(problems, f"{len(runs)} listing(s) refused after one request each")


@_check("POLL-3", "size-capped", needs=("oversized", "under-cap"))
def check_size_cap(ctx: ClientContext) -> str | None:
    """A listing past the configured cap is refused, never parsed; one under it is read."""
    over, under = ctx.scenario("oversized"), ctx.scenario("under-cap")
    problems = _fatal_problems(over, once=True)
    problems += _completed(under, "the client did not complete on a listing under the cap")
    return _verdict(
        problems,
        f"{over.name}: refused after one request; {under.name}: planned",
        "CONFORMANCE_MAX_BODY_BYTES is the cap the operator configured:",
    )


@_check("POLL-4", "same-origin-only", needs=("cross-origin-redirect", "proxy-environment"))
def check_origin(ctx: ClientContext) -> str | None:
    """No cross-origin redirect is followed; proxy variables are ignored."""
    redirect, proxy = ctx.scenario("cross-origin-redirect"), ctx.scenario("proxy-environment")
    problems = _fatal_problems(redirect, once=False)
    for run in (redirect, proxy):
        if run.foreign:
            paths = ", ".join(sorted({f"{r.method} {r.host}{r.path}" for r in run.foreign}))
            problems.append(
                Problem(
                    run,
                    "other-origin",
                    f"another origin received {len(run.foreign)} request(s): {paths}",
                )
            )
    problems += _completed(proxy, "the client did not complete with proxy variables set")
    return _verdict(problems, "the redirect was not followed and the proxy variables were ignored")


@_check("POLL-5", "deadline-result", needs=("refusal",))
def check_deadline_result(ctx: ClientContext) -> str | None:
    """At the deadline, the client's result names the world-size sum found and W."""
    run = next((r for r in ctx.runs if r.expect_refusal), None)
    if run is None:
        raise CheckError("no refusal run was made")
    total = sum(e["world_size"] for e in run.engines)
    if run.returned or run.init_calls():
        raise Skipped(f"{run.name}: the client never waited for its deadline (see RANK-2)")
    result = run.result or {}
    problems: Problems = []
    if run.hung:
        problems.append(Problem(run, "hung", "the client was still polling past its deadline"))
    elif run.result is None:
        problems.append(
            Problem(
                run,
                "no-result",
                "the client wrote no result to CONFORMANCE_RESULT_FILE at its deadline",
            )
        )
    else:
        for key, want in (
            ("world_size_sum", total),
            ("inference_world_size", run.inference_world_size),
        ):
            if result.get(key) != want:
                problems.append(
                    Problem(
                        run,
                        "wrong-" + key.replace("_", "-"),
                        f"the result's {key} is {result.get(key)!r}, expected {want}",
                    )
                )
    return _verdict(
        problems,
        f"the deadline result names the sum {total} and W {run.inference_world_size}",
        "SPEC POLL-5: the error says the sum found against W; the suite reads it from the result",
    )


@_check("CRED-1", "no-userinfo", needs=("userinfo-url", "userinfo-listed", "rank"))
def check_userinfo(ctx: ClientContext) -> str | None:
    """URLs carrying user info are refused; no credential travels in a URL."""
    configured, listed = ctx.scenario("userinfo-url"), ctx.scenario("userinfo-listed")
    problems: Problems = []
    if configured.listing_calls:
        problems.append(
            Problem(
                configured,
                "requested-userinfo-url",
                f"{len(configured.listing_calls)} request(s) to a URL with user info",
            )
        )
    problems += _fatal_problems(configured, once=False)
    problems += _fatal_problems(listed, once=True)
    for run in (configured, listed):
        for r in run.listing_calls + run.admin_calls:
            if r.headers.get("authorization", "").lower().startswith("basic"):
                problems.append(
                    Problem(
                        run, "basic-auth", f"{describe_call(r)} carried the user info as Basic auth"
                    )
                )
        if run.admin_calls:
            problems.append(
                Problem(run, "admin-called", f"{len(run.admin_calls)} admin call(s) were made")
            )
    for any_run in ctx.runs:  # no credential ever travels in a path or a query
        values = any_run.credentials.expected_headers().values()
        secrets = [v.removeprefix("Bearer ") for v in values if len(v) >= 8]
        for r in any_run.listing_calls + any_run.admin_calls:
            if any(v in r.path or v in r.query for v in secrets):
                problems.append(
                    Problem(
                        any_run,
                        "credential-in-url",
                        f"{describe_call(r)} carried a credential in its URL",
                    )
                )
    return _verdict(problems, "both URLs with user info were refused before any admin call")


_REDIRECTS = ("admin-redirect", "admin-redirect-same-origin")


def _followed(run: ClientRun) -> list[RecordedRequest]:
    """The requests that followed an admin redirect: to the Location's host, or under the path a
    same-origin redirect moved the call to."""
    moved = [r for r in run.admin_calls if r.path.startswith(MOVED_PATH + "/")]
    return [*run.foreign, *moved]


@_check("CRED-4", "no-credentials-across-redirect", needs=_REDIRECTS)
def check_admin_redirect(ctx: ClientContext) -> str | None:
    """No credential across a redirect; an admin call follows no redirect at all."""
    runs = [ctx.scenario(s) for s in _REDIRECTS]
    met = [run for run in runs if any(300 <= r.status < 400 for r in run.admin_calls)]
    if not met:
        raise Skipped("the client made no admin call that met a redirect (ADMIN-3)")
    problems: Problems = []
    for run in met:
        want = run.credentials.expected_headers()
        followed = _followed(run)
        for r in followed:
            leaked = sorted(h for h, v in want.items() if r.headers.get(h) == v)
            if leaked:
                problems.append(
                    Problem(
                        run,
                        "credential-across-redirect",
                        f"{describe_call(r)} after a redirect carried {', '.join(leaked)}",
                    )
                )
        if followed:
            problems.append(
                Problem(
                    run,
                    "followed-admin-redirect",
                    f"followed the admin redirect: {len(followed)} call(s) to its Location "
                    "(SPEC CRED-4: admin calls follow no redirect, not even on the same origin)",
                )
            )
    return _verdict(
        problems, f"{len(met)} admin redirect(s) (another origin; the same origin) not followed"
    )


@_check("TOPO-1", "reverify-before-update", needs=("rank", "resize-after-init", "dynamo"))
def check_reverify(ctx: ClientContext) -> str | None:
    """A resized fleet is re-read after the inits and stopped before any update."""
    if not any(r.updates() for r in ctx.normal_runs()):
        raise Skipped("the client made no update in any run, so re-verification cannot be seen")
    run = ctx.scenario("resize-after-init")
    runs = [run, *(r for r in ctx.runs if r.kind == "dynamo:resize-after-init")]
    real = _real_dynamo(runs)
    problems: Problems = []
    for each in runs:
        if "dynamo.engine-a#0" not in each.init_calls():
            problems.append(
                Problem(each, "no-init", "engine-a received no init, so it never reported a resize")
            )
            continue
        if each.updates():
            problems.append(
                Problem(
                    each,
                    "updated-resized",
                    f"{len(each.updates())} update call(s) on a resized fleet",
                )
            )
        if each.returned:
            problems.append(
                Problem(each, "returned", "the client returned success on a resized fleet")
            )
        last_init = max(r.time for cs in each.init_calls().values() for r in cs)
        # Reference fleets record every listing request (real Dynamo's frontend is not recorded).
        reread = any(r.time > last_init for r in each.listing_calls)
        if not reread and not each.name.startswith(REAL_DYNAMO):
            problems.append(
                Problem(each, "not-reread", "the listing was not read again after the inits")
            )
    return _verdict(
        problems,
        lambda: (
            f"scenario {run.kind}{real}: re-read the listing after the inits, stopped before updating"
        ),
    )


@_check("VERSION-2", "unknown-version", needs=("version-2",))
def check_version(ctx: ClientContext) -> str | None:
    """protocol_version 2 is refused without retrying."""
    run = ctx.scenario("version-2")
    problems = _fatal_problems(run, once=True)
    return _verdict(problems, f"{run.name}: refused after one request")


@_check("BODY-5", "unknown-fields-ignored", needs=("unknown-fields",))
def check_unknown_fields(ctx: ClientContext) -> str | None:
    """Unknown fields at any level are ignored."""
    run = ctx.scenario("unknown-fields")
    problems = _completed(run, "the client did not complete on a listing with unknown fields")
    return _verdict(problems, f"{run.name}: every engine initialised")


@_check("DIALECT-1", "other-dialect", needs=("smg-dialect",))
def check_dialect(ctx: ClientContext) -> str | None:
    """An SMG body is refused as a whole, as a dialect (the client's result names DIALECT-1)."""
    run = ctx.scenario("smg-dialect")
    problems = _fatal_problems(run, once=True)
    if not problems and run.refused_under != "DIALECT-1":
        problems.append(
            Problem(
                run,
                "not-refused-as-dialect",
                f"refused, but the client's result names {run.refused_under!r}, not DIALECT-1 "
                "(a field-by-field refusal)",
            )
        )
    return _verdict(problems, f"{run.name}: refused as another dialect after one request")


#: Scenario -> (the failing engine, whether only its init fails; else every admin call does).
_ADMIN_FAILURES = {
    "init-fails": ("dynamo.engine-b#0", True),
    "init-error-in-200": ("dynamo.engine-b#0", True),
    "admin-redirect": ("dynamo.engine-b#0", False),
    "admin-redirect-same-origin": ("dynamo.engine-b#0", False),
}


@_check("ADMIN-3", "failed-admin-call", needs=(*_ADMIN_FAILURES, "rank"))
def check_admin_failure(ctx: ClientContext) -> str | None:
    """A failed admin call (5xx, 200 with status error, 3xx) is a failure, never success."""
    problems: Problems = []
    for scenario_id, (engine, init_only) in _ADMIN_FAILURES.items():
        run = ctx.scenario(scenario_id)
        if init_only:
            failing = run.init_calls().get(engine, [])
        else:
            failing = [r for r in run.admin_calls if r.engine == engine]
        if not failing:
            what = "init" if init_only else "admin call"
            problems.append(
                Problem(
                    run, "failing-engine-not-called", f"{engine}, the failing engine, got no {what}"
                )
            )
            continue
        after = [r for r in run.updates() if r.time > failing[0].time]
        if after:
            problems.append(
                Problem(
                    run,
                    "updated-after-failure",
                    f"{len(after)} update call(s) after {engine}'s init failed",
                )
            )
        if run.returned:
            problems.append(
                Problem(
                    run, "returned", f"the client returned success although {engine}'s init failed"
                )
            )
    for run in ctx.normal_runs():
        rejected = [
            describe_call(r) + f" -> HTTP {r.status}"
            for calls in run.init_calls().values()
            for r in calls
            if not 200 <= r.status < 300
        ]
        if rejected and run.returned:
            problems.append(
                Problem(run, "returned", f"returned success after {'; '.join(rejected[:3])}")
            )
    return _verdict(
        problems,
        f"{len(_ADMIN_FAILURES)} failed admin calls (500; 200 with status error; 307 to another "
        "origin and to the same one) reported as failures",
    )


# --- composites: run only after their parts passed alone -----------------------------------------

#: Scenario -> how one run of it is judged alone (what its checks look at in that run).
_JUDGES: dict[str, Callable[[ClientRun], Problems]] = {
    "prefix-scope": lambda run: _order_problems(run) + _completed(run, "did not complete"),
    "api-key-empty": lambda run: (
        _credential_problems(run, allowed=True)[1] + _completed(run, "did not complete")
    ),
    **dict.fromkeys(_MATCHING, _matching_problems),
}


def _parts_failed(ctx: ClientContext, composite: Scenario) -> str | None:
    """Why a composite is not run: the first of its parts that failed alone (None: all passed)."""
    for part in composite.parts:
        try:
            run = ctx.scenario(part)
        except CheckError as exc:
            return str(exc)
        problems = _JUDGES[part](run)
        if problems:
            return f"its part {part} failed alone ({problems[0].reason}: {problems[0].text})"
    return None


#: Each run against real Dynamo -> the checks whose verdict it feeds.
_DYNAMO_FEEDS: dict[str, tuple[str, ...]] = {
    "dynamo:plan": ("RANK-1::canonical-order", "READY-5::others-left-alone"),
    "dynamo:error-then-ready": ("READY-1::error-is-pending",),
    "dynamo:sum-then-ready": ("READY-3::wrong-sum-is-pending",),
    "dynamo:resize-after-init": ("TOPO-1::reverify-before-update",),
}


def _decided(ctx: ClientContext, kind: str) -> str | None:
    """Why a run against real Dynamo would change no verdict: every check it feeds already
    failed on the reference fleets (a run can only add problems to a failed check). None: make
    it. This keeps a client that misbehaves everywhere from waiting out real Dynamo's deadlines."""
    from conformance.registry import all_checks

    cause = ctx.baseline_cause()
    if cause is not None:  # every check it feeds is not judged
        return cause
    funcs = {c.id: c.func for c in all_checks(["client"])}
    for check_id in _DYNAMO_FEEDS[kind]:
        try:
            funcs[check_id](ctx)
        except Failed:
            continue
        except (Skipped, CheckError):
            return None
        return None
    return f"{', '.join(_DYNAMO_FEEDS[kind])} already failed on the reference fleets"


def related_checks(check_id: str) -> list[str]:
    """The client checks a narrowed run of ``check_id`` can judge with no run more: those whose
    runs are all among its own (real Dynamo aside). The kill matrix runs a counterpart against
    these, so that it shows the one requirement failing and the others, on the same runs, not."""
    own = set(NEEDS[check_id]) | {"dynamo"}
    for s in SCENARIOS:
        if s.id in own:
            own.update(s.parts)
    return [c for c, needs in NEEDS.items() if set(needs) <= own]


# The native update lifecycle is judged in its own module (pure functions of what was recorded).
_check("NATIVE-1", "native-init-once", needs=("rank",))(native_lifecycle.check_init_once)
_check("NATIVE-2", "native-update-lifecycle", needs=("rank",))(
    native_lifecycle.check_update_lifecycle
)
