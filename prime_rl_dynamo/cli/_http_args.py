"""``-H/--header``, ``--cacert`` and ``--insecure``: reaching a frontend behind a gateway.

Shared by ``discover`` and ``conformance`` (the pytest plugin has the same as ``--rl-header``,
``--rl-cacert`` and ``--rl-insecure``). Header values are secrets: nothing prints them.
"""

from __future__ import annotations

import argparse

from prime_rl_dynamo.http import parse_headers, verify_setting

__all__ = ["add_http_arguments", "headers_of", "verify_of"]


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    """Register -H/--header, --cacert and --insecure."""
    parser.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="send this header to the frontend (repeatable), e.g. 'Authorization: Bearer ...'; "
        "values are redacted in every output",
    )
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument(
        "--cacert",
        metavar="FILE",
        help="verify the frontend's TLS certificate against this CA bundle (PEM)",
    )
    tls.add_argument(
        "--insecure",
        action="store_true",
        help="do not verify the frontend's TLS certificate (test setups only)",
    )


def headers_of(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """The parsed -H values (ConfigError for a malformed one)."""
    return parse_headers(args.header)


def verify_of(args: argparse.Namespace) -> bool | str:
    """httpx's ``verify`` for --cacert / --insecure (ConfigError for an unusable CA file)."""
    return verify_setting(args.cacert, args.insecure)
