"""The ``frontend`` profile: a live RL listener judged against every server requirement.

The dialect is identified first; status codes, content type, HEAD, 405, 404, stability, a bounded
concurrent load and schemathesis' own checks follow. The validator judges every listing body of
the first GET, the repeated polls and the load; whichever check needs those first fetches them,
so each check's verdict is the same whether it runs alone or in a full run.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import time
from typing import Any

import httpx

from conformance._http import (
    ExchangeBound,
    RawReply,
    Reply,
    check_bounds,
    json_media,
    raw_request,
    request,
    same_origin,
    unreachable,
)
from conformance.registry import CheckError, Failed, Skipped, check, fail_on
from conformance.runner import ListenerContext, RunContext, listener_profile
from prime_rl_dynamo.http import status_hint, tls_context
from prime_rl_dynamo.requirements import all_requirements
from prime_rl_dynamo.text import plural
from prime_rl_dynamo.violation import Violation
from prime_rl_dynamo.wire import DISCOVERY_PATH, WorkerId

__all__ = ["BODY_REQUIREMENTS", "FrontendContext"]

#: Requirements the validator judges on each body: one check each, so a broken body fails
#: exactly the requirements it breaks.
BODY_REQUIREMENTS: tuple[str, ...] = tuple(
    r.id
    for r in all_requirements().values()
    if r.party == "server" and r.enforced_by in ("schema", "validator") and r.id != "HTTP-5"
)


frontend_check = functools.partial(check, "frontend")


class _NoListing(Skipped):
    """The first GET broke off, so there is no listing; HTTP-1 fails for it."""


def _is_discovery_failed(body: object) -> bool:
    return (
        isinstance(body, dict)
        and body.get("error") == "discovery_failed"
        and isinstance(body.get("message"), str)
    )


def _validator() -> Any:
    try:
        from prime_rl_dynamo import validate
    except ImportError as exc:  # the validator is part of the core; missing means a broken install
        raise CheckError(f"prime_rl_dynamo.validate cannot be imported: {exc}") from exc
    return validate


@listener_profile("frontend")
class FrontendContext(ListenerContext):
    """Shared state of the frontend profile: the replies received and what the validator said.

    The first GET, the HTTP-6 polls and the HTTP-7 load are each fetched once, by whichever check
    asks first (``main``, ``polls``, ``load``); ``evidence`` holds every distinct listing body of
    the three with its violations, which is what every body check judges.
    """

    def __init__(self, run: RunContext, client: httpx.Client) -> None:
        super().__init__(run, client)
        self._main: Reply | None = None
        self._main_broken: str | None = None  # the first GET broke off (reset, truncated, ...)
        self._dialect: str | None = None
        self._polls: list[Reply | str] | None = None
        self._load: dict[str, Any] | None = None
        # raw body bytes -> violations, for every distinct listing the suite received
        self._judged: dict[bytes, list[Violation]] = {}
        self._sources: dict[bytes, str] = {}

    def get(
        self,
        path: str = DISCOVERY_PATH,
        method: str = "GET",
        *,
        seen: Reply | httpx.HTTPError | None = None,
    ) -> Reply:
        """One request to the RL listener (``seen``: the reply or error it already produced).

        Nobody listening is the harness's problem (error); a listener that breaks the exchange
        off (reset, truncated body, timeout) fails the check that asked.
        """
        url = self.base + path
        try:
            if isinstance(seen, httpx.HTTPError):
                raise seen
            return seen or request(self.client, method, url)
        except httpx.ConnectError as exc:
            raise CheckError(unreachable(method, url, exc, self.client)) from exc
        except ExchangeBound as exc:
            raise Failed(
                f"expected a complete HTTP response within the suite's bounds: {exc}"
            ) from exc
        except httpx.HTTPError as exc:
            raise Failed(
                f"{method} {url}: expected a complete HTTP response, found "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def raw(self, method: str, headers: tuple[tuple[str, str], ...] = ()) -> RawReply:
        """One request of the listing read off the socket (see ``raw_exchange``); a broken-off
        exchange fails the check that asked, nobody listening is the harness's problem."""
        return raw_request(self.run.options, self.url, method, headers)

    def main(self) -> Reply:
        """The first GET of the listing (cached; a broken-off exchange is remembered too): the
        runner's probe of the target when it made one (SPEC §14.4), so no extra GET is sent."""
        if self._main is None and self._main_broken is None:
            probed, self.run.first_get = self.run.first_get, None
            try:
                self._main = self.get(seen=probed)
            except Failed as exc:
                self._main_broken = str(exc)
            else:
                self.run.observe(self._main.headers, self._main.parsed)
                self._judge(self._main, "first GET")
        if self._main_broken is not None:
            raise _NoListing(f"no listing to judge: {self._main_broken} (see HTTP-1)")
        assert self._main is not None
        return self._main

    def listing(self) -> Any:
        """The parsed listing of the first GET, or why there is none.

        Without a listing a body check cannot decide: it is skipped when HTTP-1 or HTTP-5
        already fail for it, and an error when the frontend answered a conformant 500
        discovery_failed (so that a fleet that cannot be listed never looks conformant).
        """
        reply = self.main()
        if reply.status == 500 and _is_discovery_failed(reply.parsed):
            raise CheckError(
                f"no listing to judge: the frontend answered 500 discovery_failed "
                f"({reply.parsed.get('message')!r}); the fleet behind it could not be listed"
            )
        if reply.status != 200:
            raise Skipped(f"no listing to judge: GET answered {reply.status} (see HTTP-1, HTTP-5)")
        if reply.parse_error:
            raise Skipped(f"no listing to judge: the body is {reply.parse_error} (see HTTP-1)")
        return reply.parsed

    def dialect(self) -> str:
        """'dynamo-v1', 'smg' or 'unknown', from the validator's detector."""
        if self._dialect is None:
            self._dialect = str(_validator().detect_dialect(self.listing()))
        return self._dialect

    def require_dynamo_dialect(self) -> None:
        """Skip a body check when the target speaks another protocol (DIALECT-1 says so once)."""
        if self.dialect() == "smg":
            raise Skipped("not judged: the target serves the SMG gateway's dialect (see DIALECT-1)")

    def polls(self) -> list[Reply | str]:
        """The repeated polls after the first GET (``--polls`` of them, made once): each reply,
        or how its exchange broke off. Every 200 JSON body is judged."""
        self.listing()
        if self._polls is None:
            polls: list[Reply | str] = []
            for i in range(self.run.options.polls):
                try:
                    reply = self.get()
                except Failed as exc:  # broken off: HTTP-6 says so, body checks have no body
                    polls.append(str(exc))
                    continue
                self._judge(reply, f"poll {i + 1}")
                polls.append(reply)
            self._polls = polls
        return self._polls

    def load(self) -> dict[str, Any]:
        """The bounded concurrent load (``--load``, run once): latencies, statuses, distinct
        bodies, transport errors, wall time. Every distinct body that parses is judged."""
        import json

        self.listing()
        if self._load is None:
            opts = self.run.options
            outcome = asyncio.run(
                _load(
                    self.url,
                    opts.load_clients,
                    opts.load_requests,
                    opts.load_budget,
                    opts.timeout,
                    opts.max_body_bytes,
                    opts.headers,
                    opts.verify,
                )
            )
            for i, content in enumerate(outcome["bodies"]):
                try:
                    json.loads(content)
                except ValueError:  # not JSON: HTTP-7 reports it
                    continue
                except RecursionError:  # too deep to read: BODY-1 judges it
                    pass
                self._judge_content(content, f"concurrent poll (distinct body {i + 1})")
            self._load = outcome
        return self._load

    def evidence(self) -> dict[bytes, list[Violation]]:
        """Every distinct listing body of the first GET, the polls and the load, with the
        validator's violations: what each body check judges, fetched if no check did yet."""
        self.listing()
        self.polls()
        self.load()
        return self._judged

    def _judge(self, reply: Reply, source: str) -> None:
        if reply.status == 200 and not reply.parse_error:
            self._judge_content(reply.content, source)

    def _judge_content(self, content: bytes, source: str) -> None:
        if content not in self._judged:
            self._judged[content] = list(_validator().check_body(content))
            self._sources[content] = source

    @property
    def judged(self) -> int:
        """How many distinct bodies the body checks judge."""
        return len(self.evidence())

    def violations(self, requirement_id: str) -> list[tuple[str, Violation]]:
        """(source, violation) for every violation of one requirement in the evidence."""
        out: list[tuple[str, Violation]] = []
        seen: set[tuple[str, str, str]] = set()
        for content, found in self.evidence().items():
            for v in found:
                key = (v.requirement, v.pointer, v.message)
                if v.requirement == requirement_id and key not in seen:
                    seen.add(key)
                    out.append((self._sources[content], v))
        return out

    def variants(self) -> dict[str, tuple[str, str]]:
        """Known v1 variants seen in the evidence: name -> (source, evidence)."""
        import json

        from prime_rl_dynamo.variants import identify

        found: dict[str, tuple[str, str]] = {}
        for content in self.evidence():
            try:
                parsed = json.loads(content)
            except (ValueError, RecursionError):
                continue
            for variant, evidence in identify(parsed):
                found.setdefault(variant.name, (self._sources[content], evidence))
        return found

    def stray_violations(self) -> list[tuple[str, Violation]]:
        """Violations naming a requirement no body check covers (reported under BODY-1)."""
        covered = set(BODY_REQUIREMENTS) | {"DIALECT-1", "VERSION-1"}
        out: list[tuple[str, Violation]] = []
        for content, found in self.evidence().items():
            out.extend((self._sources[content], v) for v in found if v.requirement not in covered)
        return out


