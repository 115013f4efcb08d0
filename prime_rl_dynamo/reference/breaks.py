"""Bodies that break exactly one requirement of schema/requirements.v1.json (fault ``break=ID``).

Each entry of ``BREAKS`` takes a valid discovery body and a seeded ``random.Random`` and returns
what the frontend answers instead: a status and a JSON value that violates that one requirement
and nothing else, so a validator can be checked to name exactly it.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["BREAKS", "BrokenBody", "RepeatedMember", "break_body", "smg_body"]


@dataclass(frozen=True, slots=True)
class BrokenBody:
    """What the frontend sends under a ``break=ID`` fault."""

    status: int
    body: Any


Body = dict[str, Any]
Worker = dict[str, Any]


class RepeatedMember(dict[str, Any]):
    """A JSON object that serialises one member twice: ``name: first`` before its own members
    (BODY-6). ``json.dumps`` asks a dict subclass for ``items()``, so the bytes carry both."""

    def __init__(self, members: Body, name: str, first: Any) -> None:
        super().__init__(members)
        self._first = (name, first)

    def items(self) -> Any:
        return [self._first, *super().items()]


def _synthetic_worker(namespace: str, component: str, instance_id: int, port: int) -> Worker:
    return {
        "namespace": namespace,
        "component": component,
        "endpoint": "rl",
        "instance_id": instance_id,
        "transport": {"tcp": f"127.0.0.1:{port}/{instance_id:016x}/{namespace}/{component}/rl"},
        "request_plane_url": f"dyn://{namespace}.{component}.rl",
        "admin_base_url": f"http://127.0.0.1:{port}/admin",
        "routes": ["pause_generation", "resume_generation"],
        "world_size": 1,
    }


def _sort_key(worker: Worker) -> tuple[str, str, str, int]:
    iid = worker.get("instance_id")
    return (
        str(worker.get("namespace", "")),
        str(worker.get("component", "")),
        str(worker.get("endpoint", "")),
        iid if isinstance(iid, int) else 0,
    )


def _resort(body: Body) -> Body:
    body["workers"] = sorted(body["workers"], key=_sort_key)
    return body


def _healthy(body: Body, rng: random.Random, need: int = 1) -> list[int]:
    """Indices of ``need`` healthy workers with an admin URL and two routes, chosen by the seed.

    When the listing has too few (an empty fleet, error workers), synthetic healthy workers are
    added first, so every break has something to break.
    """

    def candidates() -> list[int]:
        return [
            i
            for i, w in enumerate(body["workers"])
            if "error" not in w and "admin_base_url" in w and len(w.get("routes", ())) >= 2
        ]

    found = candidates()
    serial = 0
    while len(found) < need:
        serial += 1
        iid = (1 << 62) + rng.randrange(1 << 40)
        body["workers"].append(
            _synthetic_worker(body["namespace"], f"synthetic{serial}", iid, 40000 + serial)
        )
        _resort(body)
        found = candidates()
    picked = sorted(rng.sample(found, need))
    return picked


def _target(body: Body, rng: random.Random) -> Worker:
    worker: Worker = body["workers"][_healthy(body, rng)[0]]
    return worker


def _body_1(body: Body, rng: random.Random) -> BrokenBody:
    # A bare array of workers: not an object at all.
    return BrokenBody(200, body["workers"])


def _body_6(body: Body, rng: random.Random) -> BrokenBody:
    # protocol_version written twice: an unsupported 2 first, then the 1 every parser keeps.
    return BrokenBody(200, RepeatedMember(body, "protocol_version", 2))


def _body_2(body: Body, rng: random.Random) -> BrokenBody:
    body["protocol_version"] = "1"
    return BrokenBody(200, body)


def _body_3(body: Body, rng: random.Random) -> BrokenBody:
    body["namespace"] = 1
    return BrokenBody(200, body)


def _body_4(body: Body, rng: random.Random) -> BrokenBody:
    body["workers"] = {str(i): w for i, w in enumerate(body["workers"])}
    return BrokenBody(200, body)


def _worker_1(body: Body, rng: random.Random) -> BrokenBody:
    _target(body, rng)["endpoint"] = ""
    return BrokenBody(200, body)


def _worker_2(body: Body, rng: random.Random) -> BrokenBody:
    _target(body, rng)["instance_id"] = -1
    return BrokenBody(200, _resort(body))


def _worker_3(body: Body, rng: random.Random) -> BrokenBody:
    worker = _target(body, rng)
    worker["transport"] = {}
    return BrokenBody(200, body)


def _worker_4(body: Body, rng: random.Random) -> BrokenBody:
    del _target(body, rng)["request_plane_url"]
    return BrokenBody(200, body)


def _worker_5(body: Body, rng: random.Random) -> BrokenBody:
    del _target(body, rng)["routes"]
    return BrokenBody(200, body)


def _worker_6(body: Body, rng: random.Random) -> BrokenBody:
    worker = _target(body, rng)
    # null instead of omitted: rebuild to keep Dynamo's key order with "model" in its place.
    rebuilt: Worker = {}
    for key, value in worker.items():
        if key == "routes":
            rebuilt["model"] = None
        if key != "model":
            rebuilt[key] = value
    worker.clear()
    worker.update(rebuilt)
    return BrokenBody(200, body)


def _worker_7(body: Body, rng: random.Random) -> BrokenBody:
    worker = _target(body, rng)
    port = worker["admin_base_url"].rsplit(":", 1)[-1].split("/", 1)[0]
    rebuilt: Worker = {}
    for key, value in worker.items():
        if key == "admin_base_url":
            rebuilt["system_url"] = f"127.0.0.1:{port}"  # not an absolute http(s) URL
        if key != "system_url":
            rebuilt[key] = value
    worker.clear()
    worker.update(rebuilt)
    return BrokenBody(200, body)


def _worker_8(body: Body, rng: random.Random) -> BrokenBody:
    worker = _target(body, rng)
    worker["admin_base_url"] = worker["admin_base_url"].replace("http://", "http://user:secret@", 1)
    return BrokenBody(200, body)


def _worker_9(body: Body, rng: random.Random) -> BrokenBody:
    _target(body, rng)["world_size"] = 0
    return BrokenBody(200, body)


def _worker_10(body: Body, rng: random.Random) -> BrokenBody:
    del _target(body, rng)["world_size"]
    return BrokenBody(200, body)


def _worker_11(body: Body, rng: random.Random) -> BrokenBody:
    # An error alongside routes, URLs and world_size: an errored worker must carry none of them.
    _target(body, rng)["error"] = "engine is dead"
    return BrokenBody(200, body)


def _worker_12(body: Body, rng: random.Random) -> BrokenBody:
    worker = _target(body, rng)
    rebuilt: Worker = {}
    for key, value in worker.items():
        if key == "routes":
            rebuilt["model"] = ""
        if key != "model":
            rebuilt[key] = value
    worker.clear()
    worker.update(rebuilt)
    return BrokenBody(200, body)


def _list_1(body: Body, rng: random.Random) -> BrokenBody:
    _healthy(body, rng, need=2)
    workers = body["workers"]
    i = rng.randrange(len(workers) - 1)
    workers[i], workers[i + 1] = workers[i + 1], workers[i]
    return BrokenBody(200, body)


def _list_2(body: Body, rng: random.Random) -> BrokenBody:
    index = _healthy(body, rng)[0]
    duplicate = copy.deepcopy(body["workers"][index])
    # Without admin_base_url the copy does not also break LIST-6 (world_size alone is allowed).
    del duplicate["admin_base_url"]
    body["workers"].insert(index + 1, duplicate)
    return BrokenBody(200, body)


def _list_3(body: Body, rng: random.Random) -> BrokenBody:
    worker = _target(body, rng)
    worker["request_plane_url"] = (
        f"dyn://{worker['namespace']}.{worker['component']}x.{worker['endpoint']}"
    )
    return BrokenBody(200, body)


def _list_4(body: Body, rng: random.Random) -> BrokenBody:
    worker = _target(body, rng)
    worker["routes"] = sorted(worker["routes"], reverse=True)
    return BrokenBody(200, body)


def _list_5(body: Body, rng: random.Random) -> BrokenBody:
    worker = _target(body, rng)
    namespace = f"x{body['namespace']}"  # neither equal to the scope nor starting with it
    old = worker["namespace"]
    worker["namespace"] = namespace
    worker["request_plane_url"] = f"dyn://{namespace}.{worker['component']}.{worker['endpoint']}"
    worker["transport"] = {
        kind: value.replace(f"/{old}/", f"/{namespace}/", 1)
        for kind, value in worker["transport"].items()
    }
    return BrokenBody(200, _resort(body))


def _list_6(body: Body, rng: random.Random) -> BrokenBody:
    first, second = _healthy(body, rng, need=2)
    body["workers"][second]["admin_base_url"] = body["workers"][first]["admin_base_url"]
    return BrokenBody(200, body)


def _http_5(body: Body, rng: random.Random) -> BrokenBody:
    # A whole-listing failure without its message.
    return BrokenBody(500, {"error": "discovery_failed"})


def smg_body(body: Body) -> dict[str, Any]:
    """The same fleet in the SMG gateway's shape (another dialect at the same path)."""
    entries = []
    for index, worker in enumerate(w for w in body["workers"] if "error" not in w):
        base = worker.get("admin_base_url") or worker.get("system_url") or "http://127.0.0.1:1"
        if base.endswith("/admin"):
            base = base[: -len("/admin")]
        entries.append(
            {
                "id": f"{worker['instance_id']:032x}",
                "url": base,
                "base_url": base,
                "engine": "vllm",
                "engine_version": None,
                "model_id": worker.get("model") or "unknown",
                "worker_type": "regular",
                "connection_mode": "http",
                "control_url": base,
                "tp_size": worker.get("world_size"),
                "dp_size": None,
                "pp_size": None,
                "dp_ranks": 1,
                "role": worker["component"],
                "health": "ready",
                "weight_version": None,
                "labels": {"index": str(index)},
                "capabilities": {
                    "source": "static",
                    "pause_modes": ["abort", "wait", "keep"],
                    "update_from": ["disk", "distributed"],
                    "abort": False,
                    "flush_cache": False,
                    "sleep_wake": True,
                    "reports_weight_version": False,
                },
            }
        )
    return {"protocol_version": 1, "workers": entries, "total": len(entries)}


