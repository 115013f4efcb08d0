"""``prime-rl-dynamo validate [FILE|-|URL] [--json]``: check a GET /v1/rl/workers body against the contract.

Checks one discovery body (protocol_version 1) against the bundled schema and the semantic rules
and prints every violation (requirement ID, JSON pointer, worker, message) or a one-line summary
of the valid snapshot. An http(s) URL is fetched with the client's bounded, same-origin GET
(``-H``, ``--cacert`` and ``--insecure`` reach a listener behind a gateway). Exit 0 valid, 1
invalid (including text that is not JSON: BODY-1), 2 unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from prime_rl_dynamo.cli._groups import add_command
from prime_rl_dynamo.cli.output import complain
from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.text import plural


def add_parser(subparsers: Any) -> None:
    """Register the ``validate`` subcommand."""
    parser = add_command(subparsers, "validate", __doc__, run)
    parser.add_argument(
        "file",
        nargs="?",
        default="-",
        metavar="FILE|URL",
        help="the body to check; - (default) reads stdin; an http(s) URL (http://host:8001, "
        ".../v1 or the full path) is fetched once, as the discovery client does",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON report instead of text")
    parser.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=None,
        metavar="N",
        help="refuse larger bodies, from a file or a URL (default 8 MiB)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="deadline of the GET of a URL, connect to last byte (default 30)",
    )
    from conformance.options import add_gateway_arguments

    add_gateway_arguments(parser)


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (0 never silently means a default)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, found {value}")
    return value


def is_url(file: str) -> bool:
    """Whether the FILE argument names an http(s) URL rather than a path."""
    return file.lower().startswith(("http://", "https://"))


def input_name(file: str) -> str:
    """How messages name the FILE argument (``-`` is ``<stdin>``)."""
    return "<stdin>" if file == "-" else file


def read_input(file: str, command: str, max_bytes: int | None = None) -> bytes | None:
    """The bytes of FILE (``-``: stdin), at most ``max_bytes`` (default: the client's cap, POLL-3);
    None once the reason it cannot be read is printed."""
    from prime_rl_dynamo.client import DEFAULT_MAX_BODY_BYTES

    cap = DEFAULT_MAX_BODY_BYTES if max_bytes is None else max_bytes
    try:
        if file == "-":
            data = sys.stdin.buffer.read(cap + 1)
        else:
            with open(file, "rb") as handle:
                data = handle.read(cap + 1)  # bounded: /dev/zero is a path too
    except OSError as exc:
        complain(command, f"cannot read {input_name(file)}: {exc.strerror or exc}")
        return None
    if len(data) > cap:
        complain(
            command,
            f"{input_name(file)} is larger than {cap} bytes, the cap the discovery client reads "
            "(POLL-3); not read further",
        )
        return None
    return data


def fetch_input(
    url: str,
    command: str,
    *,
    max_bytes: int | None,
    timeout: float,
    headers: dict[str, str] | None = None,
    verify: bool | str = True,
) -> tuple[str, bytes] | None:
    """The discovery URL and the body of one GET of it, as the client fetches (size cap,
    same-origin redirects only, no proxy, one deadline); None once the reason is printed (with
    ``http.status_hint``'s hint when the refused status says more)."""
    import asyncio

    from prime_rl_dynamo.client import (
        DEFAULT_MAX_BODY_BYTES,
        DiscoveryClient,
        PollingPolicy,
        ReadinessPolicy,
    )
    from prime_rl_dynamo.errors import PrimeRLDynamoError, ProtocolError
    from prime_rl_dynamo.http import status_hint

    async def get() -> tuple[str, bytes]:
        async with DiscoveryClient(
            url,
            ReadinessPolicy(None, require_world_size=False),
            PollingPolicy(request_timeout=timeout),
            max_body_bytes=DEFAULT_MAX_BODY_BYTES if max_bytes is None else max_bytes,
            protocol="v1",  # this command checks a protocol_version 1 body: never ask for 2
            headers=headers or {},
            verify=verify,
        ) as client:
            return client.url, await client.fetch_body()

    try:
        return asyncio.run(get())
    except PrimeRLDynamoError as exc:
        complain(command, str(exc))
        if isinstance(exc, ProtocolError) and exc.status_code is not None:
            hint = status_hint(exc.status_code, exc.headers)
            if hint:
                complain(command, hint)
        return None


def summarize(snapshot: Any) -> dict[str, Any]:
    """Counts a user wants at a glance: workers, engines ready to drive, total world size."""
    workers = snapshot.workers
    ready = [
        w for w in workers if w.error is None and w.admin_base_url is not None and w.world_size
    ]
    return {
        "protocol_version": snapshot.protocol_version,
        "namespace": snapshot.namespace,
        "workers": len(workers),
        "error_workers": sum(1 for w in workers if w.error is not None),
        "engines_ready": len(ready),
        "total_world_size": sum(w.world_size for w in ready),
    }


def run(args: argparse.Namespace) -> int:
    """Read, validate, report; returns the exit code."""
    from prime_rl_dynamo.errors import ProtocolError
    from prime_rl_dynamo.validate import validate_body

    if is_url(args.file):
        from prime_rl_dynamo.http import parse_headers, verify_setting

        fetched = fetch_input(
            args.file,
            "validate",
            max_bytes=args.max_body_bytes,
            timeout=args.timeout,
            headers=dict(parse_headers(args.header)),  # a bad one: ConfigError, exit 2
            verify=verify_setting(args.cacert, args.insecure),
        )
        if fetched is None:
            return ExitCode.USAGE
        name, data = fetched
    else:
        name = input_name(args.file)
        read = read_input(args.file, "validate", args.max_body_bytes)
        if read is None:
            return ExitCode.USAGE
        data = read
    try:
        snapshot = validate_body(data)
    except ProtocolError as exc:
        if args.json:
            report = {
                "file": name,
                "valid": False,
                "requirements": exc.requirements,
                "violations": [
                    {
                        "requirement": v.requirement,
                        "level": v.level,
                        "pointer": v.pointer,
                        "worker": v.worker,
                        "message": v.message,
                    }
                    for v in exc.violations
                ],
            }
            print(json.dumps(report, indent=2, ensure_ascii=False))
        else:
            for v in exc.violations:
                print(f"{v.requirement}\t{v.pointer or '/'}\t{v.worker or '-'}\t{v.message}")
            print(
                f"{name}: invalid, {len(exc.violations)} violation(s) of "
                f"{', '.join(exc.requirements)}",
                file=sys.stderr,
            )
        return ExitCode.FAIL
    summary = summarize(snapshot)
    if args.json:
        print(json.dumps({"file": name, "valid": True, "summary": summary}, indent=2))
    else:
        print(
            f"{name}: valid (protocol_version {summary['protocol_version']}, namespace "
            f"{summary['namespace']!r}): {plural(summary['workers'], 'worker')}, "
            f"{plural(summary['engines_ready'], 'engine')} ready, {summary['error_workers']} with "
            f"error, total world size "
            f"{summary['total_world_size']}"
        )
    return ExitCode.OK