def structured(violation: Violation, source: str) -> dict[str, Any]:
    """A violation as the JSON report holds it: requirement, pointer, worker, expected, found."""
    return {
        "requirement": violation.requirement,
        "level": violation.level,
        "pointer": violation.pointer,
        "worker": violation.worker,
        "expected": violation.expected,
        "found": violation.found,
        "message": violation.message,
        "source": source,
    }


def _identities(body: Any) -> list[str]:
    if not isinstance(body, dict) or not isinstance(body.get("workers"), list):
        return []
    out = []
    for w in body["workers"]:
        if isinstance(w, dict):
            try:
                out.append(str(WorkerId.from_entry(w)))
            except (KeyError, TypeError, ValueError):  # the body checks say what is wrong
                out.append(repr([w.get(k) for k in WorkerId._fields]))
    return out


# --- dialect first --------------------------------------------------------------------------


@frontend_check(
    "DIALECT-1", "dialect", "The listing speaks Dynamo's protocol, not another gateway's"
)
def check_dialect(ctx: FrontendContext) -> str | None:
    dialect = ctx.dialect()
    if dialect == "smg":
        raise Failed(
            f"{ctx.url} serves the SMG gateway's dialect (fields such as total, engine, "
            "control_url), not Dynamo's /v1/rl/workers protocol; point the suite at Dynamo's RL "
            "listener (DYN_RL_PORT). Body checks and HTTP-4 are skipped."
        )
    if dialect != "dynamo-v1":
        # Neither Dynamo's markers (a namespace, its worker fields) nor SMG's: the body checks
        # name what is wrong with it; this check cannot say which protocol it speaks.
        raise Skipped(
            f"the listing carries neither Dynamo's markers nor SMG's (dialect {dialect}): "
            "not judged here, the body checks say what it breaks (BODY-1, BODY-2, BODY-4)"
        )
    return "dialect dynamo-v1"


