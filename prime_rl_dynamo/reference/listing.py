"""Discovery bodies shaped byte for byte like Dynamo 1.6.1's ``GET /v1/rl/workers``.

Pure functions: engine views in, ordered dicts and compact JSON bytes out. Key order follows the
serialized Rust struct (namespace, component, endpoint, instance_id, transport, request_plane_url,
system_url, admin_base_url, model, routes, world_size, error); optional keys are omitted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "WorkerView",
    "discovery_failed_body",
    "dumps",
    "listing_body",
    "sort_workers",
    "worker_entry",
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


def worker_entry(view: WorkerView) -> dict[str, Any]:
    """One worker object in Dynamo's key order; an errored worker carries routes [] and no URLs."""
    entry: dict[str, Any] = {
        "namespace": view.namespace,
        "component": view.component,
        "endpoint": view.endpoint,
        "instance_id": view.instance_id,
        "transport": {
            "tcp": f"127.0.0.1:{view.port}/{view.instance_id:016x}/"
            f"{view.namespace}/{view.component}/{view.endpoint}"
        },
        "request_plane_url": f"dyn://{view.namespace}.{view.component}.{view.endpoint}",
    }
    if view.error is not None:
        entry["routes"] = []
        entry["error"] = view.error
        return entry
    if view.system_url is not None:
        entry["system_url"] = view.system_url
    if view.admin_base_url is not None:
        entry["admin_base_url"] = view.admin_base_url
    if view.model is not None:
        entry["model"] = view.model
    entry["routes"] = sorted(set(view.routes))
    if view.world_size is not None:
        entry["world_size"] = view.world_size
    if view.weight_transfer_backend is not None:
        entry["weight_transfer_backend"] = view.weight_transfer_backend
    return entry


def _identity(worker: Mapping[str, Any]) -> tuple[str, str, str, int]:
    return (worker["namespace"], worker["component"], worker["endpoint"], worker["instance_id"])


def sort_workers(workers: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Workers in canonical order: (namespace, component, endpoint, instance_id)."""
    return sorted(workers, key=_identity)


def listing_body(namespace: str, views: Iterable[WorkerView]) -> dict[str, Any]:
    """The whole discovery body for a scope ``namespace``, workers sorted and de-duplicated."""
    unique: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    for view in views:
        entry = worker_entry(view)
        unique[_identity(entry)] = entry
    return {"protocol_version": 1, "namespace": namespace, "workers": sort_workers(unique.values())}


def discovery_failed_body(message: str) -> dict[str, Any]:
    """The whole-listing failure body (HTTP-5)."""
    return {"error": "discovery_failed", "message": message}


def dumps(body: Any) -> bytes:
    """Compact JSON exactly as serde_json writes it (no spaces, UTF-8, insertion order)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
