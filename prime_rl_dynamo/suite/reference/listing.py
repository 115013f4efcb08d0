"""Discovery bodies shaped byte for byte like Dynamo 1.6.1's discovery listing.

Pure functions: engine views in, ordered dicts and compact JSON bytes out. Each worker's object is
built by ``wire.listed_entry`` (Dynamo's key order, optional keys omitted).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from prime_rl_dynamo.wire import WorkerId, listed_entry

__all__ = [
    "WorkerView",
    "discovery_failed_body",
    "dumps",
    "listing_body",
    "sort_workers",
    "view_entry",
]


@dataclass(frozen=True, slots=True)
class WorkerView:
    """What the frontend knows of one registered worker when it builds a listing."""

    namespace: str
    component: str
    endpoint: str
    instance_id: int
    port: int  # the request-plane port named in transport (and in the dead-worker error)
    routes: tuple[str, ...] = ()
    system_url: str | None = None
    admin_base_url: str | None = None
    model: str | None = None
    world_size: int | None = None
    error: str | None = None
    weight_transfer_backend: str | None = None  # an extension field (not in Dynamo 1.6.1)


def view_entry(view: WorkerView) -> dict[str, Any]:
    """A view's worker object, built by ``wire.listed_entry`` in Dynamo's key order (the view's
    weight-transfer backend as an extension field); an errored worker carries routes [] and no
    URLs."""
    backend = view.weight_transfer_backend
    extra = None if backend is None else {"weight_transfer_backend": backend}
    return listed_entry(view, view.port, extra=extra)


def sort_workers(workers: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Workers in canonical order: (namespace, component, endpoint, instance_id)."""
    return sorted(workers, key=WorkerId.from_entry)


def listing_body(namespace: str, views: Iterable[WorkerView]) -> dict[str, Any]:
    """The whole discovery body for a scope ``namespace``, workers sorted and de-duplicated."""
    unique: dict[WorkerId, dict[str, Any]] = {}
    for view in views:
        unique[WorkerId.of(view)] = view_entry(view)
    return {"protocol_version": 1, "namespace": namespace, "workers": sort_workers(unique.values())}


def discovery_failed_body(message: str) -> dict[str, Any]:
    """The whole-listing failure body (HTTP-5)."""
    return {"error": "discovery_failed", "message": message}


def dumps(body: Any) -> bytes:
    """Compact JSON exactly as serde_json writes it (no spaces, UTF-8, insertion order)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
