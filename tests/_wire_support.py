"""Discovery bodies for unit tests, built with the wire module's one worker builder.

Each test states what it needs of its worker (instance id, world size, routes, admin URL); the key
order and the transport string are Dynamo 1.6.1's, from ``prime_rl_dynamo._wire``.
"""

from __future__ import annotations

from typing import Any

from prime_rl_dynamo._wire import WorkerId, transport_tcp, worker_entry

#: What an engine of the samples advertises: pausing and resuming generation.
PAUSE_RESUME = ("pause_generation", "resume_generation")


def decode_worker(
    instance_id: int = 7,
    *,
    world_size: int = 1,
    routes: tuple[str, ...] = (),
    admin_base_url: str | None = "http://127.0.0.1:9203",
    port: int = 1,
    **fields: Any,
) -> dict[str, Any]:
    """The worker ``dynamo.decode.rl#<instance_id>`` listening on TCP ``port``; ``fields``
    (system_url, model, error, ...) go to ``worker_entry``."""
    worker = WorkerId("dynamo", "decode", "rl", instance_id)
    return worker_entry(
        worker,
        transport=transport_tcp(worker, port),
        routes=routes,
        admin_base_url=admin_base_url,
        world_size=world_size,
        **fields,
    )


def listing(*workers: dict[str, Any], namespace: str = "dynamo") -> dict[str, Any]:
    """A protocol_version 1 body of ``workers``, in the order given."""
    return {"protocol_version": 1, "namespace": namespace, "workers": list(workers)}
