"""The project's own client (prime_rl_dynamo.client + admin) behind the suite's calling contract.

What Prime-RL would do with this package: wait for a ready snapshot, plan the broadcast, initialise
every engine, then run one weight-update cycle (pause, update_weights, resume).
"""

from __future__ import annotations

import asyncio
import uuid

from conformance.examples._contract import ClientCall, command_main, contract_client


def _run(call: ClientCall) -> None:
    """Discover, plan, init the broadcast and update weights once (raises when it refuses)."""
    asyncio.run(_drive(call))


async def _drive(call: ClientCall) -> None:
    from prime_rl_dynamo.admin import AdminPool, Credentials
    from prime_rl_dynamo.client import (
        DEFAULT_MAX_BODY_BYTES,
        DiscoveryClient,
        PollingPolicy,
        ReadinessPolicy,
    )

    creds = Credentials(
        api_key=call.credentials.api_key,
        headers=dict(call.credentials.headers),
        headers_from_env=dict(call.credentials.headers_from_env),
        allowed_hosts=call.credentials.allowed_hosts,
    )
    async with DiscoveryClient(
        call.discovery_url,
        ReadinessPolicy(call.inference_world_size, model=call.model),
        PollingPolicy(
            timeout=call.timeout,
            poll_interval=call.poll_interval or 0.1,
            request_timeout=min(call.timeout, 10.0),
        ),
        max_body_bytes=call.max_body_bytes or DEFAULT_MAX_BODY_BYTES,
    ) as discovery_client:
        discovery = await discovery_client.wait_ready()
        plan = discovery.plan(call.convention)
        # Engines outside the allow-list are driven without credentials (the suite's contract).
        async with AdminPool.from_plan(
            plan,
            credentials=creds,
            disallowed="anonymous",
            discovery=discovery_client,
            timeout=call.timeout,
        ) as pool:
            await pool.init_broadcast(
                host=call.master_address,
                port=call.master_port,
                timeout=call.timeout,
                session_id=uuid.uuid4().hex if call.convention == "nixl" else None,
            )
            await pool.update_weights(None)


run = contract_client(_run)


def main() -> int:
    """``python -m conformance.examples.project_client`` for --client-cmd (CONFORMANCE_* env)."""
    return command_main(run)


if __name__ == "__main__":
    raise SystemExit(main())
