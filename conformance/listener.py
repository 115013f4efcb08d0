"""Whether a target URL looks like an RL listener at all, before any check runs (SPEC §14.4).

The likeliest operator mistake is the wrong port (Dynamo's OpenAI frontend, an engine's system
server) or a typo in the path. Nothing there serves ``/v1/rl/workers``, so every check would fail
and the run would read as "Dynamo is not conformant". ``not_a_listener`` decides from two probes
on the wire, ``GET`` and (when that is no JSON) ``HEAD`` of the listing, and the run is
inconclusive instead when:

- ``GET /v1/rl/workers`` answers ``404``: nothing serves the path (the SMG gateway's 404, with
  its ``x-smg-error-code`` header, says its RL routes are off: named, no further probe); or
- neither probe answers JSON (no JSON media type, no body that parses as JSON): an HTML page, a
  plain-text banner, an empty reply.

A known other service (an OpenAI-compatible frontend, a worker system server) is named in a note
when one more ``GET`` shows it. A listener that answers JSON on either probe is judged by the checks,
however broken it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from conformance._http import Reply, json_media, request
from prime_rl_dynamo.http import status_hint
from prime_rl_dynamo.wire import DISCOVERY_PATH

__all__ = ["NotAListener", "not_a_listener"]

_HINT = "is this Dynamo's RL listener (`DYN_RL_PORT`)?"


@dataclass(frozen=True)
class NotAListener:
    """Why nothing at a URL looks like an RL listener: one line first, then notes."""

    line: str
    notes: list[str] = field(default_factory=list)


def _answers_json(reply: Reply) -> bool:
    media = reply.content_type.split(";", 1)[0].strip().lower()
    return json_media(reply.content_type) or media.endswith("+json") or reply.parse_error is None


def _media(reply: Reply) -> str:
    return reply.content_type.split(";", 1)[0].strip() or "no content-type"


def _shown(reply: Reply) -> str:
    media = _media(reply)
    body = "an empty body" if not reply.content else f"{len(reply.content)} bytes"
    return f"HTTP {reply.status}, {media}, {body}"


def _is_model_list(body: object) -> bool:
    return isinstance(body, dict) and (
        body.get("object") == "list" or isinstance(body.get("data"), list)
    )


#: path -> (what its JSON answer shows, the service it names)
_KNOWN: dict[str, tuple[Any, str]] = {
    "/v1/models": (
        _is_model_list,
        "an OpenAI-compatible API (GET /v1/models answers a model list), such as Dynamo's "
        "frontend HTTP port (the RL listener is a port of its own)",
    ),
    "/health": (
        lambda body: isinstance(body, dict),
        "a health endpoint (GET /health answers JSON), such as a worker's system server "
        "(DYN_SYSTEM_PORT)",
    ),
}


def _known_service(client: httpx.Client, base: str) -> str | None:
    """Name the service at ``base`` when one GET shows what it is (None: unknown)."""
    for path, (shows, service) in _KNOWN.items():
        try:
            reply = request(client, "GET", base + path)
        except httpx.HTTPError:
            continue
        if reply.status == 200 and shows(reply.parsed):
            return service
    return None


def not_a_listener(
    client: httpx.Client, base: str
) -> tuple[NotAListener | None, Reply | httpx.HTTPError]:
    """Why nothing at ``base`` looks like an RL listener (None when something does, or when the
    first GET broke off: the checks then say what broke), and that first GET's reply or error.

    The frontend profile takes that reply as its own first GET, so the probe adds no request to
    what a listener sees.
    """
    url = base + DISCOVERY_PATH
    try:
        got = request(client, "GET", url)
    except httpx.HTTPError as exc:
        return None, exc
    if got.status == 404:
        smg = status_hint(got.status, got.headers)  # the SMG gateway says who it is
        line = f"nothing serves {DISCOVERY_PATH} at {base} (HTTP 404): {smg or _HINT}"
        if smg:
            return NotAListener(line), got
    elif _answers_json(got):
        return None, got
    else:
        try:
            head = request(client, "HEAD", url)
        except httpx.HTTPError:
            return None, got
        if json_media(head.content_type):
            return None, got
        line = (
            f"nothing at {base} answers JSON on {DISCOVERY_PATH} (GET: {_shown(got)}; "
            f"HEAD: HTTP {head.status}, {_media(head)}): {_HINT}"
        )
    known = _known_service(client, base)
    return NotAListener(line, [f"the URL looks like {known}"] if known else []), got
