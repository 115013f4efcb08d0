"""Single-requirement mutations: each turns a valid discovery body into one that breaks exactly
one requirement, so a validator can be checked to name exactly it.

Every choice a mutation makes (which worker, which bad value) goes through a ``Chooser``: over a
seeded ``random.Random`` (the reference server's ``break=ID`` fault) or over hypothesis's ``draw``
(``prime_rl_dynamo.suite.strategies.invalid_bodies``), so both break a body the same ways.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from prime_rl_dynamo.wire import U32_MAX, U64_MAX, WorkerId, transport_tcp, worker_entry

__all__ = [
    "MUTATIONS",
    "Chooser",
    "DrawChooser",
    "Mutation",
    "RandomChooser",
    "RepeatedMember",
    "mutate",
    "smg_body",
]

T = TypeVar("T")
Body = dict[str, Any]
Worker = dict[str, Any]


class Chooser(Protocol):
    """Where a mutation's choices come from."""

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options``."""
        ...

    def integer(self, low: int, high: int) -> int:
        """An integer in ``[low, high]``."""
        ...

    def sample(self, population: Sequence[T], k: int) -> list[T]:
        """``k`` distinct members of ``population``."""
        ...


class RandomChooser:
    """Choices from a seeded ``random.Random``: the same seed, the same mutation."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def choice(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def sample(self, population: Sequence[T], k: int) -> list[T]:
        return self.rng.sample(list(population), k)


class DrawChooser:
    """Choices drawn inside a hypothesis test (``@st.composite``'s ``draw``), so they shrink."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st  # the conformance extra; only this adapter needs it

        self.draw = draw
        self._st = st

    def choice(self, options: Sequence[T]) -> T:
        value: T = self.draw(self._st.sampled_from(list(options)))
        return value

    def integer(self, low: int, high: int) -> int:
        value: int = self.draw(self._st.integers(min_value=low, max_value=high))
        return value

    def sample(self, population: Sequence[T], k: int) -> list[T]:
        drawn: list[T] = self.draw(self._st.permutations(list(population)))
        return drawn[:k]


@dataclass(frozen=True, slots=True)
class Mutation:
    """How to break one requirement, and how many breakable workers it needs."""

    requirement: str
    #: Healthy workers with an admin URL and two routes the body must have (synthetic ones are
    #: added when it has fewer, so every mutation has something to break).
    workers: int
    apply: Callable[[Body, Chooser], Any]


class RepeatedMember(dict[str, Any]):
    """A JSON object that serialises one member twice: ``name: first`` before its own members
    (BODY-6). ``json.dumps`` asks a dict subclass for ``items()``, so the bytes carry both."""

    def __init__(self, members: Body, name: str, first: Any) -> None:
        super().__init__(members)
        self._first = (name, first)

    def items(self) -> Any:
        return [self._first, *super().items()]


def mutate(requirement: str, body: Body, chooser: Chooser) -> Any:
    """A deep copy of the valid ``body`` broken in exactly ``requirement`` (KeyError when no
    mutation breaks it; MUTATIONS lists those that do)."""
    return MUTATIONS[requirement].apply(copy.deepcopy(body), chooser)


# --- choosing what to break ---------------------------------------------------------------------


def _breakable(worker: Worker) -> bool:
    return "error" not in worker and "admin_base_url" in worker and len(worker["routes"]) >= 2


def _resort(body: Body) -> Body:
    body["workers"].sort(key=WorkerId.from_entry)
    return body


def _targets(body: Body, chooser: Chooser, need: int = 1) -> list[int]:
    """Indices of ``need`` breakable workers, chosen; synthetic ones are added first if too few."""
    serial = 0
    while True:
        found = [i for i, w in enumerate(body["workers"]) if _breakable(w)]
        if len(found) >= need:
            return sorted(chooser.sample(found, need))
        serial += 1
        worker = WorkerId(
            body["namespace"], f"synthetic{serial}", "rl", (1 << 62) + chooser.integer(0, 1 << 40)
        )
        body["workers"].append(
            worker_entry(
                worker,
                transport=transport_tcp(worker, 40000 + serial),
                admin_base_url=f"http://127.0.0.1:{40000 + serial}/synthetic{serial}/admin",
                routes=("pause_generation", "resume_generation"),
                world_size=1,
            )
        )
        _resort(body)


def _target(body: Body, chooser: Chooser) -> Worker:
    worker: Worker = body["workers"][_targets(body, chooser)[0]]
    return worker


def _put_before(worker: Worker, before: str, key: str, value: Any) -> None:
    """Set ``key`` just before ``before``, so the worker keeps Dynamo's key order."""
    items = [(k, v) for k, v in worker.items() if k != key]
    worker.clear()
    for k, v in items:
        if k == before:
            worker[key] = value
        worker[k] = v
    worker.setdefault(key, value)


