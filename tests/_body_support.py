"""Valid discovery bodies for the validator's tests, built by the wire module's worker entry."""

from __future__ import annotations

from typing import Any

from prime_rl_dynamo._wire import WorkerId, transport_tcp, worker_entry


def worker(instance_id: int = 7, **fields: Any) -> dict[str, Any]:
    """A healthy ``dynamo.decode.rl`` worker's JSON object: an admin URL, two routes, world_size
    4. ``fields`` replace members; a member set to ``...`` is dropped."""
    me = WorkerId("dynamo", "decode", "rl", instance_id)
    entry = worker_entry(
        me,
        transport=transport_tcp(me, 44065),
        admin_base_url="http://127.0.0.1:9203/engine",
        routes=("pause_generation", "resume_generation"),
        world_size=4,
    )
    entry.update(fields)
    return {k: v for k, v in entry.items() if v is not ...}


def body(*workers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A discovery body of scope ``dynamo`` listing ``workers`` as given; ``fields`` replace members."""
    return {"protocol_version": 1, "namespace": "dynamo", "workers": list(workers), **fields}
