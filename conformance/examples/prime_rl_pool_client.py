"""Prime-RL's orchestrator start-up, on the drop-in pool, behind the suite's calling contract.

The contract's arguments become Prime-RL-shaped config objects (``client.dynamo.discovery_url``,
``client.dynamo.nccl_convention``, ``client.dynamo.admin_allowed_hosts``, ``api_key_var``,
``headers``, ``headers_from_env``, ``wait_for_ready_timeout``, ``weight_broadcast``); then exactly
Prime-RL's order: ``setup_inference_pool`` (``from_config``) -> ``wait_for_ready`` ->
``init_nccl_broadcast`` or ``init_nixl_broadcast`` -> one ``update_weights`` -> ``stop``.

Under ``vllm-native-nccl`` the run is Prime-RL's latest generation, both halves: the trainer
(``prime_rl_dynamo.native_nccl``, as the patched trainer runs it) discovers the engines and
initialises each once; the orchestrator's pool only checks; for the step the pool pauses, confirms,
touches ``NCCL_READY``, and waits for the version while the trainer runs start / update / finish and
commits the version; then the pool resumes. Any refusal raises (non-zero exit for
``--client-cmd``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conformance.examples._contract import ClientCall, broadcast_then_update, contract_client

#: The variable the example hands the contract's API key through, as Prime-RL reads keys.
API_KEY_VAR = "PRIME_RL_DYNAMO_EXAMPLE_API_KEY"
#: The deviations conformance/examples/lifecycle_zoo.py runs (None: the faithful order).
BUGS = ("reloads-from-path", "inits-twice")
#: What the trainer's vLLM engine sends as update_info for one step (names, dtypes, shapes).
UPDATE_INFO = {"names": ["lm_head.weight"], "dtype_names": ["bfloat16"], "shapes": [[8, 4]]}


def prime_rl_configs(call: ClientCall) -> tuple[Any, Any, dict[str, str]]:
    """(client config, weight_broadcast config, environment) as Prime-RL would hold them."""
    creds = call.credentials
    environ = dict(os.environ)
    environ.pop(API_KEY_VAR, None)  # unset: no key (Prime-RL's convention)
    if creds.api_key is not None:
        environ[API_KEY_VAR] = creds.api_key
    allowed = call.credentials.allowed_hosts
    convention = "prime-nccl" if call.convention == "nixl" else call.convention
    client = SimpleNamespace(
        # nccl_convention and admin_allowed_hosts: the fields docs/prime-rl/'s patch adds.
        dynamo=SimpleNamespace(
            discovery_url=call.discovery_url,
            nccl_convention=convention,
            admin_allowed_hosts=list(allowed) if allowed is not None else None,
        ),
        api_key_var=API_KEY_VAR,
        headers=dict(creds.headers),
        headers_from_env=dict(creds.headers_from_env),
        # Prime-RL's field is whole seconds (int).
        wait_for_ready_timeout=max(1, int(call.timeout)),
    )
    weight_broadcast = SimpleNamespace(
        type="nixl" if call.convention == "nixl" else "nccl",
        inference_world_size=call.inference_world_size,
        timeout=call.timeout,
    )
    return client, weight_broadcast, environ


def trainer_weight_broadcast(call: ClientCall) -> Any:
    """The trainer's ``weight_broadcast`` config as Prime-RL holds it (type nccl with dynamo)."""
    creds = call.credentials
    allowed = creds.allowed_hosts
    return SimpleNamespace(
        type="nccl",
        host=call.master_address,
        port=call.master_port,
        timeout=call.timeout,
        inference_world_size=call.inference_world_size,
        dynamo=SimpleNamespace(
            discovery_url=call.discovery_url,
            model_name=call.model,
            headers=dict(creds.headers),
            headers_from_env=dict(creds.headers_from_env),
            api_key_var=API_KEY_VAR,
            admin_allowed_hosts=list(allowed) if allowed is not None else None,
        ),
    )


async def _pool(call: ClientCall, poll_interval: float | None = None, **overrides: Any) -> Any:
    """``setup_inference_pool(...)``: the one call a Prime-RL developer changes. It polls at the
    pool's own interval (Prime-RL's config has none) unless ``poll_interval`` is given."""
    from prime_rl_dynamo.prime_rl import DynamoInferencePool

    client, weight_broadcast, environ = prime_rl_configs(call)
    return await DynamoInferencePool.from_config(
        client,
        call.model,
        inference_world_size=weight_broadcast.inference_world_size,
        weight_broadcast=weight_broadcast,
        environ=environ,
        **({"poll_interval": poll_interval} if poll_interval else {}),
        request_timeout=min(call.timeout, 10.0),
        admin_timeout=call.timeout,
        # The listing size cap the operator configured (the suite's CONFORMANCE_MAX_BODY_BYTES).
        **({"max_body_bytes": call.max_body_bytes} if call.max_body_bytes else {}),
        **overrides,
    )


