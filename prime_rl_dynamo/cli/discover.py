"""``prime-rl-dynamo discover URL --inference-world-size W [...]``: wait for a ready Dynamo fleet and print its rank plan.

Polls GET /v1/rl/workers at URL (http://host:8001, .../v1 or the full path) with the client's
readiness rules until a ready snapshot (every matching engine healthy, world sizes summing to W,
two identical polls) or the timeout, then prints the engines and the rank plan. While it waits, a
status line on stderr (a terminal only; ``-q`` turns it off) says what the last snapshot lacked.
``-H``, ``--cacert`` and ``--insecure`` reach a frontend behind a gateway. Exit 0 ready, 1 not
ready by the deadline or refused, 2 usage.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from conformance.options import add_gateway_arguments
from prime_rl_dynamo.cli._groups import add_command
from prime_rl_dynamo.cli.plan import add_common_arguments, components_of, render
from prime_rl_dynamo.cli.validate import positive_int
from prime_rl_dynamo.errors import NotReadyError, PrimeRLDynamoError, ProtocolError
from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.http import parse_headers, status_hint, tls_hint, verify_setting


def add_parser(subparsers: Any) -> None:
    """Register the ``discover`` subcommand."""
    parser = add_command(subparsers, "discover", __doc__, run)
    parser.set_defaults(refusal=refusal)
    parser.add_argument(
        "url", metavar="URL", help="the frontend's RL listener, e.g. http://127.0.0.1:8001"
    )
    add_common_arguments(parser)
    parser.add_argument(
        "--timeout", type=float, default=60.0, metavar="S", help="deadline in seconds (default 60)"
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=1.0,
        metavar="S",
        help="seconds between polls (default 1)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=None,
        metavar="N",
        help="refuse larger bodies (default 8 MiB)",
    )
    parser.add_argument(
        "--trust-env", action="store_true", help="honour proxy environment variables"
    )
    add_gateway_arguments(parser)
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line while waiting (it shows only when stderr is a terminal)",
    )


def run(args: argparse.Namespace) -> int:
    """Discover, plan, print; returns the exit code."""
    from prime_rl_dynamo.client import (
        DEFAULT_MAX_BODY_BYTES,
        DiscoveryClient,
        PollingPolicy,
        ReadinessPolicy,
    )

    async def go() -> Any:
        headers = dict(parse_headers(args.header))
        verify = verify_setting(args.cacert, args.insecure)
        async with DiscoveryClient(
            args.url,
            ReadinessPolicy(
                args.inference_world_size, model=args.model, components=components_of(args)
            ),
            PollingPolicy(timeout=args.timeout, poll_interval=args.poll_interval),
            max_body_bytes=(
                DEFAULT_MAX_BODY_BYTES if args.max_body_bytes is None else args.max_body_bytes
            ),
            trust_env=args.trust_env,
            headers=headers,
            verify=verify,
            progress=False if args.quiet else None,
        ) as client:
            return await client.wait_ready()

    ready = asyncio.run(go())
    plan = ready.plan(args.convention, trainer_world_size=args.trainer_world_size)
    extra = {"url": ready.url, "polls": ready.polls}
    print(render(plan, as_json=args.json, extra=extra))
    return ExitCode.OK


def refusal(args: argparse.Namespace, exc: PrimeRLDynamoError) -> list[str]:
    """What ``discover`` says of a refusal (a ``ConfigError`` is said as it is, exit 2): not ready,
    with a hint when the TLS handshake failed (``http.tls_hint``), or refused, with a hint when
    the refused status says more (``http.status_hint``; exit 1 either way)."""
    if not isinstance(exc, NotReadyError):
        return [f"refused: {exc}", *_status_hint(exc)]
    hint = tls_hint(exc.failure, args.cacert or not args.insecure)
    return [f"not ready: {exc}"] + ([hint] if hint else [])


def _status_hint(exc: PrimeRLDynamoError) -> list[str]:
    """The hint of a refused status (POLL-2), from its status and headers, as lines."""
    if not isinstance(exc, ProtocolError) or exc.status_code is None:
        return []
    hint = status_hint(exc.status_code, exc.headers)
    return [hint] if hint else []
