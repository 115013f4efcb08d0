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

__all__ = ["SERVER_COUNTERPARTS", "Counterpart"]


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


def _fault(check: str, name: str, wrong: str, *fails: str) -> Counterpart:
    """A reference fault (``serve --fault NAME``) that fails ``check`` and exactly ``fails``
    (the check's own requirement when none are given)."""
    own = check.split("::", 1)[0]
    return Counterpart(check, "fault", name, wrong, frozenset(fails or (own,)))


def _break(requirement: str, *also: str) -> Counterpart:
    """``break=ID``: a body that breaks exactly one body requirement (prime_rl_dynamo.mutations)."""
    from prime_rl_dynamo.requirements import requirement as catalog

    wrong = f"a listing that breaks only this rule: {catalog(requirement).title}"
    return _fault(f"{requirement}::body", f"break={requirement}", wrong, requirement, *also)


def _variant(name: str, wrong: str, *also: str) -> Counterpart:
    return Counterpart(
        f"VERSION-1::{name}", "variant", name, wrong, frozenset({"VERSION-1", *also})
    )


#: The body requirements the frontend checks one by one, each broken by its own ``break=ID``.
_BODY = (
    "BODY-1", "BODY-2", "BODY-3", "BODY-4", "BODY-6",
    "WORKER-1", "WORKER-2", "WORKER-3", "WORKER-4", "WORKER-5", "WORKER-7", "WORKER-8",
    "WORKER-9", "WORKER-10", "WORKER-11", "WORKER-12",
    "LIST-1", "LIST-2", "LIST-3", "LIST-4", "LIST-5", "LIST-6",
)  # fmt: skip

#: Counterparts of the server-side checks (frontend, frontend-v2, workers): reference faults and
#: variants, each run by tests/test_kill_matrix_server.py against the reference fleet.
SERVER_COUNTERPARTS: tuple[Counterpart, ...] = (
    # --- frontend: dialect and known variants
    _fault(
        "DIALECT-1::dialect",
        "break=DIALECT-1",
        "serves the SMG gateway's shape at the Dynamo path",
        "DIALECT-1",
        "VERSION-1",
    ),
    _variant("system-routes", "renames routes to system_routes", "WORKER-5"),
    _variant("null-optionals", "sends null for optional fields v1 omits", "WORKER-6"),
    _variant("weight-transfer-backend", "replaces admin_base_url with weight_transfer_backend"),
    _variant("smg", "serves the SMG gateway's shape (total; id, engine, control_url)", "DIALECT-1"),
    # --- frontend: HTTP
    _fault(
        "HTTP-1::status-and-content-type", "status=403", "answers the listing 403 with an error"
    ),
    _fault(
        "HTTP-1::schemathesis",
        "head-status=404",
        "answers HEAD 404 (a status the OpenAPI document does not give it); GET is fine",
        "HTTP-1",
        "HTTP-2",
    ),
    _fault(
        "HTTP-5::discovery-failed-body", "break=HTTP-5", "a 500 discovery_failed without message"
    ),
    _fault("HTTP-2::head", "head-body", "HEAD answers carry the listing as a body on the wire"),
    _fault("HTTP-3::method-not-allowed", "no-allow", "405 without an Allow header"),
    _fault("HTTP-4::unknown-paths", "catch-all", "every path on the listener answers the listing"),
    _fault(
        "HTTP-6::stable-polls",
        "error-workers=1:1",
        "the first GET lists a worker with an error, later polls list it healthy",
    ),
    _fault("HTTP-7::concurrent-polls", "overload=429", "sheds concurrent polls with 429"),
    _fault("HTTP-7::concurrent-polls", "overload=404", "answers concurrent polls 404"),
    _fault("HTTP-7::concurrent-polls", "overload=401", "answers concurrent polls 401"),
    _fault(
        "HTTP-7::concurrent-polls",
        "overload-redirect=localhost",
        "redirects concurrent polls to another origin (307 to localhost)",
    ),
    # --- frontend: every body requirement
    *(_break(r) for r in _BODY),
    _break(
        "WORKER-6", "VERSION-1"
    ),  # null for an omitted optional is also the null-optionals variant
    # --- frontend-v2
    _fault("V2-1::negotiation", "break-v2=V2-1", "v2 answers without Vary: Dynamo-RL-Protocol"),
    _fault("V2-2::body", "break-v2=V2-2", "the v2 listing's text writes namespace twice"),
    _fault("V2-3::etag", "break-v2=V2-3", "an ETag that is not the quoted fingerprint"),
    _fault(
        "V2-3::etag",
        "etag-counter",
        "fingerprint and ETag count requests; If-None-Match and ?wait= ignored",
        "V2-3",
        "V2-4",
        "V2-5",
    ),
    _fault("V2-4::not-modified", "break-v2=V2-4", "If-None-Match ignored: always 200"),
    _fault("V2-4::not-modified", "body-on-304", "a 304 carries the listing as a body on the wire"),
    _fault(
        "V2-5::wait", "break-v2=V2-5", "?wait= ignored: an unchanged listing answers 304 at once"
    ),
    _fault(
        "V2-5::wait",
        "etag-counter",
        "answers a held ?wait= at once with 200, the same listing under a new ETag",
        "V2-3",
        "V2-4",
        "V2-5",
    ),
    _fault(
        "V2-5::wait",
        "hold-stale",
        "holds a ?wait= whose If-None-Match is stale for the whole wait",
    ),
    _fault("V2-6::body", "break-v2=V2-6", "a parallel layout that does not multiply to world_size"),
    _fault("V2-7::body", "break-v2=V2-7", "a probed worker's health says unhealthy"),
    # --- workers
    _fault("ENGINE-3::system-health", "system-health-text", "system health answers text/plain OK"),
    _fault("ENGINE-1::engine-routes", "engine-status=500", "engine routes answer 500"),
    _fault("ENGINE-2::engine-content-type", "engine-text", "engine routes reply text/plain"),
    _fault("ADMIN-1::admin-health", "admin-health=503", "admin health answers 503"),
)
