"""Listings of the known v1 variants (fault ``variant=NAME``): the same fleet as each variant serves it.

Each entry rewrites a valid Dynamo 1.6.1 listing the way one real branch or gateway shapes it,
still saying ``protocol_version: 1``, so that the suite and the validator can be seen to name it
(VERSION-1). Pure functions over a deep copy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from prime_rl_dynamo.suite.mutations import smg_body
from prime_rl_dynamo.wire import WORKER_FIELDS

__all__ = ["VARIANT_BODIES", "variant_body"]

Body = dict[str, Any]

# The system_routes branch serializes world_size before model.
_BRANCH_ORDER = (*WORKER_FIELDS[:8], "system_routes", "world_size", "model", "error")


def _system_routes(body: Body) -> Body:
    workers = []
    for worker in body["workers"]:
        renamed = dict(worker)
        renamed["system_routes"] = renamed.pop("routes", [])
        workers.append({k: renamed[k] for k in _BRANCH_ORDER if k in renamed})
    body["workers"] = workers
    return body


def _null_optionals(body: Body) -> Body:
    # Every absent optional as an explicit null, as a serializer without skip_serializing_if
    # writes them (a healthy worker gets "error": null).
    for worker in body["workers"]:
        for name in ("system_url", "admin_base_url", "model", "world_size", "error"):
            worker.setdefault(name, None)
    return body


def _weight_transfer_backend(body: Body) -> Body:
    kept = []
    for worker in body["workers"]:
        if "error" in worker:
            kept.append(worker)
            continue
        if "model" not in worker:  # the fork filters out workers without a model
            continue
        worker.pop("admin_base_url", None)
        worker["weight_transfer_backend"] = "nccl"
        kept.append(worker)
    body["workers"] = kept
    return body


def _smg(body: Body) -> Body:
    return smg_body(body)


#: Variant name (as ``prime_rl_dynamo.variants`` names it) -> how that variant shapes a listing.
VARIANT_BODIES: dict[str, Callable[[Body], Body]] = {
    "system-routes": _system_routes,
    "null-optionals": _null_optionals,
    "weight-transfer-backend": _weight_transfer_backend,
    "smg": _smg,
}


def variant_body(name: str, body: Body) -> Body:
    """``body`` as variant ``name`` serves it (a deep copy; the input is left alone)."""
    return VARIANT_BODIES[name](copy.deepcopy(body))
