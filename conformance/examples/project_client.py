"""The project's own client (prime_rl_dynamo.client + admin) behind the suite's calling contract.

What Prime-RL would do with this package: wait for a ready snapshot, plan the broadcast, initialise
every engine, then run one weight-update cycle (pause, update_weights, resume).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any


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
    """Discover, plan, init the broadcast and update weights once (raises when it refuses)."""
    asyncio.run(
        _run(
            discovery_url,
            inference_world_size,
            convention,
            credentials,
            model=model,
            master_address=master_address,
            master_port=master_port,
            timeout=timeout,
        )
    )


async def _run(
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
    from prime_rl_dynamo.admin import AdminPool, Credentials
    from prime_rl_dynamo.client import DiscoveryClient

    creds = Credentials(
        api_key=credentials.api_key,
        headers=dict(credentials.headers),
        headers_from_env=dict(credentials.headers_from_env),
        allowed_hosts=credentials.allowed_hosts,
    )
    async with DiscoveryClient(
        discovery_url,
        inference_world_size=inference_world_size,
        model=model,
        timeout=timeout,
        poll_interval=0.1,
        request_timeout=min(timeout, 10.0),
    ) as discovery_client:
        discovery = await discovery_client.wait_ready()
        plan = discovery.plan(convention)
        # Engines outside the allow-list are driven without credentials (the suite's contract).
        async with AdminPool.from_plan(
            plan,
            credentials=creds,
            disallowed="anonymous",
            discovery=discovery_client,
            timeout=timeout,
        ) as pool:
            await pool.init_broadcast(
                host=master_address,
                port=master_port,
                timeout=timeout,
                session_id=uuid.uuid4().hex if convention == "nixl" else None,
            )
            await pool.update_weights(None)


def main() -> int:
    """``python -m conformance.examples.project_client`` for --client-cmd (CONFORMANCE_* env)."""
    from conformance.client_profile import arguments_from_env

    args, kwargs = arguments_from_env()
    run(*args, **kwargs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
