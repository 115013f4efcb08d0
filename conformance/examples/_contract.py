"""What the example clients share: turning a client body that takes one
:class:`~conformance.client_call.ClientCall` into the calling contract's callable (which writes
the structured result of a refusal), the ``--client-cmd`` entry point reading the same call from
the CONFORMANCE_* variables, and the pool surface's steps after readiness (broadcast init, one
weight update).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable
from typing import Any

from conformance.client_call import ClientCall, Credentials, write_result

__all__ = [
    "ClientCall",
    "ClientFunction",
    "broadcast_then_update",
    "command_main",
    "contract_client",
    "result_of",
]

ClientFunction = Callable[..., None]


def result_of(exc: BaseException, call: ClientCall) -> dict[str, Any] | None:
    """The structured result of a refusal, from the exception's own fields (never its text):
    ``requirement`` (prime_rl_dynamo's errors and the spec client's carry one), what a deadline
    lacked (``world_size_sum`` of the last snapshot against ``inference_world_size``) and any
    ``result`` mapping the exception carries."""
    requirement = getattr(exc, "requirement", None)
    if not isinstance(requirement, str):
        return None
    found: dict[str, Any] = dict(getattr(exc, "result", None) or {})
    last = getattr(exc, "last", None)  # NotReadyError: the last pending snapshot's Discovery
    if last is not None and hasattr(last, "world_size_sum"):
        found.setdefault("world_size_sum", last.world_size_sum)
        found.setdefault("inference_world_size", call.inference_world_size)
    return {"requirement": requirement, **found}


def contract_client(body: Callable[[ClientCall], object]) -> ClientFunction:
    """The calling contract's function, running ``body`` with its arguments as a ClientCall; a
    refusal's result goes to CONFORMANCE_RESULT_FILE unless the body wrote one itself."""

    def run(
        discovery_url: str,
        inference_world_size: int,
        convention: str,
        credentials: Credentials,
        *,
        model: str | None,
        master_address: str,
        master_port: int,
        timeout: float,
    ) -> None:
        call = ClientCall(
            discovery_url,
            inference_world_size,
            convention,
            credentials,
            model,
            master_address,
            master_port,
            timeout,
        ).with_side_env()
        try:
            body(call)
        except Exception as exc:
            result = result_of(exc, call)
            path = call.result_file
            if result is not None and path and not os.path.exists(path):
                write_result(result.pop("requirement"), {"CONFORMANCE_RESULT_FILE": path}, **result)
            raise

    # Not functools.wraps: inspect.signature would then show the body's, not the contract's.
    run.__module__, run.__doc__ = body.__module__, body.__doc__
    return run


def command_main(run: ClientFunction) -> int:
    """Run a contract function with the CONFORMANCE_* environment of --client-cmd; exit code 0."""
    args, kwargs = ClientCall.from_env().arguments()
    run(*args, **kwargs)
    return 0


async def broadcast_then_update(pool: Any, call: ClientCall, **update: Any) -> None:
    """On a ready pool: the call's broadcast group (NIXL for the nixl convention, else NCCL) at its
    master address and port, then one ``update_weights`` from a fresh, empty directory
    (``update``: its keywords)."""
    address, port, timeout = call.master_address, call.master_port, call.timeout
    if call.convention == "nixl":
        await pool.init_nixl_broadcast(
            address, port, timeout, call.inference_world_size, uuid.uuid4().hex
        )
    else:
        await pool.init_nccl_broadcast(address, port, timeout, call.inference_world_size)
    with tempfile.TemporaryDirectory(prefix="conformance-weights-") as weight_dir:
        await pool.update_weights(weight_dir, **update)