async def _trainer(call: ClientCall, poll_interval: float | None) -> Any:
    """The trainer's start-up: discover the engines and build the native group (nothing sent)."""
    from prime_rl_dynamo.native_nccl import NativeNcclTrainer
    from prime_rl_dynamo.prime_rl import trainer_config_from_prime_rl

    config, address, port = trainer_config_from_prime_rl(trainer_weight_broadcast(call))
    config = dataclasses.replace(
        config,
        poll_interval=poll_interval or config.poll_interval,
        request_timeout=min(call.timeout, 10.0),
    )
    return await NativeNcclTrainer.connect(
        config, master_address=address, master_port=port, environ=prime_rl_configs(call)[2]
    )


async def _trainer_step(trainer: Any, step_dir: Path, step: int, timeout: float) -> None:
    """The trainer's broadcast_weights: wait for NCCL_READY, send, commit the version."""
    deadline = time.monotonic() + timeout
    while not (step_dir / "NCCL_READY").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the orchestrator never touched {step_dir / 'NCCL_READY'}")
        await asyncio.sleep(0.02)
    await trainer.start_weight_update()
    await trainer.update_weights(UPDATE_INFO)
    await trainer.finish_weight_update(str(step))
    await trainer.update_weight_version(str(step))


async def _native(
    call: ClientCall, pool: Any, bug: str | None, poll_interval: float | None
) -> None:
    """Prime-RL's latest generation under vllm-native-nccl: both halves, in its order."""
    address, port, timeout = call.master_address, call.master_port, call.timeout
    trainer = await _trainer(call, poll_interval)
    try:
        await trainer.init_weight_transfer_engine()  # DynamoNCCLWeightBroadcast.__init__
        await pool.init_nccl_broadcast(address, port, timeout, call.inference_world_size)
        if bug == "inits-twice":
            # The orchestrator inits too, as this pool did before the division of work.
            other = await _pool(call, poll_interval, native_nccl_owner="orchestrator")
            try:
                await other.init_nccl_broadcast(address, port, timeout, call.inference_world_size)
            finally:
                await other.stop()
        with tempfile.TemporaryDirectory(prefix="conformance-weights-") as weight_dir:
            step_dir = Path(weight_dir)
            if bug == "reloads-from-path":
                # The engines reload the step's directory instead of receiving it over NCCL.
                await pool.admin.update_weights(str(step_dir))
                return
            # Two processes in Prime-RL: the first failure stops the other half.
            update = asyncio.ensure_future(pool.update_weights(step_dir, step=1, native_nccl=True))
            send = asyncio.ensure_future(_trainer_step(trainer, step_dir, 1, timeout))
            try:
                await asyncio.gather(update, send)
            finally:
                for task in (update, send):
                    task.cancel()
    finally:
        await trainer.aclose()


async def orchestrate(
    call: ClientCall, bug: str | None = None, poll_interval: float | None = None
) -> None:
    """Prime-RL's start-up order on DynamoInferencePool (raises when the pool refuses);
    ``bug``: one of ``BUGS`` (only under vllm-native-nccl; the other conventions stay faithful);
    ``poll_interval``: None polls at the pool's own interval, as Prime-RL does."""
    pool = await _pool(call, poll_interval)
    try:
        await pool.wait_for_ready(call.model)
        if call.convention == "vllm-native-nccl":
            await _native(call, pool, bug, poll_interval)
        else:
            await broadcast_then_update(pool, call, step=1)
    finally:
        await pool.stop()


def _run(call: ClientCall) -> None:
    """Run Prime-RL's start-up order once, at Prime-RL's settings: the pool's own poll interval,
    whole-second timeouts."""
    asyncio.run(orchestrate(call))


run = contract_client(_run)


def main() -> int:
    """``python -m conformance.examples.prime_rl_pool_client`` for --client-cmd (CONFORMANCE_* env).

    Exit 0 after the start-up order; 1 with the refusal on stderr when the pool refuses (its first
    line says what, the lines after it the details a person needs, e.g. a topology diff; no
    traceback); 2 when run outside the profile (a CONFORMANCE_* variable unset).
    """
    import sys

    from conformance.client import arguments_from_env
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