# --- known v1 variants, by name, before the field checks --------------------------------------


def _make_variant_check(variant: Any) -> None:
    def variant_check(ctx: FrontendContext) -> str | None:
        seen = ctx.variants().get(variant.name)
        if seen is not None:
            source, evidence = seen
            raise Failed(f"{ctx.url} ({source}): {variant.diagnosis(evidence)}")
        judged = plural(ctx.judged, "distinct body", "distinct bodies")
        return f"not the {variant.name} variant ({judged} judged)"

    variant_check.__name__ = f"check_variant_{variant.name.replace('-', '_')}"
    title = f"The listing is not the known v1 variant {variant.name} ({variant.breaks})"
    frontend_check("VERSION-1", variant.name, title)(variant_check)


def _register_variant_checks() -> None:
    from prime_rl_dynamo.variants import VARIANTS

    for variant in VARIANTS:
        _make_variant_check(variant)


_register_variant_checks()


# --- HTTP -------------------------------------------------------------------------------------


@frontend_check(
    "HTTP-1",
    "status-and-content-type",
    "GET answers 200 (or 500 discovery_failed) with a JSON body",
)
def check_status(ctx: FrontendContext) -> str | None:
    try:
        reply = ctx.main()
    except _NoListing as exc:
        raise Failed(
            str(exc).removeprefix("no listing to judge: ").removesuffix(" (see HTTP-1)")
        ) from exc
    problems = []
    if reply.status not in (200, 500):
        problems.append(f"expected status 200 (or 500 discovery_failed), found {reply.status}")
    if not json_media(reply.content_type):
        problems.append(
            f"expected Content-Type application/json, found {reply.content_type or 'none'!r}"
        )
    if reply.parse_error:
        problems.append(f"expected a JSON body, found {reply.parse_error}")
    if problems:
        raise Failed("; ".join(problems) + f"\n  {reply.describe()}" + _hint(reply))
    return f"{reply.status} {reply.content_type} in {reply.elapsed * 1000:.1f} ms"


