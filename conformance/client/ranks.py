"""The rank family: offsets in each convention (RANK-3, RANK-4, RANK-5), ranks covering [0, W)
once (RANK-6), one set of group coordinates (RANK-8), the wrong sum refused (RANK-2), the canonical
order (RANK-1) and the ranks inside an engine (RANK-7, not observable).

The offset, coverage and coordinate checks judge the plain fleets only (the "rank" runs: the
pinned fleet per convention and the generated topologies); the scenario checks of the other
families pass ``offsets=False`` to ``plan_problems``, so one bug in the rank math fails these
requirements only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from conformance.client.registration import client_check
from conformance.client.verdicts import (
    Problem,
    Problems,
    completed,
    dynamo_plan,
    ended,
    failure,
    plan_problems,
    real_dynamo,
    verdict,
)
from conformance.client_runs import ClientContext, ClientRun
from conformance.client_wire import describe_call
from conformance.registry import CheckError, Skipped
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.text import cut

__all__ = [
    "check_canonical_order",
    "check_coordinates",
    "check_coverage",
    "check_ranks_inside",
    "check_refusal",
    "order_problems",
]


def _offset_check(ctx: ClientContext, convention: str) -> str | None:
    ctx.declared(convention)
    runs = ctx.normal_runs(convention)
    if not runs:
        raise CheckError(f"no rank run used the {convention} convention")
    problems: Problems = []
    forms: Counter[str] = Counter()
    for run in runs:
        problems += plan_problems(run)
        problems += ended(run, "the client did not complete on a conformant fleet")
        for records in run.init_records().values():
            forms.update(r.form for r in records)
    return verdict(
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
    client_check(_convention.requirement, _slug, _title, needs=("rank",))(
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


@client_check("RANK-6", "ranks-cover-once", needs=("rank",))
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
    return verdict(problems, f"{judged} run(s): every rank owned exactly once")


_COORDINATES = (
    "host",
    "port",
    "inference_world_size",
    "group_world_size",
    "timeout",
    "session_id",
)


@client_check("RANK-8", "same-coordinates", needs=("rank",))
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
        raise failure(problems)
    if not judged:
        raise Skipped("no run initialised any engine: there are no coordinates to compare")
    return f"{judged} run(s): one set of group coordinates per run"


@client_check("RANK-2", "refuse-wrong-sum", needs=("refusal", "baseline"))
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
    return verdict(problems, lambda: f"refused: {cut(refusals[0].outcome, 200)}")


def order_problems(run: ClientRun) -> Problems:
    """RANK-1 in one run: engines placed by their offsets in the canonical order."""
    records = run.init_records()
    last = {key: got[-1].rank_offset for key, got in records.items() if got}
    placed = [
        (offset, e["label"])
        for e in run.engines
        if isinstance(offset := last.get(e["key"] or ""), int)
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


def _canonical_order_problems(ctx: ClientContext) -> Problems:
    scoped, unsorted = ctx.scenario("prefix-scope"), ctx.scenario("unsorted-listing")
    runs = [scoped, *dynamo_plan(ctx)]
    real_dynamo(runs)
    problems: Problems = []
    for each in runs:
        problems += order_problems(each)
        problems += completed(each, "the client did not complete on a conformant fleet")
    # Out of canonical order (LIST-1 broken): refusing the listing is fine, planning in the
    # order it arrived is not.
    problems += order_problems(unsorted)
    return problems


@client_check(
    "RANK-1",
    "canonical-order",
    "Offsets follow (namespace, component, endpoint, instance_id), not arrival or component order",
    needs=("prefix-scope", "unsorted-listing"),
    real=("dynamo:plan",),
    judge=_canonical_order_problems,
    alone={
        "prefix-scope": lambda run: order_problems(run) + completed(run, "did not complete"),
    },
)
def check_canonical_order(ctx: ClientContext) -> str | None:
    scoped, unsorted = ctx.scenario("prefix-scope"), ctx.scenario("unsorted-listing")
    real = real_dynamo([scoped, *dynamo_plan(ctx)])
    problems = _canonical_order_problems(ctx)
    canonical = [e["label"] for e in scoped.engines]
    return verdict(
        problems,
        f"{scoped.name}{real}: offsets follow the canonical order {', '.join(canonical)}; "
        f"the unsorted listing was {'refused' if not unsorted.init_calls() else 'sorted'}",
    )


@client_check("RANK-7", "ranks-inside-engine")
def check_ranks_inside(ctx: ClientContext) -> str | None:
    """Inside an engine, a worker's rank is rank_offset + dp_index*mp + local_rank mod mp."""
    raise Skipped(
        "not observable from outside: the ranks inside an engine are computed by its worker "
        "processes, which a client never calls (the project's worker_rank has a unit test)"
    )
