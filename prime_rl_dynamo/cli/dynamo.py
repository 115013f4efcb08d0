"""``prime-rl-dynamo dynamo up``: start a fleet and keep it up until Ctrl-C.

Starts the installed NVIDIA Dynamo release's real frontend with its RL listener and stub RL
workers built on the real Dynamo runtime, from a topology, on loopback; prints the release, the
frontend and RL listener URLs and each engine (admin and system URLs, world size, W). Ctrl-C or
SIGTERM stops every process it started. Needs the dynamo extra, or any ai-dynamo-runtime from
1.3.0.post1 on (a release that cannot host the fleet exits 2 saying why). See docs/harness.md
and docs/compat.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from prime_rl_dynamo.cli._groups import add_command, add_group
from prime_rl_dynamo.cli._serving import serve_until_interrupted, stop_on_signals
from prime_rl_dynamo.cli.output import complain
from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.suite.harness import release_label
from prime_rl_dynamo.wire import DISCOVERY_BACKENDS, REQUEST_PLANES


def add_parser(subparsers: Any) -> None:
    """Register ``dynamo`` (and its ``up`` action) and their arguments."""
    installed = release_label()
    actions = add_group(
        subparsers,
        "dynamo",
        f"run the real Dynamo frontend (RL listener) and stub RL workers (installed: {installed})",
    )
    up = add_command(actions, "up", f"{__doc__}\nInstalled here: {installed}.", run)
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
        choices=DISCOVERY_BACKENDS,
        default="file",
        help="discovery backend (etcd starts a throw-away etcd server; default: file)",
    )
    up.add_argument(
        "--request-plane",
        choices=REQUEST_PLANES,
        default="tcp",
        help="request plane of the runtime (nats starts a throw-away nats-server; "
        f"{installed} refuses http; default: tcp)",
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
    up.add_argument(
        "--real",
        metavar="TP[,TP...]",
        help="real vLLM engines on the CPU behind Dynamo's vLLM sidecar, one per tensor-parallel "
        "size (e.g. 1,2: W = 3); needs scripts/install-real-engines.sh (docs/harness.md)",
    )
    up.add_argument("--json", action="store_true", help="print the addresses as JSON")
    up.add_argument(
        "--keep-logs",
        action="store_true",
        help="keep the fleet's directory (process logs, recordings) after stopping",
    )


def run(args: argparse.Namespace) -> int:
    """Start the fleet, print its addresses, wait for Ctrl-C."""
    from prime_rl_dynamo.errors import ConfigError
    from prime_rl_dynamo.topology import load_topology, topology_from_dict

    if args.real is not None:
        return _run_real(args)
    # A bad topology is a ConfigError: the CLI's one mapping makes it a usage error (exit 2).
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
    from prime_rl_dynamo.errors import UnsupportedReleaseError
    from prime_rl_dynamo.suite.harness import require_release

    try:
        require_release()
        import dynamo.runtime  # noqa: F401
    except ImportError:
        complain("dynamo up", "needs the dynamo extra (pip install 'prime-rl-dynamo[dynamo]')")
        return ExitCode.USAGE
    except UnsupportedReleaseError as exc:
        complain("dynamo up", f"cannot host a fleet: {exc}")
        return ExitCode.USAGE
    from prime_rl_dynamo.suite.harness import DynamoFleet

    stop_on_signals(sigint=True)
    try:
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
    except UnsupportedReleaseError as exc:
        complain("dynamo up", f"cannot host this fleet: {exc}")
        return ExitCode.USAGE
    try:
        fleet.start()
        info = fleet.describe()
        return serve_until_interrupted(
            fleet,
            info,
            _lines(info),
            as_json=args.json,
            stopped="the Dynamo frontend stopped unexpectedly",
            every_10s=fleet.trim_logs,  # every probe is logged: keep a long session's logs bounded
        )
    except KeyboardInterrupt:
        return ExitCode.OK
    finally:
        fleet.stop()
        if args.keep_logs:
            print(f"logs kept in {fleet.workdir}", flush=True)


def _run_real(args: argparse.Namespace) -> int:
    """``dynamo up --real 1,2``: real engines, with a progress line while they load."""
    from prime_rl_dynamo.errors import ConfigError, HarnessError, UnsupportedReleaseError
    from prime_rl_dynamo.suite.harness.real import RealEngineFleet

    try:
        sizes = [int(part) for part in args.real.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(tp < 1 for tp in sizes) or args.topology or args.engines is not None:
        raise ConfigError(
            "--real needs tensor-parallel sizes >= 1 separated by commas (e.g. --real 1,2) "
            f"and neither --topology nor --engines; got --real {args.real!r}"
        )
    stop_on_signals(sigint=True)
    try:
        fleet = RealEngineFleet(
            sizes,
            startup_timeout=args.timeout or 900.0,
            progress=lambda line: print(line, flush=True),
            keep_workdir=args.keep_logs,
        )
    except (HarnessError, UnsupportedReleaseError) as exc:
        complain("dynamo up", f"cannot host real engines: {exc}")
        return ExitCode.USAGE
    try:
        fleet.start()
        info = fleet.describe()
        lines = [
            f"rl listener   {info['frontend_url']}",
            f"discovery     {info['discovery_url']}",
            f"W             {info['inference_world_size']}",
            f"started in    {info['startup_seconds']:.1f} s, "
            f"{info['memory_bytes'] / 2**30:.1f} GiB resident",
            *(
                f"engine {e['key']:<16} world_size={e['world_size']}  vLLM {e['vllm_http_url']}"
                f"  system {e['system_url']}  admin {e['admin_base_url']}"
                for e in info["engines"]
            ),
        ]
        return serve_until_interrupted(
            fleet, info, lines, as_json=args.json, stopped="the real-engine fleet stopped"
        )
    except HarnessError as exc:
        complain("dynamo up", str(exc))
        return ExitCode.USAGE
    except KeyboardInterrupt:
        return ExitCode.OK
    finally:
        fleet.stop()


def _lines(info: dict[str, Any]) -> list[str]:
    """Where the Dynamo fleet listens and what it runs, for a person."""
    backend = info["discovery"]
    if info["etcd_url"]:
        backend += f" ({info['etcd_url']})"
    plane = info["request_plane"]
    if info["nats_url"]:
        plane += f" ({info['nats_url']})"
    lines = [
        f"release       Dynamo {info['release']} (ai-dynamo-runtime)",
        f"frontend      {info['http_url']}   (Dynamo HTTP frontend)",
        f"rl listener   {info['frontend_url']}",
        f"discovery     {info['discovery_url']}",
        f"store         {backend}",
        f"request plane {plane}",
        f"scope         {info['scope']}",
        f"W             {info['inference_world_size']}",
        f"started in    {info['startup_seconds']:.1f} s, "
        f"{info['processes']} processes, {info['memory_bytes'] / 2**20:.0f} MiB",
    ]
    for engine in info["engines"]:
        state = "" if engine["alive"] else "  (not running)"
        faults = f"  faults: {','.join(engine['faults'])}" if engine["faults"] else ""
        models = f"  model {','.join(engine['models'])}" if engine["models"] else ""
        lines.append(
            f"engine {engine['key']:<24} world_size={engine['world_size']:<3} "
            f"instance_id={engine['instance_id']}  system {engine['system_url']}  "
            f"admin {engine['admin_base_url']}{models}{state}{faults}"
        )
    return lines