def _hint(reply: Reply) -> str:
    """A line on what to do about a refused status, when its headers say (``status_hint``)."""
    hint = status_hint(reply.status, reply.headers)
    return f"\n  hint: {hint}" if hint else ""


@frontend_check(
    "HTTP-5",
    "discovery-failed-body",
    "A whole-listing failure is 500 {error: discovery_failed, message}",
)
def check_failure_body(ctx: FrontendContext) -> str | None:
    reply = ctx.main()
    if reply.status != 500:
        raise Skipped(f"the frontend answered {reply.status}: no whole-listing failure to judge")
    if not _is_discovery_failed(reply.parsed):
        raise Failed(
            f'expected {{"error": "discovery_failed", "message": string}}, found {reply.describe()}'
        )
    return None


@frontend_check("HTTP-2", "head", "HEAD answers like GET, without a body")
def check_head(ctx: FrontendContext) -> str | None:
    get = ctx.main()
    # Read off the socket: an HTTP client library never reads bytes after a HEAD answer's headers.
    head = ctx.raw("HEAD")
    problems = []
    if head.status != get.status:
        problems.append(f"HEAD status {head.status}, GET status {get.status}")
    if head.content_type.split(";")[0].strip() != get.content_type.split(";")[0].strip():
        problems.append(f"HEAD Content-Type {head.content_type!r}, GET {get.content_type!r}")
    if head.trailing:
        excerpt = head.trailing[:60].decode("utf-8", "replace")
        problems.append(
            f"expected no body, found {len(head.trailing)} bytes after the headers: {excerpt!r}"
        )
    fail_on(problems, f"HEAD {ctx.url}")
    return f"{head.status} {head.content_type}, no bytes after the headers (read off the socket)"


@frontend_check("HTTP-3", "method-not-allowed", "Other methods answer 405 with Allow: GET, HEAD")
def check_405(ctx: FrontendContext) -> str | None:
    problems = []
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        reply = ctx.get(method=method)
        allow = {t.strip().upper() for t in reply.headers.get("allow", "").split(",") if t.strip()}
        if reply.status != 405:
            problems.append(f"{method}: expected 405, found {reply.status}")
        elif allow != {"GET", "HEAD"}:
            found = reply.headers.get("allow")
            problems.append(
                f"{method}: expected Allow listing exactly GET and HEAD, found {found!r}"
            )
    fail_on(problems, ctx.url)
    return "POST, PUT, DELETE, PATCH, OPTIONS -> 405, Allow: GET, HEAD"


UNKNOWN_PATHS = ("/v1/rl/engine", "/v1/rl/unknown", "/v1/rl/workers/extra", "/v1/unknown", "/")


@frontend_check("HTTP-4", "unknown-paths", "Unknown paths on the RL listener answer 404")
def check_404(ctx: FrontendContext) -> str | None:
    if _serves_smg(ctx):  # its own /v1/rl/* routes are no Dynamo listener's (SPEC HTTP-4, §7)
        raise Skipped("not judged: the target serves the SMG gateway's dialect (see DIALECT-1)")
    problems, hints = [], []
    for path in UNKNOWN_PATHS:
        reply = ctx.get(path)
        if reply.status != 404:
            problems.append(f"GET {path}: expected 404, found {reply.status}")
            hints.append(_hint(reply))
    if problems:
        raise Failed(f"{ctx.base}: " + "; ".join(problems) + "".join(dict.fromkeys(hints)))
    return f"{len(UNKNOWN_PATHS)} unknown paths -> 404"


def _serves_smg(ctx: FrontendContext) -> bool:
    """Whether the first GET's listing is the SMG gateway's (False when there is none)."""
    try:
        return ctx.dialect() == "smg"
    except (Skipped, CheckError):
        return False


