"""Prime-RL's orchestrator start-up, on the drop-in pool, behind the suite's calling contract.

The contract's arguments become Prime-RL-shaped config objects (``client.dynamo.discovery_url``,
``api_key_var``, ``headers``, ``headers_from_env``, ``wait_for_ready_timeout``,
``weight_broadcast``); then exactly Prime-RL's order: ``setup_inference_pool`` (``from_config``)
-> ``wait_for_ready`` -> ``init_nccl_broadcast`` or ``init_nixl_broadcast`` -> one
``update_weights`` -> ``stop``. Any refusal raises (non-zero exit for ``--client-cmd``).
"""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace
from typing import Any

from conformance.examples._contract import ClientCall, broadcast_then_update, contract_client

#: The variable the example hands the contract's API key through, as Prime-RL reads keys.
API_KEY_VAR = "PRIME_RL_DYNAMO_EXAMPLE_API_KEY"


def prime_rl_configs(call: ClientCall) -> tuple[Any, Any, dict[str, str]]:
    """(client config, weight_broadcast config, environment) as Prime-RL would hold them."""
    creds = call.credentials
    environ = dict(os.environ)
    environ.pop(API_KEY_VAR, None)  # unset: no key (Prime-RL's convention)
    if creds.api_key is not None:
        environ[API_KEY_VAR] = creds.api_key
    client = SimpleNamespace(
        dynamo=SimpleNamespace(discovery_url=call.discovery_url),
        api_key_var=API_KEY_VAR,
        headers=dict(creds.headers),
        headers_from_env=dict(creds.headers_from_env),
        wait_for_ready_timeout=call.timeout,
    )
    weight_broadcast = SimpleNamespace(
        type="nixl" if call.convention == "nixl" else "nccl",
        inference_world_size=call.inference_world_size,
        timeout=call.timeout,
    )
    return client, weight_broadcast, environ


async def orchestrate(call: ClientCall) -> None:
    """Prime-RL's start-up order on DynamoInferencePool (raises when the pool refuses)."""
    from prime_rl_dynamo.prime_rl import DynamoInferencePool

    client, weight_broadcast, environ = prime_rl_configs(call)
    allowed = call.credentials.allowed_hosts
    # setup_inference_pool(...): the one call a Prime-RL developer changes.
    pool = await DynamoInferencePool.from_config(
        client,
        call.model,
        inference_world_size=weight_broadcast.inference_world_size,
        weight_broadcast=weight_broadcast,
        nccl_convention="vllm-native-nccl" if call.convention == "vllm-native-nccl" else None,
        admin_allowed_hosts=list(allowed) if allowed is not None else None,
        environ=environ,
        poll_interval=0.1,
        request_timeout=min(call.timeout, 10.0),
        admin_timeout=call.timeout,
        # The listing size cap the operator configured (the suite's CONFORMANCE_MAX_BODY_BYTES).
        **({"max_body_bytes": call.max_body_bytes} if call.max_body_bytes else {}),
    )
    try:
        await pool.wait_for_ready(call.model)
        await broadcast_then_update(pool, call, step=1)
    finally:
        await pool.stop()


def _run(call: ClientCall) -> None:
    """Run Prime-RL's start-up order once."""
    asyncio.run(orchestrate(call))


run = contract_client(_run)


def main() -> int:
    """``python -m conformance.examples.prime_rl_pool_client`` for --client-cmd (CONFORMANCE_* env).

    Exit 0 after the start-up order; 1 with the refusal on stderr when the pool refuses (its first
    line says what, the lines after it the details a person needs, e.g. a topology diff; no
    traceback); 2 when run outside the profile (a CONFORMANCE_* variable unset).
    """
    import sys

    from conformance.client_profile import arguments_from_env
    from prime_rl_dynamo.errors import PrimeRLDynamoError

    try:
        args, kwargs = arguments_from_env()
    except KeyError as exc:
        print(f"prime_rl_pool_client: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    try:
        run(*args, **kwargs)
        return 0
    except PrimeRLDynamoError as exc:
        diff = getattr(exc, "diff", None)  # TopologyChangedError: what changed, line by line
        text = str(exc) or type(exc).__name__
        if diff and str(diff) not in text:
            text = f"{text}\n{diff}"
        print(f"prime_rl_pool_client: refused: {text}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
