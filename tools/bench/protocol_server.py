"""A reference RL listener over N synthetic engines, in a process of its own, for the v1/v2 bench.

Only the listener runs (engines are listed, not served: the benchmark never calls them), so 4,096
engines cost no sockets. Usage (internal): ``python -m tools.bench.protocol_server N`` prints one JSON
line ``{"url", "pid"}`` and then reads commands on stdin, one per line: ``kill I``, ``revive I``,
``resize I WORLD_SIZE``; each is acknowledged with ``ok``. EOF stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    """Serve the listener until stdin closes (bounded by --max-seconds)."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench.protocol_server", allow_abbrev=False
    )
    parser.add_argument("engines", type=int)
    parser.add_argument("--max-seconds", type=float, default=900.0)
    args = parser.parse_args(argv)

    import uvicorn

    from prime_rl_dynamo.suite.reference.frontend import Frontend
    from prime_rl_dynamo.suite.reference.state import FleetState, ReferenceEngine
    from prime_rl_dynamo.topology import topology_from_dict
    from tools.bench.discovery import fleet_topology
    from tools.bench.protocol import ENGINE_WORLD_SIZE

    topology = topology_from_dict(fleet_topology(args.engines, ENGINE_WORLD_SIZE), source="<bench>")
    engines = [
        ReferenceEngine(spec=spec, port=20000 + i, host="127.0.0.1")
        for i, spec in enumerate(topology.engines())
    ]
    state = FleetState(engines)
    app = Frontend(state, namespace=topology.namespace)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # Listening before the URL is announced: connections queue in the backlog until uvicorn's
    # loop (started in a thread below) accepts them, instead of being refused in between.
    sock.listen(2048)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    print(json.dumps({"url": f"http://127.0.0.1:{port}", "pid": os.getpid()}), flush=True)

    done = threading.Event()

    def commands() -> None:
        for line in sys.stdin:
            parts = line.split()
            if not parts:
                continue
            engine = engines[int(parts[1])]
            with state.lock:
                if parts[0] == "kill":
                    engine.alive = False
                elif parts[0] == "revive":
                    engine.alive = True
                elif parts[0] == "resize":
                    engine.world_size = int(parts[2])
            print("ok", flush=True)
        done.set()

    threading.Thread(target=commands, daemon=True).start()
    done.wait(timeout=args.max_seconds)
    server.should_exit = True
    thread.join(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
