"""The ``frontend-v2`` profile: a live RL listener that claims protocol 2 (draft, schema/SPEC-v2.md).

The first request asks for v2 (``Dynamo-RL-Protocol: 2, 1``). A listener that answers v1 does not
claim v2: every check is skipped, saying so (Dynamo 1.6.1 is such a listener). One that answers v2
is judged on negotiation, the v2 body, its ETag, 304 and the ``?wait=`` change feed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from conformance._http import RawReply, Reply, raw_request, request, unreachable
from conformance.registry import CheckError, Failed, Skipped, check
from conformance.runner import ListenerContext, RunContext, listener_profile
from prime_rl_dynamo.violation import Violation
from prime_rl_dynamo.wire import entry_label

__all__ = ["FrontendV2Context"]

ASK = {"Dynamo-RL-Protocol": "2, 1"}
WAIT = 1.0  # seconds a ?wait= check asks the server to hold
STALE_ETAG = '"0000000000000000000000000000000a"'  # a validator no listing has


@listener_profile("frontend-v2")
class FrontendV2Context(ListenerContext):
    """Shared state of the frontend-v2 profile: the first v2 answer and its violations."""

    hold = WAIT  # the ?wait= checks' GETs are held

    def __init__(self, run: RunContext, client: httpx.Client) -> None:
        super().__init__(run, client)
        self._first: Reply | None = None
        self._violations: list[Violation] | None = None

    def get(self, headers: dict[str, str] | None = None, query: str = "") -> Reply:
        """One GET of the listing (nobody listening is the harness's problem)."""
        url = self.url + (f"?{query}" if query else "")
        try:
            return request(self.client, "GET", url, headers=headers or {})
        except httpx.ConnectError as exc:
            raise CheckError(unreachable("GET", url, exc, self.client)) from exc
        except httpx.HTTPError as exc:
            raise Failed(f"GET {url}: expected a complete HTTP response, found {exc!r}") from exc

    def raw(self, headers: dict[str, str]) -> RawReply:
        """One GET of the listing read off the socket (bytes an HTTP library would drop)."""
        return raw_request(self.run.options, self.url, "GET", tuple(headers.items()))

    def first(self) -> Reply:
        """The first answer to a request asking for v2; skips when the listener answers v1."""
        if self._first is None:
            self._first = self.get(ASK)
        reply = self._first
        if reply.status != 200:
            raise Skipped(f"no listing to judge: GET asking for v2 answered {reply.status}")
        if reply.headers.get("dynamo-rl-protocol", "").strip() != "2":
            found = reply.parsed.get("protocol_version") if isinstance(reply.parsed, dict) else None
            raise Skipped(
                f"{self.url} does not claim protocol 2: asked with Dynamo-RL-Protocol: 2, 1, it "
                f"answered without the header (protocol_version {found!r}); v1 clients keep working"
            )
        return reply

    def violations(self) -> list[Violation]:
        """What the v2 body check finds in the first v2 listing."""
        if self._violations is None:
            from prime_rl_dynamo.v2 import check_body_v2

            self._violations = check_body_v2(self.first().content)
        return self._violations

    @property
    def etag(self) -> str:
        """The first v2 listing's ETag (Failed when missing)."""
        etag = self.first().headers.get("etag")
        if not etag:
            raise Failed(f"GET {self.url} (v2): expected an ETag header, found none (V2-3)")
        return etag


def _verdict(ctx: FrontendV2Context, problems: list[str], passed: str) -> str:
    """``passed`` when nothing was found; Failed naming every problem otherwise."""
    if problems:
        raise Failed(f"{ctx.url}: " + "; ".join(problems))
    return passed


def _ids(body: Any) -> list[str]:
    """The labels of the workers a body lists (however broken), sorted."""
    workers = body.get("workers") if isinstance(body, dict) else None
    return sorted(str(entry_label(w)) for w in (workers if isinstance(workers, list) else []))


@check("frontend-v2", "V2-1", "negotiation", "Asked for 2 it answers v2; not asked, v1 unchanged")
def check_negotiation(ctx: FrontendV2Context) -> str | None:
    from prime_rl_dynamo.validate import check_body

    reply = ctx.first()
    problems = []
    if not isinstance(reply.parsed, dict) or reply.parsed.get("protocol_version") != 2:
        problems.append("the v2 answer's body does not say protocol_version 2")
    vary = {t.strip().lower() for t in reply.headers.get("vary", "").split(",")}
    if "dynamo-rl-protocol" not in vary:
        problems.append(
            f"expected Vary naming Dynamo-RL-Protocol, found {reply.headers.get('vary')!r}"
        )
    plain = ctx.get()
    if plain.status != 200 or plain.headers.get("dynamo-rl-protocol"):
        problems.append(f"a request without the header must get v1, found {plain.describe()}")
    else:
        broken = check_body(plain.content)
        if broken:
            problems.append(f"the v1 listing (no header) breaks v1: {broken[0]}")
        elif _ids(plain.parsed) != _ids(reply.parsed):
            problems.append("the v1 and v2 listings list different workers")
    return _verdict(
        ctx, problems, "v2 when asked (Vary: Dynamo-RL-Protocol), v1 otherwise, same workers"
    )


def _listing_holds(ctx: FrontendV2Context, judged: Callable[[Violation], bool], what: str) -> str:
    """Failed listing the v2 listing's violations that ``judged`` picks, if there are any."""
    found = [v for v in ctx.violations() if judged(v)]
    if found:
        lines = "\n  ".join(str(v) for v in found[:20])
        raise Failed(f"{len(found)} violation(s) in the v2 listing of {ctx.url}:\n  {lines}")
    return "the v2 listing holds" + what


def _body_check(requirement: str, title: str) -> None:
    def body_check(ctx: FrontendV2Context) -> str | None:
        return _listing_holds(ctx, lambda v: v.requirement == requirement, "")

    body_check.__name__ = f"check_v2_body_{requirement.replace('-', '_').lower()}"
    check("frontend-v2", requirement, "body", title)(body_check)


# V2-2 gathers what the v2 schema and v1's rules find; V2-6 and V2-7 their own.
def check_v2_body(ctx: FrontendV2Context) -> str | None:
    return _listing_holds(
        ctx,
        lambda v: v.requirement not in ("V2-6", "V2-7"),
        " (rl-workers.v2.schema.json and v1's LIST rules)",
    )


check("frontend-v2", "V2-2", "body", "The v2 listing matches rl-workers.v2.schema.json")(
    check_v2_body
)
_body_check("V2-6", "parallel layout multiplies to world_size")
_body_check("V2-7", "health: ready on probed workers, unhealthy on error workers")


def _planned(body: Any) -> Any:
    """A v2 listing without its fingerprint: what the fingerprint is judged against (comparing
    whole bodies would compare the fingerprint with itself)."""
    if isinstance(body, dict):
        return {k: v for k, v in body.items() if k != "fingerprint"}
    return body


@check("frontend-v2", "V2-3", "etag", "A strong ETag equal to the quoted fingerprint, stable")
def check_etag(ctx: FrontendV2Context) -> str | None:
    etag = ctx.etag
    body = ctx.first().parsed
    problems = []
    if etag.startswith("W/"):
        problems.append(f"expected a strong ETag, found weak {etag!r}")
    fp = body.get("fingerprint") if isinstance(body, dict) else None
    if etag != f'"{fp}"':
        problems.append(f"expected ETag '\"{fp}\"' (the fingerprint quoted), found {etag!r}")
    again = ctx.get(ASK)
    same = _planned(again.parsed) == _planned(body)
    if again.headers.get("etag") != etag and same:
        problems.append(
            f"the same listing (fingerprint aside) came with another ETag "
            f"{again.headers.get('etag')!r}: the ETag is not a function of the listing"
        )
    if again.headers.get("etag") == etag and not same:
        problems.append("a different listing came with the same ETag")
    return _verdict(
        ctx,
        problems,
        f"ETag {etag}, the same for the same listing (a change of the fleet changes it: checked "
        "by the project's tests)",
    )


@check("frontend-v2", "V2-4", "not-modified", "If-None-Match with the current ETag answers 304")
def check_304(ctx: FrontendV2Context) -> str | None:
    etag = ctx.etag
    # Read off the socket: httpx never reads the bytes a server sends after a 304's headers.
    same = ctx.raw({**ASK, "If-None-Match": etag})
    other = ctx.get({**ASK, "If-None-Match": STALE_ETAG})
    problems = []
    if same.status != 304:
        problems.append(f"If-None-Match {etag}: expected 304, found {same.status}")
    elif same.trailing:
        excerpt = same.trailing[:60].decode("utf-8", "replace")
        problems.append(
            f"expected a 304 without a body, found {len(same.trailing)} bytes after its headers: "
            f"{excerpt!r}"
        )
    elif same.headers.get("etag") != etag:
        problems.append(f"the 304 carried ETag {same.headers.get('etag')!r}, expected {etag}")
    if other.status != 200:
        problems.append(f"If-None-Match with another ETag: expected 200, found {other.status}")
    return _verdict(
        ctx, problems, "304 with no bytes after its headers; another validator gets 200"
    )


@check("frontend-v2", "V2-5", "wait", "?wait= holds an unchanged listing, then answers 304")
def check_wait(ctx: FrontendV2Context) -> str | None:
    etag = ctx.etag
    listing = ctx.first().parsed
    held = ctx.get({**ASK, "If-None-Match": etag}, query=f"wait={WAIT:g}")
    at_once = ctx.get(ASK, query=f"wait={WAIT:g}")
    stale = ctx.get({**ASK, "If-None-Match": STALE_ETAG}, query=f"wait={WAIT:g}")
    problems = []
    changed = None
    if held.status == 200 and held.headers.get("etag") == etag:
        raise Skipped("the server answers a matching If-None-Match with 200 (see V2-4): no feed")
    if held.status == 200 and _planned(held.parsed) == _planned(listing):
        problems.append(
            f"?wait={WAIT:g} answered 200 after {held.elapsed:.2f} s with the same listing "
            f"(fingerprint aside) under another ETag {held.headers.get('etag')!r}: an unchanged "
            "listing must be held, then answered 304"
        )
    elif held.status == 200:
        changed = f"the listing changed while held (answered 200 after {held.elapsed:.2f} s)"
    elif held.status != 304:
        problems.append(
            f"?wait={WAIT:g} on an unchanged listing: expected 304, found {held.status}"
        )
    elif held.elapsed < WAIT * 0.5:
        problems.append(
            f"?wait={WAIT:g} answered 304 after {held.elapsed:.2f} s: the request was not held"
        )
    for reply, what in ((at_once, "without If-None-Match"), (stale, "with a stale If-None-Match")):
        if reply.status != 200 or reply.elapsed >= WAIT:
            problems.append(
                f"?wait={WAIT:g} {what} must answer at once with 200, found {reply.status} "
                f"after {reply.elapsed:.2f} s"
            )
    return _verdict(
        ctx,
        problems,
        changed
        or f"held {held.elapsed:.2f} s then 304; without a validator 200 in "
        f"{at_once.elapsed:.3f} s, with a stale one in {stale.elapsed:.3f} s",
    )
