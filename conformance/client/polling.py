"""The polling family: how a client reads the listing. Transient failures retried with a backoff
that grows, honouring Retry-After, at the pace it declared (POLL-1); other 4xx, schema violations
and duplicates fatal after one request (POLL-2); a listing past the cap refused (POLL-3); no other
origin reached (POLL-4); the result at the deadline (POLL-5). The listing's form is judged here
too, since it decides what a poll does: a protocol version it does not know refused at once
(VERSION-2), unknown fields ignored (BODY-5), another dialect refused as a dialect (DIALECT-1).
"""

from __future__ import annotations

import itertools

from conformance.client.registration import client_check
from conformance.client.verdicts import Problem, Problems, completed, fatal_problems, verdict
from conformance.client_runs import ClientContext
from conformance.client_scenarios import BACKOFF_FAILURES, RETRY_AFTER_S
from conformance.registry import CheckError, Skipped

__all__ = [
    "check_deadline_result",
    "check_dialect",
    "check_fatal",
    "check_origin",
    "check_retry",
    "check_size_cap",
    "check_unknown_fields",
    "check_version",
]


@client_check("POLL-1", "retry-transient", needs=("retryable", "backoff"))
def check_retry(ctx: ClientContext) -> str | None:
    """Resets, 5xx and 429 are retried, honouring Retry-After, with a backoff that grows."""
    run = ctx.scenario("retryable")
    problems = completed(run, "the client gave up on a reset, a 429 or a 503")
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
    problems += completed(backoff, "the client gave up on consecutive 503s")
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
    return verdict(
        problems,
        lambda: (
            f"{run.name}: recovered; next poll {gap:.2f} s after the 429; "
            f"{backoff.name}: waits {shown} s after consecutive 503s"
        ),
    )


_FATAL = ("forbidden", "schema-violation", "duplicates", "duplicate-admin-urls")


@client_check("POLL-2", "fatal-not-retried", needs=_FATAL)
def check_fatal(ctx: ClientContext) -> str | None:
    """Other 4xx, schema violations and duplicates (identities, admin URLs) are fatal, once."""
    problems: Problems = []
    runs = [ctx.scenario(s) for s in _FATAL]
    for run in runs:
        problems += fatal_problems(run, once=True)
    return verdict(problems, f"{len(runs)} listing(s) refused after one request each")


@client_check("POLL-3", "size-capped", needs=("oversized", "under-cap"))
def check_size_cap(ctx: ClientContext) -> str | None:
    """A listing past the configured cap is refused, never parsed; one under it is read."""
    over, under = ctx.scenario("oversized"), ctx.scenario("under-cap")
    problems = fatal_problems(over, once=True)
    problems += completed(under, "the client did not complete on a listing under the cap")
    return verdict(
        problems,
        f"{over.name}: refused after one request; {under.name}: planned",
        "CONFORMANCE_MAX_BODY_BYTES is the cap the operator configured:",
    )


@client_check("POLL-4", "same-origin-only", needs=("cross-origin-redirect", "proxy-environment"))
def check_origin(ctx: ClientContext) -> str | None:
    """No cross-origin redirect is followed; proxy variables are ignored."""
    redirect, proxy = ctx.scenario("cross-origin-redirect"), ctx.scenario("proxy-environment")
    problems = fatal_problems(redirect, once=False)
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
    problems += completed(proxy, "the client did not complete with proxy variables set")
    return verdict(problems, "the redirect was not followed and the proxy variables were ignored")


@client_check("POLL-5", "deadline-result", needs=("refusal",))
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
    return verdict(
        problems,
        f"the deadline result names the sum {total} and W {run.inference_world_size}",
        "SPEC POLL-5: the error says the sum found against W; the suite reads it from the result",
    )


@client_check("VERSION-2", "unknown-version", needs=("version-2",))
def check_version(ctx: ClientContext) -> str | None:
    """protocol_version 2 is refused without retrying."""
    run = ctx.scenario("version-2")
    problems = fatal_problems(run, once=True)
    return verdict(problems, f"{run.name}: refused after one request")


@client_check("BODY-5", "unknown-fields-ignored", needs=("unknown-fields",))
def check_unknown_fields(ctx: ClientContext) -> str | None:
    """Unknown fields at any level are ignored."""
    run = ctx.scenario("unknown-fields")
    problems = completed(run, "the client did not complete on a listing with unknown fields")
    return verdict(problems, f"{run.name}: every engine initialised")


@client_check("DIALECT-1", "other-dialect", needs=("smg-dialect",))
def check_dialect(ctx: ClientContext) -> str | None:
    """An SMG body is refused as a whole, as a dialect (the client's result names DIALECT-1)."""
    run = ctx.scenario("smg-dialect")
    problems = fatal_problems(run, once=True)
    if not problems and run.refused_under != "DIALECT-1":
        problems.append(
            Problem(
                run,
                "not-refused-as-dialect",
                f"refused, but the client's result names {run.refused_under!r}, not DIALECT-1 "
                "(a field-by-field refusal)",
            )
        )
    return verdict(problems, f"{run.name}: refused as another dialect after one request")