# --- the body ----------------------------------------------------------------------------------


def _body_1(b: Body, c: Chooser) -> Any:
    return c.choice([b["workers"], "workers", None, 1])  # not an object at all


def _body_2(b: Body, c: Chooser) -> Any:
    b["protocol_version"] = c.choice(["1", 2, 0, 1.5, True])
    return b


def _body_3(b: Body, c: Chooser) -> Any:
    b["namespace"] = c.choice([1, None, ["dynamo"], {"name": "dynamo"}])
    return b


def _body_4(b: Body, c: Chooser) -> Any:
    b["workers"] = c.choice([{str(i): w for i, w in enumerate(b["workers"])}, None])
    return b


def _body_6(b: Body, c: Chooser) -> Any:
    # protocol_version written twice: an unsupported 2 first, then the 1 every parser keeps.
    return RepeatedMember(b, "protocol_version", 2)


def smg_body(body: Body) -> dict[str, Any]:
    """The same fleet in the SMG gateway's shape (another dialect at the same path)."""
    entries = []
    for index, worker in enumerate(w for w in body["workers"] if "error" not in w):
        base = worker.get("admin_base_url") or worker.get("system_url") or "http://127.0.0.1:1"
        base = base.rstrip("/").removesuffix("/admin")
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


def _dialect_1(b: Body, c: Chooser) -> Any:
    return smg_body(b)


# --- one worker --------------------------------------------------------------------------------


def _worker_1(b: Body, c: Chooser) -> Any:
    _target(b, c)["endpoint"] = ""
    return b


def _worker_2(b: Body, c: Chooser) -> Any:
    value = c.choice([-1, U64_MAX + 1, "12345", 1.5])
    _target(b, c)["instance_id"] = value
    # An out-of-range integer still sorts (LIST-1 must hold); a non-integer is left in place,
    # as the validator does not order fields the schema refused.
    return _resort(b) if isinstance(value, int) else b


def _worker_3(b: Body, c: Chooser) -> Any:
    w = _target(b, c)
    address = next(iter(w["transport"].values()))
    w["transport"] = c.choice([{}, {"tcp": address, "http": address}, {"tcp": 1}, {"udp": address}])
    return b


def _worker_4(b: Body, c: Chooser) -> Any:
    w = _target(b, c)
    if c.choice(["missing", "http"]) == "missing":
        del w["request_plane_url"]
    else:
        w["request_plane_url"] = f"http://{w['namespace']}/{w['component']}"
    return b


def _worker_5(b: Body, c: Chooser) -> Any:
    w = _target(b, c)
    how = c.choice(["missing", "repeated", "empty"])
    if how == "missing":
        del w["routes"]
    elif how == "repeated":
        w["routes"] = [w["routes"][0], w["routes"][0]]
    else:
        w["routes"] = [""]
    return b


def _worker_6(b: Body, c: Chooser) -> Any:
    # null instead of omitted, in the key's own place
    w = _target(b, c)
    key = c.choice(["model", "system_url"])
    _put_before(w, "routes" if key == "model" else "admin_base_url", key, None)
    return b


def _worker_7(b: Body, c: Chooser) -> Any:
    bad = c.choice(["127.0.0.1:9000", "ftp://127.0.0.1:9000", "/relative"])
    _put_before(_target(b, c), "admin_base_url", "system_url", bad)
    return b


