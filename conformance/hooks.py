"""schemathesis hooks: the project's own checks for ``schemathesis run``.

Load with ``SCHEMATHESIS_HOOKS=conformance.hooks schemathesis run <rl-frontend.openapi.json>
--url http://HOST:RL_PORT``. Each check judges a 200 listing of ``/v1/rl/workers`` through the
project's validator and fails with the violations of its requirement (ordering LIST-1, identity
uniqueness LIST-2, request_plane_url LIST-3, route order LIST-4, scope LIST-5, admin URL
uniqueness LIST-6); other responses are left to schemathesis' own checks.

It also registers a deserializer for ``text/plain``: Dynamo 1.6.1 labels its system server's JSON
answers ``text/plain; charset=utf-8`` (ENGINE-2, a SHOULD), and the documents declare that media
type next to ``application/json``, so with these hooks schemathesis validates those bodies too
instead of skipping them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import schemathesis

from prime_rl_dynamo.wire import DISCOVERY_PATH

__all__ = [
    "json_labelled_as_text",
    "rl_admin_url_unique",
    "rl_identity_unique",
    "rl_request_plane_url",
    "rl_routes_sorted",
    "rl_scope",
    "rl_workers_sorted",
]


@schemathesis.deserializer("text/plain")
def json_labelled_as_text(ctx: Any, response: Any) -> Any:
    """A ``text/plain`` body parsed as the JSON it is (ENGINE-1: a JSON object whatever the
    Content-Type says); a body that is not JSON is reported, not skipped."""
    try:
        return json.loads(response.content)
    except ValueError as exc:
        preview = bytes(response.content[:120]).decode("utf-8", "replace")
        raise ValueError(
            f"ENGINE-1: a text/plain body must still be JSON ({exc}); received {preview!r}"
        ) from None


def _violations(response: Any, case: Any, requirement: str) -> None:
    path = getattr(case, "path", "") or getattr(getattr(case, "operation", None), "path", "")
    if path != DISCOVERY_PATH or response.status_code != 200 or not response.content:
        return None
    from prime_rl_dynamo.validate import check_body

    found = [v for v in check_body(response.content) if v.requirement == requirement]
    if found:
        lines = "\n".join(f"  {v}" for v in found[:20])
        raise AssertionError(f"{requirement}: {len(found)} violation(s) in the listing:\n{lines}")
    return None


def _listing_check(name: str, requirement: str, doc: str) -> Callable[[Any, Any, Any], None]:
    """A schemathesis check named ``name`` that fails with the listing's ``requirement`` violations."""

    def check(ctx: Any, response: Any, case: Any) -> None:
        return _violations(response, case, requirement)

    check.__name__ = check.__qualname__ = name
    check.__doc__ = f"{requirement}: {doc}"
    return schemathesis.check(check)


rl_workers_sorted = _listing_check(
    "rl_workers_sorted", "LIST-1", "workers sorted by (namespace, component, endpoint, instance_id)"
)
rl_identity_unique = _listing_check(
    "rl_identity_unique", "LIST-2", "no two workers share an identity"
)
rl_request_plane_url = _listing_check(
    "rl_request_plane_url", "LIST-3", "request_plane_url is dyn://namespace.component.endpoint"
)
rl_routes_sorted = _listing_check("rl_routes_sorted", "LIST-4", "each worker's routes sorted")
rl_scope = _listing_check("rl_scope", "LIST-5", "every worker's namespace is in the scope")
rl_admin_url_unique = _listing_check(
    "rl_admin_url_unique", "LIST-6", "no two workers advertise the same admin_base_url"
)
