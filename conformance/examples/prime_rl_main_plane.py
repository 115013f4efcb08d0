"""The package's drop-in for Prime-RL main (``prime_rl_dynamo.prime_rl_main.DynamoAdminPlane``),
driven in main's orchestrator call order, behind the suite's calling contract.

The contract's arguments become main's config objects as its users write them
(``client.dynamo = {enabled, discovery_url}``, ``api_key_var``, ``headers``,
``headers_from_env``, ``wait_for_ready_timeout`` in whole seconds; the package's optional
``admin_allowed_hosts``); then exactly main's order (``prime_rl_main.MAIN_STARTUP`` and
``MAIN_RECEIVERS``): ``setup_admin_plane`` -> ``wait_for_ready(model)`` -> the transport's
receiver (``nccl``: ``initialize_nccl``, then ``update_weights`` acknowledging in ``on_paused``;
``nixl``: ``init_nixl_broadcast`` as the patch leaves it, the acknowledgement, then
``update_weights(None)``) -> ``aclose``. The plane polls at its own interval (main's fixed second),
so this is judged at Prime-RL's real settings; the ``vllm-native-nccl`` convention is not main's
(its orchestrator has no such transport) and is refused. Any refusal raises (non-zero exit for
``--client-cmd``).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conformance.examples._contract import ClientCall, command_main, contract_client

__all__ = ["API_KEY_VAR", "TRANSPORTS", "main", "main_client_config", "run"]

#: The variable the example hands the contract's API key through, as main reads keys.
API_KEY_VAR = "PRIME_RL_MAIN_PLANE_EXAMPLE_API_KEY"
#: The contract's convention -> main's weight transport.
TRANSPORTS = {"prime-nccl": "nccl", "nixl": "nixl"}


def main_client_config(call: ClientCall) -> tuple[Any, dict[str, str]]:
    """(main's ``ClientConfig`` with ``dynamo`` enabled, the environment) for ``call``."""
    creds = call.credentials
    environ = dict(os.environ)
    environ.pop(API_KEY_VAR, None)  # unset: no key
    if creds.api_key is not None:
        environ[API_KEY_VAR] = creds.api_key
    allowed = creds.allowed_hosts
    client = SimpleNamespace(
        base_url=None,
        dynamo=SimpleNamespace(
            enabled=True,
            discovery_url=call.discovery_url,
            # The package's optional extra (main's DynamoConfig has no such field).
            admin_allowed_hosts=list(allowed) if allowed is not None else None,
        ),
        api_key_var=API_KEY_VAR,
        headers=dict(creds.headers),
        headers_from_env=dict(creds.headers_from_env),
        wait_for_ready_timeout=max(1, int(call.timeout)),  # main's field is an int
    )
    return client, environ


async def orchestrate(call: ClientCall, poll_interval: float | None = None) -> None:
    """Main's start-up and one step of the convention's receiver on the package's plane;
    ``poll_interval``: None polls at the plane's own interval, as main does."""
    from prime_rl_dynamo.errors import ConfigError
    from prime_rl_dynamo.prime_rl_main import MAIN_RECEIVERS, MAIN_STARTUP, DynamoAdminPlane

    transport = TRANSPORTS.get(call.convention)
    if transport is None:
        raise ConfigError(
            f"Prime-RL main has no {call.convention} transport: its receivers are "
            f"{sorted(MAIN_RECEIVERS)}"
        )
    if call.model is None:
        raise ConfigError("Prime-RL main always names its model (config.model.name)")
    receiver = MAIN_RECEIVERS[transport]
    client, environ = main_client_config(call)
    options: dict[str, Any] = {"environ": environ}
    if poll_interval is not None:
        options["poll_interval"] = poll_interval
    plane: Any = None
    for step in MAIN_STARTUP:
        if step == "setup_admin_plane":  # what the patched setup_admin_plane returns
            plane = DynamoAdminPlane(client, call.model, **options)
        else:
            await getattr(plane, step)(call.model)
    try:
        timeout = max(1, int(call.timeout))
        rendezvous = {
            "host": call.master_address,
            "port": call.master_port,
            "timeout": timeout,
            "inference_world_size": call.inference_world_size,
        }
        if receiver.initialize == "initialize_nccl":
            await plane.initialize_nccl(**rendezvous)
        elif receiver.initialize == "init_nixl_broadcast":
            # Main's module function as the patch leaves it: the plane's own NIXL init.
            await plane.initialize_nixl(**rendezvous, session_id=uuid.uuid4().hex)
        with tempfile.TemporaryDirectory(prefix="conformance-weights-") as weight_dir:
            acks: list[Path] = []

            def on_paused() -> None:  # the receiver's .receiver_ready
                marker = Path(weight_dir) / ".receiver_ready"
                marker.touch()
                acks.append(marker)

            if "ack" in receiver.receive:
                on_paused()
            await plane.update_weights(
                weight_dir if receiver.weight_dir else None,
                transport=transport,
                step=1,
                on_paused=on_paused if receiver.on_paused else None,
                version_uid=uuid.uuid4().hex,
            )
            if len(acks) != 1:
                raise AssertionError(f"the handshake was acknowledged {len(acks)} times, not once")
    finally:
        await plane.aclose()


#: Main's call order once, at Prime-RL's settings (the plane's own poll interval, whole seconds).
run = contract_client(lambda call: asyncio.run(orchestrate(call)))


def main() -> int:
    """``python -m conformance.examples.prime_rl_main_plane`` for --client-cmd."""
    return command_main(run)


if __name__ == "__main__":
    raise SystemExit(main())
