"""The kill matrix: for every check, a deliberately broken counterpart that fails it.

A check that no broken target can fail is a defect. Each :class:`Counterpart` names one check ID,
the deliberately broken thing that must fail it (a zoo client for client checks; a reference fault
or variant for server checks), what it does wrong, and the exact set of requirement IDs it must
fail (and no other).

- client checks: ``conformance.examples.zoo.COUNTERPARTS``;
- server checks (frontend, frontend-v2, workers, roundtrip): ``SERVER_COUNTERPARTS`` below.

The kill-matrix tests and the generated ``docs/`` page join both (this module imports neither
the zoo nor the checks, so nothing circles back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["NOT_OBSERVABLE", "SERVER_COUNTERPARTS", "Counterpart"]


@dataclass(frozen=True)
class Counterpart:
    """One deliberately broken target and the check it must fail."""

    #: The check ID it kills, as the registry names it (``Check.id``).
    check: str
    #: What breaks: ``"zoo"`` (a client of conformance.examples.zoo), ``"fault"`` (a reference
    #: fault spec, as ``serve --fault`` takes it) or ``"variant"`` (a reference variant listing).
    kind: Literal["zoo", "fault", "variant"]
    #: The zoo client's name, the fault spec or the variant's name.
    name: str
    #: What it does wrong, in one line, for people.
    wrong: str
    #: Every requirement ID the run must fail: these and no other.
    fails: frozenset[str]


#: Checks that can never fail, so have no counterpart: check ID -> why (they always SKIP, saying so).
NOT_OBSERVABLE: dict[str, str] = {
    "RANK-7::ranks-inside-engine": "not observable: the ranks inside an engine are computed by its "
    "worker processes from the rank_offset they were sent; no request of a client carries them "
    "(the rank_offset itself is judged by RANK-3, RANK-4 and RANK-5)",
}


def _break(requirement: str, *also: str) -> Counterpart:
    """``break=ID``: a body that breaks exactly one body requirement (prime_rl_dynamo.suite.mutations)."""
    from prime_rl_dynamo.requirements import requirement as catalog

    wrong = f"a listing that breaks only this rule: {catalog(requirement).title}"
    fails = frozenset({requirement, *also})
    return Counterpart(f"{requirement}::body", "fault", f"break={requirement}", wrong, fails)


#: The body requirements the frontend checks one by one, each broken by its own ``break=ID``
#: (WORKER-6's null for an omitted optional is also the null-optionals variant: VERSION-1).
_BODY = (
    "BODY-1", "BODY-2", "BODY-3", "BODY-4", "BODY-6",
    "WORKER-1", "WORKER-2", "WORKER-3", "WORKER-4", "WORKER-5", "WORKER-7", "WORKER-8",
    "WORKER-9", "WORKER-10", "WORKER-11", "WORKER-12",
    "LIST-1", "LIST-2", "LIST-3", "LIST-4", "LIST-5", "LIST-6",
)  # fmt: skip

#: The other server counterparts, one a line: check | reference fault (``variant=NAME``: a known
#: v1 variant) | the requirements it fails besides the check's own (``-``: none) | what it does
#: wrong. Grouped by profile: frontend, frontend-v2, workers, roundtrip.
_TABLE = """
DIALECT-1::dialect | break=DIALECT-1 | VERSION-1 | serves the SMG gateway's shape at the Dynamo path
VERSION-1::system-routes | variant=system-routes | WORKER-5 | renames routes to system_routes
VERSION-1::null-optionals | variant=null-optionals | WORKER-6 | sends null for optional fields v1 omits
VERSION-1::weight-transfer-backend | variant=weight-transfer-backend | - | replaces admin_base_url with weight_transfer_backend
VERSION-1::smg | variant=smg | DIALECT-1 | serves the SMG gateway's shape (total; id, engine, control_url)
HTTP-1::status-and-content-type | status=403 | - | answers the listing 403 with an error
HTTP-1::schemathesis | head-status=404 | HTTP-2 | answers HEAD 404 (a status the OpenAPI document does not give it); GET is fine
HTTP-5::discovery-failed-body | break=HTTP-5 | - | a 500 discovery_failed without message
HTTP-2::head | head-body | - | HEAD answers carry the listing as a body on the wire
HTTP-3::method-not-allowed | no-allow | - | 405 without an Allow header
HTTP-4::unknown-paths | catch-all | - | every path on the listener answers the listing
HTTP-6::stable-polls | error-workers=1:1 | - | the first GET lists a worker with an error, later polls list it healthy
HTTP-7::concurrent-polls | overload=429 | - | sheds concurrent polls with 429
HTTP-7::concurrent-polls | overload=404 | - | answers concurrent polls 404
HTTP-7::concurrent-polls | overload=401 | - | answers concurrent polls 401
HTTP-7::concurrent-polls | overload-redirect=localhost | - | redirects concurrent polls to another origin (307 to localhost)
V2-1::negotiation | break-v2=V2-1 | - | v2 answers without Vary: Dynamo-RL-Protocol
V2-2::body | break-v2=V2-2 | - | the v2 listing's text writes namespace twice
V2-3::etag | break-v2=V2-3 | - | an ETag that is not the quoted fingerprint
V2-3::etag | etag-counter | V2-4,V2-5 | fingerprint and ETag count requests; If-None-Match and ?wait= ignored
V2-4::not-modified | break-v2=V2-4 | - | If-None-Match ignored: always 200
V2-4::not-modified | body-on-304 | - | a 304 carries the listing as a body on the wire
V2-5::wait | break-v2=V2-5 | - | ?wait= ignored: an unchanged listing answers 304 at once
V2-5::wait | etag-counter | V2-3,V2-4 | answers a held ?wait= at once with 200, the same listing under a new ETag
V2-5::wait | hold-stale | - | holds a ?wait= whose If-None-Match is stale for the whole wait
V2-6::body | break-v2=V2-6 | - | a parallel layout that does not multiply to world_size
V2-7::body | break-v2=V2-7 | - | a probed worker's health says unhealthy
ENGINE-3::system-health | system-health-text | - | system health answers text/plain OK
ENGINE-1::engine-routes | engine-status=500 | - | engine routes answer 500
ENGINE-2::engine-content-type | engine-text | - | engine routes reply text/plain
ADMIN-1::admin-health | admin-health=503 | - | admin health answers 503
LIST-7::listing-equals-fleet | break=LIST-2 | - | lists one worker twice (the twin without its admin URL)
LIST-7::listing-equals-fleet | error-workers=1 | - | lists a live, healthy worker with an error
LIST-8::listing-follows-churn | lag=2 | - | answers each listing with the body of two requests before: a restart and a resize show late
LIST-5::listing-follows-namespace-scope | scope=dynamo-x | - | says dynamo-x as the body's namespace, not the scope searched
"""


def _row(line: str) -> Counterpart:
    check, fault, also, wrong = (cell.strip() for cell in line.split("|"))
    own = check.split("::", 1)[0]
    fails = frozenset({own, *(also.split(",") if also != "-" else ())})
    if fault.startswith("variant="):
        return Counterpart(check, "variant", fault.removeprefix("variant="), wrong, fails)
    return Counterpart(check, "fault", fault, wrong, fails)


_ROWS = tuple(_row(line) for line in _TABLE.strip().splitlines())

#: Counterparts of the server-side checks (frontend, frontend-v2, workers: run by
#: tests/test_kill_matrix_server.py against the reference fleet; roundtrip: run by the same test
#: through ``conformance.roundtrip.reference_roundtrip``).
SERVER_COUNTERPARTS: tuple[Counterpart, ...] = (
    *_ROWS,
    *(_break(r) for r in _BODY),
    _break("WORKER-6", "VERSION-1"),
)
