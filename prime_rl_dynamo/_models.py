"""Typed models of rl-workers.v1.schema.json (msgspec, frozen). GENERATED, do not edit.

Regenerate with ``python -m tools.codegen``; tests fail when this file drifts.
Optional fields are ``X | None``: None means the field was absent (null is refused).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from prime_rl_dynamo.wire import Identified

SCHEMA_ID = "https://example.invalid/prime-rl-dynamo/schema/rl-workers.v1.schema.json"

__all__ = ["PATTERNS", "Snapshot", "Transport", "Worker"]

# Regular expressions of the schema, checked by prime_rl_dynamo.validate in bulk.
PATTERNS: dict[str, str] = {
    "Worker.request_plane_url": "^dyn://",
    "Worker.system_url": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#:\\u0000-\\u0020\\u007f][^/?#\\u0000-\\u0020\\u007f]*([/?#][^\\u0000-\\u0020\\u007f]*)?(?![\\s\\S])",
    "Worker.admin_base_url": "^[Hh][Tt][Tt][Pp][Ss]?://(\\[[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*\\]|((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])|(([Xx][Nn]--[A-Za-z0-9]+(-[A-Za-z0-9]+)*|(?![Xx][Nn]--)[A-Za-z0-9_-]+)\\.)*([Xx][Nn]--[A-Za-z0-9]+(-[A-Za-z0-9]+)*|(?![Xx][Nn]--)[0-9]*[A-Za-z_-][A-Za-z0-9_-]*)\\.?)(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?(/[^?#\\u0000-\\u0020\\u007f]*)?(?![\\s\\S])",
}


class Transport(msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True):
    """An object with exactly one of the keys tcp, nats_tcp, http."""

    # Not expressible in msgspec, checked by prime_rl_dynamo.validate:
    #   Transport: oneOf (WORKER-3)
    tcp: str | None = None
    nats_tcp: str | None = None
    http: str | None = None


class Worker(msgspec.Struct, Identified, frozen=True, kw_only=True, gc=False, omit_defaults=True):
    """A worker object."""

    # Not expressible in msgspec, checked by prime_rl_dynamo.validate:
    #   Worker: allOf (WORKER-1, WORKER-2, WORKER-3, WORKER-4, WORKER-5, WORKER-11)
    #   Worker.instance_id: maximum 18446744073709551615 (beyond int64)
    #   Worker.request_plane_url: pattern (PATTERNS['Worker.request_plane_url'])
    #   Worker.routes: uniqueItems
    #   Worker.system_url: pattern (PATTERNS['Worker.system_url'])
    #   Worker.admin_base_url: pattern (PATTERNS['Worker.admin_base_url'])
    namespace: Annotated[str, msgspec.Meta(min_length=1)]
    component: Annotated[str, msgspec.Meta(min_length=1)]
    endpoint: Annotated[str, msgspec.Meta(min_length=1)]
    instance_id: Annotated[int, msgspec.Meta(ge=0)]
    transport: Transport
    request_plane_url: str
    routes: tuple[Annotated[str, msgspec.Meta(min_length=1)], ...]
    system_url: str | None = None
    admin_base_url: str | None = None
    model: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    world_size: Annotated[int, msgspec.Meta(ge=1, le=4294967295)] | None = None
    error: Annotated[str, msgspec.Meta(min_length=1)] | None = None


class Snapshot(msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True):
    """A JSON object with protocol_version, namespace and workers."""

    protocol_version: Literal[1]
    namespace: str
    workers: tuple[Worker, ...]
