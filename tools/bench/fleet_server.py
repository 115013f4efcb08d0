"""Run a reference fleet in a process of its own, for the discovery benchmark.

The real Dynamo frontend runs outside the measuring process; so does the reference frontend here,
so that its server threads do not share the benchmark's interpreter lock. Usage (internal):
``python -m tools.bench.fleet_server TOPOLOGY_JSON`` prints one JSON line with the URLs, then serves
until its stdin closes or ``--max-seconds`` pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    """Start the fleet, announce it on stdout, serve until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m tools.bench.fleet_server", allow_abbrev=False)
    parser.add_argument("topology", help="topology as a JSON document (topology.v1 format)")
    parser.add_argument("--max-seconds", type=float, default=1800.0)
    args = parser.parse_args(argv)

    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    topology = topology_from_dict(json.loads(args.topology), source="<bench topology>")
    fleet = start_reference_fleet(topology)
    try:
        print(
            json.dumps({"frontend_url": fleet.frontend_url, "discovery_url": fleet.discovery_url}),
            flush=True,
        )
        closed = threading.Event()

        def wait_for_eof() -> None:
            sys.stdin.read()  # the parent closes our stdin (or dies) when it is done
            closed.set()

        threading.Thread(target=wait_for_eof, daemon=True).start()
        # Bounded: a lost parent cannot leave the fleet running for ever.
        closed.wait(timeout=args.max_seconds)
    finally:
        fleet.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
