"""The credentials family: no credential in a URL, and URLs with user info refused (CRED-1);
the API key and headers sent with every admin call to an allowed host, none with API key EMPTY
(CRED-2); none to a host outside the allow-list (CRED-3); none across a redirect (CRED-4)."""

from __future__ import annotations

from conformance.client.registration import client_check
from conformance.client.verdicts import (
    Problem,
    Problems,
    completed,
    failure,
    fatal_problems,
    verdict,
)
from conformance.client_runs import ClientContext, ClientRun
from conformance.client_scenarios import MOVED_PATH
from conformance.client_wire import describe_call
from conformance.registry import Failed, Skipped
from prime_rl_dynamo.suite.recording import RecordedRequest

__all__ = [
    "check_admin_redirect",
    "check_credentials_sent",
    "check_credentials_withheld",
    "check_userinfo",
    "credential_problems",
]


def credential_problems(run: ClientRun, *, allowed: bool) -> tuple[int, Problems]:
    """(admin calls judged, their problems): to allowed hosts (``allowed``), every credential and
    none API key EMPTY withholds; to the others, none."""
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


@client_check(
    "CRED-2",
    "credentials-sent",
    needs=("rank", "api-key-empty", *_ALLOW_LISTS),
    alone={
        "api-key-empty": lambda run: (
            credential_problems(run, allowed=True)[1] + completed(run, "did not complete")
        ),
    },
)
def check_credentials_sent(ctx: ClientContext) -> str | None:
    """API key, static headers and headers from env go with every admin call to an allowed host."""
    judged, problems = 0, Problems()
    runs = [*ctx.normal_runs(), ctx.scenario("api-key-empty"), *map(ctx.scenario, _ALLOW_LISTS)]
    for run in runs:
        n, found = credential_problems(run, allowed=True)
        judged, problems = judged + n, problems + found
    empty = ctx.scenario("api-key-empty")
    problems += completed(empty, "the client did not complete with API key EMPTY")
    if not judged:
        raise Failed("no admin call reached an allowed host, so no credential was seen")
    return verdict(
        problems,
        f"{judged} admin calls carried every credential (and none with API key EMPTY)",
        f"{len(problems)} problem(s) in {judged} admin calls to allowed hosts:",
    )


@client_check("CRED-3", "credentials-allow-list", needs=("rank", *_ALLOW_LISTS))
def check_credentials_withheld(ctx: ClientContext) -> str | None:
    """With an allow-list (exact names, wildcards, CIDRs), credentials go only to allowed hosts."""
    judged, problems = 0, Problems()
    for run in [*ctx.normal_runs(), *map(ctx.scenario, _ALLOW_LISTS)]:
        if run.credentials.allowed_hosts is None:
            continue
        n, found = credential_problems(run, allowed=False)
        judged, problems = judged + n, problems + found
    if problems:
        raise failure(problems, f"{len(problems)} of {judged} admin calls outside the allow-list:")
    if not judged:
        raise Failed("no admin call reached a host outside the allow-list: engine-b was skipped")
    return f"{judged} admin calls outside the allow-list carried no credential"


@client_check("CRED-1", "no-userinfo", needs=("userinfo-url", "userinfo-listed", "rank"))
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
    problems += fatal_problems(configured, once=False)
    problems += fatal_problems(listed, once=True)
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
    return verdict(problems, "both URLs with user info were refused before any admin call")


_REDIRECTS = ("admin-redirect", "admin-redirect-same-origin")


def _followed(run: ClientRun) -> list[RecordedRequest]:
    """The requests that followed an admin redirect: to the Location's host, or under the path a
    same-origin redirect moved the call to."""
    moved = [r for r in run.admin_calls if r.path.startswith(MOVED_PATH + "/")]
    return [*run.foreign, *moved]


@client_check("CRED-4", "no-credentials-across-redirect", needs=_REDIRECTS)
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
    return verdict(
        problems, f"{len(met)} admin redirect(s) (another origin; the same origin) not followed"
    )
