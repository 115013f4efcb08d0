"""The readiness family: a client held back while the fleet is pending (READY-1, READY-2,
READY-3, READY-6), ready after two identical complete polls (READY-4), and the workers that match
its model planned while every other is left alone (READY-5, alone and in the composite
mixed-fleet).
"""

from __future__ import annotations

from collections.abc import Callable

import conformance.client.verdicts as verdicts
from conformance.client.credentials import credential_problems
from conformance.client.ranks import order_problems
from conformance.client.registration import client_check
from conformance.client.verdicts import Problem, Problems, verdict
from conformance.client_runs import REAL_DYNAMO, ClientContext, ClientRun
from conformance.registry import CheckError, Skipped

__all__ = ["check_mixed_fleet", "check_others", "check_two_polls", "pending_verdict"]


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
    problems += verdicts.completed(run, "the client did not proceed once the fleet was ready")
    return problems


def _pending_problems(ctx: ClientContext, scenario_ids: tuple[str, ...]) -> Problems:
    """Each run of the scenarios (and of their runs on real Dynamo) not held back until ready,
    then every engine initialised; CheckError when the harness could not present one."""
    problems: Problems = []
    for run in _pending_runs(ctx, scenario_ids):
        if run.harness_problem:
            raise CheckError(f"{run.name}: {run.harness_problem}; the client is not judged on it")
        problems += _held_then_proceeded(run)
    return problems


def _pending_runs(ctx: ClientContext, scenario_ids: tuple[str, ...]) -> list[ClientRun]:
    runs = [ctx.scenario(s) for s in scenario_ids]
    return runs + [r for r in ctx.runs if r.kind in {f"dynamo:{s}" for s in scenario_ids}]


def pending_verdict(ctx: ClientContext, scenario_ids: tuple[str, ...]) -> str:
    """The verdict of a pending rule: held back until ready, then every engine initialised."""
    problems = _pending_problems(ctx, scenario_ids)
    if problems:
        raise verdicts.failure(problems)
    real = sum(1 for r in _pending_runs(ctx, scenario_ids) if r.name.startswith(REAL_DYNAMO))
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
        return pending_verdict(ctx, scenario_ids)

    readiness_check.__name__ = f"check_pending_{scenario_ids[0].replace('-', '_')}"
    return readiness_check


def _pending_judge(scenario_ids: tuple[str, ...]) -> Callable[[ClientContext], Problems]:
    return lambda ctx: _pending_problems(ctx, scenario_ids)


for _requirement, _slug, _title, _scenarios in _PENDING_RULES:
    _real = tuple(f"dynamo:{s}" for s in _scenarios if s in _REAL_PENDING)
    client_check(
        _requirement,
        _slug,
        _title,
        needs=_scenarios,
        real=_real,
        judge=_pending_judge(_scenarios) if _real else None,
    )(_pending_checker(_scenarios))


def _streak_problems(run: ClientRun) -> Problems:
    """READY-4 on the wire: before the first init, at least two complete polls (200 or 304, and
    at or past ``ready_from_listing``) since the last poll that was not."""
    first = run.first_init_time()
    if first is None:
        return verdicts.ended(run, "the client initialised nothing")
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


@client_check(
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
        problems += verdicts.completed(run, "the client did not complete")
    return verdict(problems, f"{len(runs)} scenarios: planned after two complete polls in a row")


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
    problems += verdicts.completed(
        run, "the client did not complete (the unusual entry stopped it)"
    )
    return problems


def _others(ctx: ClientContext) -> tuple[int, Problems]:
    """(reachable engines of another model, the problems) over the matching scenarios and the
    plan on real Dynamo."""
    runs = [ctx.scenario(s) for s in _MATCHING]
    verdicts.real_dynamo([*runs, *verdicts.dynamo_plan(ctx)])
    problems: Problems = []
    judged = 0
    for run in [*runs, *verdicts.dynamo_plan(ctx)]:
        n, found = _others_problems(run)
        judged, problems = judged + n, problems + found
        problems += verdicts.completed(
            run, "the client did not complete (the unusual entry stopped it)"
        )
    return judged, problems


@client_check(
    "READY-5",
    "others-left-alone",
    needs=_MATCHING,
    real=("dynamo:plan",),
    judge=lambda ctx: _others(ctx)[1],
    alone=dict.fromkeys(_MATCHING, _matching_problems),
)
def check_others(ctx: ClientContext) -> str | None:
    """A model-less entry matches; entries of another model take no part, whatever they carry."""
    runs = [ctx.scenario(s) for s in _MATCHING]
    real = verdicts.real_dynamo([*runs, *verdicts.dynamo_plan(ctx)])
    judged, problems = _others(ctx)
    return verdict(
        problems,
        f"{len(runs)} scenarios ({', '.join(_MATCHING)}): the model-less engine planned, "
        f"{judged} reachable engine(s) of another model left alone{real}",
    )


@client_check(
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
    problems += order_problems(run)
    problems += credential_problems(run, allowed=True)[1]
    return verdict(
        problems,
        f"{run.name}: combines {', '.join(run.parts)} (each passed alone); planned and left the "
        "others alone",
        f"composite of {', '.join(run.parts)}, each of which passed alone:",
    )