@frontend_check(
    "HTTP-6", "stable-polls", "Repeated polls of an unchanged fleet return the same listing"
)
def check_stability(ctx: FrontendContext) -> str | None:
    first = ctx.listing()
    polls = ctx.polls()
    changed = []
    for i, reply in enumerate(polls, 1):
        if isinstance(reply, str):
            changed.append(f"poll {i}: {reply}")
        elif reply.status != 200 or reply.parse_error:
            changed.append(f"poll {i}: {reply.describe()}")
        elif reply.parsed != first:
            before, after = set(_identities(first)), set(_identities(reply.parsed))
            diff = ""
            if before != after:
                diff = f" (gone: {sorted(before - after)}, new: {sorted(after - before)})"
            changed.append(f"poll {i} differs from the first GET{diff}")
    if changed:
        raise Failed(
            f"{len(changed)} of {len(polls)} polls differed:\n  " + "\n  ".join(changed[:10])
        )
    return f"{plural(len(polls), 'poll')} identical"


async def _load(
    url: str,
    clients: int,
    per_client: int,
    budget: float,
    timeout: float,
    cap: int,
    headers: tuple[tuple[str, str], ...] = (),
    verify: bool | str = True,
) -> dict[str, Any]:
    deadline = time.monotonic() + budget
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    bodies: dict[bytes, int] = {}
    errors: list[str] = []
    locations: dict[str, int] = {}  # Location of every 3xx answer
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        timeout=timeout,
        limits=limits,
        trust_env=False,
        follow_redirects=False,
        headers=dict(headers),  # the one URL polled is the target's own
        verify=tls_context(verify),
    ) as client:

        async def poller() -> None:
            for _ in range(per_client):
                if time.monotonic() > deadline:
                    return
                started = time.perf_counter()
                try:
                    async with client.stream("GET", url) as response:
                        chunks, size = [], 0
                        async for chunk in response.aiter_bytes():
                            chunks.append(chunk)
                            size += len(chunk)
                            check_bounds("GET", url, size, started, timeout, cap)
                except httpx.HTTPError as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                latencies.append(time.perf_counter() - started)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                if 300 <= response.status_code < 400:
                    where = response.headers.get("location", "")
                    locations[where] = locations.get(where, 0) + 1
                if response.status_code == 200:
                    content = b"".join(chunks)
                    bodies[content] = bodies.get(content, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(poller() for _ in range(clients)))
        wall = time.perf_counter() - started
    return {
        "latencies": latencies,
        "statuses": statuses,
        "bodies": bodies,
        "errors": errors,
        "locations": locations,
        "wall": wall,
    }


def _same_origin(url: str, location: str) -> bool:
    """Whether a Location (absolute, or relative to ``url``) stays on ``url``'s origin."""
    try:
        return same_origin(url, httpx.URL(url).join(location))
    except (httpx.InvalidURL, ValueError):
        return False


def _load_answer_problems(outcome: dict[str, Any], url: str) -> list[str]:
    """HTTP-7's demands on the answers themselves: every concurrent poll is answered with a 200
    listing (no 5xx, no other status, no redirect, above all none to another origin)."""
    problems = []
    statuses: dict[int, int] = outcome["statuses"]
    server_errors = {k: v for k, v in statuses.items() if k >= 500}
    if server_errors:
        problems.append(f"5xx answers under load: {server_errors}")
    others = {k: v for k, v in statuses.items() if k != 200 and k < 500}
    if others:
        problems.append(
            f"expected a 200 listing to every concurrent poll, found other answers: {others}"
        )
    for where, count in outcome.get("locations", {}).items():
        if where and not _same_origin(url, where):
            problems.append(
                f"{count} concurrent poll(s) redirected to another origin ({where}): a poller "
                "that followed would send its credentials there"
            )
    if outcome["errors"]:
        problems.append(f"{len(outcome['errors'])} transport errors, first: {outcome['errors'][0]}")
    if not statuses.get(200) and not outcome["errors"]:
        problems.append("no concurrent poll was answered with a listing")
    return problems


def _percentile(values: list[float], q: float) -> float:
    from prime_rl_dynamo.stats import percentile  # the one percentile, shared with the benchmarks

    return percentile(values, q * 100) if values else 0.0


