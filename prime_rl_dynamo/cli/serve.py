"""``prime-rl-dynamo serve``: run the reference RL listener and its engines until interrupted.

Prints where everything listens (frontend, discovery URL, each engine's system and admin URLs, W)
and serves on loopback; ``--fault NAME[=VALUE][:COUNT]`` makes the listener misbehave on purpose.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any


def add_parser(subparsers: Any) -> None:
    """Register ``serve`` and its arguments."""
    parser = subparsers.add_parser(
        "serve",
        help="run the reference RL listener and engines (no Dynamo needed)",
        description="Serve GET /v1/rl/workers and every engine's system and admin servers from a "
        "topology, on loopback, until interrupted (Ctrl-C). Faults: NAME[=VALUE][:COUNT], where "
        ":COUNT limits the fault to the first COUNT listing requests. See docs/reference.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_fault_help(),
    )
    parser.add_argument("--topology", metavar="FILE", help="topology file (default: W=16 fleet)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    parser.add_argument(
        "--port", type=port_number, default=8001, help="RL listener port (0: any free)"
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME[=VALUE][:COUNT]",
        help="fault of the RL listener (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed for ids and faults")
    parser.add_argument("--json", action="store_true", help="print the addresses as JSON")
    parser.add_argument(
        "--record", metavar="FILE", help="also append every request received to FILE (JSON lines)"
    )
    parser.set_defaults(func=run)


def port_number(text: str) -> int:
    """An argparse type: a TCP port to listen on, 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a port number 0 to 65535, found {text!r}"
        ) from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535 (0: any free port); found {port}")
    return port


def _fault_help() -> str:
    from prime_rl_dynamo.reference.faults import FAULTS

    lines = ["faults:"]
    for name, (value, text) in FAULTS.items():
        spelled = name if value is None else f"{name}={value}"
        lines.append(f"  {spelled:<28} {text}")
    lines.append("  any of them with :COUNT       only for the first COUNT listing requests")
    return "\n".join(lines)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Start the fleet, print its addresses, wait for Ctrl-C."""
    from pathlib import Path

    from prime_rl_dynamo.errors import ConfigError
    from prime_rl_dynamo.recording import Recorder
    from prime_rl_dynamo.reference import start_reference_fleet

    recorder = Recorder(path=Path(args.record)) if args.record else None
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (e.g. from a process manager) stops as cleanly as Ctrl-C.
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        fleet = start_reference_fleet(
            args.topology,
            faults=args.fault,
            seed=args.seed,
            host=args.host,
            port=args.port,
            recorder=recorder,
        )
    except ConfigError as exc:
        # A bad topology, fault or address is a usage error: exit 2, as `dynamo up` does.
        print(f"prime-rl-dynamo serve: {exc}", file=sys.stderr)
        return 2
    try:
        info = fleet.describe()
        if args.json:
            print(json.dumps(info, indent=2), flush=True)
        else:
            print(f"frontend      {info['frontend_url']}")
            print(f"discovery     {info['discovery_url']}")
            print(f"W             {info['inference_world_size']}")
            if info["faults"]:
                print(f"faults        {' '.join(info['faults'])}")
            for engine in info["engines"]:
                listed = "" if engine["listed"] else "  (not listed yet)"
                print(
                    f"engine {engine['key']:<24} world_size={engine['world_size']:<3} "
                    f"system {engine['system_url']}  admin {engine['admin_base_url']}{listed}"
                )
            print("serving; Ctrl-C to stop", flush=True)
        # Bounded waits in a loop so Ctrl-C is handled promptly on every platform.
        forever = threading.Event()
        while fleet.running and not forever.wait(0.5):
            pass
        if not fleet.running:
            print("the reference fleet stopped unexpectedly", flush=True)
            return 1
    except KeyboardInterrupt:
        pass
    finally:
        fleet.stop()
    return 0
