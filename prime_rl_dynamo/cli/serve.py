"""``prime-rl-dynamo serve``: run the reference RL listener and engines (no Dynamo needed).

Serves GET /v1/rl/workers and every engine's system and admin servers from a topology, on
loopback, until interrupted (Ctrl-C), and prints where everything listens (frontend, discovery
URL, each engine's system and admin URLs, W). Faults make the listener misbehave on purpose:
NAME[=VALUE][:COUNT], where :COUNT limits the fault to the first COUNT listing requests. See
docs/reference.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from prime_rl_dynamo.cli._groups import add_command
from prime_rl_dynamo.cli._serving import serve_until_interrupted, stop_on_signals
from prime_rl_dynamo.exitcodes import ExitCode


def add_parser(subparsers: Any) -> None:
    """Register ``serve`` and its arguments."""
    parser = add_command(
        subparsers,
        "serve",
        __doc__,
        run,
        formatter_class=_Help,
        epilog=_fault_help(),
    )
    parser.add_argument(
        "--topology", metavar="FILE", help="topology file (default: the W=16 fleet)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="loopback address to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=8001,
        help="RL listener port (default: %(default)s; 0: any free port)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME[=VALUE][:COUNT]",
        help="fault of the RL listener (repeatable; default: none)",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="seed for ids and faults (default: random)"
    )
    parser.add_argument("--json", action="store_true", help="print the addresses as JSON")
    parser.add_argument(
        "--record", metavar="FILE", help="also append every request received to FILE (JSON lines)"
    )


class _Help(argparse.HelpFormatter):
    """Wraps the description to the terminal; keeps the fault table's lines as they are."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        fill = super()._fill_text
        return "\n\n".join(
            "\n".join(indent + line for line in part.splitlines())
            if part.startswith("faults:")
            else fill(part, width, indent)
            for part in text.split("\n\n")
        )


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
    from prime_rl_dynamo.suite.reference.faults import FAULTS

    lines = ["faults:"]
    for name, (value, text) in FAULTS.items():
        spelled = name if value is None else f"{name}={value}"
        lines.append(f"  {spelled:<28} {text}")
    lines.append("  any of them with :COUNT       only for the first COUNT listing requests")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Start the fleet, print its addresses, wait for Ctrl-C."""
    from pathlib import Path

    from prime_rl_dynamo.suite.recording import Recorder
    from prime_rl_dynamo.suite.reference import start_reference_fleet

    recorder = Recorder(path=Path(args.record)) if args.record else None
    stop_on_signals()
    # A bad topology, fault or address is a ConfigError: a usage error (exit 2), as for every command.
    fleet = start_reference_fleet(
        args.topology,
        faults=args.fault,
        seed=args.seed,
        host=args.host,
        port=args.port,
        recorder=recorder,
    )
    try:
        info = fleet.describe()
        stopped = "the reference fleet stopped unexpectedly"
        return serve_until_interrupted(
            fleet, info, _lines(info), as_json=args.json, stopped=stopped
        )
    except KeyboardInterrupt:
        return ExitCode.OK
    finally:
        fleet.stop()


def _lines(info: dict[str, Any]) -> list[str]:
    """Where the reference fleet listens, for a person."""
    lines = [
        f"frontend      {info['frontend_url']}",
        f"discovery     {info['discovery_url']}",
        f"W             {info['inference_world_size']}",
    ]
    erring = [e["key"] for e in info["engines"] if e["listed"] and e.get("reply_error")]
    if erring:  # listed with an error, they keep every client waiting (READY-1)
        lines[-1] += (
            f"  (never ready: {', '.join(erring)} listed with an error, and a client waits "
            "until no matching worker has one, READY-1)"
        )
    if info["faults"]:
        lines.append(f"faults        {' '.join(info['faults'])}")
    for engine in info["engines"]:
        listed = "" if engine["listed"] else "  (not listed yet)"
        lines.append(
            f"engine {engine['key']:<24} world_size={engine['world_size']:<3} "
            f"system {engine['system_url']}  admin {engine['admin_base_url']}{listed}"
        )
    return lines