def _dialect_1(body: Body, rng: random.Random) -> BrokenBody:
    return BrokenBody(200, smg_body(body))


#: Requirement ID -> how to break it. One switch per requirement the validator checks on a body.
BREAKS: dict[str, Callable[[Body, random.Random], BrokenBody]] = {
    "HTTP-5": _http_5,
    "BODY-1": _body_1,
    "BODY-2": _body_2,
    "BODY-3": _body_3,
    "BODY-4": _body_4,
    "BODY-6": _body_6,
    "WORKER-1": _worker_1,
    "WORKER-2": _worker_2,
    "WORKER-3": _worker_3,
    "WORKER-4": _worker_4,
    "WORKER-5": _worker_5,
    "WORKER-6": _worker_6,
    "WORKER-7": _worker_7,
    "WORKER-8": _worker_8,
    "WORKER-9": _worker_9,
    "WORKER-10": _worker_10,
    "WORKER-11": _worker_11,
    "WORKER-12": _worker_12,
    "LIST-1": _list_1,
    "LIST-2": _list_2,
    "LIST-3": _list_3,
    "LIST-4": _list_4,
    "LIST-5": _list_5,
    "LIST-6": _list_6,
    "DIALECT-1": _dialect_1,
}


def break_body(requirement: str, body: Body, seed: int) -> BrokenBody:
    """Break ``requirement`` in a deep copy of ``body``; the same seed gives the same bytes."""
    rng = random.Random(f"{seed}:{requirement}")
    return BREAKS[requirement](copy.deepcopy(body), rng)
