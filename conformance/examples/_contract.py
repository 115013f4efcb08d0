"""What the example clients share: the suite's calling contract (conformance/client_profile.py)
spelled out once, turning a client body that takes one ClientCall into the contract's callable,
and the ``--client-cmd`` entry point that reads the same arguments from CONFORMANCE_* variables.
"""

from __future__ import annotations

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
