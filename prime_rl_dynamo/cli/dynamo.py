"""``prime-rl-dynamo dynamo up``: run the real Dynamo 1.6.1 frontend and stub workers until interrupted.

Prints the frontend and RL listener URLs and each engine (admin and system URLs, world size, W);
Ctrl-C or SIGTERM stops every process it started. Needs the ``dynamo`` extra.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any


def add_parser(subparsers: Any) -> None:
    """Register ``dynamo`` (and its ``up`` action) and their arguments."""
    parser = subparsers.add_parser(
        "dynamo",
        help="run the real Dynamo frontend (RL listener) and stub RL workers",
        description="Stand up NVIDIA Dynamo 1.6.1's real frontend with its RL listener and stub "
        "RL workers built on the real Dynamo runtime, from a topology, on loopback. "
        "See docs/harness.md.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    up = actions.add_parser(
        "up",
        help="start a fleet and keep it up until Ctrl-C",
        description="Start the fleet, print where everything listens, keep it up until Ctrl-C.",
    )
    up.add_argument("--topology", metavar="FILE", help="topology file (default: W=16 fleet)")
    up.add_argument(
        "--engines",
        type=int,
        metavar="N",
        help="instead of a topology file: N 'backend' engines of world size 1 serving the "
        "default model (e.g. 256 for a scale run)",
    )
    up.add_argument(
        "--discovery",
        choices=("file", "etcd"),
        default="file",
        help="discovery backend (etcd starts a throw-away etcd server; default: file)",
    )
    up.add_argument(
        "--request-plane",
        choices=("tcp", "nats", "http"),
        default="tcp",
        help="request plane of the runtime (nats starts a throw-away nats-server; "
        "Dynamo 1.6.1 refuses http; default: tcp)",
    )
    up.add_argument(
        "--namespace-prefix",
        metavar="P",
        help="prefix scope: the frontend lists namespaces P and P-* (DYN_NAMESPACE_PREFIX)",
    )
    up.add_argument(
        "--worker-suffix",
        metavar="S",
        help="exact scope {namespace}-S (DYN_NAMESPACE_WORKER_SUFFIX)",
    )
    up.add_argument(
        "--prefix-strict",
        action="store_true",
        help="with --namespace-prefix: DYN_NAMESPACE_PREFIX_STRICT=true",
    )
    up.add_argument(
        "--engines-per-process",
        type=int,
        default=None,
        metavar="N",
        help="engines per stub process (default: 1 up to 16 engines, then 8)",
    )
    up.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="start-up deadline in seconds"
    )
    up.add_argument("--json", action="store_true", help="print the addresses as JSON")
    up.add_argument(
        "--keep-logs",
        action="store_true",
        help="keep the fleet's directory (process logs, recordings) after stopping",
    )
    parser.set_defaults(func=run, parser=parser)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Start the fleet, print its addresses, wait for Ctrl-C."""
    if getattr(args, "action", None) != "up":
        args.parser.print_help()
        return 2
    from prime_rl_dynamo.errors import ConfigError
    from prime_rl_dynamo.topology import load_topology, topology_from_dict

    try:
        if args.engines is not None:
            if args.topology is not None or args.engines < 1:
                raise ConfigError(
                    "--engines N needs N >= 1 and no --topology"
                    f" (got --engines {args.engines}{' and --topology' if args.topology else ''})"
                )
            topology = topology_from_dict(
                {"version": 1, "engines": [{"component": "backend", "count": args.engines}]},
                source="--engines",
            )
        else:
            topology = load_topology(args.topology)
    except ConfigError as exc:
        print(f"prime-rl-dynamo dynamo up: {exc}", file=sys.stderr)
        return 2
    try:
        import dynamo.runtime  # noqa: F401
    except ImportError:
        print(
            "prime-rl-dynamo dynamo up: needs the dynamo extra "
            "(pip install 'prime-rl-dynamo[dynamo]')",
            file=sys.stderr,
        )
        return 2
    from prime_rl_dynamo.harness import DynamoFleet

    if threading.current_thread() is threading.main_thread():
        # SIGTERM (e.g. from a process manager) stops as cleanly as Ctrl-C; SIGINT is set
        # explicitly because a shell starts background jobs with it ignored.
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
    fleet = DynamoFleet(
        topology,
        discovery=args.discovery,
        request_plane=args.request_plane,
        namespace_prefix=args.namespace_prefix,
        worker_suffix=args.worker_suffix,
        prefix_strict=args.prefix_strict,
        engines_per_process=args.engines_per_process,
        startup_timeout=args.timeout,
        keep_workdir=args.keep_logs,
    )
    try:
        fleet.start()
        info = fleet.describe()
        if args.json:
            print(json.dumps(info, indent=2), flush=True)
        else:
            print(f"frontend      {info['http_url']}   (Dynamo HTTP frontend)")
            print(f"rl listener   {info['frontend_url']}")
            print(f"discovery     {info['discovery_url']}")
            backend = info["discovery"]
            if info["etcd_url"]:
                backend += f" ({info['etcd_url']})"
            print(f"store         {backend}")
            plane = info["request_plane"]
            if info["nats_url"]:
                plane += f" ({info['nats_url']})"
            print(f"request plane {plane}")
            print(f"scope         {info['scope']}")
            print(f"W             {info['inference_world_size']}")
            print(
                f"started in    {info['startup_seconds']:.1f} s, "
                f"{info['processes']} processes, {info['memory_bytes'] / 2**20:.0f} MiB"
            )
            for engine in info["engines"]:
                state = "" if engine["alive"] else "  (not running)"
                faults = f"  faults: {','.join(engine['faults'])}" if engine["faults"] else ""
                models = f"  model {','.join(engine['models'])}" if engine["models"] else ""
                print(
                    f"engine {engine['key']:<24} world_size={engine['world_size']:<3} "
                    f"instance_id={engine['instance_id']}  system {engine['system_url']}  "
                    f"admin {engine['admin_base_url']}{models}{state}{faults}"
                )
            print("serving; Ctrl-C to stop", flush=True)
        # Bounded waits in a loop so Ctrl-C is handled promptly.
        idle = threading.Event()
        ticks = 0
        while fleet.running and not idle.wait(0.5):
            ticks += 1
            if ticks % 20 == 0:
                fleet.trim_logs()  # every probe is logged: keep a long session's logs bounded
        if not fleet.running:
            print("the Dynamo frontend stopped unexpectedly", flush=True)
            return 1
    except KeyboardInterrupt:
        pass
    finally:
        fleet.stop()
        if args.keep_logs:
            print(f"logs kept in {fleet.workdir}", flush=True)
    return 0
