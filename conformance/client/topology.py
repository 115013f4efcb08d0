"""The topology family: a fleet that changes under the client. An engine resized after its init is
seen: the listing is read again after the inits, and no update follows (TOPO-1), on the reference
fleets and on real Dynamo.
"""

from __future__ import annotations

from conformance.client.registration import client_check
from conformance.client.verdicts import Problem, Problems, real_dynamo, verdict
from conformance.client_runs import REAL_DYNAMO, ClientContext, ClientRun
from conformance.registry import Skipped

__all__ = ["check_reverify"]

#: The engine the scenario resize-after-init resizes once it answered its init.
_RESIZED = "dynamo.engine-a#0"


def _resized_runs(ctx: ClientContext) -> list[ClientRun]:
    """The scenario resize-after-init and its run on real Dynamo (Skipped when the client made
    no update in any run: re-verification before an update cannot be seen)."""
    if not any(r.updates() for r in ctx.normal_runs()):
        raise Skipped("the client made no update in any run, so re-verification cannot be seen")
    run = ctx.scenario("resize-after-init")
    return [run, *(r for r in ctx.runs if r.kind == "dynamo:resize-after-init")]


def _reverify_problems(ctx: ClientContext) -> Problems:
    runs = _resized_runs(ctx)
    real_dynamo(runs)
    problems: Problems = []
    for each in runs:
        if _RESIZED not in each.init_calls():
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
    return problems


@client_check(
    "TOPO-1",
    "reverify-before-update",
    needs=("rank", "resize-after-init"),
    real=("dynamo:resize-after-init",),
    judge=_reverify_problems,
)
def check_reverify(ctx: ClientContext) -> str | None:
    """A resized fleet is re-read after the inits and stopped before any update."""
    runs = _resized_runs(ctx)
    real = real_dynamo(runs)
    problems = _reverify_problems(ctx)
    return verdict(
        problems,
        lambda: (
            f"scenario {runs[0].kind}{real}: re-read the listing after the inits, stopped before "
            "updating"
        ),
    )
