"""What the example clients share: the suite's calling contract (conformance/client_runs.py)
spelled out once, turning a client body that takes one ClientCall into the contract's callable,
the ``--client-cmd`` entry point that reads the same arguments from CONFORMANCE_* variables, and
the pool surface's steps after readiness (broadcast init, one weight update).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ClientFunction = Callable[..., None]


@dataclass(frozen=True)
class ClientCall:
    """The arguments of one call of a client under test."""

    discovery_url: str
    inference_world_size: int
    convention: str
    credentials: Any  # conformance.client_profile.Credentials (or anything with its attributes)
    model: str | None
    master_address: str
    master_port: int
    timeout: float


def contract_client(body: Callable[[ClientCall], object]) -> ClientFunction:
    """The calling contract's function, running ``body`` with its arguments as a ClientCall."""

    def run(
        discovery_url: str,
        inference_world_size: int,
        convention: str,
        credentials: Any,
        *,
        model: str | None,
        master_address: str,
        master_port: int,
        timeout: float,
    ) -> None:
        # The fields are the contract's parameters, in order.
        call = ClientCall(
            discovery_url,
            inference_world_size,
            convention,
            credentials,
            model,
            master_address,
            master_port,
            timeout,
        )
        body(call)

    # Not functools.wraps: inspect.signature would then show the body's, not the contract's.
    run.__module__, run.__doc__ = body.__module__, body.__doc__
    return run


def command_main(run: ClientFunction) -> int:
    """Run a contract function with the CONFORMANCE_* environment of --client-cmd; exit code 0."""
    from conformance.client_profile import arguments_from_env

    args, kwargs = arguments_from_env()
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