def _worker_8(b: Body, c: Chooser) -> Any:
    w = _target(b, c)
    url = w["admin_base_url"]
    w["admin_base_url"] = c.choice(
        [
            url.replace("http://", "http://user:secret@", 1),
            url + "?token=x",
            url + "#frag",
            url.replace("http://", "ftp://", 1),
        ]
    )
    return b


def _worker_9(b: Body, c: Chooser) -> Any:
    _target(b, c)["world_size"] = c.choice([0, -2, U32_MAX + 1, "4"])
    return b


def _worker_10(b: Body, c: Chooser) -> Any:
    del _target(b, c)["world_size"]  # admin_base_url without world_size
    return b


def _worker_11(b: Body, c: Chooser) -> Any:
    # An error alongside routes, URLs and world_size: an errored worker must carry none of them.
    _target(b, c)["error"] = "engine is dead"
    return b


def _worker_12(b: Body, c: Chooser) -> Any:
    _put_before(_target(b, c), "routes", "model", c.choice(["", 7]))
    return b


# --- the list ----------------------------------------------------------------------------------


def _list_1(b: Body, c: Chooser) -> Any:
    _targets(b, c, need=2)
    workers = b["workers"]
    i = c.integer(0, len(workers) - 2)
    workers[i], workers[i + 1] = workers[i + 1], workers[i]
    return b


def _list_2(b: Body, c: Chooser) -> Any:
    i = _targets(b, c)[0]
    twin = copy.deepcopy(b["workers"][i])
    del twin["admin_base_url"]  # keeps LIST-6 intact: only the identity repeats
    b["workers"].insert(i + 1, twin)
    return b


def _list_3(b: Body, c: Chooser) -> Any:
    w = _target(b, c)
    w["request_plane_url"] = f"dyn://{w['namespace']}.{w['component']}x.{w['endpoint']}"
    return b


def _list_4(b: Body, c: Chooser) -> Any:
    w = _target(b, c)
    w["routes"] = sorted(w["routes"], reverse=True)
    return b


def _list_5(b: Body, c: Chooser) -> Any:
    w = _target(b, c)
    scope: str = b["namespace"]
    # One character in front that differs from the scope's first: never starts with the scope.
    old, new = w["namespace"], ("1" if scope.startswith("0") else "0") + scope
    w["namespace"] = new
    w["request_plane_url"] = WorkerId(new, w["component"], w["endpoint"], 0).request_plane_url
    w["transport"] = {k: v.replace(f"/{old}/", f"/{new}/", 1) for k, v in w["transport"].items()}
    return _resort(b)


def _list_6(b: Body, c: Chooser) -> Any:
    first, second = _targets(b, c, need=2)
    b["workers"][second]["admin_base_url"] = b["workers"][first]["admin_base_url"]
    return b


#: Requirement ID -> its mutation: one per requirement the validator checks on a body.
MUTATIONS: dict[str, Mutation] = {
    m.requirement: m
    for m in (
        Mutation("BODY-1", 0, _body_1),
        Mutation("BODY-2", 0, _body_2),
        Mutation("BODY-3", 0, _body_3),
        Mutation("BODY-4", 0, _body_4),
        Mutation("BODY-6", 0, _body_6),
        Mutation("WORKER-1", 1, _worker_1),
        Mutation("WORKER-2", 1, _worker_2),
        Mutation("WORKER-3", 1, _worker_3),
        Mutation("WORKER-4", 1, _worker_4),
        Mutation("WORKER-5", 1, _worker_5),
        Mutation("WORKER-6", 1, _worker_6),
        Mutation("WORKER-7", 1, _worker_7),
        Mutation("WORKER-8", 1, _worker_8),
        Mutation("WORKER-9", 1, _worker_9),
        Mutation("WORKER-10", 1, _worker_10),
        Mutation("WORKER-11", 1, _worker_11),
        Mutation("WORKER-12", 1, _worker_12),
        Mutation("LIST-1", 2, _list_1),
        Mutation("LIST-2", 1, _list_2),
        Mutation("LIST-3", 1, _list_3),
        Mutation("LIST-4", 1, _list_4),
        Mutation("LIST-5", 1, _list_5),
        Mutation("LIST-6", 2, _list_6),
        Mutation("DIALECT-1", 0, _dialect_1),
    )
}
