"""Valid discovery bodies for unit tests, built by the wire module's one worker builder.

Each test states what it needs of its worker (instance id, world size, routes, URLs); the key
order and the transport string are Dynamo 1.6.1's, from ``prime_rl_dynamo.wire``.
"""

from __future__ import annotations

from typing import Any

from prime_rl_dynamo.wire import WORKER_FIELDS, WorkerId, transport_tcp, worker_entry

_ORDER = {name: place for place, name in enumerate(WORKER_FIELDS)}


def worker(instance_id: int = 7, *, port: int = 44065, **fields: Any) -> dict[str, Any]:
    """A healthy ``dynamo.decode.rl`` worker's JSON object on TCP ``port``: an admin URL, two
    routes, world_size 4. ``fields`` replace members exactly as given (a broken value stays
    broken), members keep Dynamo's key order, and a member set to ``...`` is dropped."""
    me = WorkerId("dynamo", "decode", "rl", instance_id)
    entry = worker_entry(
        me,
        transport=transport_tcp(me, port),
        admin_base_url="http://127.0.0.1:9203/engine",
        routes=("pause_generation", "resume_generation"),
        world_size=4,
    )
    entry.update(fields)
    ordered = sorted(entry.items(), key=lambda item: _ORDER.get(item[0], len(_ORDER)))
    return {k: v for k, v in ordered if v is not ...}


def body(*workers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A discovery body of scope ``dynamo`` listing ``workers`` as given; ``fields`` replace members."""
    return {"protocol_version": 1, "namespace": "dynamo", "workers": list(workers), **fields}