@frontend_check(
    "HTTP-7", "concurrent-polls", "Concurrent polls: no 5xx, valid bodies, consistent membership"
)
def check_load(ctx: FrontendContext) -> str | None:
    import json

    opts = ctx.run.options
    first = ctx.listing()
    outcome = ctx.load()
    latencies: list[float] = outcome["latencies"]
    total = opts.load_clients * opts.load_requests
    done = sum(outcome["statuses"].values())
    p50, p99 = _percentile(latencies, 0.50) * 1000, _percentile(latencies, 0.99) * 1000
    figures = {
        "clients": opts.load_clients,
        "requests_planned": total,
        "requests_done": done,
        "transport_errors": len(outcome["errors"]),
        "statuses": {str(k): v for k, v in sorted(outcome["statuses"].items())},
        "p50_ms": round(p50, 2),
        "p99_ms": round(p99, 2),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2) if latencies else 0.0,
        "wall_s": round(outcome["wall"], 3),
        "distinct_bodies": len(outcome["bodies"]),
    }
    ctx.add_details("HTTP-7::concurrent-polls", **figures)
    expected = sorted(_identities(first))
    problems = _load_answer_problems(outcome, ctx.url)
    for content in outcome["bodies"]:
        try:
            parsed = json.loads(content)
        except ValueError as exc:
            problems.append(f"a body under load is not JSON: {exc}")
            continue
        except RecursionError:  # too deep to read its membership: BODY-1 judges it
            continue
        found = sorted(_identities(parsed))
        if found != expected:
            gone, new = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
            problems.append(f"membership differs from the first GET: gone {gone}, new {new}")
    summary = (
        f"{done}/{total} requests by {opts.load_clients} clients in {outcome['wall']:.2f} s: "
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"
    )
    if done < total and not outcome["errors"]:
        summary += f" (cut short at the {opts.load_budget:g} s budget)"
    if problems:
        raise Failed(summary + "\n  " + "\n  ".join(problems[:10]), details=figures)
    return summary


# --- schemathesis' own checks ---------------------------------------------------------------


@frontend_check(
    "HTTP-1", "schemathesis", "schemathesis' checks pass from the bundled OpenAPI document"
)
def check_schemathesis(ctx: FrontendContext) -> str | None:
    from conformance.st import run_schemathesis

    ctx.listing()
    ctx.require_dynamo_dialect()
    failures = run_schemathesis(
        ctx.base,
        timeout=ctx.run.options.timeout,
        max_body_bytes=ctx.run.options.max_body_bytes,
        headers=ctx.run.options.headers,
        verify=ctx.run.options.verify,
    )
    unexplained = []
    for failure in failures:
        if failure.schema_failure and failure.body is not None:
            # A schema failure on a body the validator also refuses is reported under the
            # requirements the validator names, by the body checks, when the bodies they judge
            # break those requirements too (one failure per broken requirement); else here.
            broken = {v.requirement for v in _validator().check_body(failure.body)}
            if broken and broken <= _broken_in(ctx.evidence()):
                continue
            if broken:
                unexplained.append(
                    f"{failure.text} (the validator: {', '.join(sorted(broken))}, in a body "
                    "no body check received)"
                )
                continue
        unexplained.append(failure.text)
    if unexplained:
        raise Failed("schemathesis failed:\n  " + "\n  ".join(unexplained[:10]))
    return "not_a_server_error, status_code, content_type, response_headers, response_schema"


def _broken_in(evidence: dict[bytes, list[Violation]]) -> set[str]:
    return {v.requirement for found in evidence.values() for v in found}


# --- every body requirement, one check each ---------------------------------------------------


def _make_body_check(req_id: str) -> None:
    title = all_requirements()[req_id].title

    def body_check(ctx: FrontendContext) -> str | None:
        ctx.require_dynamo_dialect()
        found = ctx.violations(req_id)
        if req_id == "BODY-1":
            found += ctx.stray_violations()
        if found:
            # The first line is the first violation itself (JUnit's failure message shows it).
            lines = [f"{v} (in {source})" for source, v in found[:20]]
            more = f"\n  ... and {len(found) - 20} more" if len(found) > 20 else ""
            violations = [structured(v, source) for source, v in found]
            if len(found) == 1:
                source, v = found[0]
                raise Failed(
                    f"{v}\n  in the listing of {ctx.url} ({source})", violations=violations
                )
            raise Failed(
                f"{found[0][1]} (and {len(found) - 1} more)\n{len(found)} violations in the "
                f"listing of {ctx.url}:\n  " + "\n  ".join(lines) + more,
                violations=violations,
            )
        return f"{plural(ctx.judged, 'distinct body', 'distinct bodies')} judged"

    body_check.__name__ = f"check_body_{req_id.replace('-', '_').lower()}"
    frontend_check(req_id, "body", title)(body_check)


for _req in BODY_REQUIREMENTS:
    _make_body_check(_req)
